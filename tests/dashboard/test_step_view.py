"""dashboard/model/step.py on a step run made by `python -m profiler step --device cpu` (tests/fixtures/app/
step_cpu_tiny.json): Amdahl's prediction is formed from the run's own per-shape medians and breakdown (checked here
against the run file's numbers, recomputed independently), the breakdown's parts add up to the step, and the CLI
prints the table with no None or nan. CPU times are wall-clock times on a shared machine: only their arithmetic is
checked, never their size."""
import json
import math
from pathlib import Path

import pytest

from dashboard.model import runs, step
from dashboard.cli.main import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "app" / "step_cpu_tiny.json"
FAMILIES = ["qkv", "o", "gate_up", "down"]


@pytest.fixture(scope="module")
def data():
    return runs.load_run_data(FIXTURE)


@pytest.fixture(scope="module")
def raw():
    return json.loads(FIXTURE.read_text())


def test_the_run_is_a_step_run(data):
    from dashboard.model import run_kinds

    assert step.has_step(data.run) and run_kinds.kind_of(data.run) == run_kinds.STEP
    assert step.families(data) == FAMILIES and step.baseline(data) == "baseline"
    assert step.points(data) == [(1, 16), (4, 16), (1, 48), (4, 48)]
    assert step.on_cpu(data)


def _median(raw, name, family, M):
    (r,) = [r for r in raw["results"] if (r["candidate"], r["family"], r["M"]) == (name, family, M)]
    return r["median_us"]


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_amdahl_is_formed_from_the_runs_own_numbers(data, raw, mode):
    amd = step.amdahl_table(data, mode)
    assert len(amd) == 4 and set(amd["candidate"]) == {"linear_module"}
    for rec, row in zip(raw["step"]["points"], amd.itertuples()):
        by = {c["candidate"]: c for c in rec["candidates"]}
        base, cand = by["baseline"], by["linear_module"]
        b = rec["point"]["batch"]
        s_iso = (sum(_median(raw, "baseline", f, b) for f in FAMILIES)
                 / sum(_median(raw, "linear_module", f, b) for f in FAMILIES))
        p = sum(base["breakdown"][mode][f] for f in FAMILIES) / base[mode]["median_us"]
        assert row.s_isolated == pytest.approx(s_iso) and row.p == pytest.approx(p)
        if p <= 1:
            assert row.predicted == pytest.approx(1 / ((1 - p) + p / s_iso))
        else:   # a CPU breakdown slower than the timed step: no prediction is formed
            assert math.isnan(row.predicted)
        (pair,) = rec["pairs"]
        assert row.measured == pair[mode]["ratio_median"]
        assert row.measured_ci_low == pair[mode]["ratio_ci_low"]
        s_in = (sum(base["breakdown"][mode][f] for f in FAMILIES)
                / sum(cand["breakdown"][mode][f] for f in FAMILIES))
        assert row.s_in_step == pytest.approx(s_in)


def test_the_parts_add_up_to_the_step(data, raw):
    bd = step.breakdown_table(data, "cold")
    for rec in raw["step"]["points"]:
        for c in rec["candidates"]:
            if not c["correct"]:
                assert bd[bd["candidate"] == c["candidate"]].empty
                continue
            rows = bd[(bd["batch"] == rec["point"]["batch"]) & (bd["context"] == rec["point"]["context"])
                      & (bd["candidate"] == c["candidate"])]
            assert list(rows["part"]) == [*FAMILIES, "attention", "norms_activations", "rest", "unattributed"]
            assert rows["us"].sum() == pytest.approx(c["cold"]["median_us"])


def test_in_step_vs_isolated_per_family(data, raw):
    fam = step.family_table(data, "warm")
    rec = raw["step"]["points"][1]
    row = fam[(fam["batch"] == 4) & (fam["context"] == 16) & (fam["candidate"] == "baseline")
              & (fam["family"] == "gate_up")].iloc[0]
    base = next(c for c in rec["candidates"] if c["candidate"] == "baseline")
    assert row.in_step_us == pytest.approx(base["breakdown"]["warm"]["gate_up"] / rec["point"]["layers"])
    assert row.isolated_us == _median(raw, "baseline", "gate_up", 4)


def test_display_tables_hold_no_nan(data):
    for mode in ("cold", "warm"):
        for frame in (step.display_amdahl(step.amdahl_table(data, mode)),
                      step.display_families(step.family_table(data, mode))):
            text = frame.to_string()
            assert not frame.empty and "nan" not in text.lower() and "None" not in text


def test_the_cli_prints_the_table(capsys):
    assert main(["step", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "predicted" in out and "linear_module" in out and "FAILED" in out and "scaled_2pct" in out
    assert "nan" not in out.lower() and "None" not in out
    assert main(["step", str(FIXTURE), "--mode", "warm"]) == 0


def test_the_cli_refuses_a_run_that_is_not_a_step_run(capsys):
    other = Path(__file__).resolve().parents[1] / "fixtures" / "app" / "synthetic_a.json"
    assert main(["step", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a step run" in err


def test_the_report_has_a_step_section(tmp_path):
    from dashboard.cli.report_cli import main as report_main

    assert report_main([str(FIXTURE), "--out", str(tmp_path), "--format", "md,html"]) == 0
    (md,) = tmp_path.glob("*.md")
    text = md.read_text()
    assert "Decode step, cold: Amdahl predicted (derived) vs measured" in text
    assert "Decode step, warm: in the step vs alone, per family" in text
    assert "nan" not in text.lower() and "None" not in text
    (page,) = tmp_path.glob("*.html")
    assert page.read_text().count("Where the step") >= 4   # a stacked bar per point


def test_a_candidate_name_cannot_add_markup_to_the_figures(data):
    import plotly.io as pio

    from dashboard.plots import step_figures

    evil = '<a href="https://example.invalid">x</a>%{y}'
    amd = step.amdahl_table(data).assign(candidate=evil)
    fam = step.family_table(data)
    fam = fam[(fam["candidate"] == "linear_module") & (fam["batch"] == 4) & (fam["context"] == 16)].assign(
        candidate=evil)
    bd = step.breakdown_table(data)
    bd = bd[(bd["candidate"] == "linear_module") & (bd["batch"] == 4) & (bd["context"] == 16)].assign(candidate=evil)
    for fig in (step_figures.amdahl_curve(amd.iloc[1:2], "s"), step_figures.family_bars(fam, "s"),
                step_figures.step_bars(bd, step.families(data), "s")):
        text = pio.to_json(fig, validate=False)
        assert "<a href" not in text and '\\u003ca href' not in text


def test_the_contract_at_the_steps_shapes_is_shown_beside_the_step(data, raw):
    """A step that passes its own rule may hold a projection the contract refuses: the verdict at the step's shapes
    (the same run's) is read from the run, per candidate and batch."""
    failed = {f["family"] for f in raw["failures"] if f["candidate"] == "scaled_2pct" and f["M"] == 4}
    assert failed == set(FAMILIES)
    assert step.shapes_verdict(data, FAMILIES, 4, "scaled_2pct") == "failed the contract at down, gate_up, o, qkv"
    assert step.shapes_verdict(data, FAMILIES, 4, "linear_module") == "yes"
    assert step.shapes_verdict(data, FAMILIES, 2, "linear_module") == "no result at down, gate_up, o, qkv"
    assert set(step.amdahl_table(data)["shapes_correct"]) == {"yes"}
