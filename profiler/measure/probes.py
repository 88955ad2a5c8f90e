"""HBM read probes and the bf16 compute probe (cold method: same flush, overhead and graphs as kernels).

Read probe at a byte count = the fastest of several read designs (measured on the H200: a one-shot grid wins at
8-17 MB and 512 MB, a persistent grid of 2 programs/SM wins at 37-134 MB; neither is always best), plus cuBLAS
(torch.mv over a bf16 matrix of the same bytes) as a sanity bar: a probe slower than cuBLAS reading the same
bytes would be a bug, so cuBLAS is one of the candidates and every design's time is recorded.
The Triton jit code sits here rather than in kernels/ because it is a measuring instrument, not a method.

A CPU device (`--device cpu`): the read probe measures this machine's read rate over sizes from past the private L2
(what the CPU timer's flush evicts) to several times the last-level cache (cpu_read_sizes), and each shape's floor
is derived from the fastest rate seen (cpu_floors: bytes ÷ that rate), so no real kernel can beat it whatever cache
its weights sit in after the flush; a probe at the shape's own few KB would time the call's dispatch instead, and a
floor above what F.linear reaches. The compute probe keeps the fastest of a bf16 and an fp32 product at two sizes.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, Iterable

import numpy as np

from datasets.runfile import MIN_US_PER_CALL
from profiler.measure.stats import bootstrap_ci

# (name, kind, BLOCK elements of fp32, num_warps)
READ_DESIGNS = (
    ("oneshot_b2048", "oneshot", 2048, 4),
    ("oneshot_b8192", "oneshot", 8192, 8),
    ("oneshot_b16384", "oneshot", 16384, 8),
    ("persistent_b4096", "persistent", 4096, 8),
    ("persistent_b8192", "persistent", 8192, 8),
    ("persistent_b16384", "persistent", 16384, 16),
)
# A persistent grid of 2 programs per SM read 37-134 MB at about twice a one-shot grid's bandwidth (H200).
PERSISTENT_PROGRAMS_PER_SM = 2
MV_COLS = 4096                  # cuBLAS design: bf16 [bytes / (2 * 4096), 4096] @ v
# An 8192^3 bf16 GEMM: large enough to reach the H200's sustained rate (782-809 TFLOP/s in the run files'
# compute_probe).
COMPUTE_PROBE_MNK = 8192
# On a CPU device: 512^3 and 1024^3 products (0.27 and 2.1 GFLOP, milliseconds to a second on a CI core) in bf16
# and fp32, the fastest kept: the CPU sweep's compute probe only has to say what this machine does (8192^3 would take
# minutes there), and on a CPU without bf16 units the fp32 product is the faster one.
CPU_COMPUTE_PROBE_SIZES = (512, 1024)
# CPU read sizes: from 2x the private L2 to 8x the last-level cache, in factors of 2.
CPU_READ_FROM_L2, CPU_READ_TO_LLC = 2, 8
CPU_READ_LABEL = "CPU read rate"
DERIVED_DESIGN = "derived: bytes / fastest CPU read rate"
ONE_MB, ONE_GB = 1 << 20, 1 << 30


@lru_cache(maxsize=None)  # one JITFunction per process: Triton caches compiled variants on it
def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def read_oneshot(ptr, out_ptr, n, BLOCK: tl.constexpr):
        """out[pid] = sum(data[pid*BLOCK : (pid+1)*BLOCK]); one program per block, grid >> SMs."""
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + pid, tl.sum(v, axis=0))

    @triton.jit
    def read_persistent(ptr, out_ptr, n, n_prog, n_iters, BLOCK: tl.constexpr):
        """out[pid] = sum of blocks pid, pid + n_prog, ...; a fixed grid of programs looping over the data
        (n_iters = cdiv(n_blocks, n_prog); blocks past the end are masked off)."""
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(0, n_iters):
            offs = (pid + i * n_prog) * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    return read_oneshot, read_persistent


def read_fns(buf_f32, nbytes: int, sm_count: int, designs: bool | None = None) -> dict[str, Callable[[], None]]:
    """One launcher per design, each reading the first `nbytes` of `buf_f32` (plus cuBLAS torch.mv). designs: the
    Triton read designs (True), a CPU device's own probe (False), or by the buffer's device (None; the Triton
    interpreter runs the designs on a CPU buffer: tests/profiler/test_probe_kernels.py)."""
    import torch

    n = max(1, nbytes // 4)
    data = buf_f32[:n]
    fns = {}
    rows = max(1, nbytes // (2 * MV_COLS))
    mat = buf_f32.view(torch.bfloat16)[: rows * MV_COLS].view(rows, MV_COLS)
    vec = buf_f32.view(torch.bfloat16)[-MV_COLS:]
    if designs is False or (designs is None and buf_f32.device.type == "cpu"):
        # A CPU device's read probe: torch's own vectorised reduction over the bytes, and an fp32 matrix-vector
        # product over the same bytes (BLAS; a bf16 one has no fast path on most CPUs). Triton's kernels need a GPU.
        rows32 = max(1, nbytes // (4 * MV_COLS))
        mat32 = buf_f32[: rows32 * MV_COLS].view(rows32, MV_COLS)
        vec32 = buf_f32[-MV_COLS:]
        return {"torch_sum": lambda: torch.sum(data), "torch_mv_fp32": lambda: torch.mv(mat32, vec32)}
    read_oneshot, read_persistent = _kernels()
    for name, kind, block, warps in READ_DESIGNS:
        n_blocks = math.ceil(n / block)
        if kind == "oneshot":
            out = torch.empty(n_blocks, device=buf_f32.device, dtype=torch.float32)
            fns[name] = (lambda out=out, block=block, warps=warps, nb=n_blocks:
                         read_oneshot[(nb,)](data, out, n, BLOCK=block, num_warps=warps))
        else:
            grid = min(n_blocks, PERSISTENT_PROGRAMS_PER_SM * sm_count)
            out = torch.empty(grid, device=buf_f32.device, dtype=torch.float32)
            iters = math.ceil(n_blocks / grid)
            fns[name] = (lambda out=out, block=block, warps=warps, grid=grid, iters=iters:
                         read_persistent[(grid,)](data, out, n, grid, iters, BLOCK=block, num_warps=warps))
    fns["torch_mv"] = lambda: torch.mv(mat, vec)
    return fns


def cpu_read_sizes(l2_bytes: int, llc_bytes: int, memory_bytes: int | None = None) -> list[int]:
    """The CPU read probe's sizes: 2x the private L2 (past the flush) doubling up to 8x the last-level cache, and
    to no more than an eighth of the machine's memory (`memory_bytes`)."""
    lo = max(1 << 20, CPU_READ_FROM_L2 * int(l2_bytes))
    hi = max(lo, CPU_READ_TO_LLC * int(llc_bytes))
    if memory_bytes:
        hi = max(lo, min(hi, int(memory_bytes) // 8))
    out, b = [], lo
    while b <= hi:
        out.append(int(b))
        b *= 2
    return out


def cpu_floors(read: list[dict], shape_bytes: dict[str, int]) -> list[dict]:
    """One derived read record per shape: its bytes ÷ the fastest read rate of `read` (bytes per us), marked
    derived (never measured at that size). A floor under the run file's resolution of a time
    (datasets.runfile.MIN_US_PER_CALL, 10 ns) is not kept: the probe curve's scaled value stands for it there."""
    rates = [(r["bytes"] / r["us"], r) for r in read if r.get("us") and r["us"] > 0]
    if not rates:
        return []
    rate, best = max(rates, key=lambda t: t[0])
    out = []
    for label, nbytes in shape_bytes.items():
        us = int(nbytes) / rate
        if us < MIN_US_PER_CALL:
            continue
        out.append({"bytes": int(nbytes), "us": us, "tbps": rate / 1e6, "design": DERIVED_DESIGN, "kind": "read",
                    "for_shape": label, "derived": True,
                    "derived_from": {"bytes": int(best["bytes"]), "us": float(best["us"]),
                                     "design": best.get("design")}})
    return out


def log_sweep_bytes(n_points: int = 12, lo: int = ONE_MB, hi: int = ONE_GB) -> list[int]:
    """~12 sizes evenly spaced in log from 1 MB to 1 GB, rounded to 4 KiB."""
    return sorted({int(round(b / 4096)) * 4096 for b in np.geomspace(lo, hi, n_points)})


def probe_plan(shape_bytes: dict[str, int], writeup: Iterable[tuple[str, int]] = (),
               sweep: Iterable[int] = ()) -> list[tuple[int, str]]:
    """(bytes, for_shape label) in measuring order: the run's shapes first (their floors flag artifacts),
    then the write-up's sizes, then the log sweep; equal byte counts are merged (labels joined)."""
    order: list[int] = []
    labels: dict[int, list[str]] = {}
    for label, nbytes in [*shape_bytes.items(), *((f"write-up {l}", b) for l, b in writeup),
                          *(("sweep", b) for b in sweep)]:
        nbytes = int(nbytes)
        if nbytes not in labels:
            order.append(nbytes)
            labels[nbytes] = []
        if label not in labels[nbytes]:
            labels[nbytes].append(label)
    return [(b, "; ".join(labels[b])) for b in order]


def run_read_probes(timer, plan: list[tuple[int, str]], n_rounds: int = 24,
                    progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Measure every (bytes, label) of `plan`; one record per size with the fastest design kept."""
    import torch

    max_bytes = max(b for b, _ in plan) + 2 * MV_COLS * 2
    buf = torch.empty(max_bytes // 2 + 2, device=timer.device, dtype=torch.bfloat16).uniform_(0.0, 1.0)
    buf_f32 = buf[: (buf.numel() // 2) * 2].view(torch.float32)  # finite both as bf16 pairs and as fp32
    records = []
    for i, (nbytes, label) in enumerate(plan):
        fns = read_fns(buf_f32, nbytes, timer.sm_count)
        names = list(fns)
        graphs = [timer.capture(fns[name]) for name in names]
        samples = timer.sample(graphs, n_rounds)
        med = np.median(samples, axis=0)
        best = int(np.argmin(med))
        us = float(med[best])
        lo, hi = bootstrap_ci(samples[:, best])  # the probe's noise: a floor is only undercut beyond it
        records.append({"bytes": int(nbytes), "us": us, "tbps": nbytes / us / 1e6 if us > 0 else None,
                        "ci_low_us": float(lo), "ci_high_us": float(hi), "n_samples": int(samples.shape[0]),
                        "design": names[best], "kind": "read", "for_shape": label,
                        "designs_us": {n: round(float(m), 3) for n, m in zip(names, med)}})
        del graphs
        if progress:
            progress(i + 1, len(plan))
    del buf, buf_f32
    if timer.device.type == "cuda":
        torch.cuda.empty_cache()
    return records


def run_compute_probe(timer, n_rounds: int = 10, size: int | None = None) -> dict:
    """8192^3 bf16 matmul on random data (never zeros: METHOD.md), cold method; -> record with tflops. A CPU device:
    bf16 and fp32 products at CPU_COMPUTE_PROBE_SIZES, the fastest rate kept (the record's `designs` lists all)."""
    import torch

    if timer.device.type == "cpu" and size is None:
        tried = [_product(timer, n, dtype, n_rounds) for n in CPU_COMPUTE_PROBE_SIZES
                 for dtype in (torch.bfloat16, torch.float32)]
        best = max(tried, key=lambda r: r["tflops"])
        return best | {"designs": [{k: r[k] for k in ("M", "dtype", "us", "tflops")} for r in tried]}
    return _product(timer, size or COMPUTE_PROBE_MNK, torch.bfloat16, n_rounds)


def _product(timer, size: int, dtype, n_rounds: int) -> dict:
    import torch

    g = torch.Generator(device=timer.device).manual_seed(0)
    a = torch.randn(size, size, device=timer.device, dtype=dtype, generator=g)
    b = torch.randn(size, size, device=timer.device, dtype=dtype, generator=g)
    graph = timer.capture(lambda: torch.mm(a, b))
    us = float(np.median(timer.sample([graph], n_rounds)[:, 0]))
    del graph, a, b
    if timer.device.type == "cuda":
        torch.cuda.empty_cache()
    return {"M": size, "N": size, "K": size, "us": us, "tflops": 2.0 * size ** 3 / (us * 1e-6) / 1e12,
            "dtype": str(dtype).replace("torch.", "")}
