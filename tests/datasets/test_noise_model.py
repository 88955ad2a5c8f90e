"""datasets.noise_model: the one band lookup and verdict every decision calls (the Compare page and reports, the
tuner, the canary, the wide-interval flag); a device gets only its own kind's evidence, or the run's own repeat, or
no verdict with how to make some; no typed noise threshold anywhere else in the code."""
import json
import re
from pathlib import Path

import pytest

from datasets import noise_model as nm

ROOT = Path(__file__).resolve().parents[2]


def test_a_device_without_evidence_gets_no_band_and_is_told_how_to_make_some():
    b = nm.band(nm.WITHIN, nm.LOAD, "CPU: Some CPU", "M 1")
    assert not b.known and b.frac is None
    assert b.text().startswith("no verdict: no repeat evidence on CPU: Some CPU; make some: ")
    assert "--device cpu --plan baseline --plan baseline" in b.text()
    assert nm.verdict(1.5, 1.6, b) == nm.NO_VERDICT and nm.verdict(float("nan"), 1.0, b) == nm.NO_SAMPLES
    # another GPU model without committed repeats: never the H200's band
    b = nm.band(nm.ACROSS, nm.SHAPE, "NVIDIA B200", "o M 1")
    assert not b.known and "H200" not in b.text()


def test_the_same_kind_of_device_finds_its_evidence_under_another_driver_name():
    assert nm.has_evidence("NVIDIA H200") and not nm.has_evidence("NVIDIA H100 PCIe")
    b = nm.band(nm.WITHIN, nm.SHAPE, "NVIDIA H200", nm.shape_key("router", 16))
    assert b.known and b.key == "router M 2–32" and b.gpu == "NVIDIA H200"


def test_a_runs_own_repeat_bounds_a_band_when_the_device_has_none():
    own = {nm.WITHIN: {nm.SHAPE: {nm.POOLED: {"band": 0.031, "runs": 1, "pairs": 6, "files": [0]}}}}
    b = nm.band(nm.WITHIN, nm.SHAPE, "CPU: Some CPU", "proj M 1", own=own)
    assert b.frac == 0.031 and b.source == nm.OWN and "this run's own repeat (6 identical-route pairs)" in b.text()
    assert nm.verdict(1.02, 1.03, b) == nm.SAME and nm.verdict(1.04, 1.05, b) == nm.FAST
    # the run's own evidence has no load level here: no verdict there, never a borrowed band
    assert not nm.band(nm.WITHIN, nm.LOAD, "CPU: Some CPU", "M 1", own=own).known


def test_band_from_deviations_is_the_derivations_rule():
    assert nm.band_from_deviations([0.01, 0.02, 0.03], nm.SHAPE) is None          # fewer than MIN_PAIRS
    devs = [0.01, 0.02, 0.03, 0.0412]
    assert nm.band_from_deviations(devs, nm.LOAD) == 0.042                       # the largest, rounded up
    assert 0.04 < nm.band_from_deviations(devs, nm.SHAPE) <= 0.042               # the 99th percentile
    assert nm.within(10.3, 10.0, nm.fixed(0.03)) and not nm.within(10.4, 10.0, nm.fixed(0.03))
    assert not nm.within(10.1, 10.0, None) and nm.within(10.0, 10.0, None)


# A noise threshold typed into the code: a name for one, or a tolerance/band/noise/win/spread number assigned.
TYPED = re.compile(r"\b(NOISE_TOL|MIN_WIN|CANARY_BAND|REPEAT_FACTOR|max_half_width_fraction)\b"
                   r"|\b\w*(tol|band(?!width)|noise|win|spread|factor)\w*\"?\s*(?::[^=\n]*=|:|=)[^\n]*?\b0\.0*[1-9]", re.I)
# Numbers that are not noise thresholds although their names match: the contract's accuracy tolerances and flag
# factors (profiler/check: what a correct output is), the workload's, the kernels' tiling.
NOT_NOISE = re.compile(r"rel_l2_tol|probe_noise_rel|error_factor|row_bound_factor|vs_baseline_flag_factor|"
                       r"outlier|sparse_probe|min_clock_fraction|rse_target|idle_sm_share|atol|rtol", re.I)


@pytest.mark.parametrize("line", [
    "NOISE_TOL = 0.02          # neighbours", "MIN_WIN = 0.02", "CANARY_BAND = 0.15", "REPEAT_FACTOR = 3.0",
    "def ci_too_wide(median, lo, hi, max_half_width_fraction: float = 0.05) -> bool:",
    "    win_band = 0.03", "SPREAD_LIMIT: float = 0.1"])
def test_the_grep_finds_a_typed_threshold(line):
    code = line.split("#", 1)[0]
    assert TYPED.search(code) and not NOT_NOISE.search(code)


def test_no_noise_threshold_is_typed_outside_the_noise_model():
    offenders = []
    for folder in ("profiler", "kernels", "datasets", "dashboard", "ui", "app_pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "noise_model.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if TYPED.search(code) and not NOT_NOISE.search(code):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_tuner_the_canary_and_the_wide_interval_flag_ask_the_noise_model(monkeypatch):
    """One parameter walk: a band file with other numbers changes every decision the same way."""
    from profiler.commands import canary, tune_rules
    from profiler.measure import stats

    content = json.loads(nm.BANDS_FILE.read_text())
    for kind in content["bands"]["NVIDIA H200"].values():
        for level in kind.values():
            for entry in level.values():
                entry["band"] = 0.25
    monkeypatch.setattr(nm, "_read", lambda path: content["bands"])
    assert tune_rules.point_band("o", 1, "NVIDIA H200").frac == 0.25
    assert canary.device_band([], [], "baseline", "NVIDIA H200")[0] == 0.25
    assert not stats.ci_too_wide(10.0, 8.0, 12.0, "NVIDIA H200")      # half-width 20 % < 25 %
    assert stats.ci_too_wide(10.0, 7.0, 13.0, "NVIDIA H200")
    assert not stats.ci_too_wide(10.0, 1.0, 19.0, "CPU: Some CPU")     # no band to be wide against
    # the pages, reports and `compare` read the same lookup (dashboard.model.noise re-exports it)
    from dashboard.model import compare, noise
    assert noise.band is nm.band and noise.verdict is nm.verdict
    assert compare._Bands(nm.WITHIN, "NVIDIA H200", None)(nm.LOAD, "M 1").frac == 0.25


@pytest.mark.parametrize("gpu", ["CPU: Some CPU", "NVIDIA B200"])
def test_the_canary_on_a_device_without_evidence_uses_its_own_clean_repeats(gpu):
    from profiler.commands import canary

    first = [{"load": "l", "family": f, "M": 1, "candidate": "b", "median_us": 10.0} for f in "abc"]
    again = [dict(r, median_us=10.5) for r in first] + [dict(r, median_us=9.8) for r in first]
    band, ev = canary.device_band(first, again, "b", gpu)
    devs = [0.05] * 3 + [10 / 9.8 - 1] * 3 + [10.5 / 9.8 - 1] * 3
    assert band == nm.band_from_repeats(devs, nm.SHAPE) and band > max(devs)   # a bound, wider than any seen
    # more repeats of the same spread give a narrower bound, never a wider one; too few give none
    assert nm.band_from_repeats(devs * 4, nm.SHAPE) < band and nm.band_from_repeats(devs[:3], nm.SHAPE) is None
    assert nm.band_words(band).startswith("±") and nm.band_words(30.0) == "a factor of 31"
    assert ev["repeat_pairs"] == 9 and gpu in ev["source"]


def test_a_run_with_its_own_repeat_gets_verdicts_from_it_on_a_device_without_evidence(tmp_path):
    """A repeatability run (baseline and baseline#2) moved to a device without committed evidence: its comparisons
    read against its own repeat where that has enough pairs (per load), NO VERDICT where it has not (overall: one
    pair), and never the H200's band."""
    from dashboard.model import compare, runs
    from datasets.jsonfile import read_json

    src = ROOT / "datasets" / "runs" / "2026-11-30_nvidia-h200_baseline-vs-baseline-a.json"
    run = read_json(src)
    run["environment"]["gpu"] = "CPU: Some CPU"
    path = tmp_path / "2026-11-30_cpu-some-cpu_baseline-vs-baseline-a.json"
    path.write_text(json.dumps(run))
    data = runs.load_run_data(path)
    cmp = compare.compare_runs(data, "baseline", data, "baseline#2", n_boot=50)
    assert not cmp.loads["band_source"].str.contains("H200").any()
    assert cmp.loads["band_source"].str.contains("this run's own repeat").all()
    assert set(cmp.loads["verdict"]) <= {nm.SAME, nm.AMBIGUOUS, nm.SAME_ROUTE}
    assert cmp.overall.iloc[0]["verdict"] == nm.NO_VERDICT
