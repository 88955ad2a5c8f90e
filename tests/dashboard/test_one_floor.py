"""One floor per (run, shape): SOL of a sweep's shape is the same number in `python -m dashboard table`, the Shapes
page's table (dashboard.model.views.wide_shapes) and the Kernels page (dashboard.model.kernels.sweep_sol), over the committed
sweeps; `python -m dashboard explain` names its own run as the source of its floors."""
import re
from pathlib import Path

import pytest

from dashboard.cli import main as cli
from dashboard.model import kernels, run_kinds, runs, views

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "datasets" / "runs"
SHIPPED = run_kinds.SHIPPED_PLAN
# the newest sweeps of the shipped plan (the ones the app opens on and RESULTS.md shows)
SWEEPS = ["2026-12-04_nvidia-h200_baseline-seed036-seed039-best-final.json.gz",
          "2026-12-04_nvidia-h200_baseline-vs-best-b-final.json.gz",
          "2026-12-03_nvidia-h200_baseline-seed036-seed039-best-pinned.json"]
EXPLAIN = "2026-12-04_nvidia-h200_explain-baseline-best-lt-m32.json"
ROW = re.compile(r"^  (\S+ \d+/\S+)\s+\d+\s.*?\s(\d+\.\d+)%\s+(memory|compute)$")


@pytest.mark.parametrize("name", SWEEPS)
def test_sol_of_a_sweep_is_one_number_on_every_surface(name, capsys):
    data = runs.load_run_data(RUNS / name)
    wide = views.wide_shapes(runs.shape_table(data), data.pairs, "baseline", SHIPPED,
                             runs.pair_gate(data, "baseline", SHIPPED, scored_only=False))
    wide = wide[wide["load"].isin(data.workload.load_order)].set_index("shape")
    assert cli.main(["table", str(RUNS / name), "--candidate", SHIPPED]) == 0
    printed = {m.group(1): float(m.group(2)) / 100 for m in map(ROW.match, capsys.readouterr().out.splitlines())
               if m}
    assert set(printed) == set(wide.index)
    for shape, row in wide.iterrows():
        on_kernels = kernels.sweep_sol(data, shape).set_index("candidate").loc[SHIPPED, "sol"]
        assert on_kernels == pytest.approx(row["sol_candidate"], rel=1e-12), shape
        assert printed[shape] == pytest.approx(row["sol_candidate"], abs=5e-4), shape


def test_explain_names_the_run_its_floors_come_from(capsys):
    assert cli.main(["explain", str(RUNS / EXPLAIN)]) == 0
    out = capsys.readouterr().out
    assert f"derived from {EXPLAIN}'s own probes" in out and "not a sweep's" in out


def test_sweep_sol_of_a_shape_the_sweep_lacks_is_empty():
    data = runs.load_run_data(RUNS / SWEEPS[1])
    assert kernels.sweep_sol(data, "decode 1/no_such_family").empty
