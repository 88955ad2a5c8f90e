"""Launchers of the peer methods (kernels/methods_library.py): TunableOp, torch.compile max-autotune, FlashInfer.

Each keeps its set-up per process, keyed by what it depends on -- the (x dtype, w dtype, M, N, K) of the product,
never a weight or a family name -- and does it at the first call of a shape: prepare() never sees an activation, so
it cannot know M, and the harness calls run() eagerly (the contract's checks) before it captures a graph, so the
set-up is never inside a timed graph. A first call inside a graph capture is refused (RuntimeError, one line).
`setup(state, M)` returns what the set-up cost and chose at M, for the run file (results[].setup).
"""
from __future__ import annotations

import os
import re
import tempfile
import time
import types
from contextlib import contextmanager
from pathlib import Path

import importlib
import importlib.util

import torch
import torch.nn.functional as F
from torch._dynamo.utils import compilation_time_metrics
from torch._inductor.utils import run_and_get_code

from kernels.launch import check_input, impl
from kernels.methods_library import side_folder

TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"   # the lab captures its own CUDA graphs (profiler/measure/timing)


def _key(x, w) -> tuple:
    return (str(x.dtype).removeprefix("torch."), str(w.dtype).removeprefix("torch."), int(x.shape[0]),
            int(w.shape[0]), int(w.shape[1]))


def _capturing(x) -> bool:

    return x.is_cuda and torch.cuda.is_current_stream_capturing()


def _refuse_in_capture(x, what: str, key: tuple) -> None:
    if _capturing(x):
        raise RuntimeError(f"{what}: the first call at {key} came inside a CUDA graph capture; its set-up must run "
                           f"eagerly first (the harness's checks do)")


def _weight_and_input(state: dict, x, what: str):
    w = state["w"]
    check_input(x, int(w.shape[1]), x.dtype, what)
    return w, (x if x.dtype == w.dtype else x.to(w.dtype))   # the router: x cast to FP32 like the baseline


def _prepare(weight, config: dict) -> dict:
    return {"w": weight.contiguous(), "keys": {}}


# ------------------------------------------------------------------------------------------ tunableop

_TUNED: dict[tuple, dict] = {}   # per process: product key -> {"tune_seconds", "results"}
_RESULTS_TOKEN = os.urandom(4).hex()   # this process's results file among the run's workers


def tunableop_unavailable() -> str | None:

    if not torch.cuda.is_available():
        return "tunableop: needs a CUDA GPU (TunableOp tunes cuBLAS/cuBLASLt GEMMs); this host has none"
    if not hasattr(torch.cuda, "tunable"):
        return f"tunableop: torch {torch.__version__} has no torch.cuda.tunable"
    return None


def tunableop_results_path() -> Path:
    """This process's TunableOp results file (TunableOp's own CSV format, written after each tuning): in the run's
    side folder (kernels.methods_library.side_folder), else in the temporary folder (a run without a run file)."""
    # the pid alone is no name: every sandboxed worker is pid 1 in its own PID namespace
    name = f"tunableop_results_{os.uname().nodename}_{os.getpid()}_{_RESULTS_TOKEN}.csv"
    return (side_folder() or Path(tempfile.gettempdir()) / "projlab-tunableop") / name


@contextmanager
def tunableop_on(tuning: bool):
    """TunableOp enabled (tuning or replaying) for the calls inside, its switches put back on the way out: it
    reaches no other candidate's call (kernels.methods_library.TUNABLEOP_STATE; the guard checks)."""

    tun = torch.cuda.tunable
    before = (tun.is_enabled(), tun.tuning_is_enabled(), tun.record_untuned_is_enabled())
    path = tunableop_results_path()
    if tun.get_filename() != str(path):   # never the default file in the working directory
        path.parent.mkdir(parents=True, exist_ok=True)
        tun.set_filename(str(path), False)
    tun.record_untuned_enable(False)
    tun.tuning_enable(tuning)
    tun.enable(True)
    try:
        yield
    finally:
        tun.enable(before[0])
        tun.tuning_enable(before[1])
        tun.record_untuned_enable(before[2])


def _write_results(path: Path) -> None:
    """TunableOp's validators and results as its CSV file (atomic: a temporary file renamed)."""

    tun = torch.cuda.tunable
    lines = [",".join(("Validator", *map(str, v))) for v in tun.get_validators()]
    lines += [",".join(map(str, r)) for r in tun.get_results()]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def _tunableop_prepare(weight, config: dict) -> dict:
    reason = tunableop_unavailable()
    if reason:
        raise RuntimeError(reason)
    return _prepare(weight, config)


def _tunableop_run(state: dict, x):

    w, x = _weight_and_input(state, x, "tunableop")
    key = _key(x, w)
    if key not in _TUNED:
        _refuse_in_capture(x, "tunableop", key)
        before = {tuple(r) for r in torch.cuda.tunable.get_results()}
        t0 = time.perf_counter()
        with tunableop_on(tuning=True):
            y = F.linear(x, w)
            torch.cuda.synchronize(x.device)
        seconds = time.perf_counter() - t0
        new = [list(map(str, r)) for r in torch.cuda.tunable.get_results() if tuple(r) not in before]
        path = tunableop_results_path()
        _write_results(path)
        _TUNED[key] = {"tune_seconds": round(seconds, 4), "results": new,
                       "results_file": f"{path.parent.name}/{path.name}",
                       "max_tuning_iterations": torch.cuda.tunable.get_max_tuning_iterations(),
                       "max_tuning_duration_ms": torch.cuda.tunable.get_max_tuning_duration()}
    else:
        with tunableop_on(tuning=False):
            y = F.linear(x, w)
    state["keys"][key[2]] = key
    return y


def _tunableop_setup(state: dict, M: int) -> dict | None:
    key = state["keys"].get(int(M))
    return {"tunableop": _TUNED[key]} if key in _TUNED else None


# ------------------------------------------------------------------------------------------ torch_compile

_COMPILED: dict[tuple, dict] = {}   # per process: (device type, product key) -> {"fn", seconds, kernel names}
_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(", re.M)   # Inductor's generated kernels (Triton, C++)
_EXTERN = re.compile(r"extern_kernels\.(\w+)\(")                    # library calls Inductor chose instead


def _linear(x, w):

    return F.linear(x, w)


def kernel_names(codes: list[str]) -> list[str]:
    """The kernels a compiled module launches: Inductor's generated ones by name, library calls as extern_kernels.X."""
    names = []
    for code in codes:
        names += _KERNEL_DEF.findall(code) + [f"extern_kernels.{n}" for n in _EXTERN.findall(code)]
    return list(dict.fromkeys(names))


def _autotune_seconds() -> float:
    """Seconds Inductor has spent benchmarking and precompiling GEMM template choices in this process (its
    `<name>_template_autotuning` / `_template_precompiling` timers)."""

    return sum(sum(v) for k, v in compilation_time_metrics.items()
               if k.endswith(("_template_autotuning", "_template_precompiling")))


def _compile(x, w) -> dict:

    dtype_x, dtype_w, M, N, K = _key(x, w)
    # One code object per product: Dynamo keeps its compiled variants per code object and stops recompiling one
    # after torch._dynamo.config.recompile_limit (8) shapes; a sweep has 30.
    code = _linear.__code__.replace(co_name=f"projlab_linear_{dtype_x}_{dtype_w}_{M}x{N}x{K}")
    fn = torch.compile(types.FunctionType(code, _linear.__globals__, code.co_name), mode=TORCH_COMPILE_MODE,
                       fullgraph=True, dynamic=False)
    tuned_before = _autotune_seconds()
    t0 = time.perf_counter()
    _, codes = run_and_get_code(fn, x, w)
    if x.is_cuda:
        torch.cuda.synchronize(x.device)
    total = time.perf_counter() - t0
    autotune = _autotune_seconds() - tuned_before
    return {"fn": fn, "record": {"compile_seconds": round(total - autotune, 4), "autotune_seconds": round(autotune, 4),
                                 "mode": TORCH_COMPILE_MODE, "kernels": kernel_names(codes)}}


def _torch_compile_run(state: dict, x):
    w, x = _weight_and_input(state, x, "torch_compile")
    key = (x.device.type, *_key(x, w))
    if key not in _COMPILED:
        _refuse_in_capture(x, "torch_compile", key)
        _COMPILED[key] = _compile(x, w)
    state["keys"][key[3]] = key
    return _COMPILED[key]["fn"](x, w)


def _torch_compile_setup(state: dict, M: int) -> dict | None:
    key = state["keys"].get(int(M))
    return {"torch_compile": _COMPILED[key]["record"]} if key in _COMPILED else None


# ------------------------------------------------------------------------------------------ flashinfer

FLASHINFER_MIN_CAPABILITY = (9, 0)   # tinygemm_bf16: "Requires SM90+" (FlashInfer's docstring)


def flashinfer_unavailable() -> str | None:
    """None where FlashInfer can run here, else the one-line reason (no GPU, no package, a GPU before sm_90)."""


    if not torch.cuda.is_available():
        return "flashinfer: needs a CUDA GPU (sm_90+); this host has none"
    if importlib.util.find_spec("flashinfer") is None:
        return "flashinfer: the flashinfer-python package is not installed (pip install -r requirements-peers.txt)"
    cap = torch.cuda.get_device_capability()
    if cap < FLASHINFER_MIN_CAPABILITY:
        return f"flashinfer: needs an sm_90+ GPU, this one is sm_{cap[0]}{cap[1]}"
    return None


def _flashinfer_gemm():
    """FlashInfer's (mm_bf16, tinygemm_bf16): an optional package, so it is looked up here, at first use, by
    importlib (flashinfer_unavailable has said it is installed)."""
    gemm = importlib.import_module("flashinfer.gemm")
    return gemm.mm_bf16, gemm.tinygemm_bf16


def _flashinfer_prepare(weight, config: dict) -> dict:

    reason = flashinfer_unavailable()
    if reason:
        raise RuntimeError(reason)
    state = _prepare(weight, config) | {"entry": config["entry"]}
    # FlashInfer builds its kernels on first use (JIT, nvcc): once here, on one zero token, so the build is part of
    # the prepare step and not of the first checked call.
    _flashinfer_run(state, torch.zeros((1, int(weight.shape[1])), dtype=torch.bfloat16, device=weight.device))
    return state


def _flashinfer_run(state: dict, x):
    mm_bf16, tinygemm_bf16 = _flashinfer_gemm()

    w = state["w"]
    M = check_input(x, int(w.shape[1]), torch.bfloat16, "flashinfer")
    x = x.contiguous()
    if state["entry"] == "tinygemm_bf16":
        y = torch.empty((M, int(w.shape[0])), dtype=torch.bfloat16, device=x.device)
        tinygemm_bf16(x, w, y)
        return y
    return mm_bf16(x, w.t())   # b: (K, N) column-major, the [N, K] row-major weight's transposed view


TUNABLEOP = impl(_tunableop_prepare, _tunableop_run)
TUNABLEOP.setup = _tunableop_setup
TORCH_COMPILE = impl(_prepare, _torch_compile_run)
TORCH_COMPILE.setup = _torch_compile_setup
FLASHINFER = impl(_flashinfer_prepare, _flashinfer_run)
