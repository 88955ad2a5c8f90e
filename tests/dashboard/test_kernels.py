"""The kernel analysis on the committed H200 explain run: shares, the main kernel, the gap decomposition (its
parts sum to the gap), the floors, the per-load table, and the fall-back to ncu times when the replay differs."""
import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.model import kernels, runs, scoring
from datasets import load_workload
from profiler.commands.sweep import select_shapes, shape_bytes

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-baseline-best.json"
WL = load_workload()
PARTS = ["side_kernels_us", "between_us", "excess_bytes_us", "main_slow_us"]


@pytest.fixture(scope="module")
def data():
    return kernels.from_run_data(runs.load_run_data(RUN))


@pytest.fixture(scope="module")
def ktab(data):
    return kernels.kernel_table(data)


@pytest.fixture(scope="module")
def calls(data, ktab):
    return kernels.call_table(data, WL, ktab)


def test_every_official_shape_and_candidate_is_a_call(calls):
    assert len(calls) == 60 and set(calls["candidate"]) == {"baseline", "best"}
    assert set(calls["shape"]) == {WL.shape_key(r.load, r.family, r.M) for r in WL.shapes.itertuples()}


def test_shares_sum_to_one_and_the_main_kernel_moves_the_most_bytes(ktab):
    per_call = ktab.groupby(kernels.CALL_ID)
    assert np.allclose(per_call["share"].sum(), 1.0)
    assert (per_call["is_main"].sum() == 1).all()
    main = ktab[ktab["is_main"]].set_index(kernels.CALL_ID)["dram_bytes"]
    assert (main.sort_index() == per_call["dram_bytes"].max().sort_index()).all()


def test_replay_times_are_used_where_the_replay_ran_ncus_kernels(data, ktab):
    assert (ktab["time_basis"] == "replay").all()
    for c in data.run["calls"]:
        mine = ktab[(ktab["load"] == c["load"]) & (ktab["family"] == c["family"]) & (ktab["candidate"] == c["candidate"])]
        assert mine.sort_values("index")["time_us"].tolist() == [k["duration_us"] for k in c["kineto"]["kernels"]]


def test_a_replay_that_ran_other_kernels_falls_back_to_ncu(data):
    run = copy.deepcopy(data.run)
    run["calls"][0]["kineto"]["kernels"][0]["kernel"] = "some_other_kernel"
    other = kernels.ExplainData(data.path, run, data.kernels, data.calls, data.failures, data.curve, data.sm_count)
    k = kernels.kernel_table(other)
    first = k[(k["load"] == run["calls"][0]["load"]) & (k["family"] == run["calls"][0]["family"])
              & (k["candidate"] == run["calls"][0]["candidate"])]
    assert (first["time_basis"] == "ncu").all() and (first["time_us"] == first["duration_us"]).all()
    assert (k.drop(first.index)["time_basis"] == "replay").all()


def test_the_gap_parts_sum_to_the_gap(calls, ktab):
    assert np.allclose(calls[PARTS].sum(axis=1), calls["gap_us"])
    parts = kernels.kernel_gap_parts(ktab, calls)
    per_call = parts.groupby(kernels.CALL_ID)["gap_part_us"].sum()
    assert np.allclose(per_call.to_numpy(), calls.set_index(kernels.CALL_ID)["gap_us"].reindex(per_call.index))


def test_ideal_bytes_and_floors(data, calls):
    """Ideal bytes agree with the profiler's byte count (weights + x + y); the floor is the larger of the probe at
    those bytes and 2MNK at the run's measured peak, as in every other view (dashboard.model.runs.shape_table)."""
    profiler_bytes = {(s["load"], s["family"]): shape_bytes(s) for s in select_shapes("official")}
    assert calls.apply(lambda r: profiler_bytes[(r["load"], r["family"])] == r["ideal_bytes"], axis=1).all()
    curve = runs.probe_curve(runs.load_run_data(RUN))
    expected = np.maximum(curve.us(calls["ideal_bytes"].to_numpy(float)),
                          calls["flops"] / (data.run["compute_peak_tflops"] * 1e6))
    assert np.allclose(calls["floor_us"], expected)
    assert set(calls[calls["bound"] == "compute"]["load"]) == {"verify 32"}


def test_underfilled_model_is_capped_and_zero_for_a_full_grid(calls):
    model = kernels.underfilled_us(calls)
    assert (model <= calls["main_slow_us"].clip(lower=0) + 1e-12).all() and (model >= 0).all()
    assert (model[calls["main_grid"] >= 132] == 0).all()
    unpooler = calls[(calls["shape"] == "verify 1/unpooler")].iloc[0]  # grid 48 of 132: the cap binds
    assert unpooler["main_grid"] == 48 and model[unpooler.name] == pytest.approx(max(unpooler["main_slow_us"], 0))


def test_gap_by_load_adds_up_and_counts_launches(data, calls):
    weights = scoring.family_weights(WL)
    for cand in ("baseline", "best"):
        g = kernels.gap_by_load(calls, cand, weights, WL.load_order)
        assert list(g["load"]) == WL.load_order and (g["shapes"] == 5).all()
        assert np.allclose(g[list(kernels.GAP_PARTS)].sum(axis=1), g["gap_sum_us"])
        kineto = pd.DataFrame([{"load": c["load"], "n": c["kineto"]["launches"]} for c in data.run["calls"]
                               if c["candidate"] == cand]).groupby("load")["n"].mean()
        assert np.allclose(g.set_index("load")["launches_per_call"], kineto.reindex(g["load"]))


def test_furthest_from_floor_picks_the_lowest_sol():
    wide = pd.DataFrame({"shape": ["a", "b", "c", "d"], "sol_candidate": [0.9, 0.4, np.nan, 0.6]})
    assert kernels.furthest_from_floor(wide, 2) == ["b", "d"]
    assert kernels.furthest_from_floor(wide.assign(sol_candidate=np.nan)) == []


def test_a_sweep_run_is_not_an_explain_run():
    path = ROOT / "datasets" / "runs" / "2026-11-30_nvidia-h200_baseline-seed036-best-r3.json"
    with pytest.raises(kernels.ExplainError, match="r3.json: not an explain run"):
        kernels.from_run_data(runs.load_run_data(path))


def test_the_explain_runs_of_a_sweep_share_its_workload_and_plans():
    """explains_of keeps an explain run only when it profiled the candidate with the methods the sweep timed, in the
    same workload: r25's explain run matches the r28 sweep, r23's (another best at verify 16) and Llama's do not."""
    folder = ROOT / "datasets" / "runs"
    sweep = runs.load_run_data(folder / "2026-12-01_nvidia-h200_baseline-seed036-best-r28.json")
    names = ["explain-baseline-best-r23", "explain-baseline-best-r25", "explain-llama31_8b_decode-r5"]
    explains = [runs.load_run_data(folder / f"2026-12-01_nvidia-h200_{n}.json") for n in names]
    found = kernels.explains_of(sweep, explains, "best", "baseline")
    assert [e.path.name for e in found] == ["2026-12-01_nvidia-h200_explain-baseline-best-r25.json"]
    assert kernels.explains_of(sweep, explains, "seed036") == []          # none of these profiled seed036
    llama = runs.load_run_data(folder / "2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json")
    assert [e.path.name for e in kernels.explains_of(llama, explains, "llama31_8b_decode")] == \
        ["2026-12-01_nvidia-h200_explain-llama31_8b_decode-r5.json"]
    assert kernels.explain_command("baseline", "best", WL) == \
        "python -m profiler explain --plan baseline --plan best --shapes official"
