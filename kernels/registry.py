"""The one place where methods are registered, and which of them ship. The method records are split by who writes
the kernel: this repository's Triton (kernels/methods_triton/), Gluon (kernels/methods_gluon.py) and CUDA C++
(kernels/methods_cuda.py), or a library or compiler (kernels/methods_library.py: PyTorch's ops, cuBLASLt and the
peers).

SHIPPING: the methods a committed plan (kernels/plans/*.json) dispatches to -- what a user of the plans runs.
EXPERIMENTS: every other registered method, kept so its run files replay and it can be screened again; what each
measured and why it ships nowhere is in docs/kernels/. tests/kernels/test_registry.py holds the two sets to the
plans both ways (a plan method that is not SHIPPING, or a SHIPPING method no plan uses, fails)."""
from __future__ import annotations

from kernels.method import Method, PlanError
from kernels.methods_cuda import CUDA_METHODS
from kernels.methods_gluon import GLUON_METHODS
from kernels.methods_library import LIBRARY_METHODS, PEER_METHODS
from kernels.methods_triton import TRITON_METHODS

_ALL = (*LIBRARY_METHODS, *TRITON_METHODS, *GLUON_METHODS, *CUDA_METHODS, *PEER_METHODS)
METHODS: dict[str, Method] = {m.name: m for m in _ALL}
assert len(METHODS) == len(_ALL), "duplicate method name"


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise PlanError(f"unknown method {name!r}; known: {sorted(METHODS)}") from None


SHIPPING: frozenset[str] = frozenset({
    "torch_linear", "gemv", "gemv_wide", "splitk", "packed", "splitk_atomic", "splitk_atomic_v2", "splitk_atomic_kn",
    "mm_wt", "mm_swapped", "skinny_ws", "cublaslt", "cluster_splitk", "cluster_splitk_async",
    "router_gemv_fp32", "router_hilo_atomic", "router_hilo_atomic_pdl", "router_hilo_flag",
    "tunableop", "torch_compile", "flashinfer",   # the peer plans (kernels/methods_library.py)
})
EXPERIMENTS: frozenset[str] = frozenset(METHODS) - SHIPPING
assert SHIPPING <= set(METHODS), f"SHIPPING names unregistered methods {sorted(SHIPPING - set(METHODS))}"
