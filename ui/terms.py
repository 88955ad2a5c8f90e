"""A link from a page to the Glossary page (not a page itself)."""
import streamlit as st

from dashboard.model import glossary

GLOSSARY_PAGE = "app_pages/glossary.py"


def link(*keys: str) -> None:
    """'Terms: SOL, Σw, … → Glossary' under a page's title."""
    names = ", ".join(glossary.TERMS[k].title for k in keys) if keys else "all terms"
    st.page_link(GLOSSARY_PAGE, label=f"Glossary: {names}", icon=":material/menu_book:")
