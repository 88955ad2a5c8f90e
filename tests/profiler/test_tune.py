"""The tuner on CPU: the selection rules (profiler/commands/tune_rules.py) -- robustness rule, range building, candidates,
a whole tune_point driven by a measure step that runs the worker's REAL quick correctness check
(profiler.check.contract.check_candidate with one eager call, through torch on CPU) with timings from a table -- the plan
it writes (validates, dispatches any M), and the CLI. The tuner through the worker process: test_tune_worker.py."""
import json

import numpy as np
import pytest

from datasets import load_workload
from kernels.method import BF16_X_FP32_W as FP32_W
from kernels.method import Method
from kernels.plans import DISPATCH_MAX_M, LIBRARY_NOTE
from kernels.registry import METHODS
from profiler.cli import tune as tune_cli
from datasets import noise_model
from profiler.commands import tune, tune_rules as rules

BAND = noise_model.fixed(0.02)   # the rules under a given band (the model's band: test_point_band_is_the_models)

ROUTER_SPEC = {"N": 256, "K": 8192, "x_dtype": "bfloat16", "w_dtype": "float32", "y_dtype": "float32",
               "rel_l2_tol": 1e-4}


def _t(name, med, cfg=None):
    return rules.Timed(name, cfg or {}, np.full(8, float(med)))


def test_robust_rule_keeps_winner_within_noise():
    w, r = _t("a", 10.0), _t("b", 10.1)
    choice, why = rules.robust_choice(w, r, {7: (10.1, 10.0), 9: (10.0, 10.3)}, band=BAND)   # 1% slower at M=7: noise
    assert choice is w and "within" in why


def test_robust_rule_takes_runner_up_when_winner_breaks_next_door():
    w, r = _t("a", 10.0), _t("b", 10.2)
    choice, why = rules.robust_choice(w, r, {7: (13.0, 10.1), 9: (10.0, 10.3)}, band=BAND)
    assert choice is r and "summed" in why


def test_robust_rule_winner_keeps_lower_sum():
    w, r = _t("a", 8.0), _t("b", 11.0)
    choice, _ = rules.robust_choice(w, r, {7: (10.5, 10.0), 9: (8.0, 11.0)}, band=BAND)  # 5% worse at 7, far better total
    assert choice is w


def test_robust_rule_correctness_failure_and_no_neighbours():
    w, r = _t("a", 8.0), _t("b", 11.0)
    assert rules.robust_choice(w, r, {2: (None, 11.0)}, band=BAND)[0] is r
    assert rules.robust_choice(w, r, {}, band=BAND)[0] is w
    assert rules.robust_choice(w, r, {2: (8.0, None)}, band=BAND)[0] is w


def test_robust_rule_winner_slower_than_the_baseline_next_door_is_cut_off_there_or_loses():
    base, w, r = _t("torch_linear", 15.0), _t("a", 9.0), _t("b", 9.5)
    # winner 20% slower than the baseline at M=15; runner-up also >2% slower there: the winner is kept with its
    # range stopping short of M=15 (9 + 10 + 10 = 29 us against the baseline's 35)
    nb = {15: (12.0, 11.0, 10.0), 17: (10.0, 10.0, 10.0)}
    choice, why = rules.robust_choice(w, r, nb, base, band=BAND)
    assert choice is w and "slower than the baseline at M=[15]" in why and "stopping short of M=[15]" in why
    assert rules.slow_vs_baseline(nb, BAND) == [15]
    # runner-up within 2% of the baseline everywhere and the lower sum (9.1 + 10.0 + 9.0 = 28.1 < 29): taken
    choice, why = rules.robust_choice(w, _t("b", 9.1), {15: (12.0, 10.0, 10.0), 17: (10.0, 9.0, 10.0)}, base, band=BAND)
    assert choice.key == "b" and "runner-up taken" in why
    # a winner that only ties the baseline at M and is cut off on both sides: the baseline's sum is lower
    choice, why = rules.robust_choice(_t("a", 15.0), r, {15: (12.0, 11.0, 10.0), 17: (12.0, 11.0, 9.0)},
                                      _t("torch_linear", 14.9), band=BAND)
    assert choice.key == "torch_linear" and "baseline taken" in why
    # winner within 2% of the baseline everywhere: the winner-vs-runner-up rule decides (winner kept)
    assert rules.robust_choice(w, r, {15: (10.1, 10.0, 10.0), 17: (10.0, 10.0, 10.0)}, base, band=BAND)[0] is w
    # no baseline medians (2-tuples): rule b is skipped
    assert rules.robust_choice(w, r, {15: (12.0, 11.0)}, base, band=BAND)[0] is r
    # winner and runner-up both fail correctness next door: the baseline
    assert rules.robust_choice(w, r, {15: (None, None, 10.0)}, base, band=BAND)[0] is base


def test_point_band_is_the_models():
    """The tuner decides with the noise model's within-run band of the device at the point's family and M range, and
    a device without repeat evidence has none (no win can be shown there)."""
    b = rules.point_band("router", 16, "NVIDIA H200")
    assert b == noise_model.band(noise_model.WITHIN, noise_model.SHAPE, "NVIDIA H200", "router M 2–32") and b.known
    assert not rules.point_band("router", 16, "CPU: Some CPU").known


def test_a_device_without_evidence_keeps_the_baseline_and_says_how_to_make_some():
    rng = np.random.default_rng(0)
    base = rules.Timed(rules.BASELINE, {}, 10.0 + rng.normal(0, 0.05, 64), "final")
    big = rules.Timed("gemv", {"BN": 2}, 5.0 + rng.normal(0, 0.05, 64), "final")
    d = rules.Decision("o", 1, "gemv", {"BN": 2}, big.median, base.median)
    note = rules.keep_baseline_unless_significant(d, base, big, rules.point_band("o", 1, "CPU: Some CPU"))
    assert "baseline kept" in note and "no repeat evidence on CPU: Some CPU" in note and "--plan baseline" in note
    assert d.method == rules.BASELINE


def test_baseline_kept_unless_the_win_is_significant():
    band = rules.point_band("o", 1, "NVIDIA H200")
    rng = np.random.default_rng(0)
    base = rules.Timed(rules.BASELINE, {}, 10.0 + rng.normal(0, 0.05, 64), "final")
    small = rules.Timed("gemv", {"BN": 1}, 9.95 + rng.normal(0, 0.05, 64), "final")   # 0.5% faster: not enough
    big = rules.Timed("gemv", {"BN": 2}, 9.0 + rng.normal(0, 0.05, 64), "final")      # 11% faster: keep it
    d = rules.Decision("o", 1, "gemv", {"BN": 1}, small.median, base.median)
    assert "baseline kept" in rules.keep_baseline_unless_significant(d, base, small, band)
    assert (d.method, d.config) == (rules.BASELINE, {})
    d = rules.Decision("o", 1, "gemv", {"BN": 2}, big.median, base.median)
    assert "beats baseline" in rules.keep_baseline_unless_significant(d, base, big, band)
    assert (d.method, d.config) == ("gemv", {"BN": 2})


def test_finalists_always_include_the_baseline():
    screen = [_t("a", 5), _t("b", 6), _t("c", 7), _t(rules.BASELINE, 9)]
    assert rules.finalists(screen, 2) == [("a", {}), ("b", {}), (rules.BASELINE, {})]
    assert rules.finalists(screen, 4)[-1] == (rules.BASELINE, {}) and len(rules.finalists(screen, 4)) == 4


# --- ranges --------------------------------------------------------------------------------------------------

def test_build_ranges_midpoints_and_shape_checks():
    gemv = ("router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]))
    atom = ("router_hilo_atomic", dict(METHODS["router_hilo_atomic"].configs[0]))
    split = ("router_hilo_splitk", dict(METHODS["router_hilo_splitk"].configs[0]))
    packed = ("router_hilo_packed_mm", {})
    winners = {1: gemv, 8: atom, 16: atom, 32: split, 128: packed, 256: packed}
    entries = rules.build_ranges("router", winners, ROUTER_SPEC, METHODS)
    got = [(e["M"], e["method"]) for e in entries]
    # M=2..4 are nearest to 1, but gemv serves M=1 only: they go to M=8's winner. Midpoints: 24, 80, 192.
    assert got == [([1, 1], "router_gemv_fp32"), ([2, 24], "router_hilo_atomic"),
                   ([25, 80], "router_hilo_splitk"), ([81, 256], "router_hilo_packed_mm")]


def test_build_ranges_falls_back_to_baseline():
    gemv = ("router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]))
    entries = rules.build_ranges("router", {1: gemv, 8: gemv}, ROUTER_SPEC, METHODS)   # fake: gemv "won" at 8
    assert [(e["M"], e["method"]) for e in entries] == [([1, 1], "router_gemv_fp32"), ([2, 8], "torch_linear")]


def test_candidates_baseline_first_and_within_their_shape_checks():
    c = rules.candidates(METHODS, ROUTER_SPEC, 1, 256, 8192)
    assert c[0] == ("torch_linear", {})
    names = {n for n, _ in c}
    assert {"router_gemv_fp32", "router_hilo_atomic_pdl", "router_hilo_packed_mm", "router_hilo_fused"} <= names
    assert "router_gemv_fp32" not in {n for n, _ in rules.candidates(METHODS, ROUTER_SPEC, 2, 256, 8192)}
    only = rules.candidates(METHODS, ROUTER_SPEC, 8, 256, 8192, only=["router_hilo_splitk"])
    assert {n for n, _ in only} == {"torch_linear", "router_hilo_splitk"}
    # a config its shape check rejects is never a candidate: splitk_atomic's SPLIT/BK grid must tile K=1024 exactly
    o_spec = load_workload().family("o")
    o16 = [c for n, c in rules.candidates(METHODS, o_spec, 16, 8192, 1024) if n == "splitk_atomic"]
    assert o16 and all(1024 % (c["BK"] * c["SPLIT"]) == 0 for c in o16)


def test_range_notes_are_not_repeated_and_run_path_is_repo_relative():
    spec = {"N": 2304, "K": 8192, "x_dtype": "bfloat16", "w_dtype": "bfloat16", "y_dtype": "bfloat16"}
    winners = {1: ("torch_linear", {}), 8: ("torch_linear", {}), 16: ("torch_linear", {})}
    entries = rules.build_ranges("qkv_gate", winners, spec, METHODS, {1: "n1", 8: "n8", 16: "n16"})
    assert len(entries) == 1 and entries[0]["M"] == [1, 16]
    assert entries[0]["note"].split("; ") == ["n1", "n8", "n16"]
    assert tune.committed_run_path("/root/out/2026-11-30_nvidia-h200_tune.json.gz") == \
        "datasets/runs/2026-11-30_nvidia-h200_tune.json.gz"


UNPOOLER_SPEC = {"N": 8192, "K": 4096, "x_dtype": "bfloat16", "w_dtype": "bfloat16", "y_dtype": "bfloat16",
                 "rel_l2_tol": 1e-2, "N_by_M": {"1": 1024, "8": 1024}}


def test_build_ranges_makes_n_specific_unpooler_entries():
    gemv = ("gemv", dict(METHODS["gemv"].configs[0]))
    split = ("splitk", dict(METHODS["splitk"].configs[1]))
    winners = {1: gemv, 8: split, 16: ("mm_wt", {}), 32: ("mm_wt", {}), 128: ("mm_wt", {}),
               256: ("torch_linear", {})}
    entries = rules.build_ranges("unpooler", winners, UNPOOLER_SPEC, METHODS, {M: f"n{M}" for M in winners})
    got = [(e.get("N"), e["M"], e["method"]) for e in entries]
    # generic entries from the N=8192 points only (M < 16 takes M=16's winner); the N=1024 entries span 1..8
    assert got == [(None, [1, 192], "mm_wt"), (None, [193, 256], "torch_linear"),
                   (1024, [1, 1], "gemv"), (1024, [2, 8], "splitk")]
    assert entries[0]["note"] == "n16; n32; n128" and entries[3]["note"] == "n8"


def test_build_ranges_generic_below_smallest_point_respects_shape_check_and_n_only_families():
    gemv = ("gemv", dict(METHODS["gemv"].configs[0]))
    entries = rules.build_ranges("unpooler", {1: gemv, 8: gemv, 16: gemv}, UNPOOLER_SPEC, METHODS)
    assert [(e.get("N"), e["M"], e["method"]) for e in entries] == [
        (None, [1, 1], "gemv"), (None, [2, 16], "torch_linear"),       # below 16: its winner where admitted
        (1024, [1, 1], "gemv"), (1024, [2, 8], "torch_linear")]
    entries = rules.build_ranges("unpooler", {1: gemv, 8: ("torch_linear", {})}, UNPOOLER_SPEC, METHODS)
    assert [(e.get("N"), e["M"], e["method"]) for e in entries] == [     # no general-N point: generic baseline
        (None, [1, 8], "torch_linear"), (1024, [1, 1], "gemv"), (1024, [2, 8], "torch_linear")]


def _baseline_dict():
    from kernels.plans import load_plan

    return load_plan("baseline").to_dict()


def test_make_plan_dispatches_every_m_with_the_library_above_the_tuned_range():
    from datasets import load_workload
    from kernels.plans import plan_from_dict

    wl = load_workload()
    atom = METHODS["router_hilo_atomic"].configs[0]
    ds = [rules.Decision("router", 1, "router_gemv_fp32", dict(METHODS["router_gemv_fp32"].configs[0]), 3.9, 10.5)]
    ds += [rules.Decision("router", M, "router_hilo_atomic", dict(atom), 5.0, 15.0) for M in (8, 16, 32, 128)]
    ds += [rules.Decision("router", 256, "router_hilo_packed_mm", {}, 8.0, 17.0)]
    plan = rules.make_plan(ds, METHODS, wl, _baseline_dict(), "NVIDIA H200", "datasets/runs/x_tune.json", "test")
    p = plan_from_dict(plan, "best.json", wl)
    assert p.select("router", 1)[0] == "router_gemv_fp32"
    assert p.select("router", 3)[0] == "router_hilo_atomic"
    assert p.select("router", 256)[0] == "router_hilo_packed_mm"
    for M in (257, 384, 512, 4096, DISPATCH_MAX_M):          # above the tuned range: the library, never PlanError
        assert p.select("router", M) == ("torch_linear", {})
        assert LIBRARY_NOTE in p.entry("router", M).note
    assert p.select("o", 1)[0] == "torch_linear" and p.tuned_from == "datasets/runs/x_tune.json"
    assert p.select("o", 4096)[0] == "torch_linear"


def test_make_plan_with_n_specific_entries_validates_and_dispatches_by_n():
    from datasets import load_workload
    from kernels.plans import plan_from_dict

    wl = load_workload()
    split = dict(METHODS["splitk"].configs[1])
    ds = [rules.Decision("unpooler", 1, "gemv", dict(METHODS["gemv"].configs[0]), 5.0, 8.0),
          rules.Decision("unpooler", 8, "splitk", split, 6.0, 8.0)]
    ds += [rules.Decision("unpooler", M, "mm_wt", {}, 16.0, 17.0) for M in (16, 32, 128)]
    ds += [rules.Decision("unpooler", 256, "torch_linear", {}, 24.0, 24.0)]
    p = plan_from_dict(rules.make_plan(ds, METHODS, wl, _baseline_dict(), "NVIDIA H200", "x.json", "t"),
                       "best.json", wl)
    assert p.select("unpooler", 8, 1024) == ("splitk", split) and p.select("unpooler", 8)[0] == "splitk"
    for M in (2, 3, 7, 9):       # the nearby shapes, N=8192: never the M=8 (N=1024) winner
        assert p.select("unpooler", M)[0] == "mm_wt" and p.select("unpooler", M, 8192)[0] == "mm_wt"
    assert p.select("unpooler", 9, 1024)[0] == "mm_wt"             # N=1024 above its tuned range: generic
    assert p.select("unpooler", 384, 1024)[0] == "torch_linear"


# --- one point, with the real correctness check and table timings ----------------------------------------------

@pytest.fixture
def cpu_measure():
    pytest.importorskip("torch")

    class _Lossy(Method):
        """Runs the baseline on BF16-rounded weights: fails the router's sparse probe (and rel-L2)."""

        def prepare(self, weight, config):
            import torch

            return weight.to(torch.bfloat16).to(torch.float32)

        def run(self, state, x):
            return x.float() @ state.T

    base = METHODS["torch_linear"]
    methods = {"torch_linear": base,
               "fake_fast": Method("fake_fast", (FP32_W,), base.impl, "baseline under another name",
                                   params={"v": (1, 2)}, configs=({"v": 1}, {"v": 2})),
               "fake_lossy": _Lossy("fake_lossy", (FP32_W,), base.impl, "bf16 weights")}

    class _Candidate:
        """One method + config as the worker's MethodCandidate runs it (shape check at every call)."""

        def __init__(self, name, config):
            self.method, self.config = methods[name], config

        def prepare(self, family, weight):
            return {"N": weight.shape[0], "K": weight.shape[1], "dtypes": load_workload().dtypes(family),
                    "s": self.method.prepare(weight, self.config)}

        def run(self, state, family, x):
            self.method.check_supports(state["dtypes"], int(x.shape[0]), state["N"], state["K"], self.config, family)
            return self.method.run(state["s"], x)

    class _CpuMeasure:
        """The worker's quick check (profiler.check.contract.check_candidate, one eager call) on CPU, in this process;
        timings from a table {(method, v or None, M): us}."""

        def __init__(self, table):
            self.table, self.calls = table, []

        def __call__(self, shape, cands, timing):
            from kernels.method import format_config
            from profiler.check.contract import check_candidate

            rejected, live = {}, []
            for name, config in cands:
                chk = check_candidate(_Candidate(name, config), shape, "cpu", n_calls=1, use_graph=False,
                                      outliers=False)
                if chk.ok:
                    live.append((name, config))
                else:
                    rejected[format_config(name, config)] = list(chk.reasons)
            M = int(shape["M"])
            self.calls.append((M, [(n, c.get("v")) for n, c in live]))
            rng = np.random.default_rng(M)
            n = timing["min_pairs"]
            rows = [{"method": name, "config": c,
                     "samples_us": list(self.table[(name, c.get("v"), M)] * (1 + 0.001 * rng.standard_normal(n)))}
                    for name, c in live]
            return {"timed": rows, "rejected": rejected, "info": {"stopped_by": "rse"}}

    return methods, _CpuMeasure


def _point(M, spec=ROUTER_SPEC, N=256, load="decode 16"):
    return rules.Point("router", M, N, 8192, load, spec)


def test_tune_point_rejects_lossy_and_applies_neighbour_rule(cpu_measure):
    methods, measure_cls = cpu_measure
    table = {}
    for M in (15, 16, 17):
        table[("torch_linear", None, M)] = 15.0
        table[("fake_lossy", None, M)] = 1.0          # fastest but wrong: must never be timed
        table[("fake_fast", 1, M)] = 9.9 if M == 16 else 14.0   # wins only at exactly M=16
        table[("fake_fast", 2, M)] = 10.0
    measure = measure_cls(table)
    records = rules.Records()
    d = rules.tune_point(_point(16), methods, measure, records=records, log=lambda *a: None)
    assert "fake_lossy" in d.rejected and any("sparse" in r or "rel-L2" in r for r in d.rejected["fake_lossy"])
    assert all(n != "fake_lossy" for _, timed in measure.calls for n, _ in timed)
    assert (d.method, d.config) == ("fake_fast", {"v": 2}), d.rule       # the robust one
    assert d.baseline_us == pytest.approx(15.0, rel=0.01)
    assert set(d.neighbours) == {"15", "17"}
    assert {r["load"] for r in records.results} == {"decode 16", "nearby"}
    assert all(r["correct"] and r["median_us"] > 0 for r in records.results)
    assert records.pairs and records.pairs[0]["ratio_median"] == pytest.approx(1.5, rel=0.01)


def test_tune_point_winner_slower_than_the_baseline_next_door_is_dispatched_at_m_only(cpu_measure):
    methods, measure_cls = cpu_measure
    table = {}
    for M in (15, 16, 17):
        table[("torch_linear", None, M)] = 15.0 if M == 16 else 10.0
        table[("fake_lossy", None, M)] = 1.0
        table[("fake_fast", 1, M)] = 9.0 if M == 16 else 12.0    # 20% slower than the baseline next door
        table[("fake_fast", 2, M)] = 9.5 if M == 16 else 11.0    # 10% slower too
    d = rules.tune_point(_point(16), methods, measure_cls(table), log=lambda *a: None)
    assert (d.method, d.config) == ("fake_fast", {"v": 1}), d.rule
    assert "slower than the baseline" in d.rule and d.stops == [15, 17] and d.limits() == (16, 16)
    assert d.to_dict()["stops"] == [15, 17]
    assert d.neighbours["15"]["N"] == 256 and d.neighbours["15"]["decides"]
    assert d.neighbours["15"]["baseline"] == pytest.approx(10.0, rel=0.01)


def test_build_ranges_keeps_a_cut_off_winner_on_its_side_of_the_stop():
    atom = ("router_hilo_atomic", dict(METHODS["router_hilo_atomic"].configs[0]))
    lib = ("torch_linear", {})
    winners = {8: atom, 16: atom, 32: lib}
    # M=16's winner was > 2% slower than the baseline at M=17: M=17..24 (its half of the gap) go to M=32's pick
    entries = rules.build_ranges("router", winners, ROUTER_SPEC, METHODS, limits={16: (1, 16)})
    assert [(e["M"], e["method"]) for e in entries] == [([1, 16], "router_hilo_atomic"), ([17, 32], "torch_linear")]
    # cut off below instead: M=13..15 (M=16's half of the gap to 8) go to M=8's pick, M=17..24 stay with M=16's
    entries = rules.build_ranges("router", {**winners, 8: lib}, ROUTER_SPEC, METHODS, limits={16: (16, None)})
    assert [(e["M"], e["method"]) for e in entries] == [([1, 15], "torch_linear"), ([16, 24], "router_hilo_atomic"),
                                                       ([25, 32], "torch_linear")]


def test_tune_point_neighbours_at_another_n_are_timed_but_do_not_decide(cpu_measure):
    methods, measure_cls = cpu_measure
    spec = dict(ROUTER_SPEC, N_by_M={"8": 128})     # like the unpooler: M=8 is a narrower slice than M=7, 9
    table = {}
    for M in (7, 8, 9):
        table[("torch_linear", None, M)] = 15.0 if M == 8 else 10.0
        table[("fake_lossy", None, M)] = 1.0
        table[("fake_fast", 1, M)] = 9.0 if M == 8 else 30.0     # terrible at N=256, but M=8 runs N=128
        table[("fake_fast", 2, M)] = 9.5 if M == 8 else 10.0
    records = rules.Records()
    d = rules.tune_point(_point(8, spec, 128, "verify 1"), methods, measure_cls(table), records=records,
                         log=lambda *a: None)
    assert (d.method, d.config) == ("fake_fast", {"v": 1}), d.rule
    assert "for the record only" in d.rule
    assert {m: (v["N"], v["decides"]) for m, v in d.neighbours.items()} == {"7": (256, False), "9": (256, False)}
    assert {(r["M"], r["N"]) for r in records.results if r["load"] == "nearby"} == {(7, 256), (9, 256)}


def test_a_timing_that_is_not_a_speed_is_a_failure_never_a_result(cpu_measure):
    methods, measure_cls = cpu_measure
    table = {}
    for M in (15, 16, 17):
        table[("torch_linear", None, M)] = 15.0
        table[("fake_lossy", None, M)] = 1.0
        table[("fake_fast", 1, M)] = -0.5            # overhead subtraction gone wrong: not a speed
        table[("fake_fast", 2, M)] = 14.0
    records = rules.Records()
    d = rules.tune_point(_point(16), methods, measure_cls(table), records=records, log=lambda *a: None)
    assert d.method != "fake_fast" or d.config != {"v": 1}
    assert "fake_fast v=1" in d.rejected and "no usable timing" in d.rejected["fake_fast v=1"][0]
    assert [f["candidate"] for f in records.failures] == ["fake_fast v=1"]
    assert "fake_fast v=1" not in {r["candidate"] for r in records.results}
    from datasets.runfile import new_run, validate_run

    run = new_run("tune", {})
    run.update(results=records.results, pairs=records.pairs, failures=records.failures)
    validate_run(run)                                   # what the tuner writes is a valid schema-v1 run


# --- CLI ----------------------------------------------------------------------------------------------------------

def test_cli_arguments():
    a = tune_cli.parse_args(["--shapes", "official", "--families", "router", "o", "--budget-s", "100",
                         "--out-plan", "/tmp/p.json", "--compile-workers", "4"])
    assert a.families == ["router", "o"] and a.budget_s == 100 and a.out_plan == "/tmp/p.json"
    assert a.compile_workers == 4 and a.extend_plan is None
    with pytest.raises(SystemExit):
        tune_cli.parse_args(["--shapes", "everything"])


def test_extend_plan_rewrites_an_old_plan_file_without_a_gpu(tmp_path, capsys):
    """The committed best.json predates the fallback (ranges end at 256): --extend-plan makes it dispatch any M,
    keeping every tuned entry as it was."""
    from kernels.plans import PLANS_DIR, load_plan

    old = json.loads((PLANS_DIR / "best.json").read_text())
    for entries in old["families"].values():          # cut back to the tuned range only, as written before
        for e in entries:
            e["M"][1] = min(e["M"][1], 256)
        entries[:] = [e for e in entries if e["M"][0] <= 256]
    path = tmp_path / "best.json"
    path.write_text(json.dumps(old))
    assert tune_cli.main(["--extend-plan", str(path)]) == 0
    p = load_plan(path)
    for fam, entries in old["families"].items():
        for e in entries:
            lo = e["M"][0]
            # N=999 has no N-specific entry: a generic entry answers
            assert p.select(fam, lo, e.get("N", 999)) == (e["method"], e["config"])      # tuned entries kept
        assert p.select(fam, 384)[0] == "torch_linear" and p.select(fam, 4096)[0] == "torch_linear"
    (tmp_path / "bad.json").write_text("[" * 1000 + "]" * 1000)
    assert tune_cli.main(["--extend-plan", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_warm_jobs_cover_every_candidate_once_per_compile_class():
    from datasets import load_workload
    from kernels.warm import unique_jobs

    points = rules.scored_points(load_workload(), ["router"])
    jobs = tune.warm_jobs(METHODS, points)
    assert {(j["method"], json.dumps(j["config"], sort_keys=True)) for j in jobs} >= {
        ("router_hilo_fused", json.dumps(c, sort_keys=True)) for c in METHODS["router_hilo_fused"].configs}
    uniq = unique_jobs(jobs)
    # router M = 1, 8, 16, 32, 128, 256: three specialisation classes of M (1; 16, 32, 128, 256; 8)
    fused = [j for j in uniq if j["method"] == "router_hilo_fused"]
    assert len(fused) == 3 * len(METHODS["router_hilo_fused"].configs)
    assert len({(j["M"] == 1, j["M"] % 16 == 0) for j in fused}) == 3


def test_candidates_that_failed_in_a_compile_worker_are_left_out_with_the_reason(cpu_measure):
    methods, measure_cls = cpu_measure
    table = {(n, v, M): t for M in (15, 16, 17) for n, v, t in
             (("torch_linear", None, 15.0), ("fake_lossy", None, 1.0), ("fake_fast", 1, 9.0), ("fake_fast", 2, 9.5))}
    skip = {("fake_fast", json.dumps({"v": 1}), "router"): "failed when compiled and run once in a worker: boom",
            ("torch_linear", "{}", "router"): "the baseline is never left out"}
    measure = measure_cls(table)
    d = rules.tune_point(_point(16), methods, measure, skip=skip, log=lambda *a: None)
    assert d.rejected["fake_fast v=1"] == ["failed when compiled and run once in a worker: boom"]
    assert all(("fake_fast", 1) not in timed for _, timed in measure.calls)       # never checked nor timed
    assert (d.method, d.config) == ("fake_fast", {"v": 2}) and ("torch_linear", None) in measure.calls[0][1]


def test_warm_runs_jobs_in_worker_processes_and_reports_the_ones_that_raise():
    pytest.importorskip("torch")
    from kernels.warm import job_key, warm

    good = {"method": "torch_linear", "config": {}, "family": "o", "M": 2, "N": 16, "K": 32}
    bad = {"method": "router_gemv_fp32", "config": {"BN": 1, "BK": 1024, "num_warps": 4, "cache": ".cg"},
           "family": "router", "M": 1, "N": 16, "K": 1000, "w_dtype": "float32"}
    errors = warm([good, dict(good, M=3), bad], workers=2, device="cpu")
    assert [job_key(j) for j, _ in errors] == [job_key(bad)]
    assert "K % BK == 0" in errors[0][1]


def test_pin_points_cuts_only_the_pinned_m_out_of_its_n_list():
    from datasets import load_workload

    spec = load_workload().family("unpooler")           # N=8192, N=1024 at M=1 and M=8
    base = [{"M": [1, 192], "method": "mm_wt", "config": {}, "note": "tuned at M=16"},
            {"M": [193, 4096], "method": "torch_linear", "config": {}},
            {"M": [1, 1], "N": 1024, "method": "gemv", "config": {"BN": 2}},
            {"M": [2, 8], "N": 1024, "method": "splitk_atomic", "config": {"BM": 16}}]
    pins = {1: {"method": "gemv_wide", "config": {"BN": 2, "BK": 4096}, "note": "tuned at M=1"},
            16: {"method": "torch_linear", "config": {}}}
    got = rules.pin_points(base, pins, spec)
    assert [(e.get("N"), e["M"], e["method"]) for e in got] == [
        (None, [1, 15], "mm_wt"), (None, [16, 16], "torch_linear"), (None, [17, 192], "mm_wt"),
        (None, [193, 4096], "torch_linear"),
        (1024, [1, 1], "gemv_wide"), (1024, [2, 8], "splitk_atomic")]
    assert got[4]["config"] == {"BN": 2, "BK": 4096} and got[4]["note"] == "tuned at M=1"
    assert got[0]["note"] == got[2]["note"] == "tuned at M=16"          # the cut entry keeps its own note
    assert base[0]["M"] == [1, 192] and base[2]["method"] == "gemv"       # the base entries are not changed
    # an M in a gap of its list, and one past the list's end
    gap = rules.pin_points([{"M": [1, 4], "method": "a", "config": {}}, {"M": [9, 12], "method": "b", "config": {}}],
                           {6: {"method": "c", "config": {}}, 20: {"method": "d", "config": {}}},
                           {"N": 64, "K": 64})
    assert [(e["M"], e["method"]) for e in gap] == [([1, 4], "a"), ([6, 6], "c"), ([9, 12], "b"), ([20, 20], "d")]


def test_make_plan_only_m_keeps_every_other_m_of_the_base_plan():
    from datasets import load_workload
    from kernels.plans import load_plan, plan_from_dict

    wl = load_workload()
    base = load_plan("best", wl)
    wide = next(c for c in METHODS["gemv_wide"].configs if c["BK"] == 4096 and c["BN"] == 2)
    long_rows = next(c for c in METHODS["gemv_wide"].configs if c["BK"] == 8192 and c["BN"] == 1)
    ds = [rules.Decision("unpooler", 1, "gemv_wide", dict(wide), 3.3, 6.6),
          rules.Decision("qkv_gate", 1, "gemv_wide", dict(long_rows), 9.7, 13.2)]
    p = plan_from_dict(rules.make_plan(ds, METHODS, wl, base.to_dict(), "NVIDIA H200", "x_tune.json", "t",
                                       only_m=[1]), "best.json", wl)
    assert p.select("unpooler", 1, 1024) == ("gemv_wide", wide)
    assert p.select("qkv_gate", 1) == ("gemv_wide", long_rows)
    for fam in wl.family_order:                       # every other scored and nearby M: the base plan's choice
        for M in (2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 128, 129, 255, 256, 384, 4096):
            assert p.select(fam, M) == base.select(fam, M), (fam, M)
        assert p.select(fam, 8, wl.shape(fam, 8)["N"]) == base.select(fam, 8, wl.shape(fam, 8)["N"])
    assert p.select("router", 1) == base.select("router", 1) and p.select("o", 1) == base.select("o", 1)


def test_tune_m_without_a_scored_point_is_one_line(capsys):
    from profiler.cli.tune import main

    assert main(["--m", "3", "5"]) == 2                      # no load of muse has M=3 or M=5: nothing to tune
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("profiler tune: --m:") and "M=[3, 5]" in err[0]
