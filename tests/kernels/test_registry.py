"""The registry shows what ships: SHIPPING is exactly the set of methods the committed plans dispatch to, every
other registered method is a kept experiment with its result written up, and launchers import torch once."""
import ast
import json
from pathlib import Path

from kernels.registry import EXPERIMENTS, METHODS, SHIPPING

ROOT = Path(__file__).resolve().parents[2]


def _plan_methods() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for path in sorted((ROOT / "kernels" / "plans").glob("*.json")):
        for entries in json.loads(path.read_text(encoding="utf-8"))["families"].values():
            for entry in entries:
                used.setdefault(entry["method"], set()).add(path.name)
    return used


def test_every_plan_method_ships():
    missing = {m: sorted(plans) for m, plans in _plan_methods().items() if m not in SHIPPING}
    assert not missing, f"methods in a plan but not in kernels.registry.SHIPPING: {missing}"


def test_every_shipping_method_is_in_a_plan():
    assert SHIPPING <= set(_plan_methods()), f"SHIPPING but in no plan: {sorted(SHIPPING - set(_plan_methods()))}"


def test_shipping_and_experiments_split_the_registry():
    assert SHIPPING | EXPERIMENTS == set(METHODS) and not SHIPPING & EXPERIMENTS


def test_every_experiment_has_its_result_written_up():
    docs = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs" / "kernels").glob("*.md")))
    docs += (ROOT / "kernels" / "README.md").read_text(encoding="utf-8")
    assert not [m for m in sorted(EXPERIMENTS) if f"`{m}`" not in docs]


def test_launchers_import_at_module_top_only():
    """Launchers load lazily (kernels.method._load_impl), so an import inside a launcher function is a re-import."""
    inside = []
    for path in sorted((ROOT / "kernels" / "launch").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside += [f"{path.name}:{n.lineno}" for n in ast.walk(fn)
                           if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not inside, inside
