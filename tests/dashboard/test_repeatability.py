"""dashboard.repeatability: SAME bands from runs that time one plan twice — on a synthetic run whose deviations are
known, and on the committed H200 repeatability runs (whose sweeps read FAST/SLOW at the 1% default)."""
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard import compare, repeatability, runs, scoring
from datasets import load_workload

WL = load_workload()


def _twice(deviation_by_shape: dict[str, float], name: str = "repeat.json", base_name: str = "baseline"):
    """A RunData whose candidate '<base>#2' is '<base>' × (1 + deviation) at each scored shape (0 elsewhere)."""
    rows = []
    for r in WL.shapes.itertuples():
        key = f"{r.load}/{r.family}"
        for cand, scale in ((base_name, 1.0), (f"{base_name}#2", 1 + deviation_by_shape.get(key, 0.0))):
            rows.append({"shape": key, "load": r.load, "family": r.family, "M": r.M, "N": r.N, "K": r.K,
                         "candidate": cand, "median_us": 10.0 * scale, "correct": True, "flags": [],
                         "samples_us": None})
    return runs.RunData(path=Path(name), run={"status": "complete", "label": name}, results=pd.DataFrame(rows),
                        pairs=pd.DataFrame(), probes=pd.DataFrame(), environment=pd.DataFrame())


def test_repeat_pairs_finds_a_plan_timed_against_itself():
    assert repeatability.repeat_pairs(_twice({})) == [("baseline", "baseline#2")]
    other = _twice({}).results.assign(candidate=lambda d: d["candidate"].str.replace("baseline#2", "best"))
    assert repeatability.repeat_pairs(runs.RunData(Path("x"), {}, other, pd.DataFrame(), pd.DataFrame(),
                                                   pd.DataFrame())) == []


def test_bands_are_the_largest_deviation_per_level_rounded_up():
    # One shape of decode 1 runs 4.2% slower in the repeat: ratio 1/1.042 → |ratio − 1| = 4.03% per shape;
    # decode 1's load ratio 50 / 50.42 → 0.833%; the score (one load moved) → (50/50.42)^(1/6).
    bands = repeatability.same_bands([_twice({"decode 1/o": 0.042})], WL)
    assert bands.shape == pytest.approx(0.041)
    assert bands.load == pytest.approx(0.009)
    assert bands.score == pytest.approx(0.002)
    assert bands.runs == ("repeat.json",) and bands.n_shapes == 30
    assert "1 repeatability run" in bands.describe() and "4.1% per shape" in bands.describe()


def test_bands_take_the_worst_run_and_skip_non_repeat_runs():
    a = _twice({"decode 1/o": 0.01}, "a.json")
    b = _twice({"verify 32/router": -0.03}, "b.json")
    not_repeat = _twice({"decode 1/o": 0.5}, "c.json", base_name="best")
    not_repeat.results["candidate"] = not_repeat.results["candidate"].str.replace("best#2", "seed036")
    bands = repeatability.same_bands([a, b, not_repeat], WL)
    assert bands.runs == ("a.json", "b.json")
    assert bands.shape == pytest.approx(0.031)  # |1/0.97 − 1| = 3.09% → 3.1%
    assert repeatability.same_bands([not_repeat], WL) is None


def test_a_partial_repeat_run_is_not_used():
    whole = _twice({"decode 1/o": 0.2})
    partial = dataclasses.replace(whole, results=whole.results.iloc[4:])
    assert repeatability.same_bands([partial], WL) is None


def test_apply_bands_judges_loads_and_overall_by_their_own_band():
    cmp = compare.Comparison("ref", 0.05, pd.DataFrame(),
                             pd.DataFrame({"series": ["s"], "load": ["L"], "ci_low": [1.006], "ci_high": [1.008],
                                           "verdict": ["SAME"]}),
                             pd.DataFrame({"series": ["s"], "ci_low": [1.004], "ci_high": [1.006],
                                           "verdict": ["SAME"]}))
    bands = repeatability.SameBands(shape=0.05, load=0.005, score=0.003, runs=("r",), n_shapes=30)
    judged = repeatability.apply_bands(cmp, bands)
    assert judged.loads["verdict"].tolist() == ["FAST"] and judged.overall["verdict"].tolist() == ["FAST"]
    assert cmp.loads["verdict"].tolist() == ["SAME"]  # the original is left alone
    gated = dataclasses.replace(cmp, overall=cmp.overall.assign(verdict=["NO SCORE"], ci_low=[float("nan")]))
    assert repeatability.apply_bands(gated, bands).overall["verdict"].tolist() == ["NO SCORE"]  # the gate's word


def _committed_repeats():
    paths = [p for p in runs.list_runs() if "baseline-vs-baseline" in p.name]
    if not paths:
        pytest.skip("no committed repeatability runs")
    return [runs.load_run_data(p) for p in paths]


def test_committed_repeats_read_fast_or_slow_at_one_percent_but_not_at_the_derived_band():
    """The reason the band is derived: identical kernels on the H200 get FAST/SLOW verdicts per shape at ε = 1%,
    and none at the band the repeats themselves give."""
    datas = _committed_repeats()
    bands = repeatability.same_bands(datas, WL)
    assert bands.shape > compare.EPS_DEFAULT
    weights = scoring.family_weights(WL)
    at_default, at_band = [], []
    for data in datas:
        for base, cand in repeatability.repeat_pairs(data):
            for eps, out in ((compare.EPS_DEFAULT, at_default), (bands.shape, at_band)):
                cmp = compare.compare_candidates(data.results, base, [cand], data.path.name, weights, eps)
                out += list(repeatability.apply_bands(cmp, bands).shapes["verdict"])
                assert repeatability.apply_bands(cmp, bands).overall["verdict"].iloc[0] in ("SAME", "AMBIGUOUS")
    assert {"FAST", "SLOW"} & set(at_default)
    assert not {"FAST", "SLOW"} & set(at_band)
    assert np.isfinite([bands.load, bands.score]).all() and bands.score < bands.load < bands.shape
