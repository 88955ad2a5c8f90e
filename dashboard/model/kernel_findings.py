"""Findings: short sentences, computed from an explain run's numbers, that say where a call's time goes.

Every threshold lives in `Thresholds` below (one place); every rule is a small function of one call's row
(dashboard.model.kernels.call_table) and its kernels (kernel_table), returning a Finding or None. `findings()` runs
them all and orders the findings by the time they account for, largest first. The thresholds are projlab's
choices, each with its reason; tests/dashboard/test_kernel_findings.py checks every rule on both sides of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Thresholds:
    # A kernel besides the weight stream worth naming: a tenth of the call is more than the within-run band of a
    # shape (dashboard.model.noise; RESULTS.md, "Noise bands").
    side_share: float = 0.10
    # DRAM bytes ÷ ideal (weights + x + y) from which a call "moves more than it must": below 1.10 the excess is
    # x re-reads and partial sectors (cuBLAS at qkv M=16 reads 1.04× on the H200).
    excess_ratio: float = 1.10
    # Main kernel's bandwidth ÷ the probe's at the same bytes below which it is "slow at its bytes" (memory-bound
    # calls only: a compute-bound one is judged against the compute roof).
    low_bandwidth: float = 0.75
    # Share of the SMs a grid must leave idle to be named: 4 idle of 132 (a 128-program grid, 3 %) is less than
    # the within-run band of a shape (dashboard.model.noise).
    idle_sm_share: float = 0.05
    # Main kernel's TFLOP/s ÷ the measured peak below which a compute-bound call is "far from the compute roof".
    low_compute: float = 0.75
    # More than one wave whose last wave fills less than this fraction of the GPU: a visible tail.
    tail_wave_fill: float = 0.5
    # SM and DRAM throughput (% of peak, ncu) both under this: neither unit is busy, the kernel waits (latency).
    busy_pct: float = 40.0
    # Idle time between the kernels of one replay worth naming, as a fraction of the replay.
    between_share: float = 0.10
    # SOL (floor ÷ time) from which a call is "close to the floor".
    near_floor_sol: float = 0.90


THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Finding:
    rule: str
    candidate: str
    text: str
    us: float  # the time this finding accounts for (for ordering; 0 where it explains no time by itself)


NAME_CHARS = 48  # kernel names in sentences are cut here (tables keep the whole name)


def _mb(nbytes) -> str:
    return f"{nbytes / 1e6:.1f} MB"


def name(kernel: str) -> str:
    return kernel if len(kernel) <= NAME_CHARS else kernel[:NAME_CHARS - 1] + "…"


def side_kernels(call, kernels, t: Thresholds) -> list[Finding]:
    """Each kernel other than the weight stream that takes at least `side_share` of the call."""
    total = kernels["time_us"].sum()
    out = []
    for k in kernels[~kernels["is_main"]].itertuples():
        if total > 0 and k.time_us / total >= t.side_share:
            out.append(Finding("side_kernel", call["candidate"],
                               f"{name(k.kernel)} is {k.time_us / total:.0%} of this call "
                               f"({k.time_us:.2f} of {total:.2f} µs of kernel time)", float(k.time_us)))
    return out


def extra_launches(call, kernels, t: Thresholds) -> Finding | None:
    """More than one kernel: how many, and what the ones besides the weight stream cost against the gap."""
    n, side, gap = int(call["launches"]), float(call["side_kernels_us"]), float(call["gap_us"])
    if n < 2:
        return None
    against = (f"{side / gap:.0%} of the gap to the floor" if 0 < side <= gap else
               f"more than the whole gap to the floor ({gap:.2f} µs)")
    return Finding("extra_launches", call["candidate"], f"{n} kernel launches: the {n - 1} besides the weight stream "
                   f"({name(call['main_kernel'])}) take {side:.2f} µs, {against}", side)


def idle_sms(call, kernels, t: Thresholds, sm_count: int) -> Finding | None:
    """The weight stream's grid leaves at least `idle_sm_share` of the SMs without a program."""
    grid = int(call["main_grid"])
    if grid >= sm_count or (sm_count - grid) / sm_count < t.idle_sm_share:
        return None
    return Finding("idle_sms", call["candidate"], f"grid of {grid} programs leaves {sm_count - grid} of {sm_count} "
                   f"SMs idle ({name(call['main_kernel'])})", float(call.get("underfilled_us", 0.0) or 0.0))


def tail_wave(call, kernels, t: Thresholds) -> Finding | None:
    """More than one wave, and the last one fills less than `tail_wave_fill` of the GPU."""
    waves = call.get("main_waves")
    if waves is None or not math.isfinite(waves) or waves <= 1:
        return None
    last = waves - math.floor(waves)
    if last == 0 or last >= t.tail_wave_fill:
        return None
    return Finding("tail_wave", call["candidate"], f"{name(call['main_kernel'])} runs {waves:.2f} waves: the last one "
                   f"fills {last:.0%} of the GPU", 0.0)


def excess_bytes(call, kernels, t: Thresholds) -> Finding | None:
    """DRAM traffic of the call at least `excess_ratio` × the ideal bytes."""
    ratio = call["excess_ratio"]
    if not ratio >= t.excess_ratio:
        return None
    return Finding("excess_bytes", call["candidate"], f"moves {ratio:.2f}× the ideal bytes ({_mb(call['dram_bytes'])} "
                   f"from/to DRAM vs {_mb(call['ideal_bytes'])} of weights + x + y)",
                   max(float(call["excess_bytes_us"]), 0.0))


def low_bandwidth(call, kernels, t: Thresholds) -> Finding | None:
    """A memory-bound call whose weight stream reaches less than `low_bandwidth` of the probe at the same bytes."""
    frac = call["main_bw_vs_probe"]
    if call["bound"] == "compute" or not frac < t.low_bandwidth:
        return None
    return Finding("low_bandwidth", call["candidate"], f"{name(call['main_kernel'])} reaches {frac:.0%} of the probe's "
                   f"bandwidth at its {_mb(call['main_bytes'])} ({call['main_tbps']:.2f} vs "
                   f"{call['main_probe_tbps']:.2f} TB/s)",
                   max(float(call["main_slow_us"]) - float(call.get("underfilled_us", 0.0) or 0.0), 0.0))


def compute_bound(call, kernels, t: Thresholds, peak_tflops: float | None) -> Finding | None:
    """A compute-bound call (2MNK at the measured peak takes longer than reading the bytes): how far from the roof."""
    if call["bound"] != "compute" or not peak_tflops:
        return None
    frac = call["main_tflops"] / peak_tflops
    verdict = "far from" if frac < t.low_compute else "near"
    return Finding("compute_bound", call["candidate"], f"compute-bound: 2MNK needs {call['compute_floor_us']:.2f} µs at "
                   f"the measured {peak_tflops:.0f} TFLOP/s, more than the {call['memory_floor_us']:.2f} µs read; "
                   f"{name(call['main_kernel'])} runs {call['main_tflops']:.0f} TFLOP/s ({frac:.0%}, {verdict} the "
                   "roof)", max(float(call["main_slow_us"]), 0.0))


def latency_bound(call, kernels, t: Thresholds) -> Finding | None:
    """Neither DRAM nor the SMs busy in the weight stream (both throughputs under `busy_pct`)."""
    sm, dram = call["main_sm_pct"], call["main_dram_pct"]
    if not (sm < t.busy_pct and dram < t.busy_pct):
        return None
    return Finding("latency_bound", call["candidate"], f"{name(call['main_kernel'])} keeps neither DRAM ({dram:.0f} % of "
                   f"peak) nor the SMs ({sm:.0f} %) busy under ncu: it waits on latency", 0.0)


def between_kernels(call, kernels, t: Thresholds) -> Finding | None:
    """Idle time between the kernels of one graph replay, at least `between_share` of the replay."""
    between, time = call["between_us"], call["time_us"]
    if not (time > 0 and between / time >= t.between_share):
        return None
    return Finding("between_kernels", call["candidate"], f"{between:.2f} µs idle between kernels in a graph replay "
                   f"({between / time:.0%} of it)", float(between))


def near_floor(call, kernels, t: Thresholds) -> Finding | None:
    """Close to (or under) the floor: say so, since nothing above explains much time."""
    sol = call["sol"]
    if not sol >= t.near_floor_sol:
        return None
    if sol > 1:
        text = (f"{call['time_us']:.2f} µs is under the probe floor {call['floor_us']:.2f} µs (one replay; "
                "a reading under the floor is noise or a warm cache, not a faster-than-HBM kernel)")
    else:
        text = f"at {sol:.0%} of the floor ({call['time_us']:.2f} vs {call['floor_us']:.2f} µs): little left here"
    return Finding("near_floor", call["candidate"], text, 0.0)


RULES = (extra_launches, tail_wave, excess_bytes, low_bandwidth, latency_bound, between_kernels, near_floor)


def call_findings(call: pd.Series, kernels: pd.DataFrame, sm_count: int, peak_tflops: float | None = None,
                  t: Thresholds = THRESHOLDS) -> list[Finding]:
    """Every rule on one call (row of call_table) and its kernels (rows of kernel_table)."""
    out = side_kernels(call, kernels, t)
    found = [rule(call, kernels, t) for rule in RULES]
    found += [idle_sms(call, kernels, t, sm_count), compute_bound(call, kernels, t, peak_tflops)]
    return out + [f for f in found if f is not None]


def findings(calls: pd.DataFrame, kernels: pd.DataFrame, shape: str, sm_count: int,
             peak_tflops: float | None = None, t: Thresholds = THRESHOLDS) -> pd.DataFrame:
    """Findings for every candidate at one shape: candidate, rule, text, us — largest `us` first per candidate."""
    rows = []
    for _, call in calls[calls["shape"] == shape].iterrows():
        ks = kernels[(kernels["shape"] == shape) & (kernels["candidate"] == call["candidate"])]
        found = sorted(call_findings(call, ks, sm_count, peak_tflops, t), key=lambda f: -f.us)
        rows += [{"candidate": f.candidate, "rule": f.rule, "text": f.text, "us": f.us} for f in found]
    return pd.DataFrame(rows, columns=["candidate", "rule", "text", "us"])
