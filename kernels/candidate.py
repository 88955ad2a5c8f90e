"""The candidate protocol the profiler times: a plan, one method, or a user's own module.

    class Candidate: name; prepare(family, weight) -> state; run(state, family, x) -> y;
                     describe(family, M, N=None) -> str

prepare() sees weights only (never activations) and may take as long as it likes; run() is what is timed.
Torch-free at import.

Candidate specs (strings, so a candidate can be named on the command line and sent to a worker process):
    baseline | kernels/plans/x.json           a dispatch plan (by name, or a plan file)
    my_kernels.py                             a module with prepare(weight) and run(state, family, x)
    some/file.py:ClassName                    a class (instantiated without arguments) or object in a file that
                                              follows the Candidate protocol, e.g. profiler/wrong/output.py:StaleOutput
    method:gemv  |  method:gemv:{"BN": 1, "num_warps": 16, "cache": ".cg"}   one method with one config
check_spec(spec) validates a spec without running any of the candidate's code (the profiler's parent process
calls it before a worker loads the candidate); load_candidate(spec) builds it.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
from pathlib import Path

from kernels.method import PlanError
from kernels.plans import Plan, format_config, load_plan, migrate_config
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

    def setup(self, state, family: str, M: int) -> dict | None:
        """What the method that ran at M spent and chose setting itself up (a peer's tuning or compile), for the
        run file; None where there is nothing to say."""
        return None


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
            states[key] = get_method(method).prepare(weight, config)
        return {"family": family, "N": N, "K": int(weight.shape[1]), "states": states,
                "dtypes": self.plan.workload.dtypes(family)}

    def run(self, state, family: str, x):
        method, prepared = self.route(state, family, int(x.shape[0]))
        if prepared is None:   # an entry prepare() did not prepare (another N): as a missing key always did
            raise KeyError(f"{self.name}: {method.name} was not prepared for this weight (N={state['N']})")
        return method.run(prepared, x)

    def route(self, state, family: str, M: int):
        """The host-side choice of one call: (method, its prepared state) at M. A range's shape check ran when the
        plan loaded (up to kernels.plans.SHAPE_CHECK_MAX_M); the M actually run is checked too, so a rejected
        config can never launch (host-side, not in a captured graph)."""
        entry = self.plan.entry(family, M, state["N"])
        prepared = state["states"].get((entry.method, json.dumps(entry.config, sort_keys=True)))
        method = get_method(entry.method)
        method.check_supports(state["dtypes"], M, state["N"], state["K"], entry.config, family)
        return method, prepared

    def routing_us(self, family: str, M: int, N: int, K: int, calls: int = 2000) -> float:
        """The median µs of one call's routing (route: entry lookup and shape check) at (M, N, K), timed here with
        no weight and no launch: what the plan adds to every call on a device that runs calls eagerly (a CPU; on
        a GPU the captured graph holds only the kernels)."""
        import time

        state = {"N": int(N), "K": int(K), "states": {}, "dtypes": self.plan.workload.dtypes(family)}
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                self.route(state, family, int(M))
            samples.append((time.perf_counter() - t0) / calls * 1e6)
        return sorted(samples)[len(samples) // 2]

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        """The entry's method + config at (M, N); N=None: the workload's N at M (kernels.plans SELECT RULE)."""
        return self.plan.describe(family, M, N)

    def setup(self, state, family: str, M: int) -> dict | None:
        entry = self.plan.entry(family, int(M), state["N"])
        prepared = state["states"][(entry.method, json.dumps(entry.config, sort_keys=True))]
        return get_method(entry.method).setup(prepared, int(M))


class MethodCandidate(Candidate):
    """One method with one config for every M (what a tuning sweep or a method test times/checks). The family's
    dtypes come from `workload` (None: the default workload), the one the shapes were drawn from."""

    def __init__(self, method: str, config: dict | None = None, workload=None):
        self.workload = workload
        self.method = get_method(method)
        self.config = dict(self.method.configs[0] if config is None else config)
        reason = self.method.check_config(self.config)
        if reason:
            raise PlanError(reason)
        self.name = format_config(self.method.name, self.config)

    def prepare(self, family: str, weight):
        N, K = int(weight.shape[0]), int(weight.shape[1])
        if self.workload is None:
            from datasets import load_workload

            self.workload = load_workload()
        try:
            dtypes = self.workload.dtypes(family)
        except ValueError as exc:
            raise PlanError(f"{self.name}: {exc}") from None
        reason = self.method.dtype_reason(dtypes)
        if reason:   # refused before prepare() sees a weight it was not written for
            raise PlanError(f"{self.name}: {reason} (family {family!r} of workload {self.workload.name})")
        return {"N": N, "K": K, "dtypes": dtypes, "state": self.method.prepare(weight, self.config)}

    def run(self, state, family: str, x):
        # The shape check decides at every call (it is host-side: a captured graph holds only the kernels), so a
        # config the shape check rejects at this shape raises PlanError instead of launching.
        self.method.check_supports(state["dtypes"], int(x.shape[0]), state["N"], state["K"], self.config, family)
        return self.method.run(state["state"], x)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        return self.name

    def setup(self, state, family: str, M: int) -> dict | None:
        return self.method.setup(state["state"], int(M))


class ModuleCandidate(Candidate):
    """A user's .py module with `prepare(weight) -> state` (the family's weight [N, K]) and
    `run(state, family, x) -> y`; optional NAME and `describe(family, M)`."""

    def __init__(self, path):
        self.path = Path(path)
        module = _import_file(self.path)
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


class ObjectCandidate(Candidate):
    """A class or object named in a .py file (`file.py:Name`) that follows the Candidate protocol itself."""

    def __init__(self, path, attr: str):
        self.path = Path(path)
        module = _import_file(self.path)
        if not hasattr(module, attr):
            raise CandidateError(f"{self.path}: no attribute {attr!r}")
        obj = getattr(module, attr)
        try:
            obj = obj() if isinstance(obj, type) else obj
        except Exception as exc:
            raise CandidateError(f"{self.path}: {attr}() failed: {type(exc).__name__}: {exc}") from exc
        missing = [f for f in ("prepare", "run") if not callable(getattr(obj, f, None))]
        if missing:
            raise CandidateError(f"{self.path}: {attr} must have callable(s) {missing} "
                                 "(prepare(family, weight) -> state, run(state, family, x) -> y)")
        self.obj = obj
        self.name = str(getattr(obj, "name", attr))

    def prepare(self, family: str, weight):
        return self.obj.prepare(family, weight)

    def run(self, state, family: str, x):
        return self.obj.run(state, family, x)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        fn = getattr(self.obj, "describe", None)
        return str(fn(family, M)) if callable(fn) else self.name


def _import_file(path: Path):
    if not path.is_file():
        raise CandidateError(f"{path}: no such module file")
    name = "projlab_candidate_" + re.sub(r"\W", "_", path.stem)  # `my kernels.py` -> a valid module name
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's import error, named with the file
        raise CandidateError(f"{path}: importing the module failed: {type(exc).__name__}: {exc}") from exc
    return module


_OBJECT_SPEC = re.compile(r"^(?P<path>.+\.py):(?P<attr>[A-Za-z_][A-Za-z0-9_]*)$")
METHOD_PREFIX = "method:"


def _method_spec(text: str) -> tuple[str, dict | None]:
    """'method:NAME' or 'method:NAME:{json config}' -> (NAME, config or None)."""
    name, _, config = text[len(METHOD_PREFIX):].partition(":")
    if not config:
        return name, None
    try:
        parsed = json.loads(config)
    except ValueError as exc:
        raise CandidateError(f"{text!r}: the config after the method name is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise CandidateError(f"{text!r}: the config must be a JSON object, got {type(parsed).__name__}")
    return name, migrate_config(name, parsed)   # a spec copied from an old run file may carry a retired key


def method_spec(method: str, config: dict | None = None) -> str:
    """The spec string of one method + config (what the tuner sends to a worker)."""
    return METHOD_PREFIX + method + ("" if config is None else ":" + json.dumps(config, sort_keys=True))


def check_spec(spec, workload=None) -> None:
    """Raise CandidateError/PlanError when `spec` cannot name a candidate; runs none of the candidate's code
    (a module file must exist; a plan must parse; a method and its config must pass the method's checks)."""
    text = str(spec)
    if text.startswith(METHOD_PREFIX):
        MethodCandidate(*_method_spec(text), workload=workload)
        return
    match = _OBJECT_SPEC.match(text)
    if match or text.endswith(".py"):
        path = Path(match["path"] if match else text)
        if not path.is_file():
            raise CandidateError(f"{path}: no such module file")
        _check_source(path)
        check_interface(path, match["attr"] if match else None)
        return
    load_plan(text, workload)


def _source_bytes(path: Path) -> bytes:
    """The module's source, read only when it is a regular file within the size limit (datasets.jsonfile
    read_checked: a FIFO would block the parent for ever); CandidateError otherwise."""
    from datasets.jsonfile import JsonInputError, read_checked

    try:
        return read_checked(path, "candidate module", links_ok=True)
    except JsonInputError as exc:
        raise CandidateError(f"{path}: {str(exc).split(': ', 1)[-1]}") from None


def _check_source(path: Path) -> None:
    """CandidateError when the module file does not compile (a syntax error, NUL bytes, not UTF-8): compiling runs
    none of its code, so the parent can say so before a worker (and a GPU) is needed."""
    source = _source_bytes(path)
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise CandidateError(f"{path}: line {exc.lineno}: {exc.msg} (the module does not compile)") from None
    except (ValueError, OSError) as exc:   # NUL bytes; an unreadable file
        raise CandidateError(f"{path}: cannot be compiled: {exc}") from None


# What each protocol's functions must accept, positionally: a module's prepare(weight) and run(state, family, x);
# a Candidate class's prepare(self, family, weight) and run(self, state, family, x).
MODULE_PROTOCOL = {"prepare": (1, "prepare(weight) -> state"), "run": (3, "run(state, family, x) -> y")}
CLASS_PROTOCOL = {"prepare": (3, "prepare(self, family, weight) -> state"),
                  "run": (4, "run(self, state, family, x) -> y")}


def _accepts(fn: ast.FunctionDef | ast.AsyncFunctionDef, n: int) -> bool:
    """Whether a def's signature can be called with `n` positional arguments."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    required = len(params) - len(fn.args.defaults)
    kw_required = [a for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is None]
    return required <= n and (n <= len(params) or fn.args.vararg is not None) and not kw_required


def _bindings(body: list) -> dict[str, ast.AST]:
    """Top-level names a module (or class) body binds, and the statement that binds each (the last one wins)."""
    found: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({t.id: node for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return found


def _protocol_problems(bound: dict[str, ast.AST], protocol: dict, where: str) -> list[str]:
    missing = [name for name in protocol if name not in bound]
    problems = [f"{where} must define callable(s) {missing} ({', '.join(s for _, s in protocol.values())})"] \
        if missing else []
    for name, (n, shape) in protocol.items():
        node = bound.get(name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _accepts(node, n):
            problems.append(f"{where}: {name} must accept {shape}, has ({ast.unparse(node.args)})")
    return problems


def check_interface(path, attr: str | None = None) -> None:
    """CandidateError when a candidate file visibly breaks the protocol, read from its source (ast) without running
    or importing any of it, so it works on a machine without torch or a GPU: a module needs prepare(weight) and
    run(state, family, x); `file.py:Name` needs Name, and a class Name its prepare and run. Names bound by an
    assignment or an import (a star import: every name), and methods a class may inherit, are left to the worker's
    checks (they are not visible in the source)."""
    path = Path(path)
    source = _source_bytes(path)
    try:
        tree = ast.parse(source, str(path))
    except (SyntaxError, ValueError, OSError) as exc:
        raise CandidateError(f"{path}: cannot be read as Python: {exc}") from None
    bound = _bindings(tree.body)
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body):
        return   # a star import binds names the source does not show: the worker's load checks them
    if attr is None:
        problems = _protocol_problems(bound, MODULE_PROTOCOL, "the module")
    elif attr not in bound:
        problems = [f"no attribute {attr!r} (defined at the top level)"]
    elif isinstance(bound[attr], ast.ClassDef):
        cls = bound[attr]
        inherits = any(not (isinstance(b, ast.Name) and b.id == "object") for b in cls.bases)
        problems = [p for p in _protocol_problems(_bindings(cls.body), CLASS_PROTOCOL, f"class {attr}")
                    if not (inherits and "must define" in p)]
    else:
        problems = []
    if problems:
        raise CandidateError(f"{path}: " + "; ".join(problems))


def resolve_spec(spec) -> str:
    """The spec with a file path made absolute (against the current directory), so another process -- the
    profiler's worker runs in the repository root -- finds the same file; names and method specs unchanged."""
    text = str(spec)
    if text.startswith(METHOD_PREFIX):
        return text
    match = _OBJECT_SPEC.match(text)
    if match:
        return f"{Path(match['path']).resolve()}:{match['attr']}"
    if text.endswith((".py", ".json")) and Path(text).exists():
        return str(Path(text).resolve())
    return text


def load_candidate(spec, workload=None) -> Candidate:
    """A plan name (kernels/plans/<name>.json), a plan .json path, a user's .py module path, `file.py:Name` or
    `method:NAME[:{json config}]` (module docstring)."""
    text = str(spec)
    if text.startswith(METHOD_PREFIX):
        return MethodCandidate(*_method_spec(text), workload=workload)
    match = _OBJECT_SPEC.match(text)
    if match:
        return ObjectCandidate(match["path"], match["attr"])
    if text.endswith(".py"):
        return ModuleCandidate(text)
    return PlanCandidate(load_plan(text, workload))
