"""What a dispatchable projection method is: a name, the dtype signatures it computes, its tuning space, a shape
shape check, and a lazily imported implementation (so plans can be read and validated without torch).

A method serves DTYPE SIGNATURES (x_dtype, w_dtype, y_dtype), never family names: the workload says which dtypes
a family has (datasets/workloads/*.json), so one method serves every workload's families of its dtypes."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from datasets.hardware import SMEM_PER_BLOCK_BYTES


class PlanError(ValueError):
    """A plan or a method configuration that cannot be used; the message names the file, family, M or field."""


# A shape check returns None when (M, N, K, config) is supported, else a short reason (dtypes are checked before it).
ShapeCheck = Callable[[int, int, int, dict], "str | None"]

Signature = tuple  # (x_dtype, w_dtype, y_dtype), torch dtype names as in a workload file
BF16 = ("bfloat16", "bfloat16", "bfloat16")            # BF16 activations, weights and output
BF16_X_FP32_W = ("bfloat16", "float32", "float32")     # BF16 activations, FP32 weights and output (muse's router)


def signature(dtypes) -> Signature:
    """(x, w, y) dtype names from a 3-tuple, or from a mapping with x_dtype/w_dtype/y_dtype (a shape row or a
    workload family record)."""
    if isinstance(dtypes, (tuple, list)) and len(dtypes) == 3:
        return tuple(str(d) for d in dtypes)
    try:
        return (str(dtypes["x_dtype"]), str(dtypes["w_dtype"]), str(dtypes["y_dtype"]))
    except (KeyError, TypeError):
        raise TypeError(f"expected (x_dtype, w_dtype, y_dtype) or a shape/family mapping, got {dtypes!r}") from None


def format_signature(sig) -> str:
    """'x bfloat16, w float32, y float32'."""
    x, w, y = signature(sig)
    return f"x {x}, w {w}, y {y}"

# The largest shared memory one block may opt into (datasets.hardware gives the source).
SMEM_BYTES = SMEM_PER_BLOCK_BYTES

# The config keys of the tl.dot tile methods (dense split-K/packed, router hi/lo).
TILE_KEYS = ("BM", "BN", "BK", "SPLIT", "num_warps", "num_stages")


def config_table(keys: tuple[str, ...], rows) -> tuple[dict, ...]:
    """A tuning space written as rows of values under `keys` -> one config dict per row (order kept)."""
    return tuple(dict(zip(keys, row)) for row in rows)


def smem_reason(config: dict, weight_rows_per_tile: int = 1) -> str | None:
    """None when a tile config's pipelined bf16 tiles fit in shared memory, else the reason.

    One pipeline stage holds a BM x BK tile of x and a (weight_rows_per_tile * BN) x BK tile of weights
    (2 for the router's hi/lo pair), 2 bytes per element; num_stages stages are in flight.
    """
    stage_bytes = (config["BM"] + weight_rows_per_tile * config["BN"]) * config["BK"] * 2
    need = stage_bytes * config["num_stages"]
    return None if need <= SMEM_BYTES else f"{need} B of pipelined tiles exceed {SMEM_BYTES} B shared memory"


def format_config(method: str, config: dict) -> str:
    """'gemv BN=1 num_warps=16 cache=.cg' -- the human label of a method + config (run files, Dispatch page)."""
    parts = [f"{k}={v if v != '' else 'default'}" for k, v in config.items()]
    return " ".join([method, *parts])


@lru_cache(maxsize=None)
def _load_impl(impl: str) -> Any:
    module_name, _, attr = impl.partition(":")
    return getattr(importlib.import_module(module_name), attr)


@dataclass(frozen=True)
class Method:
    """One way to compute y[M,N] = x[M,K] @ w[N,K]^T for some dtype signatures.

    `dtypes`: the (x_dtype, w_dtype, y_dtype) signatures it computes. `impl` is "package.module:attr"; attr has
    the launcher pair `prepare(weight, config) -> state` (weights only, never activations) and `run(state, x) -> y`
    (no family: a method computes dtype signatures; kernels.candidate.MethodCandidate adapts it to the candidate
    protocol). `params` lists each config key's allowed values; `configs` is the tuning space (configs[0] is the
    default).
    """

    name: str
    dtypes: tuple[Signature, ...]
    impl: str
    description: str
    params: dict[str, tuple] = field(default_factory=dict)
    configs: tuple[dict, ...] = ({},)
    shape_check: ShapeCheck | None = None

    def __post_init__(self):
        # A bad or repeated tuning config, or a signature that is not three known dtype names (a family name where
        # a signature belongs), is a registry bug: catch it at import, not mid-sweep on the GPU.
        from datasets.shapes import KNOWN_DTYPES

        for sig in self.dtypes:
            if not (isinstance(sig, tuple) and len(sig) == 3 and all(d in KNOWN_DTYPES for d in sig)):
                raise PlanError(f"registry: method {self.name!r}: dtype signature {sig!r} is not (x_dtype, w_dtype, "
                                f"y_dtype) of {list(KNOWN_DTYPES)}")
        seen = set()
        for config in self.configs:
            reason = self.check_config(config)
            if reason:
                raise PlanError(f"registry: {reason}")
            key = tuple(sorted(config.items()))
            if key in seen:
                raise PlanError(f"registry: method {self.name!r} lists config {config} twice")
            seen.add(key)

    def check_config(self, config: dict) -> str | None:
        """None if `config` has exactly this method's keys with allowed values, else the reason."""
        missing = sorted(set(self.params) - set(config))
        extra = sorted(set(config) - set(self.params))
        if missing or extra:
            return f"method {self.name!r}: config keys missing {missing} / unknown {extra}"
        for key, value in config.items():
            # Same type as well as equal: `in` alone takes true for 1 and 4.0 for 4 (a JSON plan or --candidate
            # config), and a kernel would then be built with a bool or float where its launcher expects an int.
            if not any(type(value) is type(allowed) and value == allowed for allowed in self.params[key]):
                return f"method {self.name!r}: {key}={value!r} not in {list(self.params[key])}"
        return None

    def configs_for(self, M: int, N: int, K: int) -> tuple[dict, ...]:
        """The tuning space at one shape (the tuner asks this per point; shape checks still decide). A fixed space:
        `configs`. A library's own per-shape list (kernels/methods_library.py) overrides it."""
        return self.configs

    def serves(self, dtypes) -> bool:
        """Whether it computes this (x, w, y) dtype signature (a tuple, or a shape/family mapping)."""
        return signature(dtypes) in self.dtypes

    def dtype_reason(self, dtypes) -> str | None:
        """None when it serves the signature, else the reason naming both."""
        if self.serves(dtypes):
            return None
        sig = signature(dtypes)
        # The signatures with the asked weight dtype, when there are any: the line stays short for the library.
        near = [s for s in self.dtypes if s[1] == sig[1]]
        served = "; ".join(format_signature(s) for s in (near or self.dtypes))
        which = f" (for a {sig[1]} weight)" if near and len(near) < len(self.dtypes) else ""
        return f"method {self.name!r} computes {served}{which}, not {format_signature(sig)}"

    def supports(self, dtypes, M: int, N: int, K: int, config: dict | None = None) -> str | None:
        """None when it computes the shape y[M,N] = x[M,K] @ w[N,K]^T at these dtypes (a (x, w, y) tuple, or the
        shape row / workload family record that holds them) with `config` (None: the default), else why not."""
        reason = self.dtype_reason(dtypes)
        if reason or self.shape_check is None:
            return reason
        return self.shape_check(M, N, K, dict(self.configs[0] if config is None else config))

    def check_supports(self, dtypes, M: int, N: int, K: int, config: dict, family: str | None = None) -> None:
        """Raise PlanError naming the method, shape (the family where given, else the dtypes) and the reason when
        it rejects (dtypes, M, N, K)."""
        reason = self.supports(dtypes, M, N, K, config)
        if reason:
            what = family if family is not None else f"({format_signature(dtypes)})"
            raise PlanError(f"{format_config(self.name, config)} rejects {what} M={M} N={N} K={K}: {reason}")

    def prepare(self, weight, config: dict):
        """The launcher's state for one weight [N, K] at one config (weights only, never activations)."""
        return _load_impl(self.impl).prepare(weight, config)

    def run(self, state, x):
        """y [M, N] for x [M, K] with a state prepare() made."""
        return _load_impl(self.impl).run(state, x)

    def setup(self, state, M: int) -> dict | None:
        """What the implementation's set-up cost and chose at M (a peer's tuning or compile: its `setup(state, M)`),
        for the run file; None where it has none."""
        fn = getattr(_load_impl(self.impl), "setup", None)
        return fn(state, M) if fn is not None else None
