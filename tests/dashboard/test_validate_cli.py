"""`python -m dashboard validate`: a workload file and candidate modules checked on a machine without torch (torch
and triton imports blocked here), one line per problem found (all of them) and exit 2, and the README's recipe saves
the file where the app lists workloads."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NO_TORCH = ("import runpy, sys; sys.modules['torch'] = sys.modules['triton'] = None; sys.argv[0] = 'dashboard'; "
            "runpy.run_module('dashboard', run_name='__main__')")


def _validate(*args):
    return subprocess.run([sys.executable, "-c", NO_TORCH, "validate", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_a_workload_and_a_candidate_check_without_torch(tmp_path):
    mine = tmp_path / "my_kernels.py"
    mine.write_text("import torch\ndef prepare(weight):\n    return weight\ndef run(state, family, x):\n"
                    "    return x @ state.T\n")
    p = _validate("datasets/workloads/llama31_8b_decode.json", "--candidate", str(mine), "--candidate", "baseline")
    assert p.returncode == 0, p.stderr
    assert "a valid workload 'llama31_8b_decode'" in p.stdout and "16 scored shapes" in p.stdout
    assert f"{mine}: follows the candidate protocol" in p.stdout and "note:" not in p.stdout


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    from dashboard.cli.main import main

    bad = tmp_path / "my_model.json"
    bad.write_text('{"families": {"up": {"N": 0, "K": 4096}}, "loads": [{"load": "decode 1", "M": 1}]}')
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "families.up.N" in err
    mine = tmp_path / "k.py"
    mine.write_text("def prepare(weight): ...\n")
    good = tmp_path / "ok.json"
    good.write_text('{"families": {"up": {"N": 64, "K": 64}}, "loads": [{"load": "decode 1", "M": 1}]}')
    assert main(["validate", str(good), "--candidate", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "must define callable(s) ['run']" in err and err.count("\n") == 1
    assert main(["validate", str(good)]) == 0
    assert "note: the app lists only the workloads in datasets/workloads/" in capsys.readouterr().out


def test_the_readme_recipe_saves_where_the_app_looks():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    own = readme.split("### Your own model", 1)[1].split("\n## ", 1)[0]
    copy = re.search(r"^cp \S+ (\S+)", own, re.MULTILINE)
    assert copy and Path(copy.group(1)).parent == Path("datasets/workloads")
    assert "python3 -m dashboard validate " + copy.group(1) in own


def test_every_problem_is_reported_at_once(tmp_path, capsys):
    """Every field the workload breaks and every bad candidate, one line each, in one run (not the first only);
    the lines are not cut at the one-line message's limit."""
    from dashboard.cli.main import main

    families = ", ".join(f'"f{i}": {{"N": 0, "K": 64}}' for i in range(12))   # 12 bad fields: above MAX_LISTED
    bad = tmp_path / "bad.json"
    bad.write_text(f'{{"families": {{{families}}}, "loads": [{{"load": "decode 1", "M": 1}}], "colour": 1}}')
    assert main(["validate", str(bad), "--candidate", "baseline"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 14 and all(line.startswith("error: ") for line in err)
    assert sum("bad.json: field 'families.f" in line and ".N'" in line for line in err) == 12
    assert any("field 'colour': unknown field" in line for line in err)
    assert err[-1] == "error: --candidate: not checked (1 given): the workload does not load"
    good = tmp_path / "ok.json"
    good.write_text('{"families": {"up": {"N": 64, "K": 64}}, "loads": [{"load": "decode 1", "M": 1}]}')
    assert main(["validate", str(good), "--candidate", "nope_one.py", "--candidate", "baseline",
                 "--candidate", "nope_two.py"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[1].strip() for line in err] == ["--candidate nope_one.py", "--candidate nope_two.py"]
