"""The data work the run pages hand to ui/ (ui.tables, ui.steps, ui.compare): filters, notes and joins as functions,
checked on small frames here and on the committed runs by the pages' tests (tests/app/test_same_pages.py)."""
import pandas as pd

from ui import compare, steps, tables


def _wide():
    return pd.DataFrame({"shape": ["decode 1/o", "decode 1/router", "verify 8/o"],
                         "load": ["decode 1", "decode 1", "verify 8"], "family": ["o", "router", "o"],
                         "flags": ["", "below_floor", ""], "usable": [True, False, True],
                         "sol_baseline": [0.5, 1.02, 0.7], "sol_candidate": [0.9, 0.8, 1.1]})


def test_filter_shapes_by_load_family_and_flag():
    wide = _wide()
    assert tables.filter_shapes(wide, [], [], False).equals(wide)
    assert list(tables.filter_shapes(wide, ["decode 1"], [], False)["shape"]) == ["decode 1/o", "decode 1/router"]
    assert list(tables.filter_shapes(wide, [], ["o"], False)["shape"]) == ["decode 1/o", "verify 8/o"]
    assert list(tables.filter_shapes(wide, ["decode 1"], ["o"], False)["shape"]) == ["decode 1/o"]
    assert list(tables.filter_shapes(wide, [], [], True)["shape"]) == ["decode 1/router"]


def test_sol_over_100_note_names_each_load_and_shape_by_the_pairs_names():
    names = {"baseline": "base", "candidate": "cand"}
    loads = pd.DataFrame({"load": ["decode 1", "verify 8"], "sol_baseline": [0.9, 0.7], "sol_candidate": [0.8, 1.05]})
    note = tables.sol_over_100_note(loads, _wide(), names)
    assert note == ("per load: verify 8 (cand 105.0%); per shape: decode 1/router (base 102.0%), "
                    "verify 8/o (cand 110.0%)")
    under = loads.assign(sol_candidate=[0.8, 0.9])
    assert tables.sol_over_100_note(under, _wide().assign(sol_baseline=0.5, sol_candidate=0.5), names) is None


def test_flag_counts_counts_results_with_a_flag_and_each_flag():
    results = pd.DataFrame({"flags": [[], ["below_floor"], ["below_floor", "throttled"], []]})
    flagged, counts = tables.flag_counts(results)
    assert flagged == 2 and counts.to_dict() == {"below_floor": 2, "throttled": 1}


def test_with_intervals_joins_by_load_and_leaves_a_table_alone_without_a_comparison():
    bars = pd.DataFrame({"load": ["a", "b"], "ratio": [1.1, 0.9]})
    loads = bars.copy()
    assert tables.with_intervals(bars, loads, None) == (bars, loads)

    class Comparison:
        loads = pd.DataFrame({"load": ["b", "a"], "ci_low": [0.8, 1.0], "ci_high": [1.0, 1.2],
                              "verdict": ["AMBIGUOUS", "FAST"], "band": [0.05, 0.05]})

    new_bars, new_loads = tables.with_intervals(bars, loads, Comparison())
    assert list(new_bars["ci_low"]) == [1.0, 0.8] and list(new_loads["verdict"]) == ["FAST", "AMBIGUOUS"]
    assert list(new_loads["ci"]) == [tables.ci_text(1.0, 1.2), tables.ci_text(0.8, 1.0)]


def test_step_tables_at_a_point_keep_only_its_rows():
    table = pd.DataFrame({"batch": [1, 1, 8], "context": [1024, 4096, 1024], "x": [1, 2, 3]})
    assert list(steps.step_model.at_point(table, 1, 4096)["x"]) == [2]
    assert steps.step_model.at_point(table, 8, 4096).empty
    empty = pd.DataFrame()
    assert steps.step_model.at_point(empty, 1, 1) is empty


def test_default_series_is_the_first_pair_then_each_other_sources_candidate_of_the_same_workload(monkeypatch):
    same = {("a", "b"): True, ("a", "c"): False}
    monkeypatch.setattr(compare, "same_workload", lambda x, y: same[(x, y)])
    pairs = [["a · baseline", "a · best"], ["b · baseline", "b · tuned"], ["c · baseline", "c · other"]]
    assert compare.default_series(pairs, ["a", "b", "c"]) == ["a · baseline", "a · best", "b · tuned"]
    assert compare.default_series([], []) == []
