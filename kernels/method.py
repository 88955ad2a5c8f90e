"""What a dispatchable projection method is: a name, the families it serves, its tuning space, a shape guard,
and a lazily imported implementation (so plans can be read and validated without torch)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable


class PlanError(ValueError):
    """A plan or a method configuration that cannot be used; the message names the file, family, M or field."""


# A guard returns None when (family, M, N, K, config) is supported, else a short reason.
Guard = Callable[[str, int, int, int, dict], "str | None"]

# H200 (sm_90): the largest shared memory one block may opt into (CUDA C Programming Guide, compute
# capability 9.0 table: 227 KB per block).
SMEM_BYTES = 227 * 1024

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
    """One way to compute y[M,N] = x[M,K] @ w[N,K]^T for some families.

    `impl` is "package.module:attr"; attr has `prepare(weight, family, config) -> state` (weights only, never
    activations) and `run(state, x) -> y`. `params` lists each config key's allowed values; `configs` is the
    tuning space (configs[0] is the default).
    """

    name: str
    families: tuple[str, ...]
    impl: str
    description: str
    params: dict[str, tuple] = field(default_factory=dict)
    configs: tuple[dict, ...] = ({},)
    guard: Guard | None = None

    def __post_init__(self):
        # A bad or repeated tuning config is a registry bug: catch it at import, not mid-sweep on the GPU.
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
            if value not in self.params[key]:
                return f"method {self.name!r}: {key}={value!r} not in {list(self.params[key])}"
        return None

    def supports(self, family: str, M: int, N: int, K: int, config: dict | None = None) -> str | None:
        if family not in self.families:
            return f"method {self.name!r} does not serve family {family!r}"
        if self.guard is None:
            return None
        return self.guard(family, M, N, K, dict(self.configs[0] if config is None else config))

    def check_supports(self, family: str, M: int, N: int, K: int, config: dict) -> None:
        """Raise PlanError naming the method, shape and the guard's reason when it rejects (family, M, N, K)."""
        reason = self.supports(family, M, N, K, config)
        if reason:
            raise PlanError(f"{format_config(self.name, config)} rejects {family} M={M} N={N} K={K}: {reason}")

    def prepare(self, weight, family: str, config: dict):
        return _load_impl(self.impl).prepare(weight, family, config)

    def run(self, state, x):
        return _load_impl(self.impl).run(state, x)
