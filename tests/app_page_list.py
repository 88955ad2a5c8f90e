"""The app's pages, read from app.py's st.navigation, so no test keeps a copy of the list: PAGES (every page a reader
can open, by url_path, in the navigation's order; the hidden home page that re-runs the Overview is left out) and
SOURCE_PAGES (those whose script picks the sidebar's source, `view.pick(`). Scripts outside pytest put tests/ on
sys.path to import it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


def _navigation_pages(app: Path = APP) -> list[str]:
    """url_path of every visible page, in the order app.py's navigation lists them: each `_page("file", ...)` call and
    each `st.Page("app_pages/file.py", ...)` not marked visibility="hidden"."""
    pages = []
    for node in ast.walk(ast.parse(app.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        kw = {k.arg: k.value for k in node.keywords}
        hidden = isinstance(kw.get("visibility"), ast.Constant) and kw["visibility"].value == "hidden"
        if name == "_page" and node.args and isinstance(node.args[0], ast.Constant):
            pages.append((node.lineno, node.col_offset, node.args[0].value))
        elif name == "Page" and not hidden and node.args and isinstance(node.args[0], ast.Constant):
            pages.append((node.lineno, node.col_offset, Path(node.args[0].value).stem))
    return [p for _, _, p in sorted(pages)]


PAGES: list[str] = _navigation_pages()
SOURCE_PAGES: list[str] = [p for p in PAGES if "view.pick(" in (ROOT / "app_pages" / f"{p}.py").read_text("utf-8")]
