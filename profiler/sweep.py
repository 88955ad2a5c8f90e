"""Run orchestration: probes, then per shape: correctness of every candidate, paired timing, records, flush.

    run_sweep(candidates, shapes, out_path, *, label, settings=SweepSettings(), device="cuda",
              progress=None, log=print) -> dict (the run, as written)

`candidates`: objects with name, prepare(family, weight), run(state, family, x), describe(family, M)
(kernels.candidate.Candidate). The first is the baseline of every pair. Repeated names get "#2", "#3".
`shapes`: dicts with load, family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol (select_shapes()).
The run file is flushed after probes and after every shape (status "partial"); finalized "complete" at
the end. Ctrl-C leaves a valid partial file and re-raises KeyboardInterrupt.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from profiler import stats

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
STREAM_MIN_CALLS = 24          # stream mode: at least this many calls per replay
STREAM_L2_MULTIPLE = 3         # stream mode: rotated copies total >= 3 x L2 (issue 3)
MIN_CLOCK_FRACTION = 0.75      # issue 3: samples below 75% of max SM clock are dropped


@dataclass
class SweepSettings:
    mode: str = "cold"                  # "cold" | "stream"
    shapes: str = "official"            # which set the shapes came from (recorded only)
    max_seconds_per_shape: float = 2.0
    rse_target: float = 0.005
    min_pairs: int = 30
    warmup_seconds: float = 0.05
    batch_rounds: int = 32
    instances: int = 3                  # cold mode: graphs per candidate, separately allocated, rotated
    seed: int = 0
    probes: bool = True
    probe_rounds: int = 24
    flush_bytes: int | None = None
    command: str = ""
    candidates: list = field(default_factory=list)


def shape_key(shape) -> str:
    """INTERFACES: f"{load}/{family}" for scored shapes, f"nearby/{family}/M{M}" for nearby ones."""
    if shape["load"] == "nearby":
        return f"nearby/{shape['family']}/M{int(shape['M'])}"
    return f"{shape['load']}/{shape['family']}"


def shape_bytes(shape) -> int:
    """Bytes the baseline must move: weights + input + output (each once)."""
    M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    return (N * K * DTYPE_BYTES[shape["w_dtype"]] + M * K * DTYPE_BYTES[shape["x_dtype"]]
            + M * N * DTYPE_BYTES[shape["y_dtype"]])


def select_shapes(which: str, workload=None) -> list[dict]:
    """'official' (the 30 scored shapes), 'nearby' (generalization M's) or 'all' (both)."""
    from datasets import load_workload

    wl = workload or load_workload()
    frames = {"official": [wl.shapes], "nearby": [wl.nearby], "all": [wl.shapes, wl.nearby]}
    if which not in frames:
        raise ValueError(f"--shapes must be official, nearby or all, not {which!r}")
    rows = []
    for df in frames[which]:
        rows += [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in df.to_dict("records")]
    return rows


def unique_names(candidates) -> list[str]:
    names, seen = [], {}
    for c in candidates:
        base = str(getattr(c, "name", type(c).__name__))
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def _finite(v):
    return float(v) if v is not None and math.isfinite(v) else None


class _ShapeState:
    """Per-run caches: weights per (family, N, K, dtype) and prepared states per (candidate, weight)."""

    def __init__(self, device, seed):
        self.device, self.seed = device, seed
        self.weights, self.states = {}, {}

    def weight(self, shape):
        from profiler.contract import make_weight

        key = (shape["family"], int(shape["N"]), int(shape["K"]), shape["w_dtype"])
        if key not in self.weights:
            self.weights[key] = make_weight(shape["family"], key[1], key[2], self.seed, self.device,
                                            dtype=shape["w_dtype"])
        return self.weights[key]

    def state(self, j, cand, shape, weight):
        key = (j, shape["family"], int(shape["N"]), int(shape["K"]))
        if key not in self.states:
            self.states[key] = cand.prepare(shape["family"], weight)
        return self.states[key]


def _stream_graphs(timer, candidates, shape, weight, seed, device):
    """Per candidate one graph of R calls rotating through copies of weights+input totalling >= 3 x L2."""
    from profiler.contract import make_input

    n_copies = max(1, math.ceil(STREAM_L2_MULTIPLE * timer.l2_bytes / shape_bytes(shape)))
    reps = max(1, math.ceil(STREAM_MIN_CALLS / n_copies))
    fam, M, K = shape["family"], int(shape["M"]), int(shape["K"])
    weights = [weight] + [weight.clone() for _ in range(n_copies - 1)]
    xs = [make_input(M, K, seed + 500 + c, device, dtype=shape["x_dtype"])[0] for c in range(n_copies)]
    graphs = []
    for cand in candidates:
        states = [cand.prepare(fam, w) for w in weights]
        fns = [(lambda s=s, x=x: cand.run(s, fam, x)) for s, x in zip(states, xs)] * reps
        h = timer.capture(fns)
        h.keep = (states, xs, weights)
        graphs.append(h)
    return graphs


def _cold_graph(timer, cand, state, shape, seed, device, instance: int = 0):
    from profiler.contract import make_input

    x, _ = make_input(int(shape["M"]), int(shape["K"]), seed + 300 + instance, device, dtype=shape["x_dtype"])
    h = timer.capture(lambda: cand.run(state, shape["family"], x))
    h.keep = x
    return h


def _flags(median_us, lo, hi, floor_us, dropped, correct) -> list[str]:
    flags = []
    if floor_us is not None and median_us < floor_us:
        flags.append("below_floor")
    if dropped:
        flags.append("throttled")
    if stats.ci_too_wide(median_us, lo if lo is not None else float("nan"), hi if hi is not None else float("nan")):
        flags.append("wide_ci")
    if not correct:
        flags.append("incorrect")
    return flags


def measure_one_shape(timer, candidates, names, shape, cache: _ShapeState, settings: SweepSettings, device,
                      telemetry=None, floor_us=None) -> tuple[list[dict], list[dict], list[dict], dict]:
    """Check and time all candidates at one shape -> (results, pairs, failures, info)."""
    from profiler.contract import check_candidate, error_vs_baseline
    from profiler.timing import measure_shape

    weight = cache.weight(shape)
    base = {k: shape[k] for k in ("load", "family")} | {k: int(shape[k]) for k in ("M", "N", "K")}
    checks, graphs, timed, failures = [], [], [], []
    base_rel = None
    for j, cand in enumerate(candidates):
        try:
            state = cache.state(j, cand, shape, weight)
        except Exception as exc:
            failures.append(base | {"candidate": names[j], "reasons": [f"prepare raised {type(exc).__name__}: {exc}"]})
            continue
        chk = check_candidate(cand, shape, device, seed=settings.seed, weight=weight, state=state,
                              baseline_rel_l2=base_rel, keep_graph=settings.mode == "cold")
        if j == 0:
            base_rel = chk.rel_l2
            chk.vs_baseline = error_vs_baseline(chk.rel_l2, base_rel)  # 1.0, or None for a NaN/absent error
        handle = chk.graph
        if handle is None and settings.mode == "cold":
            try:  # incorrect but runnable: still timed (flagged) so its speed is visible, never scored as ok
                handle = _cold_graph(timer, cand, state, shape, settings.seed, device)
            except Exception as exc:
                failures.append(base | {"candidate": names[j], "reasons": chk.reasons +
                                        [f"not timed: capture failed: {type(exc).__name__}: {exc}"[:300]]})
                continue
        chk.graph = None
        instances = [handle]
        if settings.mode == "cold":  # more instances: own input/output buffers (measure_shape says why)
            try:
                instances += [_cold_graph(timer, cand, state, shape, settings.seed, device, k)
                              for k in range(1, settings.instances)]
            except Exception as exc:
                failures.append(base | {"candidate": names[j], "reasons": chk.reasons +
                                        [f"not timed: capture failed: {type(exc).__name__}: {exc}"[:300]]})
                continue
        checks.append(chk)
        graphs.append(instances)
        timed.append(j)
    if settings.mode == "stream" and timed:
        graphs = _stream_graphs(timer, [candidates[j] for j in timed], shape, weight, settings.seed, device)
    info = {}
    if not graphs:
        return [], [], failures, info
    max_mhz = telemetry.max_sm_mhz() if telemetry is not None and telemetry.available else None
    ms = measure_shape(graphs, timer, min_pairs=settings.min_pairs, rse_target=settings.rse_target,
                       max_seconds=settings.max_seconds_per_shape, warmup_seconds=settings.warmup_seconds,
                       batch_rounds=settings.batch_rounds,
                       clock=telemetry.sm_mhz if telemetry is not None and telemetry.available else None,
                       min_clock_mhz=MIN_CLOCK_FRACTION * max_mhz if max_mhz else None)
    info = {"stopped_by": ms.stopped_by, "elapsed_s": round(ms.elapsed_s, 3), "dropped_rounds": ms.dropped_rounds,
            "instances": max(len(g) if isinstance(g, list) else 1 for g in graphs),
            "clocks_mhz": [c for c in ms.clocks_mhz if c is not None]}
    results = []
    for col, (j, chk) in enumerate(zip(timed, checks)):
        s = ms.samples_us[:, col] if len(ms.samples_us) else np.empty(0)
        summ = stats.summarize_samples(s, seed=settings.seed)
        med = summ["median_us"]
        if not (math.isfinite(med) and med > 0):
            failures.append(base | {"candidate": names[j], "reasons": chk.reasons + [
                f"no usable timing (median {med!r} us; dropped rounds {ms.dropped_rounds})"]})
            continue
        lo, hi = _finite(summ["ci_low_us"]), _finite(summ["ci_high_us"])
        results.append(base | {
            "candidate": names[j], "method": str(candidates[j].describe(shape["family"], int(shape["M"]))),
            "median_us": med, "ci_low_us": lo, "ci_high_us": hi, "samples_us": [round(float(v), 4) for v in s],
            "n_samples": int(s.size), "correct": bool(chk.ok),
            "error": {k: (_finite(v) if isinstance(v, float) else v) for k, v in chk.to_dict().items()},
            "flags": _flags(med, lo, hi, floor_us, ms.dropped_rounds, chk.ok),
            "throttled_samples": int(ms.dropped_rounds), "floor_us": floor_us, "bytes": shape_bytes(shape),
            "stopped_by": ms.stopped_by})
    pairs = []
    have = {r["candidate"] for r in results}
    if names[0] in have and timed and timed[0] == 0:
        for col, j in enumerate(timed):
            if col == 0 or names[j] not in have:
                continue
            p = stats.summarize_pairs(ms.samples_us[:, 0], ms.samples_us[:, col], seed=settings.seed)
            if not (math.isfinite(p["ratio_median"]) and p["ratio_median"] > 0):
                continue
            pairs.append(base | {"baseline": names[0], "candidate": names[j],
                                 "ratio_median": p["ratio_median"], "ratio_ci_low": _finite(p["ratio_ci_low"]),
                                 "ratio_ci_high": _finite(p["ratio_ci_high"]), "rse": _finite(p["rse"]),
                                 "n_pairs": p["n_pairs"], "ratios": [round(v, 6) for v in p["ratios"]]})
    return results, pairs, failures, info


def _floor_lookup(probes: list[dict]) -> dict[int, float]:
    return {int(p["bytes"]): float(p["us"]) for p in probes if p.get("kind", "read") == "read"}


def run_sweep(candidates: Sequence, shapes: Sequence[dict], out_path, *, label: str,
              settings: SweepSettings | None = None, device="cuda", progress: Callable | None = None,
              log: Callable[[str], None] = print, measure_shapes: bool = True) -> dict:
    """Probes, then every shape; returns the run dict (also written to out_path).
    measure_shapes=False: probes only (`python -m profiler probe`); the shapes only give byte counts."""
    import torch

    from datasets import load_seed_probes
    from profiler.probes import log_sweep_bytes, probe_plan, run_compute_probe, run_read_probes
    from profiler.runfile import RunWriter, new_run
    from profiler.telemetry import Telemetry, environment
    from profiler.timing import ColdTimer, StreamTimer

    settings = settings or SweepSettings()
    t_start = time.perf_counter()
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    # The FP32 router baseline must run true FP32 (issue 4); a candidate must not be able to flip this for
    # the others, so it is pinned here and recorded.
    torch.backends.cuda.matmul.allow_tf32 = False
    names = unique_names(candidates)
    settings.candidates = names
    writer = RunWriter(out_path)  # refuses an existing file before any GPU work
    pci = getattr(torch.cuda.get_device_properties(device), "pci_bus_id", None) if device.type == "cuda" else None
    telem = Telemetry(device.index or 0, pci)
    env = environment(device, telem)
    cold = ColdTimer(device, flush_bytes=settings.flush_bytes)
    timer = cold if settings.mode == "cold" else StreamTimer(device)
    env["replay_overhead_us"] = timer.overhead_us
    env["replay_overhead_ci_us"] = [float(v) for v in timer.overhead_ci_us]
    if timer is not cold:
        env["probe_replay_overhead_us"] = cold.overhead_us
    env["settings"] = asdict(settings) | {"flush_bytes": cold.flush_bytes, "allow_tf32": False,
                                          "min_clock_fraction": MIN_CLOCK_FRACTION}
    log(f"replay overhead {timer.overhead_us:.2f} us (95% CI {timer.overhead_ci_us[0]:.2f}-"
        f"{timer.overhead_ci_us[1]:.2f}); flush reads {cold.flush_bytes / 1e6:.0f} MB (L2 {cold.l2_bytes / 1e6:.1f} MB)")
    run = new_run(label, env)
    run["failures"] = []
    run["shape_info"] = {}
    try:
        if settings.probes:
            t0 = time.perf_counter()
            seed_probes = load_seed_probes()
            plan = probe_plan({shape_key(s): shape_bytes(s) for s in shapes},
                              zip(seed_probes["label"], seed_probes["bytes"]), log_sweep_bytes())
            run["probes"] = run_read_probes(cold, plan, n_rounds=settings.probe_rounds,
                                            progress=(lambda i, n: progress("probes", i, n)) if progress else None)
            run["compute_probe"] = run_compute_probe(cold)
            run["compute_peak_tflops"] = run["compute_probe"]["tflops"]
            run["environment"]["probe_seconds"] = round(time.perf_counter() - t0, 2)
            run["telemetry"].append(telem.sample())
            writer.flush(run)
        floors = _floor_lookup(run["probes"])
        cache = _ShapeState(device, settings.seed)
        t_shapes = time.perf_counter()
        for i, shape in enumerate(shapes if measure_shapes else []):
            res, pairs, fails, info = measure_one_shape(timer, candidates, names, shape, cache, settings, device,
                                                        telemetry=telem, floor_us=floors.get(shape_bytes(shape)))
            run["results"] += res
            run["pairs"] += pairs
            run["failures"] += fails
            run["shape_info"][shape_key(shape)] = info
            run["telemetry"].append(telem.sample())
            writer.flush(run)
            if progress:
                progress("shapes", i + 1, len(shapes))
        env = run["environment"]
        env["sweep_seconds"] = round(time.perf_counter() - t_shapes, 2)
        env["wall_seconds"] = round(time.perf_counter() - t_start, 2)
        env.setdefault("clocks", {})["sm_mhz_end"] = telem.sm_mhz()
        writer.finalize(run)
        run["status"] = "complete"
    except KeyboardInterrupt:
        run["environment"]["wall_seconds"] = round(time.perf_counter() - t_start, 2)
        run["interrupted"] = True
        writer.flush(run)
        print(f"\ninterrupted: partial run kept in {out_path}", file=sys.stderr)
        raise
    return run
