"""Eager (host-inclusive) time beside graph time, on the SYNTHETIC fixture 2000-01-04_synthetic_synthetic-eager.json
(made-up eager times: graph median + 4 µs baseline, + 12 µs seed036): each side's eager time and host cost per
shape, host-bound exactly where eager − graph > graph, never scored; old runs without eager_us show none."""
import json
from pathlib import Path

import numpy as np

from dashboard.model import eager, runs, views
from dashboard.documents import report

ROOT = Path(__file__).resolve().parents[2]
EAGER = ROOT / "tests" / "fixtures" / "runs" / "2000-01-04_synthetic_synthetic-eager.json"
PLAIN = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json"


def _wide(path):
    data = runs.load_run_data(path)
    return data, views.wide_shapes(runs.shape_table(data), data.pairs, "baseline", "seed036")


def test_eager_times_and_host_cost_per_shape():
    data, wide = _wide(EAGER)
    raw = {(r["load"], r["family"], r["candidate"]): r for r in json.loads(EAGER.read_text())["results"]}
    for row in wide.itertuples():
        base, cand = raw[(row.load, row.family, "baseline")], raw[(row.load, row.family, "seed036")]
        assert row.eager_baseline_us == base["eager_us"] and row.eager_candidate_us == cand["eager_us"]
        assert row.host_candidate_us == cand["eager_us"] - cand["median_us"]
        assert row.host_bound_candidate == (cand["eager_us"] - cand["median_us"] > cand["median_us"])
    assert 0 < wide["host_bound_candidate"].sum() < len(wide)      # some shapes host-bound, not all
    assert not wide["host_bound_baseline"].any()
    text = eager.host_bound_text(wide, "baseline", "seed036")
    first = wide[wide["host_bound_candidate"]].iloc[0]
    assert text.startswith(f"Host cost exceeds kernel time when called eagerly at {wide['host_bound_candidate'].sum()}")
    assert f"seed036 at {first['shape']} (eager {first['eager_candidate_us']:.1f} µs" in text
    # never scored: the score is the graph times' alone
    assert runs.run_score(data, "baseline", "seed036").score == runs.run_score(runs.load_run_data(PLAIN), "baseline",
                                                                                "seed036").score


def test_a_run_without_eager_times_shows_none_and_flags_nothing():
    _, wide = _wide(PLAIN)
    assert wide["eager_candidate_us"].isna().all() and not wide["host_bound_candidate"].any()
    assert eager.host_bound_text(wide, "baseline", "seed036") is None
    assert list(eager.host_bound([2.0, 3.0, np.nan], [1.0, 2.0, 1.0])) == [False, False, False]
    assert list(eager.host_bound([2.1, 8.0], [1.0, 2.0])) == [True, True]


def test_the_report_shows_eager_beside_graph_and_says_where_the_host_dominates():
    rep = report.build_from_path(EAGER)
    text = rep.markdown()
    assert "candidate eager µs" in text and "kernel (eager)" in text
    assert "Eager vs graph (measured)" in text and "Host cost exceeds kernel time" in text
    assert "**eager vs graph time**" in text                     # the glossary entry, in the Terms
    assert rep.summary["host_bound_results"] == int(_wide(EAGER)[1]["host_bound_candidate"].sum())
    plain = report.build_from_path(PLAIN).markdown()
    assert "eager µs" not in plain and "Eager vs graph" not in plain
