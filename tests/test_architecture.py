"""The tree's import rules: datasets → kernels → profiler → dashboard → app, nothing backwards;
dashboard/ never imports torch or streamlit (plotly only in figures.py, kernel_figures.py, report.py); torch-free modules import
with torch blocked.

Two independent proofs: a static scan of every import statement (ast, including imports inside functions),
and real imports in a subprocess whose meta-path finder refuses torch/streamlit.
"""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"datasets": 0, "kernels": 1, "profiler": 2, "dashboard": 3, "app": 4, "app_pages": 4}
PLOTLY_ALLOWED = {"dashboard/figures.py", "dashboard/kernel_figures.py", "dashboard/report.py"}
TORCH_FREE = ["datasets", "kernels.registry", "kernels.plans", "datasets.runfile", "profiler.measure.stats", "profiler.commands.tune_rules"]


def _layer_of(path: Path) -> tuple[str, int]:
    rel = path.relative_to(ROOT)
    top = "app" if rel.as_posix() == "app.py" else rel.parts[0]
    return top, LAYERS[top]


def _source_files() -> list[Path]:
    files = [ROOT / "app.py"] if (ROOT / "app.py").exists() else []
    for folder in ("datasets", "kernels", "profiler", "dashboard", "app_pages"):
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
    assert {"datasets/__init__.py", "dashboard/scoring.py", "datasets/runfile.py"} <= names


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
    return [f"dashboard.{p.stem}" for p in sorted((ROOT / "dashboard").glob("*.py"))
            if p.stem not in ("__init__", "__main__")] + ["dashboard", "dashboard.__main__"]


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
    assert commands[0] == "pip install -r requirements.txt && streamlit run app.py"
    assert len(commands) == 2, "Quick start has exactly two set-up commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -euo pipefail" in ci
    last = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")][-1]
    assert last == commands[1]
