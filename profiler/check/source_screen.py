"""The source screen: a candidate's own Python source is read before anything of it is imported, and constructs that
reach outside a kernel are refused with the file and line that use them.

    screen_spec(spec) -> list[Finding]      every file the spec's module loads from its folder (a candidate
                                            module, `file.py:Class`); [] for plans, methods and the lab's own files
    screen_files(paths) -> list[Finding]    the same for given files and the sibling modules they import
    Finding(path, line, what).text()        "my.py:12: imports `gc` (the interpreter's internals)"

What a kernel needs: torch, triton, numpy, math and its own helpers -- build tensors, launch kernels, compute. What it
never needs, and what the candidates that forged or disturbed a measurement used (docs/trust.md): the lab's own
modules (`profiler`, `datasets`, `kernels`, `dashboard`: the guard, the timer, the session), the interpreter's
internals (`gc`, frames, `inspect`, `ctypes`, `builtins`, trace/profile hooks, `sys.modules`, `__dict__`,
`__globals__`, `__subclasses__`), code built from strings (`eval`/`exec`/`compile`/`__import__`/`import_module` or
`getattr`/`setattr` with a name that is not a literal), other processes and threads (`subprocess`,
`multiprocessing`, `threading`, `os.fork`/`spawn*`/`exec*`/`system`/`popen`), exit and signal hooks (`atexit`,
`signal`), dispatcher registrations (`torch.library`, `torch._C`), global torch settings (`torch.set_*`,
`torch.use_deterministic_algorithms`, anything under `torch.backends` but reading a flag) and assigning to an
attribute of an imported module (monkey-patching `json.dumps`, `F.linear`, ...). A candidate that wants the lab's
own methods names them as a plan or a `method:NAME` spec rather than importing `kernels`.

Aliases are followed: `import x as y`, `from x import a as b`, a module or an attribute of one bound to a plain
name (`o = os; o.fork()`), a builtin such as `getattr` bound to another name (refused), `__class__` assigned.

The screen is a first filter, not the boundary: it reads source, so code it cannot see (a C++ extension, a pickled object,
bytes decoded at run time) passes it. What it cannot refuse, the process boundary and the parent's checks still
hold (profiler/worker/process.py, profiler/backends/verify.py); `--trust-candidate` skips it, and the run records
that (settings.trusted; every score shows "unscreened").
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

LAB_ROOT = Path(__file__).resolve().parents[2]
LAB_PACKAGES = ("profiler", "datasets", "kernels", "dashboard", "app_pages", "tests")

# Modules a kernel never imports -> why (the words of the refusal).
MODULES = {
    **{m: "the lab's own modules (its guard, timer and records)" for m in LAB_PACKAGES + ("app",)},
    "gc": "the interpreter's internals", "inspect": "the interpreter's internals (frames)",
    "ctypes": "the interpreter's internals (raw memory, libc)", "_ctypes": "the interpreter's internals",
    "cffi": "raw memory and libc", "builtins": "the interpreter's builtins", "faulthandler": "the interpreter's internals",
    "tracemalloc": "the interpreter's internals", "sysconfig": None,
    "subprocess": "starting processes", "multiprocessing": "starting processes", "pty": "starting processes",
    "concurrent": "starting processes or threads", "threading": "starting threads", "_thread": "starting threads",
    "atexit": "exit hooks (code that runs after the worker answered)", "signal": "signal handlers",
    "pickle": "code from data", "marshal": "code from data", "dill": "code from data",
}
MODULES = {k: v for k, v in MODULES.items() if v}
# Attribute chains (as written, after import aliases are resolved) that are refused wherever they appear.
CHAINS = {
    "sys._getframe": "frames", "sys._current_frames": "frames", "sys.settrace": "trace hooks",
    "sys.setprofile": "profile hooks", "sys.addaudithook": "audit hooks", "sys.modules": "the loaded modules",
    "sys.meta_path": "the import system", "sys.path_hooks": "the import system", "sys.excepthook": "exit hooks",
    "sys.exit": "ending the worker", "threading.settrace": "trace hooks",
    "os.fork": "starting processes", "os.forkpty": "starting processes", "os.system": "starting processes",
    "os.popen": "starting processes", "os.posix_spawn": "starting processes", "os.posix_spawnp": "starting processes",
    "os.setsid": "detaching a process", "os.kill": "signalling processes", "os.killpg": "signalling processes",
    "os._exit": "ending the worker", "os.putenv": "the process environment", "os.unsetenv": "the process environment",
    "torch.library": "dispatcher registrations (torch.library)", "torch._C": "torch's C internals (the dispatcher)",
    "torch.ops.load_library": "dispatcher registrations", "torch.use_deterministic_algorithms": "a global torch setting",
    "torch.utils.backend_registration": "dispatcher registrations", "torch.overrides": "torch function overrides",
    "torch.utils._python_dispatch": "Python dispatch modes", "os.dup": "file descriptors (the worker's reply pipe)",
    "os.dup2": "file descriptors (the worker's reply pipe)", "os.pipe": "file descriptors (the worker's reply pipe)",
    "os.pipe2": "file descriptors (the worker's reply pipe)", "os.register_at_fork": "fork hooks",
}
CHAIN_PREFIXES = {"os.spawn": "starting processes", "os.exec": "starting processes", "torch.set_": "a global torch "
                  "setting", "torch.cuda.set_": "a global CUDA setting"}
# Attribute names that reach a module's, a function's or a frame's insides, wherever they are used.
ATTRIBUTES = {"__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__", "f_back",
              "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "__setattr__",
              "__delattr__", "__import__", "__loader__", "__spec__"}
# Builtins that build code or names at run time: refused unless every argument that names something is a literal.
DYNAMIC = {"eval": "code from a string", "exec": "code from a string", "compile": "code from a string",
           "__import__": "an import by a computed name", "import_module": "an import by a computed name",
           "getattr": "an attribute by a computed name", "setattr": "setting an attribute by name",
           "delattr": "deleting an attribute", "globals": "the module's namespace", "vars": "a namespace",
           "breakpoint": "the debugger"}
BACKENDS_READS = {"is_available", "is_built"}   # torch.backends.X.is_available(): a query, not a setting


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None for anything that is not names joined by dots."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


class _Screen(ast.NodeVisitor):
    def __init__(self, path: Path, folder: Path):
        self.path, self.folder = path, folder
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}     # local name -> the module path it was imported as
        self.siblings: set[Path] = set()      # modules of the candidate's folder this file imports

    def refuse(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(str(self.path), getattr(node, "lineno", 0), what))

    # -- imports -------------------------------------------------------------------------------------------
    def _module(self, node: ast.AST, name: str) -> None:
        top = name.split(".")[0]
        if top in MODULES:
            self.refuse(node, f"imports `{name}` ({MODULES[top]})")
        for chain, why in CHAINS.items():
            if name == chain or name.startswith(chain + "."):
                self.refuse(node, f"imports `{name}` ({why})")
        sibling = self.folder / (name.replace(".", "/") + ".py")
        package = self.folder / name.replace(".", "/") / "__init__.py"
        for p in (sibling, package):
            if p.is_file():
                self.siblings.add(p.resolve())

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(node, a.name)
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:   # a relative import: a module of the candidate's own folder
            for a in node.names:
                target = (base + "." if base else "") + a.name
                for p in (self.folder / (target.replace(".", "/") + ".py"), self.folder / (base.replace(".", "/") + ".py")):
                    if p.is_file():
                        self.siblings.add(p.resolve())
            self.generic_visit(node)
            return
        self._module(node, base)
        for a in node.names:
            full = f"{base}.{a.name}"
            self._module(node, full) if full in CHAINS or any(full.startswith(c) for c in CHAINS) else None
            self.aliases[a.asname or a.name] = full
        self.generic_visit(node)

    # -- names and attributes ------------------------------------------------------------------------------
    def resolve(self, node: ast.AST) -> str | None:
        chain = _chain(node)
        if chain is None or chain[0] not in self.aliases:
            return None
        return ".".join([self.aliases[chain[0]]] + chain[1:])

    def _check_chain(self, node: ast.AST, full: str, context: str) -> bool:
        """Refuse a use of `full` (an attribute chain from an imported module) in `context` (load, store, call);
        True when it was refused."""
        for chain, why in CHAINS.items():
            if full == chain or full.startswith(chain + "."):
                self.refuse(node, f"uses `{full}` ({why})")
                return True
        for prefix, why in CHAIN_PREFIXES.items():
            if full.startswith(prefix):
                self.refuse(node, f"uses `{full}` ({why})")
                return True
        if full.startswith("torch.backends"):
            parts = full.split(".")
            if context == "load" and len(parts) >= 4 and parts[-1] not in ("flags",):
                return False   # reading a flag (torch.backends.cudnn.enabled) is fine
            if context == "call" and parts[-1] in BACKENDS_READS:
                return False
            self.refuse(node, f"{'assigns' if context == 'store' else 'uses'} `{full}` (torch's backend settings)")
            return True
        return False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRIBUTES:
            self.refuse(node, f"uses `.{node.attr}` (reaches into another object's insides)")
        full = self.resolve(node)
        if full is not None and not getattr(node, "_screened", False):
            context = "store" if isinstance(node.ctx, (ast.Store, ast.Del)) else "load"
            if not self._check_chain(node, full, context) and context == "store":
                self.refuse(node, f"assigns `{full}` (changes an imported module: monkey-patching)")
            # the inner parts of this chain are the same reference: do not report them again
            inner = node.value
            while isinstance(inner, ast.Attribute):
                inner._screened = True
                inner = inner.value
        self.generic_visit(node)

    # -- names bound to other names ------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        """Follow aliases: a module (or an attribute of one) bound to a plain name is screened under that name too;
        a builtin that builds code or names at run time bound to another name is refused (a call through the new
        name would not be seen); assigning `__class__` is refused (an object made another type runs other code
        wherever the harness touches it)."""
        value = node.value
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "__class__":
                self.refuse(target, "assigns `.__class__` (makes an object another type: its methods become the "
                                    "candidate's wherever the harness touches it)")
        if isinstance(value, ast.Name) and value.id in DYNAMIC and value.id not in self.aliases:
            self.refuse(node, f"binds the builtin `{value.id}` to another name ({DYNAMIC[value.id]}; a call through "
                              f"the new name would not be screened)")
        full = self.resolve(value)
        if full is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.aliases[target.id] = full
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ATTRIBUTES or node.id == "__builtins__":
            self.refuse(node, f"uses `{node.id}` (the interpreter's internals)")
        full = self.aliases.get(node.id)
        if full is not None and isinstance(node.ctx, ast.Load) and not getattr(node, "_screened", False):
            for chain, why in CHAINS.items():
                if full == chain or full.startswith(chain + "."):
                    self.refuse(node, f"uses `{full}` ({why})")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        full = self.resolve(func)
        if full is not None:
            func._screened = True
            inner = func.value if isinstance(func, ast.Attribute) else None
            while isinstance(inner, ast.Attribute):
                inner._screened = True
                inner = inner.value
            self._check_chain(node, full, "call")
            if isinstance(func, ast.Attribute) and func.attr in ATTRIBUTES:
                self.refuse(node, f"uses `.{func.attr}` (reaches into another object's insides)")
        if name in DYNAMIC and (isinstance(func, ast.Name) or (full or "").endswith("importlib.import_module")):
            self._dynamic(node, name)
        self.generic_visit(node)

    def _dynamic(self, node: ast.Call, name: str) -> None:
        args = node.args
        if name in ("globals", "vars", "breakpoint", "delattr"):
            self.refuse(node, f"calls `{name}()` ({DYNAMIC[name]})")
            return
        if name in ("getattr", "setattr"):
            literal = len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
            if not literal:
                self.refuse(node, f"calls `{name}()` with a computed name ({DYNAMIC[name]})")
            elif args[1].value in ATTRIBUTES:
                self.refuse(node, f"calls `{name}(..., {args[1].value!r})` (reaches into another object's insides)")
            elif name == "setattr" and self.resolve(args[0]) is not None:
                self.refuse(node, f"calls `setattr` on `{self.resolve(args[0])}` (changes an imported module: "
                                  "monkey-patching)")
            else:
                target = self.resolve(args[0])
                if target is not None:
                    self._check_chain(node, f"{target}.{args[1].value}", "load")
            return
        if not args or not all(isinstance(a, ast.Constant) for a in args[:1]):
            self.refuse(node, f"calls `{name}()` with a computed argument ({DYNAMIC[name]})")
            return
        if name in ("__import__", "import_module"):
            self._module(node, str(args[0].value))
        else:   # eval/exec/compile of a literal: screen the literal's code too
            try:
                tree = ast.parse(str(args[0].value))
            except SyntaxError:
                return
            for sub in ast.walk(tree):
                for attr in ("lineno", "end_lineno"):
                    if hasattr(sub, attr):
                        setattr(sub, attr, node.lineno)
            self.visit(tree)


def _lab_file(path: Path) -> bool:
    """A file of the lab's own packages (a plan, a method, the known-wrong fixtures): not a candidate's source."""
    try:
        rel = path.resolve().relative_to(LAB_ROOT)
    except ValueError:
        return False
    return len(rel.parts) > 1 and rel.parts[0] in LAB_PACKAGES


def screen_files(paths) -> list[Finding]:
    """Screen `paths` and every module of their folders they import (transitively)."""
    findings, seen = [], set()
    pending = [Path(p).resolve() for p in paths]
    while pending:
        path = pending.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            tree = ast.parse(path.read_bytes(), str(path))
        except (SyntaxError, ValueError, OSError) as exc:
            findings.append(Finding(str(path), getattr(exc, "lineno", 0) or 0, f"cannot be screened: {exc}"))
            continue
        screen = _Screen(path, path.parent)
        screen.visit(tree)
        findings += screen.findings
        pending += sorted(screen.siblings - seen)
    return findings


def spec_file(spec: str) -> Path | None:
    """The module file a candidate spec loads (`x.py`, `x.py:Name`), or None (a plan, a method)."""
    text = str(spec)
    if text.startswith("method:"):
        return None
    path, sep, attr = text.rpartition(".py:")
    if sep and attr.isidentifier():
        return Path(path + ".py")
    return Path(text) if text.endswith(".py") else None


def screen_spec(spec: str) -> list[Finding]:
    """The findings of the module a spec loads; [] for a plan, a method or a file of the lab's own packages."""
    path = spec_file(spec)
    if path is None or not path.is_file() or _lab_file(path):
        return []
    return screen_files([path])
