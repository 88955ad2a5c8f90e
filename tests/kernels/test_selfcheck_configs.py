"""The self-check sweep (kernels.selfcheck_configs) on CPU: every config of a method at every shape it admits,
a wrong result or a raising config reported with its reason, the others still run (torch_linear on the SYNTHETIC
tiny workload: the library route runs on CPU)."""
from pathlib import Path

from datasets import load_workload
from kernels.registry import get_method
from kernels.selfcheck_configs import main, sweep, workload_rows

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny.json"


def test_every_admitted_shape_is_checked_and_passes():
    rows = workload_rows(load_workload(TINY))
    results = sweep(get_method("torch_linear"), rows, "cpu")
    assert len(results) == len(rows) and all(why == "" for _, why in results)
    assert {label.split(" ", 2)[1] for label, _ in results} == {r["family"] for r in rows}


def test_a_wrong_or_raising_config_is_a_failure_with_its_reason():
    base = get_method("torch_linear")
    calls = []

    class Wrong(type(base)):
        def run(self, state, x):
            calls.append(int(x.shape[0]))
            if int(x.shape[0]) == 4:
                raise RuntimeError("boom at M=4\nsecond line")
            return base.run(state, x) * 1.5

    wrong = Wrong("wrong", base.dtypes, base.impl, "torch_linear, 1.5x off")
    rows = workload_rows(load_workload(TINY))
    results = dict(sweep(wrong, rows, "cpu"))
    assert len(results) == len(rows)
    raised = [why for label, why in results.items() if " M=4 " in label]
    assert raised and all(why == "RuntimeError: boom at M=4" for why in raised)
    off = [why for label, why in results.items() if " M=4 " not in label]
    assert off and all(why.startswith("call 0: rel_l2 ") for why in off)
    assert 4 in calls and len(set(calls)) > 1          # the sweep went on past the raising shape


def test_cli_exit_status(capsys):
    assert main(["torch_linear", "--workload", str(TINY), "--all-shapes"]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS ") == len(workload_rows(load_workload(TINY))) and "# 0 failed" in out
