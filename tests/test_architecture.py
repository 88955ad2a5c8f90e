"""The tree's import rules: datasets → kernels → profiler → dashboard → ui → app (app.py and the page scripts of
app_pages/), nothing backwards;
inside profiler: measure → check → worker → backends → commands → cli, nothing backwards, and no import cycle
between its modules; dashboard/ never imports torch or streamlit (plotly only in figures.py, roofline_figures.py,
kernel_figures.py, step_figures.py, report.py); torch-free modules import with torch blocked.

Two independent proofs: a static scan of every import statement (ast, including imports inside functions),
and real imports in a subprocess whose meta-path finder refuses torch/streamlit.

`python tests/test_architecture.py` prints profiler's import graph (every edge, function-local imports included)
in layer order and says whether it has a cycle.
"""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"datasets": 0, "kernels": 1, "profiler": 2, "dashboard": 3, "ui": 4, "app": 5, "app_pages": 5}
PLOTLY_ALLOWED = {"dashboard/plots/figures.py", "dashboard/plots/roofline_figures.py", "dashboard/plots/kernel_figures.py",
                  "dashboard/documents/report.py", "dashboard/plots/step_figures.py"}
TORCH_FREE = ["datasets", "datasets.runfile", "kernels.registry", "kernels.plans", "profiler.measure.stats",
              "profiler.measure.policy", "profiler.commands.tune_rules", "profiler.worker.tasks", "profiler.backends.open",
              "profiler.cli.main"]   # the command line and the worker import without torch: CUDA is checked when used


# Inside profiler/: each subpackage imports only itself and the ones before it. The top-level modules
# (__init__.py, __main__.py) are the command line's.
PROFILER_LAYERS = {"measure": 0, "check": 1, "worker": 2, "backends": 3, "commands": 4, "cli": 5,
                   "wrong": 6}   # the known-wrong corpus: test fixtures that reach into any layer; nothing imports it


def _layer_of(path: Path) -> tuple[str, int]:
    rel = path.relative_to(ROOT)
    top = "app" if rel.as_posix() == "app.py" else rel.parts[0]
    return top, LAYERS[top]


def _source_files() -> list[Path]:
    files = [ROOT / "app.py"] if (ROOT / "app.py").exists() else []
    for folder in ("datasets", "kernels", "profiler", "dashboard", "ui", "app_pages"):
        files += sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []
    return files


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module name) for every absolute import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_there_is_something_to_check():
    names = {p.relative_to(ROOT).as_posix() for p in _source_files()}
    assert {"datasets/__init__.py", "dashboard/model/scoring.py", "datasets/runfile.py"} <= names


@pytest.mark.parametrize("path", _source_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_imports_flow_one_way(path):
    top, rank = _layer_of(path)
    rel = path.relative_to(ROOT).as_posix()
    for line, module in _imports(path):
        first = module.split(".")[0]
        if first in LAYERS:
            assert LAYERS[first] <= rank, f"{rel}:{line} imports {module} ({first} is downstream of {top})"
        if top == "dashboard":
            assert first not in ("torch", "streamlit", "triton"), f"{rel}:{line} imports {module}"
            if first == "plotly":
                assert rel in PLOTLY_ALLOWED, f"{rel}:{line} imports plotly (only figures.py/report.py may)"


def _app_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))]


def test_app_pages_holds_page_scripts_only():
    """Every file of app_pages/ is a page app.py's navigation names; the plumbing lives in ui/."""
    router = (ROOT / "app.py").read_text(encoding="utf-8")
    pages = {p.stem for p in (ROOT / "app_pages").glob("*.py")}
    named = {name for name in pages if f'"{name}"' in router or f'app_pages/{name}.py' in router}
    assert pages and pages == named, f"not a page of app.py: {sorted(pages - named)}"


# What a page (or the router, app.py) may not import: the packages below ui/. A page reaches runs, workloads, plans,
# figures, scores and the profiler through ui/ (ui.loaders, ui.figures, ui.compare, ui.kernels, ui.tables, ui.plans,
# ui.measure, ...), imports inside functions included: a page only lays out what ui/ hands it.
PAGE_FORBIDDEN = ("dashboard", "datasets", "kernels", "profiler")


def _page_scripts() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]


def _forbidden_page_imports(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    return [f"{rel}:{line} imports {module}" for line, module in _imports(path)
            if module.split(".")[0] in PAGE_FORBIDDEN]


@pytest.mark.parametrize("path", _page_scripts(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_pages_reach_data_only_through_ui(path):
    bad = _forbidden_page_imports(path)
    assert not bad, f"{bad}: reach it through ui/"


def test_the_page_import_rule_sees_every_form(tmp_path, monkeypatch):
    """The rule catches `import dashboard...`, `from dashboard... import`, and either inside a function; a ui import
    passes."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "app_pages" / "p.py"
    page.parent.mkdir()
    page.write_text("import streamlit as st\nfrom ui import figures\nimport dashboard.model.runs\n"
                    "def f():\n    from profiler.measure import stats\n    import datasets\n"
                    "from kernels import registry\n", encoding="utf-8")
    found = sorted(_forbidden_page_imports(page))
    assert found == ["app_pages/p.py:3 imports dashboard.model.runs", "app_pages/p.py:5 imports profiler.measure",
                     "app_pages/p.py:6 imports datasets", "app_pages/p.py:7 imports kernels"], found


CACHES = ("cache_data", "cache_resource", "lru_cache", "cache")


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def test_the_app_keeps_few_caches_and_no_cache_dicts():
    """At most 10 cache decorators in the app (one per input, a few for what pages derive), and no module-level
    empty dict, list or set in an imported module (ui/, app.py) to be filled as a cache beside them: such a module
    lives as long as the server, while a page script's names are new on each run."""
    decorators, holders = [], []
    for path in _app_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                decorators += [f"{path.name}:{node.name}" for d in node.decorator_list
                               if _decorator_name(d) in CACHES]
        for node in tree.body if path.parent.name != "app_pages" else []:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Set)):
                if not (node.value.keys if isinstance(node.value, ast.Dict) else node.value.elts):
                    holders.append(f"{path.name}:{node.lineno}")
    assert len(decorators) <= 10, decorators
    assert not holders, holders


def test_nothing_is_cached_on_disk():
    """persist="disk" served numbers from older code after a change (a key built from a hand-kept list of modules);
    the app recomputes after a restart instead (ui/loaders.py says why)."""
    hits = [p.name for p in _app_files() if "persist=" in p.read_text(encoding="utf-8")]
    assert not hits, hits


BLOCKER = """
import importlib.abc, importlib.util, json, pkgutil, sys
BLOCKED = {"torch", "streamlit", "triton"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked import of {name}")
        return None
sys.meta_path.insert(0, Block())
sys.path.insert(0, %r)
failed = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except Exception as exc:
        failed[module] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"failed": failed, "loaded": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)}))
"""


def _import_blocked(modules: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", BLOCKER % str(ROOT), json.dumps(modules)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _dashboard_modules() -> list[str]:
    return [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for p in sorted((ROOT / "dashboard").rglob("*.py")) if p.stem != "__main__"] + ["dashboard.__main__"]


def test_dashboard_imports_with_torch_and_streamlit_blocked():
    result = _import_blocked(_dashboard_modules())
    assert result["failed"] == {}
    assert result["loaded"] == []


def test_torch_free_modules_import_with_torch_blocked():
    present = [m for m in TORCH_FREE
               if (ROOT / (m.replace(".", "/") + ".py")).exists() or (ROOT / m / "__init__.py").exists()]
    assert "datasets" in present and "datasets.runfile" in present
    result = _import_blocked(present)
    assert result["failed"] == {}
    assert result["loaded"] == []


def test_the_blocker_really_blocks():
    result = _import_blocked(["torch"])
    assert "blocked import of torch" in result["failed"]["torch"]


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [block.split("\n", 1)[1].strip() for block in quick.split("```bash")[1:]]
    commands = [c.split("```")[0].strip() for c in commands]
    assert len(commands) == 2, "Quick start has exactly two set-up commands"
    venv = "python3 -m venv .venv && . .venv/bin/activate && pip install "
    # Both create and use a virtual environment (a stock Debian/Ubuntu Python refuses pip into the system one). The
    # test command byte-compiles the libraries and the project on every core after pip (pip compiles on one: 87 s of
    # install on the 2-core machine, 57 s this way), leaving out the libraries' own test folders (torch's hold
    # Python-3.12-only code); with PYTHONDONTWRITEBYTECODE set, a module without a compiled file is compiled again in
    # every process that imports it, and the tests start hundreds.
    assert commands == [venv + "-r requirements.txt && streamlit run app.py",
                        venv + "--no-compile -r requirements-dev.txt && python -m compileall -q -j 0 "
                        "-x 'site-packages/.*/(tests?|testing/_internal)/' . && python -m pytest -q"]
    assert "Python >= 3.11" in quick
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -euo pipefail" in ci
    assert commands[1] in [line.strip() for line in ci.splitlines() if not line.startswith("#")], \
        ".ci/run runs the README's test command as written"


# --- inside profiler/ ---------------------------------------------------------------------------------------------
def _profiler_module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
    return ".".join(parts)


def _profiler_layer(module: str) -> str:
    """'profiler.worker.session' -> 'worker'; the top-level modules -> 'cli'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in PROFILER_LAYERS) else "cli"


def _profiler_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of a profiler module in the file (`from profiler.x import y`, where y is a
    module, counts as profiler.x.y), function-local imports included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "profiler"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "profiler":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                is_module = (ROOT / (sub.replace(".", "/") + ".py")).exists() or (ROOT / sub.replace(".", "/")).is_dir()
                found.append((node.lineno, sub if is_module else node.module))
    return found


def _profiler_files() -> list[Path]:
    return sorted((ROOT / "profiler").rglob("*.py"))


def import_graph() -> dict[str, set[str]]:
    """{profiler module: the profiler modules it imports}, function-local imports included; a package's
    __init__ is not an edge of its own (importing profiler.worker.steps runs profiler/worker/__init__.py,
    which imports nothing)."""
    modules = {_profiler_module(p): p for p in _profiler_files()}
    graph = {}
    for mod, path in modules.items():
        graph[mod] = {m for _, m in _profiler_imports(path) if m != mod and m in modules}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_profiler_layers_are_all_there():
    present = {_profiler_layer(_profiler_module(p)) for p in _profiler_files()}
    assert present == set(PROFILER_LAYERS)


@pytest.mark.parametrize("path", _profiler_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_profiler_layers_import_one_way(path):
    """measure < check < worker < backends < commands < cli (< wrong, the corpus), imports inside functions
    included."""
    rel = path.relative_to(ROOT).as_posix()
    mine = _profiler_layer(_profiler_module(path))
    for line, module in _profiler_imports(path):
        if module == "profiler":
            raise AssertionError(f"{rel}:{line} imports the profiler package itself; import the module")
        theirs = _profiler_layer(module)
        assert PROFILER_LAYERS[theirs] <= PROFILER_LAYERS[mine], (
            f"{rel}:{line} imports {module} (profiler/{theirs} is above profiler/{mine})")


def test_commands_never_import_dask_and_the_dask_backend_never_a_command():
    for path in _profiler_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("profiler/commands/") or rel.startswith("profiler/cli/"):
            assert not [m for _, m in _imports(path) if m.split(".")[0] in ("dask", "distributed")], rel
    assert not [m for _, m in _profiler_imports(ROOT / "profiler/backends/dask.py") if m.startswith("profiler.commands")]


def test_the_profiler_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 30 and sum(map(len, graph.values())) > 50   # the scan sees the package
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_a_cycle_would_be_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def main() -> int:
    """Print profiler's import graph, layer by layer, and whether it has a cycle."""
    graph = import_graph()
    order = sorted(graph, key=lambda m: (PROFILER_LAYERS[_profiler_layer(m)], m))
    for mod in order:
        deps = sorted(graph[mod], key=lambda m: (PROFILER_LAYERS[_profiler_layer(m)], m))
        print(f"[{_profiler_layer(mod)}] {mod}" + (f" -> {', '.join(deps)}" if deps else ""))
    cycle = find_cycle(graph)
    print("cycle: " + " -> ".join(cycle) if cycle else
          f"no cycle: {len(graph)} modules, {sum(map(len, graph.values()))} imports")
    return 1 if cycle else 0


if __name__ == "__main__":
    raise SystemExit(main())


def test_every_app_chart_draws_with_the_figures_own_style():
    """One chart style: the app draws each figure with its own template (dashboard.plots.figures, the reports' style),
    not Streamlit's theme over it, so a chart in the app and the same chart in an HTML report look alike."""
    import ast

    missing = []
    for path in sorted((ROOT / "app_pages").glob("*.py")) + sorted((ROOT / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "plotly_chart"):
                theme = [k for k in node.keywords if k.arg == "theme"]
                if not theme or not (isinstance(theme[0].value, ast.Constant) and theme[0].value.value is None):
                    missing.append(f"{path.name}:{node.lineno}")
    assert not missing, missing
