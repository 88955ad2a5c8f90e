"""Peer methods: what a user gets without writing a kernel -- PyTorch's TunableOp, torch.compile's max-autotune and
FlashInfer's BF16 GEMMs -- registered like any other method, so a plan, the tuner (when asked: `--methods`) and
Compare treat them alike. `docs/kernels/peers.md` says what each is, how it is configured and why its number is fair.

Torch-free: the implementations are named by "module:attr" strings (kernels/launch/peers.py) and imported on first
use. Each says in one line where it cannot run (`unavailable_reason` there): TunableOp and FlashInfer need CUDA (and
FlashInfer its package and an sm_90+ GPU); torch.compile runs on any device Inductor has a backend for.

`process_state` names the process-wide settings a method touches (the guard's names, profiler/check/guards.py):
TunableOp's switches are global to the process, so its launcher sets them for its own calls only and puts them
back before it returns; the guard holds every candidate, this one included, to their values at worker start, so a
switch left on -- which would reach the baseline's F.linear -- fails the candidate and is restored.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernels.method import BF16, Method
from kernels.methods_dense import LIBRARY_SIGNATURES

# TunableOp's process-wide switches, by the names the guard snapshots them under (profiler/check/guards.py).
# Its results file name is set once per process (kernels/launch/peers.py) and changes no GEMM: not listed.
TUNABLEOP_STATE = ("torch.cuda.tunable.is_enabled()", "torch.cuda.tunable.tuning_is_enabled()",
                   "torch.cuda.tunable.record_untuned_is_enabled()")

# FlashInfer's tiny GEMM (flashinfer.gemm.tinygemm_bf16, TensorRT-LLM's tinygemm2): its documented requirements are
# K (input_features) a multiple of 64 and N (output_features) a multiple of 16, BF16 throughout, SM90+. It is written
# for "tiny batch sizes (ideally 1-8 rows)" (FlashInfer's docstring); the plan uses it for small N only.
TINYGEMM_K_MULTIPLE = 64
TINYGEMM_N_MULTIPLE = 16
FLASHINFER_ENTRIES = ("mm_bf16", "tinygemm_bf16")


# The environment variable through which the worker tells a method which run file it measures for (the tunableop
# peer writes its results file beside it). Here, torch-free, because the worker session sets it before any import.
RUN_FILE_ENV = "PROJLAB_RUN_FILE"


def tunableop_folder(run_file) -> Path:
    """Where the tunableop peer writes TunableOp's results files for a run: `<run stem>.tunableop/` beside the run
    file. The sweep's parent makes it before any worker starts (the sandboxed worker may write there and nowhere
    else near the run) and removes it again if no peer wrote into it."""
    run = Path(run_file)
    return run.parent / f"{run.name.split('.json')[0]}.tunableop"


@dataclass(frozen=True)
class PeerMethod(Method):
    """A method that is a library or compiler a user would pick instead of a kernel. `opt_in`: the tuner tries it
    only where `--methods` names it (a torch.compile max-autotune costs seconds per shape); `process_state`: the
    process-wide settings it touches (module docstring)."""

    process_state: tuple[str, ...] = ()
    opt_in: bool = True


def _flashinfer_shape_check(M, N, K, config):
    if config["entry"] == "tinygemm_bf16" and (K % TINYGEMM_K_MULTIPLE or N % TINYGEMM_N_MULTIPLE):
        return (f"flashinfer tinygemm_bf16 needs K % {TINYGEMM_K_MULTIPLE} == 0 and N % {TINYGEMM_N_MULTIPLE} == 0 "
                f"(N={N}, K={K})")
    return None


PEER_METHODS: tuple[PeerMethod, ...] = (
    PeerMethod(
        name="tunableop",
        dtypes=LIBRARY_SIGNATURES,
        impl="kernels.launch.peers:TUNABLEOP",
        description="F.linear with PyTorch TunableOp: each GEMM shape tuned once (its first call, never in a timed "
                    "graph), the winner replayed; TunableOp switched on for this method's calls only",
        process_state=TUNABLEOP_STATE,
    ),
    PeerMethod(
        name="torch_compile",
        dtypes=LIBRARY_SIGNATURES,
        impl="kernels.launch.peers:TORCH_COMPILE",
        description="F.linear compiled by torch.compile(mode='max-autotune-no-cudagraphs', fullgraph, static "
                    "shapes), once per (dtypes, M, N, K); the lab captures its own CUDA graphs",
    ),
    PeerMethod(
        name="flashinfer",
        dtypes=(BF16,),
        impl="kernels.launch.peers:FLASHINFER",
        description="FlashInfer's BF16 GEMM: flashinfer.gemm.mm_bf16, or tinygemm_bf16 (TensorRT-LLM's tinygemm2) "
                    "for small N; needs the flashinfer-python package and an sm_90+ GPU",
        params={"entry": FLASHINFER_ENTRIES},
        configs=({"entry": "mm_bf16"}, {"entry": "tinygemm_bf16"}),
        shape_check=_flashinfer_shape_check,
    ),
)
PEER_NAMES = tuple(m.name for m in PEER_METHODS)
