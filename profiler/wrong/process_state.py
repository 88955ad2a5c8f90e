"""Known-wrong candidates that change process-wide state the baseline or the harness runs on (the guard,
profiler/check/guards.py): global torch settings, backend flags, the environment at load, the default device, the
dispatcher table, Python modes entered at load, the harness's own functions, code and numbers.
"""
from __future__ import annotations

import time

from profiler.wrong.output import ProbeStatsInt8
from profiler.wrong.base import _linear, TorchLinear  # noqa: F401


class TF32Flipper(TorchLinear):
    """Turns TF32 on for cuBLAS FP32 matmuls in prepare() (faster FP32 for everyone after it, and the FP32 router
    baseline then misses its 0.01% tolerance)."""

    name, expect = "tf32_flipper", "changed global setting torch.backends.cuda.matmul.allow_tf32"

    def prepare(self, family, weight):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        return {"w": weight}



class TimerPatcher(TorchLinear):
    """Replaces the profiler's sampling function in prepare() with one that reports 0.1 us per call."""

    name, expect = "timer_patcher", "replaced the profiler's timer"

    def prepare(self, family, weight):
        import numpy as np

        from profiler.measure import timing

        timing.ColdTimer.sample = lambda self, graphs, n_rounds, **kw: np.full((n_rounds, len(graphs)), 0.1)
        return {"w": weight}



class EnvAtImport(TorchLinear):
    """Sets CUBLAS_WORKSPACE_CONFIG=:0:0 and CUBLASLT_WORKSPACE_SIZE=0 when it is loaded (a determinism recipe many
    users copy): cuBLAS then gives every later handle no workspace, and the baseline's F.linear in the same worker
    ran up to 13.7x slower on the H200 when nothing had initialised cuBLAS before. Its own arithmetic is right."""

    name, expect = "env_at_import", "changed environment variable CUBLAS"

    def __init__(self):
        import os

        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":0:0"
        os.environ["CUBLASLT_WORKSPACE_SIZE"] = "0"



class RulePatcher(TorchLinear):
    """Replaces what the rules call -- torch.linalg.vector_norm (zero norms: every rel-L2 0), the pair rule (no
    reason), builtins.max -- in prepare(), then returns 1.5x the answer on every other column. Passed the contract
    before the guard held every binding of the harness's modules and of the libraries it calls."""

    name, expect = "rule_patcher", "module replaced a function the harness uses (torch.linalg.vector_norm)"

    def prepare(self, family, weight):
        import builtins

        import torch

        from profiler.check import rules

        norm = torch.linalg.vector_norm
        torch.linalg.vector_norm = lambda t, *a, **k: norm(t, *a, **k) * 0
        rules.pair_rule = lambda *a, **k: (0.0, [])
        builtins.max = lambda *a, **k: 1e30   # rel-L2 = |err| / max(|ref|, floor)
        return {"w": weight}

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        y[:, ::2] *= 1.5
        return y



class CodeSwapper(RulePatcher):
    """Leaves every binding alone and swaps the code object of the pair rule for one that finds nothing (the
    function object is the same, so a guard that compares identities alone is blind), with int8 weights that only
    the pair rule catches (ProbeStatsInt8)."""

    name, expect = "code_swapper", "module rewrote the code or defaults of a harness function"

    def prepare(self, family, weight):
        from profiler.check import rules

        rules.pair_rule.__code__ = (lambda *a, **k: (0.0, [])).__code__
        return ProbeStatsInt8().prepare(family, weight)

    def run(self, state, family, x):
        return ProbeStatsInt8().run(state, family, x)



class RuleNumberPatcher(CodeSwapper):
    """Widens the pair rule's bound through its numbers: PAIR_LAMBDA set to 1e12, and the output rounding table
    edited in place (refused: the harness's tables are read-only), with the int8 weights of ProbeStatsInt8."""

    name, expect = "rule_number_patcher", "module changed a value the harness uses (profiler.check.rules.PAIR_LAMBDA)"

    def prepare(self, family, weight):
        from profiler.check import rules

        rules.PAIR_LAMBDA = 1e12
        try:
            rules.UNIT_ROUNDOFF["bfloat16"] = 1.0
        except TypeError:
            pass
        return ProbeStatsInt8().prepare(family, weight)



class DefaultDevice(TorchLinear):
    """Sets torch's default device to "meta" in prepare(): every torch.empty(...) without a device after it -- the
    next candidate's, the harness's -- allocates nothing. Its own output is right."""

    name, expect = "default_device", "changed global setting torch.get_default_device()"

    def prepare(self, family, weight):
        import torch

        torch.set_default_device("meta")
        return {"w": weight}



class FlushDenormal(TorchLinear):
    """Turns CPU denormal flushing on in prepare() (torch.set_flush_denormal, which has no getter): the CPU side of
    every later candidate's arithmetic changes. Its own output is right."""

    name, expect = "flush_denormal", "changed global setting torch.set_flush_denormal()"

    def prepare(self, family, weight):
        import torch

        torch.set_flush_denormal(True)
        return {"w": weight}



class DispatcherSlowMM(TorchLinear):
    """Registers, in prepare(), a Python kernel for aten::mm and aten::addmm (torch.library, for the dispatch key
    of the device it runs on: CPU, or CUDA) that is right but does the product twice at M == 8: every later
    candidate's mm in this process -- the baseline's F.linear too -- is slower at that one M, where the default
    canary did not time (the pair scored 1.35). The guard compares the dispatcher's kernels for the operators the
    baseline reaches (profiler.check.dispatcher.DISPATCH_OPS) after every step and names the registration."""

    name, expect = "dispatcher_slow_mm", "dispatcher kernel"

    def prepare(self, family, weight):
        import torch

        key = "CUDA" if weight.is_cuda else "CPU"
        lib = torch.library.Library("aten", "IMPL")
        below = torch._C.DispatchKeySet(key)

        def mm(a, b):
            out = torch.ops.aten.mm.default.redispatch(below, a, b)
            if a.shape[0] == 8:
                out = torch.ops.aten.mm.default.redispatch(below, a, b)
            return out

        def addmm(c, a, b, beta=1, alpha=1):
            out = torch.ops.aten.addmm.default.redispatch(below, c, a, b, beta=beta, alpha=alpha)
            if a.shape[0] == 8:
                out = torch.ops.aten.addmm.default.redispatch(below, c, a, b, beta=beta, alpha=alpha)
            return out

        lib.impl("mm", mm, key)
        lib.impl("addmm", addmm, key)
        return {"w": weight, "lib": lib}



class BackendFlagToggle(TorchLinear):
    """Computes its own answer, then turns torch.backends.mkldnn.enabled off (on CPU the baseline's BF16 F.linear
    then takes a slower path) at one M: every later candidate of the process at that M is slower, and nothing the
    contract reads changes (scored 1.50 on CPU). The guard holds every torch.backends flag (enumerated:
    profiler.check.guards.backend_flags) and names the change after the run() call that made it."""

    name, expect = "backend_flag_toggle", "torch.backends.mkldnn.enabled"
    AT_M = (1, 16)

    def run(self, state, family, x):
        import torch

        y = _linear(x, state["w"])
        if int(x.shape[0]) in self.AT_M:
            torch.backends.mkldnn.enabled = False
        return y



class FunctionModeAtImport(TorchLinear):
    """Enters a TorchFunctionMode when its module is imported (never exited) that spins on every F.linear it sees
    -- the baseline's included."""

    name, expect = "function_mode_at_import", "torch function mode"

    def __init__(self):   # when the worker loads it (EnvAtImport's way): what a module's import does
        import torch
        from torch.overrides import TorchFunctionMode

        class Slow(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if func is torch.nn.functional.linear:
                    time.sleep(2e-4)
                return func(*args, **(kwargs or {}))

        Slow().__enter__()



class DispatchModeAtImport(TorchLinear):
    """Enters a TorchDispatchMode at import (never exited) that spins on every aten mm/addmm."""

    name, expect = "dispatch_mode_at_import", "Python dispatch mode"

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Slow(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if "mm" in str(func):
                    time.sleep(2e-4)
                return func(*args, **(kwargs or {}))

        Slow().__enter__()
