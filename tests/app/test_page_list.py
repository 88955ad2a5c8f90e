"""The tests' page list is app.py's navigation (tests/app_page_list.py), and it matches the page scripts on disk."""
from pathlib import Path

import app_page_list
from app_page_list import PAGES, ROOT, SOURCE_PAGES


def test_every_page_script_is_in_the_navigation_and_every_entry_has_a_script():
    scripts = {p.stem for p in (ROOT / "app_pages").glob("*.py")} - {"home"}   # home: the hidden default (Overview)
    assert set(PAGES) == scripts
    assert len(PAGES) == len(set(PAGES))


def test_source_pages_are_the_pages_that_pick_the_sidebar_source():
    assert SOURCE_PAGES and set(SOURCE_PAGES) < set(PAGES)
    assert "glossary" not in SOURCE_PAGES and "overview" in SOURCE_PAGES


def test_a_page_added_to_app_py_joins_the_list_in_its_place(tmp_path: Path):
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    added = app.replace('_page("roofline", "Roofline", "show_chart"),',
                        '_page("roofline", "Roofline", "show_chart"), _page("decode_step", "Decode step", "bolt"),')
    assert added != app
    (tmp_path / "app.py").write_text(added, encoding="utf-8")
    pages = app_page_list._navigation_pages(tmp_path / "app.py")
    assert pages[pages.index("roofline") + 1] == "decode_step"
    assert [p for p in pages if p != "decode_step"] == PAGES


def test_the_tab_icon_needs_no_external_host():
    """Streamlit's frontend turns a ':material/NAME:' page icon into a fonts.gstatic.com URL (the favicon), and a URL
    icon is fetched as given; an emoji is drawn inline. The page icon of app.py's set_page_config is neither."""
    import ast

    calls = [n for n in ast.walk(ast.parse((ROOT / "app.py").read_text(encoding="utf-8")))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "set_page_config"]
    assert len(calls) == 1
    icon = next(k.value.value for k in calls[0].keywords if k.arg == "page_icon")
    assert not icon.startswith(":material") and "://" not in icon, icon
    from streamlit.commands.page_config import _get_favicon_string
    assert _get_favicon_string(icon).startswith("emoji:")     # drawn by the browser, no request
