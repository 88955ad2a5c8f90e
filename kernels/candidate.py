"""The candidate protocol the profiler times: a plan, or a user's own module.

    class Candidate: name; prepare(family, weight) -> state; run(state, family, x) -> y;
                     describe(family, M, N=None) -> str

prepare() sees weights only (never activations) and may take as long as it likes; run() is what is timed.
Torch-free at import.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
from pathlib import Path

from kernels.method import PlanError
from kernels.plans import Plan, format_config, load_plan
from kernels.registry import get_method


class CandidateError(ValueError):
    """A candidate spec or module that cannot be used; the message names the file and what is missing."""


class Candidate:
    name: str = "candidate"

    def prepare(self, family: str, weight):
        raise NotImplementedError

    def run(self, state, family: str, x):
        raise NotImplementedError

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        return self.name


class PlanCandidate(Candidate):
    """Runs a dispatch plan: prepare() prepares every (method, config) the family's entries use at the weight's N
    (generic entries and those whose "N" equals weight.shape[0]); run() picks the entry by (x.shape[0], the
    weight's N) -- host-side, so a captured graph holds only the chosen kernels."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.name = plan.name

    def prepare(self, family: str, weight):
        if family not in self.plan.entries:
            raise PlanError(f"{self.plan.path}: family {family!r}: not in plan")
        N = int(weight.shape[0])
        states = {}
        for method, config in self.plan.methods_for(family, N):
            key = (method, json.dumps(config, sort_keys=True))
            states[key] = get_method(method).prepare(weight, family, config)
        return {"family": family, "N": N, "K": int(weight.shape[1]), "states": states}

    def run(self, state, family: str, x):
        M = int(x.shape[0])
        entry = self.plan.entry(family, M, state["N"])
        st = state["states"][(entry.method, json.dumps(entry.config, sort_keys=True))]
        method = get_method(entry.method)
        # A range's guard was checked when the plan loaded (up to kernels.plans.GUARD_CHECK_MAX_M); check the
        # M actually run too, so a rejected config can never launch (host-side, not in a captured graph).
        method.check_supports(family, M, state["N"], state["K"], entry.config)
        return method.run(st, x)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        """The entry's method + config at (M, N); N=None: the workload's N at M (kernels.plans SELECT RULE)."""
        return self.plan.describe(family, M, N)


class MethodCandidate(Candidate):
    """One method with one config for every M (what a tuning sweep or a method test times/checks)."""

    def __init__(self, method: str, config: dict | None = None):
        self.method = get_method(method)
        self.config = dict(self.method.configs[0] if config is None else config)
        reason = self.method.check_config(self.config)
        if reason:
            raise PlanError(reason)
        self.name = format_config(self.method.name, self.config)

    def prepare(self, family: str, weight):
        N, K = int(weight.shape[0]), int(weight.shape[1])
        return {"N": N, "K": K, "state": self.method.prepare(weight, family, self.config)}

    def run(self, state, family: str, x):
        # The guard decides at every call (it is host-side: a captured graph holds only the kernels), so a
        # config the guard rejects at this shape raises PlanError instead of launching.
        self.method.check_supports(family, int(x.shape[0]), state["N"], state["K"], self.config)
        return self.method.run(state["state"], x)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        return self.name


class ModuleCandidate(Candidate):
    """A user's .py module with `prepare(weight) -> state` (the family's weight [N, K]) and
    `run(state, family, x) -> y`; optional NAME and `describe(family, M)`."""

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_file():
            raise CandidateError(f"{self.path}: no such module file")
        spec = importlib.util.spec_from_file_location(f"projlab_candidate_{self.path.stem}", self.path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's import error, named with the file
            raise CandidateError(f"{self.path}: importing the module failed: {type(exc).__name__}: {exc}") from exc
        missing = [f for f in ("prepare", "run") if not callable(getattr(module, f, None))]
        if missing:
            raise CandidateError(f"{self.path}: module must define callable(s) {missing} "
                                 "(prepare(weight) -> state, run(state, family, x) -> y)")
        self._check_arity(module.prepare, 1, "prepare(weight)")
        self._check_arity(module.run, 3, "run(state, family, x)")
        self.module = module
        self.name = str(getattr(module, "NAME", self.path.stem))

    def _check_arity(self, fn, n: int, shape: str) -> None:
        try:
            sig = inspect.signature(fn)
            sig.bind(*range(n))
        except TypeError:
            raise CandidateError(f"{self.path}: {fn.__name__} must accept {shape}, has {sig}") from None
        except ValueError:  # builtins without a signature: let the call decide
            pass

    def prepare(self, family: str, weight):
        return self.module.prepare(weight)

    def run(self, state, family: str, x):
        return self.module.run(state, family, x)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        fn = getattr(self.module, "describe", None)  # the user's describe(family, M); N is not passed on
        return str(fn(family, M)) if callable(fn) else f"module {self.path.name}"


def load_candidate(spec, workload=None) -> Candidate:
    """A plan name (kernels/plans/<name>.json), a plan .json path, or a user's .py module path."""
    text = str(spec)
    if text.endswith(".py"):
        return ModuleCandidate(text)
    return PlanCandidate(load_plan(text, workload))
