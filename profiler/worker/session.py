"""The worker's Session: per-process state across tasks (device, timers, telemetry, loaded candidates, weights,
prepared states, the guard), created once per worker process."""
from __future__ import annotations

import collections
import importlib.util
from typing import Any

from datasets.workload import load_workload, workload_from_dict
from kernels.candidate import load_candidate
from kernels.methods_library import use_side_folder
from profiler.check import guards
from profiler.check.isolation import initialise_libraries, workload_dtypes
from profiler.check.contract import WEIGHT_MODIFIED, cuda_context_error
from profiler.check.guards import TaintedProcess
from profiler.check.inputs import make_weight
from profiler.measure import timing
from profiler.measure import telemetry as telemetry_mod  # by module: a test fake replaces its functions
from profiler.worker.integrity import FORGING, Integrity
from profiler.worker.steps import Fatal, current, step

# Bound at import, before any candidate runs: a candidate that replaces check on the live guard object (or on the
# class) does not change what guard_check calls (Integrity also names the replacement).
_GUARD_CHECK = guards.Guard.check

# Prepared states kept across tasks (least recently used dropped first). A sweep keeps a few per family and
# reuses them at every load; a tuner sends ~100 method configs per point, each holding a copy of the weights
# (up to 67 MB for the unpooler), so without a bound they would fill the GPU within a few families.
MAX_CACHED_STATES = 192


class Session:
    """Per-process state across tasks: device, timers, telemetry, loaded candidates, weights, prepared states and
    the guard (global settings + harness functions as they were at start, before any candidate was loaded)."""

    def __init__(self, config: dict):
        import torch


        self.config = dict(config)
        self.device = torch.device(config.get("device") or "cuda")
        if self.device.type == "cuda":
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            torch.zeros(1, device=self.device)  # create the context now, not inside a candidate's step
        use_side_folder(config.get("side_folder"))   # where a method's per-run files go (TunableOp's results)
        # The FP32 router baseline must run true FP32; every candidate is held to this (profiler.check.guards).
        torch.backends.cuda.matmul.allow_tf32 = False
        if config.get("init"):
            _call_hook(config["init"])
        if self.device.type == "cuda":
            # The harness sets the persisting-L2 limit to 0 before every timed shape; the H200's driver default is
            # not 0 (seen on the device), so take the snapshot after the first reset, not before.
            guards.reset_persisting_l2(self.device)
        # cuBLAS/cuBLASLt handles and workspaces and the allocator read their configuration once: here, before any
        # candidate is imported (profiler.check.isolation); the guard's snapshot comes after, so it holds
        # candidates to the environment those libraries read.
        self.isolation = initialise_libraries(self.device, workload_dtypes(load_workload().families.values()))
        self.guard = guards.Guard(harness=guards.harness_now())
        self.integrity = Integrity(self.guard)
        self.workload = None                 # datasets.workload.Workload of the current task (use_workload)
        self.candidates: dict[str, Any] = {}
        self.load_errors: dict[str, dict] = {}
        self.weights: dict = {}
        self.states: collections.OrderedDict = collections.OrderedDict()
        self.own_weights: dict = {}          # the copy of the weights each cached state was prepared on
        self._timers: dict = {}
        self._telemetry = None

    # -- devices and timers ------------------------------------------------------------------------------
    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def timer(self, mode: str = "cold"):
        """The cold timer (always: probes use it) or the stream timer, created on first use."""

        if "cold" not in self._timers:
            self._timers["cold"] = timing.ColdTimer(self.device, flush_bytes=self.config.get("flush_bytes"))
            self.integrity.watch_object(self._timers["cold"], "cold timer")
        if mode == "stream" and "stream" not in self._timers:
            self._timers["stream"] = timing.StreamTimer(self.device)
            self.integrity.watch_object(self._timers["stream"], "stream timer")
        return self._timers[mode]

    @property
    def telemetry(self):

        if self._telemetry is None:
            import torch

            pci = getattr(torch.cuda.get_device_properties(self.device), "pci_bus_id", None) if self.cuda else None
            self._telemetry = telemetry_mod.Telemetry(self.device.index or 0, pci)
        return self._telemetry

    def environment(self) -> dict:

        env = telemetry_mod.environment(self.device, self.telemetry)
        cold = self.timer("cold")
        timer = self.timer(self.config.get("mode") or "cold")
        env.update(replay_overhead_us=timer.overhead_us,
                   replay_overhead_ci_us=[float(v) for v in timer.overhead_ci_us],
                   flush_bytes=int(cold.flush_bytes), l2_bytes=int(cold.l2_bytes) or env.get("l2_bytes"))
        if timer is not cold:
            env["probe_replay_overhead_us"] = cold.overhead_us
        env["isolation"] = self.isolation
        return env

    def healthy(self) -> str | None:
        """None when the CUDA context still works; else the error (a sticky fault: illegal address, ...)."""

        return cuda_context_error(self.device)

    def guard_check(self, where: str) -> list[str]:

        try:
            reasons = _GUARD_CHECK(self.guard, where)
        except TaintedProcess as exc:
            raise Fatal("tainted", str(exc), *current()) from None
        self.assert_integrity(where)
        return reasons

    def assert_no_threads(self, where: str) -> None:
        """Fatal ("forging") where a candidate's Python thread is alive (profiler.worker.integrity): checked after
        every step and after every timed batch, before the harness makes the next input or judges an output."""
        running = self.integrity.threads()
        if running:
            raise Fatal("forging", running[0][:600] + f" (found after {where})", *current())

    def assert_integrity(self, where: str) -> None:
        """Fatal ("forging" / "outlived") where candidate code changed the worker's reply path or left something
        that would act after the worker answered (profiler.worker.integrity): this process measures nothing more."""
        broken = self.integrity.check()
        if broken:
            kind = "forging" if broken[0].startswith(FORGING) else "outlived"
            raise Fatal(kind, "; ".join(broken)[:600] + f" (found after {where})", *current())

    # -- the workload -------------------------------------------------------------------------------------
    def use_workload(self, spec: dict | None) -> None:
        """Take the task's workload (its JSON object). None (a task that needs none: environment, probes) keeps the
        current one (the default workload at first). Candidates loaded and states prepared for another workload
        are dropped (a plan is validated against one workload)."""

        if spec is None and self.workload is not None:
            return
        workload = load_workload() if spec is None else workload_from_dict(spec, "task", "workload")
        if self.workload is not None and self.workload.fingerprint == workload.fingerprint:
            return
        self.workload = workload
        self.candidates.clear()
        self.load_errors.clear()
        self.states.clear()

    # -- candidates ---------------------------------------------------------------------------------------
    def load(self, spec: str, name: str | None = None):
        """The candidate for `spec` (loaded once per process) or None; errors go to self.load_errors[spec]."""
        if spec in self.candidates:
            return self.candidates[spec]
        if spec in self.load_errors:
            return None

        step(name or spec, "load")
        refused, error, cand = False, None, None
        try:
            cand = load_candidate(spec, self.workload)
        except SystemExit as exc:
            refused, error = True, f"importing it called sys.exit({exc.code!r})"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"[:400]
        changed = self.guard_check("loading the module")
        if changed:
            refused, error, cand = True, "; ".join(changed), None
        if cand is None:
            self.load_errors[spec] = {"error": error, "refused": refused}
            return None
        self.candidates[spec] = cand
        return cand

    def weight(self, shape: dict, seed: int):

        key = (shape["family"], int(shape["N"]), int(shape["K"]), shape["w_dtype"], seed)
        if key not in self.weights:
            self.weights[key] = make_weight(shape["family"], key[1], key[2], seed, self.device, dtype=key[3])
        return self.weights[key]

    def state(self, spec: str, name: str, cand, shape: dict, weight, seed: int) -> tuple[Any, list[str]]:
        """(prepared state, []) -- cached per (spec, family, N, K) -- or (None, reasons).

        prepare() gets its own copy of `weight` (the session's weights, shared by every candidate and by the
        references, are never handed to candidate code): a candidate that scaled its weights in place made the
        baseline prepared beside it read twice the answer (tests/profiler/test_worker.py). The copy is kept with
        the state (own_weight) so the contract can compare it with the original after every step."""
        key = (spec, shape["family"], int(shape["N"]), int(shape["K"]), seed)
        if key in self.states:
            self.states.move_to_end(key)
            return self.states[key], []
        step(name, "prepare")
        reasons = []
        own = weight.clone()
        try:
            state = cand.prepare(shape["family"], own)
            if self.cuda:
                import torch

                torch.cuda.synchronize(self.device)
        except SystemExit as exc:
            state, reasons = None, [f"prepare() called sys.exit({exc.code!r})"]
        except Exception as exc:
            state, reasons = None, [f"prepare() raised {_err(exc)}"]
            lost = self.healthy()
            if lost is not None:  # before the guard: its CUDA-side reads would fail too
                raise Fatal("cuda_fault", f"{reasons[0]} (the CUDA context is unusable afterwards: {lost})",
                            name, "prepare")
        reasons += self.guard_check("prepare()")
        if not reasons and not _equal(own, weight):
            reasons = [f"{WEIGHT_MODIFIED} by prepare() (its own copy; the other candidates' weights are untouched)"]
        if reasons:
            return None, reasons
        self.states[key] = state
        self.own_weights[key] = own
        while len(self.states) > MAX_CACHED_STATES:
            old_key, _ = self.states.popitem(last=False)
            self.own_weights.pop(old_key, None)
        return state, []

    def own_weight(self, spec: str, shape: dict, seed: int):
        """The copy of the weights the candidate `spec` was prepared on at this shape (Session.state)."""
        return self.own_weights[(spec, shape["family"], int(shape["N"]), int(shape["K"]), seed)]


def _equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _call_hook(spec: str) -> None:
    """Run `file.py:function` (a trusted set-up hook, e.g. the tests' fake timer) in this process."""

    path, _, fn = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location("projlab_worker_init", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    getattr(module, fn)()


_SESSION: list[Session] = []


def session(config: dict | None = None) -> Session:
    """This process's session (created on first use; a different config makes a new one)."""
    config = dict(config or {})
    if not _SESSION or (config and _SESSION[0].config != config):
        _SESSION[:] = [Session(config)]
    return _SESSION[0]


