"""The words the pages use: each term's lines (dashboard.model.glossary, the one place they are defined), a link from
a page to the Glossary page, and how a count reads in prose (not a page itself)."""
import streamlit as st

from dashboard.model.glossary import TERMS, long, short
from dashboard.model.workloads import count_word

__all__ = ["TERMS", "long", "short", "count_word", "link", "GLOSSARY_PAGE"]

GLOSSARY_PAGE = "app_pages/glossary.py"


def link(*keys: str) -> None:
    """'Terms: SOL, Σw, … → Glossary' under a page's title."""
    names = ", ".join(TERMS[k].title for k in keys) if keys else "all terms"
    st.page_link(GLOSSARY_PAGE, label=f"Glossary: {names}", icon=":material/menu_book:")
