"""What a candidate must leave alone: process-wide torch settings, the process environment, the harness's own
functions (and every name of the modules the harness runs), Python function and dispatch modes left entered,
dispatcher kernels of the operators the baseline and the harness's own operations run (those two snapshots:
profiler.check.dispatcher), persisting L2.

    guard = Guard(harness=None)     # snapshot of the settings now, and of the harness functions (or `harness`)
    guard.check("prepare()") -> ["changed global setting torch.backends.cuda.matmul.allow_tf32 (from False to
                                  True) in prepare()",
                                 "changed environment variable CUBLAS_WORKSPACE_CONFIG (from unset to ':0:0') in
                                  loading the module", ...]   (and everything is restored before it returns)
    harness_now() -> the harness functions as they are now, and every binding of the namespaces the harness reads
                     (the worker keeps them from its start)
    reset_persisting_l2(device) -> "ok" | why not

Why: a candidate that turns TF32 on in prepare() made the baseline's FP32 router results wrong and faster in the
same sweep; a module that replaces the profiler's timer (or F.linear) could make any number up -- and so could one
that replaces anything the rules call: with torch.linalg.vector_norm returning zeros and rules.pair_rule returning
"no reason", an output 1.5x too large on every other column passed the contract (profiler/wrong/,
RulePatcher). So beyond the named HARNESS functions the guard holds every binding of the harness's own modules
(profiler.*, datasets.*; a rebound name, a name added that would shadow a builtin, a function whose code object or
defaults were swapped) and the functions, classes and submodules of the libraries the rules call (builtins, math,
numpy, torch, torch.linalg, torch.nn.functional, torch.cuda, and torch.Tensor's methods); the tables those modules
keep are immutable (MappingProxyType, frozenset), so they cannot be edited in place. A module that set
CUBLAS_WORKSPACE_CONFIG=:0:0 and CUBLASLT_WORKSPACE_SIZE=0 at import made the baseline's F.linear in the same worker
up to 13.7x slower (H200, router M=32: 19.8 -> 271 us), because cuBLAS reads them when it first makes a workspace.
The worker checks before loading a candidate and after each of its steps (load, prepare, every run() call, capture),
fails the candidate with the setting's name, and restores the snapshot before anything else runs.

The environment is read where native libraries read it (the C `environ` array, through ctypes), so os.putenv and a
libc setenv() are seen as well as os.environ. Restoring it cannot undo what a library already read: that is why the
worker initialises the lazily configured libraries before any candidate is imported (profiler.check.isolation) and the
sweep compares the baseline with a worker that never loaded a candidate (the canary).
"""
from __future__ import annotations

import ctypes
import importlib
import sys
from types import FunctionType, MappingProxyType, MethodType, ModuleType
from typing import Any, Callable

from profiler.check.dispatcher import (_drop_new_libraries, _libraries, _pop_modes, dispatch_changes,
                                       dispatch_tables, mode_stacks)

PERSISTING_L2_SETTING = "persisting L2 limit (cudaLimitPersistingL2CacheSize)"

# (name, getter, setter). A getter may raise (torch refuses to read the legacy TF32 flag after the new
# fp32_precision API was used): the snapshot then holds "unreadable", which still differs from a readable value.


def _settings() -> list[tuple[str, Callable[[], Any], Callable[[Any], None]]]:
    import torch

    mm, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn

    def attr(obj, name):
        return (lambda: getattr(obj, name)), (lambda v: setattr(obj, name, v))

    out = [
        # Legacy flags first, the fp32_precision API after: restoring sets them in this order and the last
        # write decides the underlying state, so the new API's value is what a restore leaves.
        ("torch.backends.cuda.matmul.allow_tf32", *attr(mm, "allow_tf32")),
        ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
         *attr(mm, "allow_bf16_reduced_precision_reduction")),
        ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
         *attr(mm, "allow_fp16_reduced_precision_reduction")),
        ("torch.backends.cudnn.allow_tf32", *attr(cudnn, "allow_tf32")),
        ("torch.get_float32_matmul_precision()", torch.get_float32_matmul_precision,
         torch.set_float32_matmul_precision),
        ("torch.backends.cudnn.benchmark", *attr(cudnn, "benchmark")),
        ("torch.backends.cudnn.deterministic", *attr(cudnn, "deterministic")),
        ("torch.backends.cudnn.enabled", *attr(cudnn, "enabled")),
        ("torch.are_deterministic_algorithms_enabled()",
         lambda: (torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled()),
         lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1])),
        ("torch.get_default_dtype()", torch.get_default_dtype, torch.set_default_dtype),
        # where a torch.empty(...) without a device lands: "meta" or another GPU breaks every later candidate
        ("torch.get_default_device()", torch.get_default_device, torch.set_default_device),
        # CPU denormals flushed to zero (DAZ/FTZ): changes the CPU side of every later candidate's arithmetic
        ("torch.set_flush_denormal()", _flush_denormal, torch.set_flush_denormal),
        # host threads: eager (host-inclusive) timings and the FP64 reference on CPU depend on them
        ("torch.get_num_threads()", torch.get_num_threads, torch.set_num_threads),
    ]
    if hasattr(torch._C, "_accelerator_getAllocatorSettings"):  # the caching allocator's runtime settings
        out.append(("caching allocator settings (torch._C._accelerator_getAllocatorSettings())",
                    torch._C._accelerator_getAllocatorSettings, torch._C._accelerator_setAllocatorSettings))
    if hasattr(mm, "allow_fp16_accumulation") or "allow_fp16_accumulation" in dir(mm):
        out.append(("torch.backends.cuda.matmul.allow_fp16_accumulation", *attr(mm, "allow_fp16_accumulation")))
    try:  # torch >= 2.9: the fp32_precision API (global, cuBLAS, cuDNN conv/rnn)
        _ = torch.backends.fp32_precision
        out += [("torch.backends.fp32_precision", *attr(torch.backends, "fp32_precision")),
                ("torch.backends.cuda.matmul.fp32_precision", *attr(mm, "fp32_precision")),
                ("torch.backends.cudnn.conv.fp32_precision", *attr(cudnn.conv, "fp32_precision")),
                ("torch.backends.cudnn.rnn.fp32_precision", *attr(cudnn.rnn, "fp32_precision"))]
    except Exception:
        pass
    try:
        import torch.utils.deterministic as det

        out.append(("torch.utils.deterministic.fill_uninitialized_memory",
                    *attr(det, "fill_uninitialized_memory")))
    except Exception:
        pass
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out += [("torch.backends.cuda.preferred_blas_library()", torch.backends.cuda.preferred_blas_library,
                 torch.backends.cuda.preferred_blas_library),
                ("torch.cuda.current_device()", torch.cuda.current_device, torch.cuda.set_device),
                ("torch.cuda.current_stream()", torch.cuda.current_stream, torch.cuda.set_stream),
                (PERSISTING_L2_SETTING, persisting_l2_limit, _set_persisting_l2_limit)]
        if hasattr(torch.cuda, "get_per_process_memory_fraction"):  # torch >= 2.8: the allocator's memory cap
            out.append(("torch.cuda.get_per_process_memory_fraction()", torch.cuda.get_per_process_memory_fraction,
                        torch.cuda.set_per_process_memory_fraction))
        out += tunableop_settings()
    named = {name for name, _, _ in out}
    return out + [entry for entry in backend_flags() if entry[0] not in named]


def backend_flags() -> list[tuple[str, Callable[[], Any], Callable[[Any], None]]]:
    """Every flag torch.backends exposes, enumerated rather than listed: each submodule's properties
    (torch.backends.mkldnn.enabled, cudnn.*, opt_einsum.strategy, ...: ContextProp or property on its module class,
    and on its sub-objects such as cudnn.conv), and its getter/setter function pairs (get_X/set_X, X_enabled/
    enable_X: torch.backends.cuda's SDP kernels, mha's fast path, ...). A candidate that turned mkldnn off after its
    own calls made the baseline slower at one M unseen (scored 1.50 on CPU); every such flag is now held like TF32.
    torch.backends.cuda's functions are read only once CUDA is initialised (reading them must not initialise it)."""
    import pkgutil

    import torch
    import torch.backends as backends

    out = []
    for info in pkgutil.iter_modules(backends.__path__):
        if info.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module(f"torch.backends.{info.name}")
        except Exception:
            continue
        objs = [(mod, f"torch.backends.{info.name}")]
        objs += [(getattr(mod, a, None), f"torch.backends.{info.name}.{a}") for a in ("conv", "rnn")
                 if isinstance(type(getattr(mod, a, None)).__dict__.get("fp32_precision"), property)
                 or hasattr(type(getattr(mod, a, None)), "fp32_precision")]
        for obj, prefix in objs:
            seen = set()
            for klass in type(obj).__mro__:
                for attr, desc in vars(klass).items():
                    if attr.startswith("_") or attr in seen or not isinstance(desc, (backends.ContextProp, property)):
                        continue
                    seen.add(attr)
                    if getattr(desc, "fset", True) is None:
                        continue   # a read-only property: not a flag
                    out.append((f"{prefix}.{attr}", (lambda o=obj, a=attr: getattr(o, a)),
                                (lambda v, o=obj, a=attr: setattr(o, a, v))))
        if info.name == "cuda" and not (torch.cuda.is_available() and torch.cuda.is_initialized()):
            continue
        funcs = {a: f for a, f in vars(mod).items() if isinstance(f, FunctionType) and not a.startswith("_")}
        for attr, getter in sorted(funcs.items()):
            setter = (funcs.get("set_" + attr[4:]) if attr.startswith("get_") else
                      funcs.get("enable_" + attr[:-len("_enabled")]) if attr.endswith("_enabled") else None)
            if setter is None:
                continue
            try:
                getter()
            except Exception:
                continue   # needs arguments, or unavailable here
            out.append((f"torch.backends.{info.name}.{attr}()", getter, setter))
    return out


def tunableop_settings() -> list[tuple[str, Callable[[], Any], Callable[[Any], None]]]:
    """TunableOp's process-wide switches: on, F.linear/torch.mm of every later candidate (the baseline's too) would
    run TunableOp's pick instead of cuBLAS's heuristic. The `tunableop` peer turns them on for its own calls only
    (kernels/methods_library.py, `process_state`) and must leave them as it found them."""
    import torch

    tun = getattr(torch.cuda, "tunable", None)
    if tun is None:
        return []
    return [("torch.cuda.tunable.is_enabled()", tun.is_enabled, tun.enable),
            ("torch.cuda.tunable.tuning_is_enabled()", tun.tuning_is_enabled, tun.tuning_enable),
            ("torch.cuda.tunable.record_untuned_is_enabled()", tun.record_untuned_is_enabled,
             tun.record_untuned_enable)]


def _flush_denormal() -> bool:
    """Whether CPU float arithmetic flushes denormals now (torch.set_flush_denormal has no getter): a float32
    denormal times one is zero only then."""
    import torch

    return bool(float(torch.tensor([1e-40], dtype=torch.float32, device="cpu").mul(1.0)[0]) == 0.0)


def _read(getter) -> Any:
    try:
        return getter()
    except Exception as exc:  # e.g. torch's "mix of the legacy and new APIs" RuntimeError
        return f"unreadable ({type(exc).__name__})"


def snapshot() -> dict[str, Any]:
    """{setting name: value} of every setting in the list above that this torch has."""
    return {name: _read(get) for name, get, _ in _settings()}


# --- the process environment --------------------------------------------------------------------------------
def process_environment() -> dict[str, str]:
    """{name: value} of the C-level environment (what cuBLAS, the CUDA driver and the allocator read with
    getenv); falls back to os.environ where libc's `environ` cannot be read."""
    import os

    try:
        libc = ctypes.CDLL(None)
        entries = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    except (OSError, ValueError, AttributeError):
        return dict(os.environ)
    out, i = {}, 0
    while entries[i] is not None:
        name, _, value = entries[i].decode("utf-8", "surrogateescape").partition("=")
        out[name] = value
        i += 1
    return out


# Variables torch sets itself, with its own default, the first time a lazily imported part of it runs: a candidate
# that uses torch.compile (or anything importing torch._dynamo) makes them appear, and they change nothing the
# baseline's libraries read. Their APPEARANCE is not a change; a new value for one that was set still is.
LIBRARY_DEFAULTS = MappingProxyType({
    "TORCHINDUCTOR_CACHE_DIR": "torch._inductor.runtime.cache_dir_utils.cache_dir() sets it on first use",
    "CUDA_MODULE_LOADING": "torch sets it to LAZY when it initialises CUDA",
    # torch._inductor's Triton launcher and compile workers (torch.compile), torch/_inductor/runtime/*.py
    "TRITON_CACHE_DIR": "torch._inductor.runtime.triton_heuristics sets it for the kernels it compiles",
    "TRITON_PTXAS_PATH": "torch._inductor.runtime.compile_tasks points Triton at the ptxas it ships",
    "TRITON_LIBDEVICE_PATH": "torch._inductor.runtime.compile_tasks points Triton at the libdevice it ships",
})


def environment_changes(before: dict[str, str], now: dict[str, str]) -> list[tuple[str, str | None, str | None]]:
    """[(name, value before or None when unset, value now or None)] for every variable added, removed or changed."""
    return [(k, before.get(k), now.get(k)) for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]


def restore_environment(before: dict[str, str]) -> None:
    """Set the environment back to `before` (os.environ and the C environment together)."""
    import os

    for name, old, _ in environment_changes(before, process_environment()):
        if old is None:
            os.environ.pop(name, None)
            os.unsetenv(name)  # a variable set with libc setenv() is not in os.environ
        else:
            os.environ[name] = old


# --- the harness's own functions ---------------------------------------------------------------------------
# (module, dotted attribute) whose identity must not change after a candidate is loaded or runs.
HARNESS = (
    ("profiler.measure.timing", "capture_graph"), ("profiler.measure.timing", "measure_shape"),
    ("profiler.measure.timing", "ColdTimer"), ("profiler.measure.timing", "StreamTimer"),
    ("profiler.measure.timing", "ColdTimer.sample"), ("profiler.measure.timing", "ColdTimer.sample_raw"),
    ("profiler.measure.timing", "ColdTimer.calibrate"), ("profiler.measure.timing", "ColdTimer.capture"),
    ("profiler.measure.timing", "ColdTimer.flush"), ("profiler.measure.eager", "eager_time"),
    ("profiler.measure.timing", "StreamTimer.capture"), ("profiler.measure.timing", "GraphHandle.replay"),
    ("profiler.measure.stats", "summarize_samples"), ("profiler.measure.stats", "summarize_pairs"),
    ("profiler.measure.stats", "bootstrap_ci"), ("profiler.measure.stats", "paired_ratios"),
    ("profiler.check.rules", "check_output"), ("profiler.check.rules", "reference"),
    ("profiler.check.inputs", "make_input"), ("profiler.check.inputs", "make_weight"),
    ("profiler.check.contract", "check_candidate"),
    ("time", "perf_counter"), ("numpy", "median"),
    ("torch.nn.functional", "linear"), ("torch", "matmul"), ("torch", "mm"),
    ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "CUDAGraph"),
    ("torch.cuda.Event", "elapsed_time"), ("torch.cuda.Event", "record"), ("torch.cuda.CUDAGraph", "replay"),
)
TIMER_MODULES = ("profiler.measure.timing", "profiler.measure.stats", "time", "numpy", "torch.cuda")


def _resolve(module: str, dotted: str) -> tuple[Any, str] | None:
    """(owner object, last attribute name) for module + dotted path; None where this process lacks it."""
    try:
        obj = importlib.import_module(module)
        parts = dotted.split(".")
        for part in parts[:-1]:
            obj = getattr(obj, part)
        getattr(obj, parts[-1])
        return obj, parts[-1]
    except Exception:
        return None


_MISSING = object()   # a binding that was deleted


def _lookup(owner, name: str, default=None):
    """The attribute as stored: a class's own __dict__ entry (so a patch on a subclass shows), else getattr."""
    if isinstance(owner, type) and name in owner.__dict__:
        return owner.__dict__[name]
    return getattr(owner, name, default)


def harness_now() -> dict[str, tuple[Any, str, Any]]:
    """{"module.attr": (owner, attribute, current object)} for every harness function this process has (HARNESS
    first: their messages name the timer), then every binding namespace_entries() holds."""
    out = {}
    for module, dotted in HARNESS:
        found = _resolve(module, dotted)
        if found is not None:
            owner, name = found
            out[f"{module}.{dotted}"] = (owner, name, _lookup(owner, name))
    for key, entry in namespace_entries()[0].items():
        out.setdefault(key, entry)
    return out


# Namespaces the harness runs or reads, beyond HARNESS: every binding of the harness's own modules (numbers and
# tables included: rules.PAIR_LAMBDA set to 1e9 would widen the pair bound a billion times) and, of the libraries
# the rules and the timer call, every function, class and submodule.
HARNESS_PACKAGES = ("profiler", "datasets")
LIBRARY_NAMESPACES = ("builtins", "math", "numpy", "torch", "torch.linalg", "torch.nn.functional", "torch.cuda")
LIBRARY_CLASSES = (("torch", "Tensor"),)
# Rebindings the libraries make themselves the first time a part of them is imported, with why: like
# LIBRARY_DEFAULTS, the new binding is held from then on instead of being blamed on the candidate that imported it.
LIBRARY_REBINDS = MappingProxyType({
    "torch.manual_seed": "torch._dynamo (torch.compile) wraps it in torch._disable_dynamo when it is first imported",
})


def _module_names(prefixes: tuple[str, ...]) -> list[str]:
    return sorted(name for name in list(sys.modules) if name.split(".")[0] in prefixes and sys.modules[name])


def _guarded(value) -> bool:
    """A library binding the guard holds: a function, a class or a module (not its data, which libraries update)."""
    return callable(value) or isinstance(value, ModuleType)


def _function(value):
    """The plain function behind a binding (a function, or a static/class method's), else None."""
    value = getattr(value, "__func__", value)
    return value if isinstance(value, FunctionType) else None


def namespace_entries() -> tuple[dict, dict, list]:
    """(bindings {"module.attr": (owner, attribute, object)}, the names of the namespaces where an added name counts
    {"module": (owner, frozenset of names)}, the code of their functions [(function, __code__, __defaults__,
    __kwdefaults__, "module.attr")]) for HARNESS_PACKAGES, LIBRARY_NAMESPACES and LIBRARY_CLASSES as they are now."""
    bindings, names, codes = {}, {}, []

    def hold(owner, prefix: str, every: bool) -> None:
        space = vars(owner)
        for attr, value in list(space.items()):
            if every or _guarded(value):
                bindings[f"{prefix}.{attr}"] = (owner, attr, value)
            fn = _function(value) if every else None
            if fn is not None:
                codes.append((fn, fn.__code__, fn.__defaults__, fn.__kwdefaults__, f"{prefix}.{attr}"))
        if every or isinstance(owner, type):
            names[prefix] = (owner, frozenset(space))

    for module_name in _module_names(HARNESS_PACKAGES):
        module = sys.modules[module_name]
        hold(module, module_name, every=True)
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module_name:
                hold(value, f"{module_name}.{attr}", every=True)
    for module_name in LIBRARY_NAMESPACES:
        if sys.modules.get(module_name) is not None:
            hold(sys.modules[module_name], module_name, every=False)
    for module_name, cls in LIBRARY_CLASSES:
        owner = getattr(sys.modules.get(module_name), cls, None)
        if isinstance(owner, type):
            hold(owner, f"{module_name}.{cls}", every=True)
    return bindings, names, codes


def _what(name: str) -> str:
    timer = any(name.startswith(m + ".") for m in TIMER_MODULES)
    return "module replaced the profiler's timer" if timer else "module replaced a function the harness uses"


class Guard:
    """A snapshot of the global settings and of the harness functions; check() compares, restores and names
    every change. `harness`: the originals to hold the process to (the worker takes them at start, before any
    candidate is loaded); default: the functions as they are now."""

    def __init__(self, harness: dict | None = None):
        self.harness = dict(harness) if harness is not None else harness_now()
        _, self.names, self.codes = namespace_entries()
        self.settings = snapshot()
        self.environment = process_environment()
        self.dispatch = dispatch_tables()
        self.libraries = _libraries()
        self.modes = mode_stacks()
        # Bound to this guard now: a candidate that replaces Guard.check (or restore) on the class does not reach a
        # guard made before it ran.
        self.check = MethodType(Guard.check, self)
        self.restore = MethodType(Guard.restore, self)

    def _namespaces(self, where: str) -> list[str]:
        """Reasons for every harness binding rebound, name added or function rewritten (each put back); bindings the
        libraries change themselves (LIBRARY_REBINDS) are held from then on."""
        reasons = []
        for key, (owner, name, original) in self.harness.items():
            now = _lookup(owner, name, _MISSING)
            if now is original:
                continue
            if key in LIBRARY_REBINDS and now is not _MISSING:
                self.harness[key] = (owner, name, now)
                continue
            what = _what(key) if callable(original) else "module changed a value the harness uses"
            reasons.append(f"{what} ({key}) in {where}")
            setattr(owner, name, original)
        for prefix, (owner, before) in self.names.items():
            for name in sorted(set(vars(owner)) - before):
                if isinstance(vars(owner)[name], ModuleType) or name == "__warningregistry__":
                    continue   # a submodule imported for the first time binds its name on its package; Python
                               # keeps which warnings a module's code issued in __warningregistry__
                reasons.append(f"module added a name the harness would find ({prefix}.{name}) in {where}")
                delattr(owner, name)
        for fn, code, defaults, kwdefaults, key in self.codes:
            if fn.__code__ is not code or fn.__defaults__ is not defaults or fn.__kwdefaults__ is not kwdefaults:
                home = f"{fn.__module__}.{fn.__qualname__}"   # where it is defined, not the name it was seen under
                reasons.append(f"module rewrote the code or defaults of a harness function ({home}) in {where}")
                fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
        return reasons

    def check(self, where: str) -> list[str]:
        """Reasons for every setting, environment variable, harness function or harness binding changed since the
        snapshot (then restored). The bindings first: the functions the rest of the check calls are then the
        originals."""
        reasons = self._namespaces(where)
        env_changes = []
        for name, old, new in environment_changes(self.environment, process_environment()):
            if old is None and name in LIBRARY_DEFAULTS:
                self.environment[name] = new  # torch's own default appearing (LIBRARY_DEFAULTS): held from now
                continue
            env_changes.append((name, old, new))
        for name, old, new in env_changes:
            reasons.append(f"changed environment variable {name} (from {'unset' if old is None else repr(old)} to "
                           f"{'unset' if new is None else repr(new)}) in {where}")
        if env_changes:
            restore_environment(self.environment)
        reasons += self._modes(where)
        reasons += self._dispatcher(where)
        now = snapshot()
        # None: unknown right now (a CUDA read failed); not a change the candidate can be blamed for here.
        changed = [k for k in self.settings if now.get(k) is not None and now.get(k) != self.settings[k]]
        for key in changed:
            reasons.append(f"changed global setting {key} (from {self.settings[key]!r} to {now.get(key)!r}) "
                           f"in {where}")
        if changed:
            self.restore()
        return reasons

    def _modes(self, where: str) -> list[str]:
        """Reasons for every Python mode left entered (each popped: the baseline runs without it again)."""
        reasons = []
        for kind, count in mode_stacks().items():
            extra = count - self.modes.get(kind, 0)
            if extra > 0:
                reasons.append(f"left a {kind} entered ({extra} on the stack): candidate Python would run inside "
                               f"every later torch call, the baseline's included, in {where}")
                _pop_modes(kind)
        return reasons

    def _dispatcher(self, where: str) -> list[str]:
        """Reasons for every dispatcher kernel of DISPATCH_OPS added, replaced or removed (the libraries that made
        them destroyed); a change that cannot be undone so taints the process."""
        changes = dispatch_changes(self.dispatch, dispatch_tables())
        if not changes:
            return []
        _drop_new_libraries(self.libraries)
        left = dispatch_changes(self.dispatch, dispatch_tables())
        if left:
            raise TaintedProcess(f"could not undo dispatcher registrations {left[:3]} made in {where}")
        return [f"registered a dispatcher kernel (torch.library): {c} in {where}" for c in changes]

    def harness_set(self, name: str, value) -> None:
        """Record a setting the harness itself changed (the persisting-L2 reset) as the value to hold to."""
        if name in self.settings:
            self.settings[name] = value

    def restore(self) -> None:
        """Set every setting back to the snapshot (legacy flags first, the new API last; see _settings)."""
        for name, _, setter in _settings():
            value = self.settings.get(name)
            if name in self.settings and not (isinstance(value, str) and value.startswith("unreadable")):
                try:
                    setter(value)
                except Exception:
                    pass
        now = snapshot()
        left = [k for k, v in self.settings.items() if now.get(k) is not None and now.get(k) != v]
        if left:  # the process cannot be trusted any more: the worker dies and a fresh one takes over
            raise TaintedProcess(f"could not restore global settings {left}")


class TaintedProcess(RuntimeError):
    """Global state that could not be restored: the process must not measure anything else."""


# --- persisting L2 (CUDA runtime through ctypes; the driver API where the runtime is linked in statically) ------
CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # cudaLimitPersistingL2CacheSize == CU_LIMIT_PERSISTING_L2_CACHE_SIZE
_LIBS: dict = {}


def _cuda_libs() -> tuple[Any, Any]:
    """(CUDA runtime this process loaded -- found in /proc/self/maps -- or None, libcuda driver or None)."""
    if not _LIBS:
        runtime = None
        try:
            with open("/proc/self/maps") as maps:
                paths = sorted({line.split()[-1] for line in maps if "libcudart" in line})
        except OSError:
            paths = []
        for path in paths:
            try:
                runtime = ctypes.CDLL(path)
                break
            except OSError:
                continue
        try:
            driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            driver = None
        if runtime is not None or driver is not None:
            _LIBS.update(runtime=runtime, driver=driver)
        else:
            return None, None
    return _LIBS["runtime"], _LIBS["driver"]


def persisting_l2_limit() -> int | None:
    """The persisting-L2 limit in bytes; None where it cannot be read (no CUDA, or a context already broken by
    a sticky fault: the guard then skips it rather than blame the next candidate)."""
    runtime, driver = _cuda_libs()
    value = ctypes.c_size_t(0)
    if runtime is not None:
        rc = runtime.cudaDeviceGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
    elif driver is not None:
        rc = driver.cuCtxGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
    else:
        return None
    return int(value.value) if rc == 0 else None


def _set_persisting_l2_limit(value) -> int:
    runtime, driver = _cuda_libs()
    if not isinstance(value, int):
        return -1
    if runtime is not None:
        return runtime.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(value))
    if driver is not None:
        return driver.cuCtxSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(value))
    return -1


def reset_persisting_l2(device) -> str:
    """Evict persisting L2 lines and set the persisting-L2 limit to 0, so no candidate can keep its weights in
    L2 across the flush (cudaDeviceSetLimit + cudaCtxResetPersistingL2Cache, or their driver-API twins).
    "ok", or why it could not."""
    import torch

    if torch.device(device).type != "cuda":
        return "not a CUDA device"
    runtime, driver = _cuda_libs()
    if runtime is None and driver is None:
        return "no CUDA runtime or driver library found in this process"
    with torch.cuda.device(device):
        torch.cuda.synchronize(device)
        rc_limit = _set_persisting_l2_limit(0)
        rc_reset = runtime.cudaCtxResetPersistingL2Cache() if runtime is not None else \
            driver.cuCtxResetPersistingL2Cache()
    if rc_limit or rc_reset:
        return f"set limit -> error {rc_limit}, reset persisting L2 -> error {rc_reset}"
    return "ok"
