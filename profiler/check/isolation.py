"""Process-wide state that reads its configuration once, set up in the worker before any candidate is imported.

    initialise_libraries(device, dtypes=MATMUL_DTYPES) -> {"initialised": [...], "environment_read": {...}}

Why: cuBLAS and cuBLASLt size their workspaces from CUBLAS_WORKSPACE_CONFIG and CUBLASLT_WORKSPACE_SIZE, and the
caching allocator parses PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF, each the first time torch needs them, not
at import. A candidate module that set CUBLAS_WORKSPACE_CONFIG=:0:0 and CUBLASLT_WORKSPACE_SIZE=0 at import made
the baseline's F.linear in the same worker up to 13.7x slower on the H200 (router M=32: 19.8 -> 271 us; unpooler
M=1: 6.2 -> 20.2 us), because the baseline's first matmul came after the import. Here every matmul path the
workload's baseline takes -- for every dtype combination -- runs once on the current stream, once on a side stream
and once inside a CUDA graph capture (the timer warms up and captures on side streams, and cuBLAS keeps a
workspace per handle and stream), so the handles exist and the sizes are read before a candidate can change them.
cuBLAS reads its two workspace variables again at every later capture and eager call, so the values read here are
also pinned for those (profiler.measure.timing.pin_environment). The guard (profiler.check.guards) then refuses any
change of the environment; the canary
(profiler.commands.canary) is the proof that nothing else reached the baseline.

CPU: nothing to initialise (the record says so).
"""
from __future__ import annotations

from typing import Iterable

# (x dtype, w dtype, y dtype) of every family in the shipped workloads: BF16 projections and the FP32 router
# (x.float() @ W in FP32); FP16 for workloads that declare it. More combinations cost ~1 ms each.
MATMUL_DTYPES = (("bfloat16", "bfloat16", "bfloat16"), ("bfloat16", "float32", "float32"),
                 ("float16", "float16", "float16"), ("float32", "float32", "float32"))
# The environment variables the initialised libraries read once (recorded, so a run says what it ran under).
LAZY_ENVIRONMENT = ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE", "PYTORCH_CUDA_ALLOC_CONF",
                    "PYTORCH_ALLOC_CONF", "NVIDIA_TF32_OVERRIDE", "TORCH_BLAS_PREFER_CUBLASLT",
                    "CUDA_MODULE_LOADING")
_SHAPE = (64, 256, 128)   # (M, K, N): large enough for cuBLAS to take its tensor-core kernels, small enough to be free
# The graphs captured here live as long as the worker: cuBLAS keeps the workspace it allocated during a capture in its
# per-(handle, stream) map, inside that graph's private memory pool, and later captures on the same stream can bake
# the same pointer into their graphs; destroying the graph would make its pool freeable, so empty_cache() could hand
# memory a live graph still uses to the next allocation.
_KEPT_GRAPHS: list = []


def workload_dtypes(families: Iterable[dict]) -> tuple[tuple[str, str, str], ...]:
    """MATMUL_DTYPES plus any (x, w, y) dtype combination of the families (workload.families.values())."""
    found = list(MATMUL_DTYPES)
    for fam in families:
        combo = (str(fam["x_dtype"]), str(fam["w_dtype"]), str(fam["y_dtype"]))
        if combo not in found:
            found.append(combo)
    return tuple(found)


def _matmuls(device, x_dtype: str, w_dtype: str):
    """The baseline's calls for one dtype combination: F.linear (cuBLAS gemm), with a bias (the cuBLASLt epilogue
    path) and torch.mm."""
    import torch
    import torch.nn.functional as F

    M, K, N = _SHAPE
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(M, K, generator=g, device=device).to(getattr(torch, x_dtype))
    w = torch.randn(N, K, generator=g, device=device).to(getattr(torch, w_dtype))
    bias = torch.zeros(N, device=device, dtype=w.dtype)
    xc = x.to(w.dtype)  # the FP32 router baseline multiplies x.float() by the FP32 weights

    def calls():
        return F.linear(xc, w), F.linear(xc, w, bias), torch.mm(xc, w.T)

    return calls


def initialise_libraries(device, dtypes: Iterable[tuple[str, str, str]] = MATMUL_DTYPES) -> dict:
    """Create the cuBLAS/cuBLASLt handles and workspaces and the caching allocator's state for `dtypes` on `device`
    (module docstring). Returns what was done and the lazily read variables' values (None: unset)."""
    import os

    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None:   # torch.cuda.set_device refuses a device without an index
        device = torch.device("cuda", torch.cuda.current_device())
    record = {"environment_read": {k: os.environ.get(k) for k in LAZY_ENVIRONMENT}, "initialised": []}
    if device.type != "cuda":
        record["initialised"].append("nothing (not a CUDA device)")
        return record
    from profiler.measure import timing

    timing.pin_environment(record["environment_read"])   # every later capture and eager call runs under these
    torch.cuda.set_device(device)
    block = torch.empty(1 << 20, dtype=torch.uint8, device=device)  # the allocator parses its settings here
    del block
    record["initialised"].append("caching allocator")
    side = torch.cuda.Stream(device)
    for x_dtype, w_dtype, _ in dtypes:
        calls = _matmuls(device, x_dtype, w_dtype)
        calls()
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            calls()
        torch.cuda.current_stream(device).wait_stream(side)
        handle = timing.capture_graph(calls, device, warmup_calls=1)
        handle.replay()
        torch.cuda.synchronize(device)
        _KEPT_GRAPHS.append(handle)
        record["initialised"].append(f"cuBLAS/cuBLASLt {x_dtype} x {w_dtype} (eager, side stream, graph)")
    return record
