"""The one place where methods are registered: dense BF16 methods, router methods, GEMVs, Hopper and library
methods, by name."""
from __future__ import annotations

from kernels.method import Method, PlanError
from kernels.methods_dense import DENSE_METHODS
from kernels.methods_gemv import GEMV_METHODS
from kernels.methods_hopper import HOPPER_METHODS
from kernels.methods_library import LIBRARY_METHODS
from kernels.methods_peers import PEER_METHODS
from kernels.methods_router import ROUTER_METHODS

METHODS: dict[str, Method] = {m.name: m for m in (*DENSE_METHODS, *ROUTER_METHODS, *GEMV_METHODS, *HOPPER_METHODS,
                                                  *LIBRARY_METHODS, *PEER_METHODS)}
assert len(METHODS) == (len(DENSE_METHODS) + len(ROUTER_METHODS) + len(GEMV_METHODS) + len(HOPPER_METHODS)
                        + len(LIBRARY_METHODS) + len(PEER_METHODS)), "duplicate method name"


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise PlanError(f"unknown method {name!r}; known: {sorted(METHODS)}") from None


def validate_config(name: str, config: dict) -> None:
    reason = get_method(name).check_config(config)
    if reason:
        raise PlanError(reason)
