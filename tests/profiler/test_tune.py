"""profiler/tune.py on CPU: the robustness rule, range building, candidates, a whole tune_point with a fake
timer (real correctness checks through torch_linear on CPU), and the plan it writes validates."""
from dataclasses import dataclass

import numpy as np
import pytest

from kernels.method import Method
from kernels.registry import METHODS
from profiler import tune

ROUTER_SPEC = {"N": 256, "K": 8192, "x_dtype": "bfloat16", "w_dtype": "float32", "y_dtype": "float32",
               "rel_l2_tol": 1e-4}


def _t(name, med, cfg=None):
    return tune.Timed(name, cfg or {}, np.full(8, float(med)))


def test_robust_rule_keeps_winner_within_noise():
    w, r = _t("a", 10.0), _t("b", 10.1)
    choice, why = tune.robust_choice(w, r, {7: (10.1, 10.0), 9: (10.0, 10.3)})   # 1% slower at M=7: noise
    assert choice is w and "within" in why


def test_robust_rule_takes_runner_up_when_winner_breaks_next_door():
    w, r = _t("a", 10.0), _t("b", 10.2)
    choice, why = tune.robust_choice(w, r, {7: (13.0, 10.1), 9: (10.0, 10.3)})
    assert choice is r and "summed" in why


def test_robust_rule_winner_keeps_lower_sum():
    w, r = _t("a", 8.0), _t("b", 11.0)
    choice, _ = tune.robust_choice(w, r, {7: (10.5, 10.0), 9: (8.0, 11.0)})  # 5% worse at 7, far better total
    assert choice is w


def test_robust_rule_correctness_failure_and_no_neighbours():
    w, r = _t("a", 8.0), _t("b", 11.0)
    assert tune.robust_choice(w, r, {2: (None, 11.0)})[0] is r
    assert tune.robust_choice(w, r, {})[0] is w
    assert tune.robust_choice(w, r, {2: (8.0, None)})[0] is w


def test_build_ranges_midpoints_and_guards():
    gemv = ("router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]))
    atom = ("router_hilo_atomic", dict(METHODS["router_hilo_atomic"].configs[0]))
    split = ("router_hilo_splitk", dict(METHODS["router_hilo_splitk"].configs[0]))
    packed = ("router_hilo_packed_mm", {})
    winners = {1: gemv, 8: atom, 16: atom, 32: split, 128: packed, 256: packed}
    entries = tune.build_ranges("router", winners, ROUTER_SPEC, METHODS)
    got = [(e["M"], e["method"]) for e in entries]
    # M=2..4 are nearest to 1, but gemv serves M=1 only: they go to M=8's winner. Midpoints: 24, 80, 192.
    assert got == [([1, 1], "router_gemv_fp32"), ([2, 24], "router_hilo_atomic"),
                   ([25, 80], "router_hilo_splitk"), ([81, 256], "router_hilo_packed_mm")]


def test_build_ranges_falls_back_to_baseline():
    gemv = ("router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]))
    entries = tune.build_ranges("router", {1: gemv, 8: gemv}, ROUTER_SPEC, METHODS)   # fake: gemv "won" at 8
    assert [(e["M"], e["method"]) for e in entries] == [([1, 1], "router_gemv_fp32"), ([2, 8], "torch_linear")]


def test_candidates_baseline_first_and_guarded():
    c = tune.candidates(METHODS, "router", 1, 256, 8192)
    assert c[0] == ("torch_linear", {})
    names = {n for n, _ in c}
    assert {"router_gemv_fp32", "router_hilo_atomic_pdl", "router_hilo_packed_mm"} <= names
    assert "router_gemv_fp32" not in {n for n, _ in tune.candidates(METHODS, "router", 2, 256, 8192)}
    only = tune.candidates(METHODS, "router", 8, 256, 8192, only=["router_hilo_splitk"])
    assert {n for n, _ in only} == {"torch_linear", "router_hilo_splitk"}


@dataclass(frozen=True)
class _LossyMethod(Method):
    """Runs the baseline on BF16-rounded weights: fails the router's sparse probe (and rel-L2)."""

    def prepare(self, weight, family, config):
        import torch

        return weight.to(torch.bfloat16).to(torch.float32)

    def run(self, state, x):
        return x.float() @ state.T


def _fake_methods():
    base = METHODS["torch_linear"]
    fast = Method("fake_fast", ("router",), base.impl, "baseline under another name",
                  params={"v": (1, 2)}, configs=({"v": 1}, {"v": 2}))
    lossy = _LossyMethod("fake_lossy", ("router",), base.impl, "bf16 weights")
    return {"torch_linear": base, "fake_fast": fast, "fake_lossy": lossy}


class _FakeSweep(tune.Sweep):
    """Times from a table instead of a GPU: {(method, v or None, M): us}."""

    def __init__(self, table, **kw):
        super().__init__(_fake_methods(), timer=None, device="cpu", log=lambda *a: None, **kw)
        self.table = table
        self._M = None

    def time(self, family, M, N, K, spec, cands, x, rounds, stage):
        rng = np.random.default_rng(M)
        return [tune.Timed(n, c, self.table[(n, c.get("v"), M)] * (1 + 0.001 * rng.standard_normal(rounds)),
                           stage) for n, c in cands]


def _point(M):
    return tune.Point("router", M, 256, 8192, "decode 16", ROUTER_SPEC)


def test_tune_point_rejects_lossy_and_applies_neighbour_rule():
    pytest.importorskip("torch")
    table = {}
    for M in (15, 16, 17):
        table[("torch_linear", None, M)] = 15.0
        table[("fake_lossy", None, M)] = 1.0          # fastest but wrong: must never be timed
        table[("fake_fast", 1, M)] = 9.9 if M == 16 else 14.0   # wins only at exactly M=16
        table[("fake_fast", 2, M)] = 10.0
    sw = _FakeSweep(table, final_rounds=8, screen_rounds=4)
    d = sw.tune_point(_point(16))
    assert "fake_lossy" in d.rejected and any("sparse" in r or "rel-L2" in r for r in d.rejected["fake_lossy"])
    assert (d.method, d.config) == ("fake_fast", {"v": 2}), d.rule       # the robust one
    assert d.baseline_us == pytest.approx(15.0, rel=0.01)
    assert set(d.neighbours) == {"15", "17"}
    loads = {r["load"] for r in sw.results}
    assert loads == {"decode 16", "nearby"} and all(r["correct"] for r in sw.results)
    assert sw.pairs and sw.pairs[0]["ratio_median"] == pytest.approx(1.5, rel=0.01)


def test_make_plan_validates_with_real_methods():
    from datasets import load_workload
    from kernels.plans import load_plan, plan_from_dict

    wl = load_workload()
    base = {"families": {k: [dict(e) for e in v] for k, v in
                         __import__("json").loads(open(load_plan("baseline").path).read())["families"].items()}}
    atom = METHODS["router_hilo_atomic"].configs[0]
    ds = [tune.Decision("router", 1, "router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]), 3.9, 10.5)]
    ds += [tune.Decision("router", M, "router_hilo_atomic", dict(atom), 5.0, 15.0) for M in (8, 16, 32, 128)]
    ds += [tune.Decision("router", 256, "router_hilo_packed_mm", {}, 8.0, 17.0)]
    plan = tune.make_plan(ds, METHODS, wl, base, "NVIDIA H200", "datasets/runs/x_tune.json", "test")
    p = plan_from_dict(plan, "best.json", wl)
    assert p.select("router", 1)[0] == "router_gemv_fp32"
    assert p.select("router", 3)[0] == "router_hilo_atomic"
    assert p.select("router", 200)[0] == "router_hilo_packed_mm"
    assert p.select("o", 1)[0] == "torch_linear" and p.tuned_from == "datasets/runs/x_tune.json"


def test_cli_arguments():
    a = tune.parse_args(["--shapes", "official", "--families", "router", "o", "--budget-s", "100",
                         "--out-plan", "/tmp/p.json"])
    assert a.families == ["router", "o"] and a.budget_s == 100 and a.out_plan == "/tmp/p.json"
    with pytest.raises(SystemExit):
        tune.parse_args(["--shapes", "everything"])


def test_baseline_kept_unless_the_win_is_significant():
    import numpy as np

    from profiler.tune import BASELINE, Decision, Timed, keep_baseline_unless_significant

    rng = np.random.default_rng(0)
    base = Timed(BASELINE, {}, 10.0 + rng.normal(0, 0.05, 64), "final")
    small = Timed("gemv", {"BN": 1}, 9.95 + rng.normal(0, 0.05, 64), "final")   # 0.5% faster: not enough
    big = Timed("gemv", {"BN": 2}, 9.0 + rng.normal(0, 0.05, 64), "final")      # 11% faster: keep it
    d = Decision("o", 1, "gemv", {"BN": 1}, small.median, base.median)
    note = keep_baseline_unless_significant(d, base, small)
    assert (d.method, d.config) == (BASELINE, {}) and "baseline kept" in note
    d = Decision("o", 1, "gemv", {"BN": 2}, big.median, base.median)
    note = keep_baseline_unless_significant(d, base, big)
    assert (d.method, d.config) == ("gemv", {"BN": 2}) and "beats baseline" in note


def test_range_notes_are_not_repeated_and_run_path_is_repo_relative():
    from kernels.registry import METHODS
    from profiler.tune import build_ranges, committed_run_path

    spec = {"N": 2304, "K": 8192}
    winners = {1: ("torch_linear", {}), 8: ("torch_linear", {}), 16: ("torch_linear", {})}
    notes = {1: "n1", 8: "n8", 16: "n16"}
    entries = build_ranges("qkv_gate", winners, spec, METHODS, notes)
    assert len(entries) == 1 and entries[0]["M"] == [1, 16]
    assert entries[0]["note"].split("; ") == ["n1", "n8", "n16"]
    assert committed_run_path("/root/out/2026-11-30_nvidia-h200_tune.json") == \
        "datasets/runs/2026-11-30_nvidia-h200_tune.json"


# --- N-aware tuning: the unpooler is N=1024 at M=1 and M=8, N=8192 elsewhere ------------------------------------
UNPOOLER_SPEC = {"N": 8192, "K": 4096, "x_dtype": "bfloat16", "w_dtype": "bfloat16", "y_dtype": "bfloat16",
                 "rel_l2_tol": 1e-2, "N_by_M": {"1": 1024, "8": 1024}}


def test_build_ranges_makes_n_specific_unpooler_entries():
    gemv = ("gemv", dict(METHODS["gemv"].configs[0]))
    split = ("splitk", dict(METHODS["splitk"].configs[1]))
    winners = {1: gemv, 8: split, 16: ("mm_wt", {}), 32: ("mm_wt", {}), 128: ("mm_wt", {}),
               256: ("torch_linear", {})}
    notes = {M: f"n{M}" for M in winners}
    entries = tune.build_ranges("unpooler", winners, UNPOOLER_SPEC, METHODS, notes)
    got = [(e.get("N"), e["M"], e["method"]) for e in entries]
    # generic entries from the N=8192 points only (M < 16 takes M=16's winner); the N=1024 entries span 1..8
    assert got == [(None, [1, 192], "mm_wt"), (None, [193, 256], "torch_linear"),
                   (1024, [1, 1], "gemv"), (1024, [2, 8], "splitk")]
    assert entries[0]["note"] == "n16; n32; n128" and entries[3]["note"] == "n8"
    assert "splitk" not in {e["method"] for e in entries if "N" not in e}   # M=8's winner never reaches N=8192


def test_build_ranges_generic_below_smallest_point_respects_guard_and_n_only_families():
    gemv = ("gemv", dict(METHODS["gemv"].configs[0]))
    winners = {1: gemv, 8: gemv, 16: gemv}          # fake: gemv "won" at 8 and 16 (its guard admits M=1 only)
    entries = tune.build_ranges("unpooler", winners, UNPOOLER_SPEC, METHODS)
    assert [(e.get("N"), e["M"], e["method"]) for e in entries] == [
        (None, [1, 1], "gemv"), (None, [2, 16], "torch_linear"),       # below 16: its winner where admitted
        (1024, [1, 1], "gemv"), (1024, [2, 8], "torch_linear")]
    entries = tune.build_ranges("unpooler", {1: gemv, 8: ("torch_linear", {})}, UNPOOLER_SPEC, METHODS)
    assert [(e.get("N"), e["M"], e["method"]) for e in entries] == [     # no general-N point: generic baseline
        (None, [1, 8], "torch_linear"), (1024, [1, 1], "gemv"), (1024, [2, 8], "torch_linear")]


def test_make_plan_with_n_specific_entries_validates_and_dispatches_by_n():
    import json

    from datasets import load_workload
    from kernels.plans import load_plan, plan_from_dict

    wl = load_workload()
    base = json.loads(open(load_plan("baseline").path).read())
    split = dict(METHODS["splitk"].configs[1])
    ds = [tune.Decision("unpooler", 1, "gemv", dict(METHODS["gemv"].configs[0]), 5.0, 8.0),
          tune.Decision("unpooler", 8, "splitk", split, 6.0, 8.0)]
    ds += [tune.Decision("unpooler", M, "mm_wt", {}, 16.0, 17.0) for M in (16, 32, 128)]
    ds += [tune.Decision("unpooler", 256, "torch_linear", {}, 24.0, 24.0)]
    p = plan_from_dict(tune.make_plan(ds, METHODS, wl, base, "NVIDIA H200", "x.json", "t"), "best.json", wl)
    assert p.select("unpooler", 8, 1024) == ("splitk", split) and p.select("unpooler", 8)[0] == "splitk"
    for M in (2, 3, 7, 9):       # the nearby shapes, N=8192: never the M=8 (N=1024) winner
        assert p.select("unpooler", M)[0] == "mm_wt" and p.select("unpooler", M, 8192)[0] == "mm_wt"


def test_robust_rule_baseline_beats_a_winner_that_is_slower_than_it_next_door():
    base, w, r = _t("torch_linear", 15.0), _t("a", 9.0), _t("b", 9.5)
    # winner 20% slower than the baseline at M=15; runner-up also >2% slower there: the baseline is taken
    choice, why = tune.robust_choice(w, r, {15: (12.0, 11.0, 10.0), 17: (10.0, 10.0, 10.0)}, base)
    assert choice is base and "slower than the baseline" in why and "baseline taken" in why
    # runner-up within 2% of the baseline everywhere and the lower sum: the runner-up is taken
    choice, why = tune.robust_choice(w, r, {15: (12.0, 10.1, 10.0), 17: (10.0, 10.0, 10.0)}, base)
    assert choice is r and "runner-up taken" in why
    # winner within 2% of the baseline everywhere: the old winner-vs-runner-up rule decides (winner kept)
    choice, _ = tune.robust_choice(w, r, {15: (10.1, 10.0, 10.0), 17: (10.0, 10.0, 10.0)}, base)
    assert choice is w
    # no baseline medians (old 2-tuples): rule b is skipped
    assert tune.robust_choice(w, r, {15: (12.0, 11.0)}, base)[0] is r
    # winner and runner-up both fail correctness next door: the baseline
    assert tune.robust_choice(w, r, {15: (None, None, 10.0)}, base)[0] is base


def test_tune_point_baseline_beats_bad_winner_at_same_n_neighbour():
    pytest.importorskip("torch")
    table = {}
    for M in (15, 16, 17):
        table[("torch_linear", None, M)] = 15.0 if M == 16 else 10.0
        table[("fake_lossy", None, M)] = 1.0
        table[("fake_fast", 1, M)] = 9.0 if M == 16 else 12.0    # 20% slower than the baseline next door
        table[("fake_fast", 2, M)] = 9.5 if M == 16 else 11.0    # 10% slower too
    sw = _FakeSweep(table, final_rounds=8, screen_rounds=4)
    d = sw.tune_point(_point(16))
    assert (d.method, d.config) == ("torch_linear", {}), d.rule
    assert "slower than the baseline" in d.rule
    assert d.neighbours["15"]["N"] == 256 and d.neighbours["15"]["decides"]
    assert d.neighbours["15"]["baseline"] == pytest.approx(10.0, rel=0.01)


def test_tune_point_neighbours_at_another_n_are_timed_but_do_not_decide():
    pytest.importorskip("torch")
    spec = dict(ROUTER_SPEC, N_by_M={"8": 128})     # like the unpooler: M=8 is a narrower slice than M=7, 9
    table = {}
    for M in (7, 8, 9):
        table[("torch_linear", None, M)] = 15.0 if M == 8 else 10.0
        table[("fake_lossy", None, M)] = 1.0
        table[("fake_fast", 1, M)] = 9.0 if M == 8 else 30.0     # terrible at N=256, but M=8 runs N=128
        table[("fake_fast", 2, M)] = 9.5 if M == 8 else 10.0
    sw = _FakeSweep(table, final_rounds=8, screen_rounds=4)
    d = sw.tune_point(tune.Point("router", 8, 128, 8192, "verify 1", spec))
    assert (d.method, d.config) == ("fake_fast", {"v": 1}), d.rule
    assert "for the record only" in d.rule
    assert {m: (v["N"], v["decides"]) for m, v in d.neighbours.items()} == {"7": (256, False), "9": (256, False)}
    nearby = {(r["M"], r["N"]) for r in sw.results if r["load"] == "nearby"}
    assert nearby == {(7, 256), (9, 256)}     # timed at the neighbour's own N (n_for)
