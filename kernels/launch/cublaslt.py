"""cuBLASLt's own algorithms, named by identity, called through its C API (the libcublasLt torch already loads).

The library's heuristic returns a short list of algorithms per problem. A list position means nothing at another
shape or library version, so a config names the algorithm by what cuBLASLt says it is: its id and configuration
attributes (tile, stages, split-K count, reduction scheme, CTA swizzle, custom option, inner shape, cluster shape,
as cuBLASLt's enum values), plus the orientation and the M it was read at.

    enumerate_configs(M, N, K) -> configs        # the tuner's space at one shape: the heuristic's list, then the
                                                 # search benchmark's finds there (`searched`; a CUDA host)
    Problem(orient, M, N, K).neighbours(config)  # the configs one attribute away that cuBLASLt accepts
    prepare(weight, config) -> state             # the config's algorithm at config["M"], or a one-line refusal
    run(state, x) -> y                            # one cublasLtMatmul on torch's current stream (graph-capturable)

Beyond the heuristic's list: cuBLASLt builds any configuration of an algorithm id (cublasLtMatmulAlgoInit, then
each attribute set) and says whether it runs this problem (cublasLtMatmulAlgoCheck). `neighbours` walks one
attribute at a time over the values the algorithm's capabilities list (tiles, stages, custom options, split-K
counts, swizzles) and over the cluster shapes, keeping what the check accepts; prepare() takes such a config too.
tests/benchmarks/bench_cublaslt_search.py searches that space from the heuristic's configs with the cold timer.

The binding is ctypes over the cuBLASLt that torch's cuBLAS links (found in the process's mapped libraries), so
there is no extra dependency and the algorithms are the very library F.linear calls. Nothing here touches CUDA at
import; `unavailable_reason()` says in one line why a host cannot run it.

Orientations of y[M,N] = x[M,K] @ w[N,K]^T (cuBLASLt is column-major; a row-major [R, C] is a column-major [C, R]):
  nk   D[N,M] = w^T(op T) . x   -- y row-major [M, N]; what F.linear presents
  kn   D[N,M] = wT . x          -- wT stored [K, N] at prepare (no transpose op)
  swap D[M,N] = x^T(op T) . w   -- y^T row-major [N, M], returned as its [M, N] view (tokens as the tile's N)
"""
from __future__ import annotations

import ctypes
import warnings
import weakref
from functools import lru_cache

import torch

from datasets.errors import DatasetError
from datasets.lt_search import read_search, search_files
from kernels.launch import check_input, impl

ORIENTS = ("nk", "kn", "swap")
LIMIT = 64                           # algorithms asked of the heuristic per problem
WORKSPACE_BYTES = 32 * 1024 * 1024   # the most workspace one algorithm may use
ALIGN_BYTES = 256                    # the heuristic's default minimum operand alignment (cublasLt.h)
# Split-K partials are reduced in FP32 (INPLACE | COMPUTE_TYPE) or not split: never in the BF16 output type,
# whose rounding of every partial would add error the FP32-accumulating baseline does not have.
REDUCTION_MASK = 0x1 | 0x2
IDENTITY_KEYS = ("algo_id", "tile_id", "stages_id", "split_k", "reduction", "swizzle", "custom", "inner_shape_id",
                 "cluster_shape_id")

# cublasLt.h / library_types.h / cublas_api.h enum values.
_CUDA_R_32F, _CUDA_R_16BF, _COMPUTE_32F = 0, 14, 68
_OP_N, _OP_T = 0, 1
_DESC_TRANSA, _DESC_TRANSB = 3, 4
_PREF_MAX_WORKSPACE_BYTES, _PREF_REDUCTION_SCHEME_MASK = 1, 3
# cublasLtMatmulAlgoCapAttributes_t
_CAP_SPLITK_SUPPORT, _CAP_REDUCTION_SCHEME_MASK, _CAP_CTA_SWIZZLING_SUPPORT = 0, 1, 2
_CAP_TILE_IDS, _CAP_CUSTOM_OPTION_MAX, _CAP_STAGES_IDS = 6, 7, 13
# cublasLtClusterShape_t runs from 0 (auto) through the 2-D shapes up to 16 CTAs; no capability lists them, so the
# check decides. Split-K counts tried: the heuristic's own (1-5 on the H200) and a few beyond.
CLUSTER_SHAPE_IDS = tuple(range(0, 48))
SPLIT_K_COUNTS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
_SWIZZLES = (0, 1, 2, 3)
# cublasLtMatmulAlgoConfigAttributes_t: (attribute, C type) per identity key.
_CONFIG_ATTRS = {"algo_id": (0, ctypes.c_int32), "tile_id": (1, ctypes.c_uint32), "split_k": (2, ctypes.c_uint32),
                 "reduction": (3, ctypes.c_uint32), "swizzle": (4, ctypes.c_uint32), "custom": (5, ctypes.c_uint32),
                 "stages_id": (6, ctypes.c_uint32), "inner_shape_id": (7, ctypes.c_uint16),
                 "cluster_shape_id": (8, ctypes.c_uint16)}


class _Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class _Heuristic(ctypes.Structure):
    _fields_ = [("algo", _Algo), ("workspace_size", ctypes.c_size_t), ("state", ctypes.c_int),
                ("waves_count", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


def unavailable_reason() -> str | None:
    """None when this host can plan and run cuBLASLt algorithms, else one line saying why not."""
    if not torch.cuda.is_available():
        return "cublaslt needs a CUDA GPU (torch.cuda.is_available() is False); it is a GPU-host-only method"
    if _library_path() is None:
        return "cublaslt: torch's CUDA build loaded no libcublasLt into this process"
    return None


@lru_cache(maxsize=1)
def _library_path() -> str | None:
    torch.cuda.current_blas_handle()   # torch loads cuBLAS, which links cuBLASLt, on first use
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libcublasLt.so" in path:
                return path
    return None


@lru_cache(maxsize=1)
def _lib():
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    lib = ctypes.CDLL(_library_path())
    vp, i32, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    for name, args in {
        "cublasLtCreate": [ctypes.POINTER(vp)],
        "cublasLtMatmulDescCreate": [ctypes.POINTER(vp), i32, i32],
        "cublasLtMatmulDescSetAttribute": [vp, i32, vp, sz],
        "cublasLtMatmulDescDestroy": [vp],
        "cublasLtMatrixLayoutCreate": [ctypes.POINTER(vp), i32, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64],
        "cublasLtMatrixLayoutDestroy": [vp],
        "cublasLtMatmulPreferenceCreate": [ctypes.POINTER(vp)],
        "cublasLtMatmulPreferenceSetAttribute": [vp, i32, vp, sz],
        "cublasLtMatmulPreferenceDestroy": [vp],
        "cublasLtMatmulAlgoGetHeuristic": [vp, vp, vp, vp, vp, vp, vp, i32, ctypes.POINTER(_Heuristic),
                                           ctypes.POINTER(i32)],
        "cublasLtMatmulAlgoConfigGetAttribute": [ctypes.POINTER(_Algo), i32, vp, sz, ctypes.POINTER(sz)],
        "cublasLtMatmulAlgoConfigSetAttribute": [ctypes.POINTER(_Algo), i32, vp, sz],
        "cublasLtMatmulAlgoCapGetAttribute": [ctypes.POINTER(_Algo), i32, vp, sz, ctypes.POINTER(sz)],
        "cublasLtMatmulAlgoInit": [vp, i32, i32, i32, i32, i32, i32, i32, ctypes.POINTER(_Algo)],
        "cublasLtMatmulAlgoCheck": [vp, vp, vp, vp, vp, vp, ctypes.POINTER(_Algo), ctypes.POINTER(_Heuristic)],
        "cublasLtMatmul": [vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, ctypes.POINTER(_Algo), vp, sz, vp],
    }.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, i32
    lib.cublasLtGetVersion.argtypes, lib.cublasLtGetVersion.restype = [], ctypes.c_size_t
    return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"cublaslt: {what} returned cuBLAS status {status}")


@lru_cache(maxsize=1)
def _handle() -> ctypes.c_void_p:
    h = ctypes.c_void_p()
    _check(_lib().cublasLtCreate(ctypes.byref(h)), "cublasLtCreate")
    return h


def library_version() -> int:
    return int(_lib().cublasLtGetVersion())


class Problem:
    """The descriptors of one (orientation, M, N, K) BF16 product with FP32 compute, and its heuristic list."""

    def __init__(self, orient: str, M: int, N: int, K: int):
        if orient not in ORIENTS:
            raise ValueError(f"cublaslt: orient {orient!r} not in {list(ORIENTS)}")
        lib = _lib()
        self.orient, self.M, self.N, self.K = orient, M, N, K
        self.desc, self.a, self.b, self.d = (ctypes.c_void_p() for _ in range(4))
        _check(lib.cublasLtMatmulDescCreate(ctypes.byref(self.desc), _COMPUTE_32F, _CUDA_R_32F), "MatmulDescCreate")
        # (transa, transb, A rows/cols/ld, B rows/cols/ld, D rows/cols/ld), column-major (module docstring)
        ta, tb, a, b, d = {
            "nk": (_OP_T, _OP_N, (K, N, K), (K, M, K), (N, M, N)),
            "kn": (_OP_N, _OP_N, (N, K, N), (K, M, K), (N, M, N)),
            "swap": (_OP_T, _OP_N, (K, M, K), (K, N, K), (M, N, M)),
        }[orient]
        for attr, op in ((_DESC_TRANSA, ta), (_DESC_TRANSB, tb)):
            v = ctypes.c_int32(op)
            _check(lib.cublasLtMatmulDescSetAttribute(self.desc, attr, ctypes.addressof(v), 4), "MatmulDescSetAttribute")
        for layout, (rows, cols, ld) in ((self.a, a), (self.b, b), (self.d, d)):
            _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(layout), _CUDA_R_16BF, rows, cols, ld),
                   "MatrixLayoutCreate")
        self._alpha, self._beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        weakref.finalize(self, _destroy, lib, self.desc.value, self.a.value, self.b.value, self.d.value)

    def heuristic(self) -> list[tuple[_Algo, int]]:
        """(algorithm, workspace bytes) the heuristic offers, in its order (FP32-or-no split-K reduction)."""
        lib = _lib()
        pref = ctypes.c_void_p()
        _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "MatmulPreferenceCreate")
        try:
            ws, mask = ctypes.c_uint64(WORKSPACE_BYTES), ctypes.c_uint32(REDUCTION_MASK)
            _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE_BYTES, ctypes.addressof(ws), 8),
                   "MatmulPreferenceSetAttribute")
            _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_REDUCTION_SCHEME_MASK, ctypes.addressof(mask), 4),
                   "MatmulPreferenceSetAttribute")
            results, count = (_Heuristic * LIMIT)(), ctypes.c_int(0)
            status = lib.cublasLtMatmulAlgoGetHeuristic(_handle(), self.desc, self.a, self.b, self.d, self.d, pref,
                                                        LIMIT, results, ctypes.byref(count))
            if status == 15:   # CUBLAS_STATUS_NOT_SUPPORTED: no algorithm for this problem
                return []
            _check(status, "MatmulAlgoGetHeuristic")
            out = []
            for r in results[:count.value]:
                if r.state == 0:
                    out.append((_Algo.from_buffer_copy(r.algo), int(r.workspace_size)))
            return out
        finally:
            lib.cublasLtMatmulPreferenceDestroy(pref)

    def build(self, config: dict) -> tuple[_Algo, int] | None:
        """(algorithm, workspace bytes) for the config's identity when cuBLASLt accepts it for this problem
        (AlgoInit, each attribute set, AlgoCheck; within the workspace limit), else None."""
        lib, algo = _lib(), _Algo()
        if lib.cublasLtMatmulAlgoInit(_handle(), *_TYPES, int(config["algo_id"]), ctypes.byref(algo)):
            return None
        for key, (attr, ctype) in _CONFIG_ATTRS.items():
            if key == "algo_id":   # set by AlgoInit
                continue
            value = ctype(int(config[key]))
            if lib.cublasLtMatmulAlgoConfigSetAttribute(ctypes.byref(algo), attr, ctypes.addressof(value),
                                                        ctypes.sizeof(ctype)):
                return None
        result = _Heuristic()
        status = lib.cublasLtMatmulAlgoCheck(_handle(), self.desc, self.a, self.b, self.d, self.d, ctypes.byref(algo),
                                             ctypes.byref(result))
        if status or result.state or result.workspace_size > WORKSPACE_BYTES:
            return None
        return algo, int(result.workspace_size)

    def neighbours(self, config: dict) -> list[dict]:
        """The configs one attribute away from `config` (same orientation and M) that cuBLASLt accepts here."""
        out = []
        for ident in variants(config, capabilities(int(config["algo_id"]))):
            if self.build(ident) is not None:
                out.append({"orient": self.orient, "M": int(self.M), **ident})
        return out

    def launch(self, a_ptr: int, b_ptr: int, d_ptr: int, algo: _Algo, ws_ptr: int, ws_bytes: int, stream: int):
        _check(_lib().cublasLtMatmul(_handle(), self.desc, ctypes.addressof(self._alpha), a_ptr, self.a, b_ptr, self.b,
                                     ctypes.addressof(self._beta), d_ptr, self.d, d_ptr, self.d, ctypes.byref(algo),
                                     ws_ptr, ws_bytes, stream), "cublasLtMatmul")


_TYPES = (_COMPUTE_32F, _CUDA_R_32F, _CUDA_R_16BF, _CUDA_R_16BF, _CUDA_R_16BF, _CUDA_R_16BF)


def _cap(algo: _Algo, attr: int, ctype=ctypes.c_int32) -> int:
    value, written = ctype(0), ctypes.c_size_t(0)
    _check(_lib().cublasLtMatmulAlgoCapGetAttribute(ctypes.byref(algo), attr, ctypes.addressof(value),
                                                    ctypes.sizeof(ctype), ctypes.byref(written)),
           f"MatmulAlgoCapGetAttribute({attr})")
    return int(value.value)


def _cap_list(algo: _Algo, attr: int) -> list[int]:
    lib, size = _lib(), ctypes.c_size_t(0)
    _check(lib.cublasLtMatmulAlgoCapGetAttribute(ctypes.byref(algo), attr, None, 0, ctypes.byref(size)),
           f"MatmulAlgoCapGetAttribute({attr})")
    values = (ctypes.c_uint32 * max(size.value // 4, 1))()
    if size.value:
        _check(lib.cublasLtMatmulAlgoCapGetAttribute(ctypes.byref(algo), attr, values, size.value, ctypes.byref(size)),
               f"MatmulAlgoCapGetAttribute({attr})")
    return list(values[:size.value // 4])


@lru_cache(maxsize=None)
def capabilities(algo_id: int) -> dict:
    """The values each configuration attribute of one algorithm id may take, from its capabilities (BF16 in and
    out, FP32 compute): tiles, stages, custom options, split-K (with its FP32 reduction schemes), swizzles, and the
    cluster shapes (no capability lists those: every id, the check decides)."""
    algo = _Algo()
    _check(_lib().cublasLtMatmulAlgoInit(_handle(), *_TYPES, int(algo_id), ctypes.byref(algo)), "MatmulAlgoInit")
    splits = SPLIT_K_COUNTS if _cap(algo, _CAP_SPLITK_SUPPORT) else (1,)
    mask = _cap(algo, _CAP_REDUCTION_SCHEME_MASK, ctypes.c_uint32) & REDUCTION_MASK
    return {"tile_id": tuple(_cap_list(algo, _CAP_TILE_IDS)) or (0,),
            "stages_id": tuple(_cap_list(algo, _CAP_STAGES_IDS)) or (0,),
            "custom": tuple(range(_cap(algo, _CAP_CUSTOM_OPTION_MAX) + 1)),
            "split_k": splits, "reduction": tuple(r for r in (2, 1) if mask & r),   # FP32 partials first
            "swizzle": _SWIZZLES if _cap(algo, _CAP_CTA_SWIZZLING_SUPPORT, ctypes.c_uint32) else (0,),
            "cluster_shape_id": CLUSTER_SHAPE_IDS}


def variants(config: dict, space: dict) -> list[dict]:
    """Identities one attribute away from `config` over `space` (capabilities()), in attribute order, each once. A
    split-K count above 1 takes an FP32 reduction scheme (the config's own, else the first the algorithm offers);
    a count of 1 takes none; the reduction scheme alone varies only where K is split."""
    base = {k: int(config[k]) for k in IDENTITY_KEYS}
    out, seen = [], {tuple(base.values())}
    for key in ("split_k", "reduction", "cluster_shape_id", "tile_id", "stages_id", "custom", "swizzle"):
        for value in space.get(key, ()):
            ident = dict(base, **{key: int(value)})
            if key == "reduction" and ident["split_k"] == 1:
                continue
            if key == "split_k":
                if value == 1:
                    ident["reduction"] = 0
                elif ident["reduction"] == 0:
                    if not space.get("reduction"):
                        continue
                    ident["reduction"] = space["reduction"][0]
            k = tuple(ident.values())
            if k not in seen:
                seen.add(k)
                out.append(ident)
    return out


def _destroy(lib, desc, a, b, d) -> None:
    lib.cublasLtMatmulDescDestroy(desc)
    for layout in (a, b, d):
        lib.cublasLtMatrixLayoutDestroy(layout)


def identity(algo: _Algo) -> dict:
    """cuBLASLt's id and configuration attributes of an algorithm (its enum values)."""
    lib, out = _lib(), {}
    for key, (attr, ctype) in _CONFIG_ATTRS.items():
        value, written = ctype(0), ctypes.c_size_t(0)
        _check(lib.cublasLtMatmulAlgoConfigGetAttribute(ctypes.byref(algo), attr, ctypes.addressof(value),
                                                        ctypes.sizeof(ctype), ctypes.byref(written)),
               f"MatmulAlgoConfigGetAttribute({key})")
        out[key] = int(value.value)
    return out


@lru_cache(maxsize=None)
def enumerate_configs(M: int, N: int, K: int) -> tuple[dict, ...]:
    """Every algorithm cuBLASLt's heuristic offers for y[M,N] = x[M,K] @ w[N,K]^T (BF16) in each orientation, as
    configs (orient, M, identity), heuristic order kept; then the configs the search benchmark found at this shape
    with this library version (`searched`) that the library accepts here. RuntimeError (one line) on a host without
    CUDA."""
    _lib()   # a host without CUDA: its one-line reason, before any orientation is tried
    out, seen, problems = [], set(), {}
    for orient in ORIENTS:
        try:
            problems[orient] = Problem(orient, M, N, K)
            offered = problems[orient].heuristic()
        except RuntimeError as exc:   # e.g. the swapped output's leading dimension M at an odd M: that
            #                            orientation has no algorithm; the others still count
            warnings.warn(f"cublaslt: orient {orient} at M={M} N={N} K={K} left out: {exc}", stacklevel=2)
            problems.pop(orient, None)
            continue
        for algo, _ in offered:
            config = {"orient": orient, "M": int(M), **identity(algo)}
            key = tuple(sorted(config.items()))
            if key not in seen:   # the heuristic may list one configuration twice
                seen.add(key)
                out.append(config)
    for config in searched(M, N, K, library_version()):
        key = tuple(sorted(config.items()))
        problem = problems.get(config["orient"])
        if key not in seen and problem is not None and problem.build(config) is not None:
            seen.add(key)
            out.append(config)
    return tuple(out)


def searched(M: int, N: int, K: int, version: int, folder=None) -> list[dict]:
    """The configs the search benchmark found at (M, N, K) with this cuBLASLt version (its JSON outputs in
    datasets/cublaslt_search, read by datasets.lt_search; finals named 'found <orient>'), as configs, file and final
    order kept. A file that cannot be read is left out with one warning naming it."""
    out = []
    for path in search_files(folder):
        try:
            report = read_search(path)
            shape = report.shape(M, N, K) if report.cublaslt_version == int(version) else None
            for final in shape.finals if shape is not None else ():
                if final.kind == "found":
                    out.append({"orient": final.orient, "M": int(M), **{k: final.config[k] for k in IDENTITY_KEYS}})
        except (DatasetError, KeyError) as exc:
            warnings.warn(f"cublaslt: search file {path.name} left out: {exc}", stacklevel=2)
    return out


def _describe(config: dict) -> str:
    return " ".join(f"{k}={config[k]}" for k in IDENTITY_KEYS)


def prepare(weight, config: dict) -> dict:
    """Find the config's algorithm, by identity, in the library's list at config["M"], or build it when the running
    cuBLASLt accepts that configuration for the problem (AlgoCheck); anything else is refused (ValueError, one line)."""
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    N, K = int(weight.shape[0]), int(weight.shape[1])
    M, orient = int(config["M"]), config["orient"]
    problem = Problem(orient, M, N, K)
    offered = problem.heuristic()
    want = {k: config[k] for k in IDENTITY_KEYS}
    match = [(a, ws) for a, ws in offered if identity(a) == want] or [problem.build(want)]
    if match[0] is None:
        raise ValueError(f"cublaslt: cuBLASLt {library_version()} does not offer algorithm {_describe(config)} for "
                         f"M={M} N={N} K={K} orient={orient} ({len(offered)} offered there) and does not "
                         f"accept it there (AlgoCheck); re-tune the plan")
    algo, ws_bytes = match[0]
    return {"problem": problem, "algo": algo, "w": weight.contiguous(),
            "wT": weight.t().contiguous() if orient == "kn" else None, "M": M, "N": N, "K": K, "orient": orient,
            "workspace": torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=weight.device),
            "workspace_bytes": ws_bytes}


def run(state: dict, x):
    w = state["w"]
    M = check_input(x, state["K"], w.dtype, "cublaslt")
    if M != state["M"]:
        raise ValueError(f"cublaslt: this algorithm was chosen at M={state['M']}, got x with M={M}")
    x = x.contiguous()
    if x.data_ptr() % ALIGN_BYTES:
        raise ValueError(f"cublaslt: x must be {ALIGN_BYTES}-byte aligned (the heuristic's alignment), got "
                         f"address {x.data_ptr():#x}")
    orient, N = state["orient"], state["N"]
    if orient == "swap":
        yT = torch.empty((N, M), dtype=w.dtype, device=x.device)
        a_ptr, b_ptr, y_ptr, y = x.data_ptr(), w.data_ptr(), yT.data_ptr(), yT.t()
    else:
        y = torch.empty((M, N), dtype=w.dtype, device=x.device)
        a_ptr = (state["wT"] if orient == "kn" else w).data_ptr()
        b_ptr, y_ptr = x.data_ptr(), y.data_ptr()
    state["problem"].launch(a_ptr, b_ptr, y_ptr, state["algo"], state["workspace"].data_ptr(),
                            state["workspace_bytes"], torch.cuda.current_stream().cuda_stream)
    return y


CUBLASLT = impl(prepare, run)
