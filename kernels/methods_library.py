"""Methods whose kernels are a library's or a compiler's, not this repository's: PyTorch's own ops (the baseline
`torch_linear` and the `mm_*` orientations), `cublaslt` (cuBLASLt's per-shape algorithm list, chosen by identity) and
the peers -- what a user gets without writing a kernel: PyTorch's TunableOp, torch.compile's max-autotune and
FlashInfer's BF16 GEMMs -- registered like any other method, so a plan, the tuner (when asked: `--methods`) and
Compare treat them alike. `docs/kernels/peers.md` says what each peer is, how it is configured and why its number is
fair. The methods whose kernels are this repository's are in kernels/methods_triton/, kernels/methods_gluon.py and
kernels/methods_cuda.py (one file per language).

Torch-free: implementations are named by "module:attr" strings and imported on first use. cublaslt needs a GPU host
(the libcublasLt torch loads); each peer says in one line where it cannot run (`unavailable_reason` in
kernels/launch/peers.py): TunableOp and FlashInfer need CUDA (and FlashInfer its package and an sm_90+ GPU);
torch.compile runs on any device Inductor has a backend for. Shape checks check shapes only, so plans that use these
methods still load and validate on a CPU host.

`process_state` names the process-wide settings a peer touches (the guard's names, profiler/check/guards.py):
TunableOp's switches are global to the process, so its launcher sets them for its own calls only and puts them
back before it returns; the guard holds every candidate, this one included, to their values at worker start, so a
switch left on -- which would reach the baseline's F.linear -- fails the candidate and is restored.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from datasets.shapes import KNOWN_DTYPES
from kernels.method import BF16, Method, _load_impl

BF16_ONLY = (BF16,)
# The baseline casts x to the weight's dtype and runs F.linear, whose output has the weight's dtype: it computes
# every signature whose y dtype is the w dtype (muse's router: bf16 x, fp32 w and y), and no other (a bf16 weight
# with an fp32 output would come back bf16; a workload asking for it gets a PlanError naming the dtypes).
LIBRARY_SIGNATURES = tuple((x, w, w) for w in KNOWN_DTYPES for x in KNOWN_DTYPES)


# ------------------------------------------------------------------------------------------ cublaslt

CUBLASLT_ORIENTS = ("nk", "kn", "swap")          # kernels/launch/cublaslt.py ORIENTS
# The identity (kernels/launch/cublaslt.py IDENTITY_KEYS): cuBLASLt's algorithm id and configuration attributes as
# the library's enum values (cublasLtMatmulTile_t, cublasLtMatmulStages_t, cublasLtReductionScheme_t, ...).
CUBLASLT_IDENTITY_KEYS = ("algo_id", "tile_id", "stages_id", "split_k", "reduction", "swizzle", "custom",
                          "inner_shape_id", "cluster_shape_id")
CUBLASLT_KEYS = ("orient", "M", *CUBLASLT_IDENTITY_KEYS)


def cublaslt_config_reason(config: dict) -> str | None:
    """None when `config` is a well-formed cuBLASLt algorithm identity (orientation, M, id, attributes)."""
    missing = sorted(set(CUBLASLT_KEYS) - set(config))
    extra = sorted(set(config) - set(CUBLASLT_KEYS))
    if missing or extra:
        return f"method 'cublaslt': config keys missing {missing} / unknown {extra}"
    if config["orient"] not in CUBLASLT_ORIENTS:
        return f"method 'cublaslt': orient={config['orient']!r} not in {list(CUBLASLT_ORIENTS)}"
    for key in ("M", *CUBLASLT_IDENTITY_KEYS):
        value, low = config[key], 1 if key in ("M", "split_k") else 0
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            return f"method 'cublaslt': {key}={value!r} must be an integer >= {low}"
    return None


def _cublaslt_shape_check(M, N, K, config):
    if M != config["M"]:
        return (f"cublaslt config was chosen from cuBLASLt's list at M={config['M']}; the list is per shape, so "
                f"it dispatches that M only")
    if N % 8 or K % 8:
        return f"cublaslt needs N % 8 == 0 and K % 8 == 0 (16-byte rows; N={N}, K={K})"
    return None


@dataclass(frozen=True)
class PerShapeMethod(Method):
    """A method whose tuning space is a library's own list at each shape, read on the GPU when the tuner asks
    (`configs_for`), never a fixed table: `enumerator` is "module:attr" of fn(M, N, K) -> configs, and
    `config_reason` validates a config that a plan stores (the algorithm's identity, not a list position)."""

    enumerator: str = ""
    config_reason: object = None   # Callable[[dict], str | None]

    def check_config(self, config: dict) -> str | None:
        return self.config_reason(config)

    def configs_for(self, M: int, N: int, K: int) -> tuple[dict, ...]:
        try:
            return tuple(_load_impl(self.enumerator)(M, N, K))
        except RuntimeError as exc:   # no GPU, or no library: the method has no candidates here; say so once
            warnings.warn(f"{self.name}: no configs at M={M} N={N} K={K}: {exc}", stacklevel=2)
            return ()

    def supports(self, dtypes, M: int, N: int, K: int, config: dict | None = None) -> str | None:
        if config is None:
            return (f"method {self.name!r} has no default config: its configs are the library's algorithms at "
                    f"each shape (configs_for, on a GPU host)")
        return super().supports(dtypes, M, N, K, config)


# ------------------------------------------------------------------------------------------ peers

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


def tunableop_folder(run_file) -> Path:
    """Where the tunableop peer writes TunableOp's results files for a run: `<run stem>.tunableop/` beside the run
    file. The sweep's parent makes it before any worker starts (the sandboxed worker may write there and nowhere
    else near the run), passes it to the worker in its config (use_side_folder) and removes it again if no peer
    wrote into it."""
    run = Path(run_file)
    return run.parent / f"{run.name.split('.json')[0]}.tunableop"


_SIDE_FOLDER: list = [None]


def use_side_folder(folder) -> None:
    """The run's side folder for this process (the worker session sets it from its config; None: there is none)."""
    _SIDE_FOLDER[0] = None if folder is None else Path(folder)


def side_folder() -> Path | None:
    return _SIDE_FOLDER[0]


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


LIBRARY_METHODS: tuple[Method, ...] = (
    Method(
        name="torch_linear",
        dtypes=LIBRARY_SIGNATURES,
        impl="kernels.launch.torch_linear:TORCH_LINEAR",
        description="baseline: F.linear(x, w) (cuBLAS); router: F.linear(x.float(), w_fp32), TF32 off, FP32 out",
    ),
    Method(
        name="mm_wt",
        dtypes=BF16_ONLY,
        impl="kernels.launch.mm_orient:MM_WT",
        description="pre-transposed weights wT[K,N] (made at prepare), torch.mm(x, wT)",
    ),
    Method(
        name="mm_swapped",
        dtypes=BF16_ONLY,
        impl="kernels.launch.mm_orient:MM_SWAPPED",
        description="Y^T = W X^T via torch.mm(w, x.T), returned as the .T view; F.linear when M % 8 != 0",
    ),
    Method(
        name="mm_bias0",
        dtypes=BF16_ONLY,
        impl="kernels.launch.mm_orient:MM_BIAS0",
        description="torch.addmm with a bias of zeros: the library's bias-epilogue route (cuBLASLt); x @ w^T with "
                    "w^T a view of [N, K] (W=nk) or stored [K, N] at prepare (W=kn), or (W=swap) w @ x^T + 0 "
                    "returned as the .T view when M % 8 == 0 (else the nk route)",
        params={"W": ("nk", "kn", "swap")},
        configs=({"W": "nk"}, {"W": "kn"}, {"W": "swap"}),
    ),
    PerShapeMethod(
        name="cublaslt",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cublaslt:CUBLASLT",
        description="one cuBLASLt algorithm named by identity (id + tile, stages, split-K, reduction, swizzle, "
                    "custom, inner and cluster shape) in orientation nk/kn/swap, from the library's heuristic list "
                    "at the tuned M (cuBLASLt's C API; GPU hosts only)",
        configs=(),
        shape_check=_cublaslt_shape_check,
        enumerator="kernels.launch.cublaslt:enumerate_configs",
        config_reason=cublaslt_config_reason,
    ),
)
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
