"""CLI behaviour that does not need a GPU: the no-CUDA exits (run, probe, tune), bad input as one line, the help
of every subcommand and option, summarize's pointer to the dashboard. What fails before a worker or the GPU runs
main() in this process (_main); the no-CUDA, no-torch and label cases run `python -m profiler` itself."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def _cuda():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "profiler", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _main(capsys, *args):
    """`python -m profiler ARGS` in this process (profiler.cli.main.main, what __main__ calls): the exit code and
    what it printed, as subprocess.run gives them. For what fails before a worker or the GPU; the process itself is
    what test_no_cuda_exits_2_with_one_line and test_without_torch_every_gpu_command_is_one_line_exit_2 run."""
    from types import SimpleNamespace

    from profiler.cli.main import main

    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=0 if code is None else code, stdout=out, stderr=err)


def _one_line(p) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.skipif(_cuda(), reason="checks the no-CUDA path")
@pytest.mark.parametrize("cmd", [["run", "--plan", "baseline"], ["probe"], ["tune"], ["tune", "--families", "o"]])
def test_no_cuda_exits_2_with_one_line(cmd):
    p = _cli(*cmd)
    assert p.returncode == 2
    line = _one_line(p)
    assert line.startswith(f"profiler {cmd[0]}: needs a CUDA GPU") or "importing torch failed" in line


def test_tune_help_reaches_the_real_tuner_without_cuda(capsys):
    p = _main(capsys, "tune", "--help")
    assert p.returncode == 0 and "usage: python -m profiler tune" in p.stdout and "--out-plan" in p.stdout


def test_run_without_plan_is_bad_input(capsys):
    p = _main(capsys, "run")
    assert p.returncode == 2 and "--plan" in _one_line(p)


@pytest.mark.parametrize("spec, words", [("no_such_plan", "no such plan file"), ("absent.py", "no such module file"),
                                         ("method:no_such_method", "unknown method"),
                                         ("method:gemv:{not json", "not valid JSON")])
def test_bad_candidate_spec_is_one_line_before_anything_runs(capsys, spec, words):
    p = _main(capsys, "run", "--plan", "baseline", "--candidate", spec)
    assert p.returncode == 2
    line = _one_line(p)
    assert spec in line and words in line, line


def test_out_never_overwrites_anything(tmp_path, capsys):
    existing = tmp_path / "keep.json"
    existing.write_text("{}")
    dangling = tmp_path / "link.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    for out, words in ((existing, "exists; runs are never overwritten"), (dangling, "exists"),
                       (ROOT / "README.md", "must end in .json"), (tmp_path, "must end in .json")):
        p = _main(capsys, "run", "--plan", "baseline", "--out", str(out))
        assert p.returncode == 2 and words in _one_line(p), (out, p.stderr)
    assert existing.read_text() == "{}" and dangling.is_symlink()


@pytest.mark.skipif(_cuda(), reason="stops at the no-CUDA exit, after the label")
@pytest.mark.parametrize("args, label", [(["--candidate", "my kernels.py"], "baseline-vs-my-kernels"),
                                         (["--label", "../../x"], "x")])
def test_odd_labels_are_sanitised_not_a_traceback(tmp_path, args, label):
    (tmp_path / "my kernels.py").write_text("def prepare(w):\n    return w\ndef run(s, f, x):\n    return x\n")
    p = _cli("run", "--plan", "baseline", *args, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"-> '{label}'" in p.stderr.splitlines()[0]


def test_summarize_points_at_the_dashboard_in_one_line(tmp_path, capsys):
    p = _main(capsys, "summarize", str(tmp_path / "run.json"))
    assert p.returncode == 2 and "python -m dashboard summarize RUN.json" in _one_line(p)


def _parsers():
    """Every parser of `python -m profiler`: the top level, each subcommand's, tune's and survey's own."""
    from profiler.cli import survey, tune
    from profiler.cli.main import build_parser

    top = build_parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {"profiler": top, **{f"profiler {n}": sp for n, sp in subs.items()
                               if n not in ("tune", "survey", "screen")},
            "profiler tune": tune.build_parser(), "profiler survey": survey.build_parser()}


@pytest.mark.parametrize("name", ["profiler", "profiler run", "profiler probe", "profiler summarize",
                                  "profiler explain", "profiler tune", "profiler survey"])
def test_every_subcommand_has_a_description_and_every_option_a_help(name):
    parser = _parsers()[name]
    assert parser.description and len(parser.description.split()) >= 8, name
    assert parser.description.rstrip().endswith((".", ")", "`")), f"{name}: description stops mid-sentence"
    missing = [a.option_strings or a.dest for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert missing == [], f"{name}: options without help: {missing}"


# --- --workload -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [["run", "--plan", "baseline"], ["probe"], ["tune"], ["explain", "--plan", "baseline"]])
@pytest.mark.parametrize("ref, words", [("no_such_workload", "no workload named 'no_such_workload'"),
                                        ("absent/dir/w.json", "w.json: file, field '(json)': cannot read"),
                                        ("datasets/seed_probes.csv", "expected a workload name or a .json file"),
                                        ("MALFORMED", "field 'families.proj.N'")])
def test_a_bad_workload_is_exit_2_with_one_line_before_anything_else(tmp_path, capsys, cmd, ref, words):
    if ref == "MALFORMED":
        spec = __import__("json").loads((ROOT / "tests/fixtures/workloads/tiny.json").read_text())
        spec["families"]["proj"]["N"] = -1
        ref = str(tmp_path / "bad.json")
        Path(ref).write_text(__import__("json").dumps(spec))
    p = _main(capsys, *cmd, "--workload", ref)
    assert p.returncode == 2
    line = _one_line(p)
    assert line.startswith(f"profiler {cmd[0]}: --workload: ") and words in line


def test_shapes_are_validated_against_the_workload(capsys):
    p = _main(capsys, "run", "--plan", "baseline", "--shapes", "qkv:1")               # the default workload has no qkv
    assert p.returncode == 2 and "unknown family 'qkv'; muse_bf16_proj has qkv_gate" in _one_line(p)
    p = _main(capsys, "run", "--workload", "llama31_8b_decode", "--plan", "baseline", "--shapes", "qkv_gate:64")
    assert p.returncode == 2 and "unknown family 'qkv_gate'; llama31_8b_decode has qkv, o, gate_up, down" in \
        _one_line(p)


def test_a_plan_for_another_workload_is_refused_by_run_in_one_line(capsys):
    p = _main(capsys, "run", "--workload", "llama31_8b_decode", "--plan", "baseline", "--plan", "best", "--shapes", "qkv:1")
    assert p.returncode == 2
    assert "cannot load candidate 'best'" in _one_line(p) and "tuned for workload muse_bf16_proj" in p.stderr


@pytest.mark.skipif(_cuda(), reason="checks the no-CUDA path")
@pytest.mark.parametrize("args", [["run", "--workload", "llama31_8b_decode", "--plan", "baseline", "--shapes",
                                   "qkv:1,32+down:official"],
                                  ["run", "--workload", "datasets/workloads/llama31_8b_decode.json", "--plan",
                                   "baseline", "--shapes", "official"],
                                  ["run", "--plan", "baseline", "--plan", "best", "--shapes", "qkv_gate:64"],
                                  ["probe", "--workload", "llama31_8b_decode", "--shapes", "qkv:64"],
                                  ["tune", "--workload", "llama31_8b_decode",
                                   "--out-plan", "kernels/plans/llama31_8b_decode.json"]])
def test_good_workload_and_shapes_get_as_far_as_the_gpu(capsys, args):
    """Everything the CPU can check passes (workload, plans against it, --shapes in it); the next stop is CUDA."""
    p = _main(capsys, *args)
    assert p.returncode == 2
    line = _one_line(p)
    assert f"profiler {args[0]}: needs a CUDA GPU" in line or "importing torch failed" in line


def test_workload_help_is_on_every_command(capsys):
    for cmd in ("run", "probe", "explain", "tune"):
        p = _main(capsys, cmd, "--help")
        assert p.returncode == 0 and "--workload NAME|FILE" in p.stdout, cmd


def test_a_missing_dask_is_one_line_and_exit_2_only_when_cluster_was_asked_for(capsys):
    from profiler.cli.options import missing_dask

    assert missing_dask("run", ImportError("No module named 'distributed'", name="distributed"), "local") == 2
    assert capsys.readouterr().err.startswith("profiler run: --cluster needs dask.distributed (pip install -r "
                                              "requirements-scale.txt)")
    with pytest.raises(ImportError):   # no --cluster: dask was never the point, so this is a real bug
        missing_dask("run", ImportError("x", name="distributed"), None)
    with pytest.raises(ImportError):   # another module missing under --cluster: not dask's message
        missing_dask("tune", ImportError("x", name="triton"), "local")


# --- every argument is checked before anything needs a GPU ------------------------------------------------------
BAD_ARGUMENTS = [
    (["run", "--plan", "baseline", "--max-seconds-per-shape", "-1"], "expected a positive number, got '-1'"),
    (["run", "--plan", "baseline", "--max-seconds-per-shape", "nan"], "expected a positive number, got 'nan'"),
    (["run", "--plan", "baseline", "--seed", "-5"], "expected an integer from 0 to 4294967295, got '-5'"),
    (["run", "--plan", "baseline", "--shape-timeout-s", "0"], "argument --shape-timeout-s: expected a positive"),
    (["run", "--plan", "baseline", "--max-incidents", "0"], "argument --max-incidents: expected a positive integer"),
    (["run", "--plan", "baseline", "--cluster", "foo"], "argument --cluster: expected 'local', 'local:N'"),
    (["run", "--plan", "baseline", "--cluster", "local:0"], "argument --cluster: expected 'local', 'local:N'"),
    (["run", "--plan", "baseline", "--cluster", "tcp://host:99999"], "argument --cluster"),
    (["run", "--plan", "baseline", "--mode", "warm"], "argument --mode: invalid choice: 'warm'"),
    (["run", "--plan", "baseline", "--out", "x.json.gz"], "--out x.json.gz must end in .json"),
    (["run", "--plan", "baseline", "--candidate", "method:gemv:{\"BN\": true, \"num_warps\": 16, \"cache\": \".cg\"}"],
     "BN=True not in"),
    (["run", "--plan", "baseline", "--candidate", "SYNTAX"], "line 1: '(' was never closed (the module does not "
                                                            "compile)"),
    (["probe", "--shapes", "M=1" + "0" * 5000], "is over the limit 65,536"),
    (["tune", "--families", "nope"], "--families: unknown family 'nope'"),
    (["tune", "--m", "0"], "argument --m: expected a positive integer, got '0'"),
    (["tune", "--m", "70000"], "--m: M=70000 is over the limit 65,536"),
    (["tune", "--methods", "no_such_method"], "--methods: unknown method(s) ['no_such_method']"),
    (["tune", "--base-plan", "no_such_plan"], "--base-plan: "),
    (["tune", "--base-plan", "llama31_8b_decode"], "--base-plan: "),
    (["tune", "--budget-s", "nan"], "argument --budget-s: expected a positive number"),
    (["tune", "--finalists", "0"], "argument --finalists"),
    (["tune", "--compile-workers", "-2"], "argument --compile-workers: expected an integer >= 0"),
    (["tune", "--out-plan", "plan.txt"], "--out-plan plan.txt must end in .json"),
    (["tune", "--out-run", "EXISTING"], "exists; runs are never overwritten"),
    (["tune", "--device", "tpu"], "argument --device: expected cuda, cuda:N or cpu, got 'tpu'"),
    (["tune", "--cluster", "foo"], "argument --cluster"),
    (["tune", "--extend-plan", "BADPLAN"], "not valid JSON"),
    (["survey", "--methods", "no_such_method"], "--methods: unknown method(s) ['no_such_method']"),
    (["survey", "--methods", "gemv", "--plan", "BADPLAN"], "--plan: "),
    (["survey", "--methods", "gemv", "--extra-m", "-4"], "argument --extra-m: expected a positive integer"),
    (["survey", "--methods", "gemv", "--families", "nope"], "--families: unknown family 'nope'"),
    (["survey", "--methods", "gemv", "--out-run", "EXISTING"], "exists; runs are never overwritten"),
    (["survey"], "the following arguments are required: --methods"),
    (["screen", "--methods", "no_such_method"], "profiler survey: --methods: unknown method(s)"),   # the old name
    (["screen"], "python -m profiler survey: error: the following arguments are required: --methods"),
    (["explain", "--plan", "baseline", "--shapes-per-ncu", "0"], "argument --shapes-per-ncu"),
    (["explain", "--plan", "baseline", "--out", "EXISTING"], "exists; runs are never overwritten"),
    (["explain", "--plan", "baseline", "--trace", "EXISTING"], "--trace EXISTING is a file"),
    (["explain"], "give at least one --plan or --candidate"),
]


@pytest.mark.parametrize("argv, words", BAD_ARGUMENTS, ids=[" ".join(a)[:60] for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_one_line_and_exit_2_before_cuda(tmp_path, monkeypatch, capsys, argv, words):
    """In-process: whatever passes the checks would go on to a worker, so every way there is stubbed to fail."""
    import profiler.cli.explain as explain_cli
    import profiler.cli.main as main_cli
    import profiler.cli.survey as survey_cli
    import profiler.cli.tune as tune_cli

    def reached(*a, **k):
        raise AssertionError(f"{argv} got past the argument checks")

    for module, name in ((main_cli, "_cuda_or_exit"), (tune_cli, "tune_sweep"), (explain_cli, "_missing_tools"),
                         (survey_cli.survey_command, "survey")):
        monkeypatch.setattr(module, name, reached)
    existing = tmp_path / "existing.json"
    existing.write_text("{}")
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "syntax.py").write_text("def prepare(w:\n")
    subst = {"EXISTING": str(existing), "BADPLAN": str(tmp_path / "bad.json"), "SYNTAX": str(tmp_path / "syntax.py")}
    argv = [subst.get(a, a) for a in argv]
    try:
        code = main_cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    assert words in err.replace(str(tmp_path / "existing.json"), "EXISTING"), err
    assert err.startswith(("profiler ", "python -m profiler")), err


# A machine without torch (the app's requirements only): `import torch` fails as it would there.
NO_TORCH = "import runpy, sys; sys.modules['torch'] = None; sys.argv[0] = 'profiler'; " \
           "runpy.run_module('profiler', run_name='__main__')"


@pytest.mark.parametrize("cmd", [["tune", "--workload", "datasets/workloads/llama31_8b_decode.json"],
                                 ["survey", "--methods", "gemv"], ["run", "--plan", "baseline"]])
def test_without_torch_every_gpu_command_is_one_line_exit_2(cmd):
    p = subprocess.run([sys.executable, "-c", NO_TORCH, *cmd], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 2, p.stderr
    line = _one_line(p)
    assert line.startswith(f"profiler {cmd[0]}: needs torch with CUDA") and "ModuleNotFoundError" in line
