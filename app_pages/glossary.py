"""Glossary: every term the pages and reports use (Σw, SOL, floors, verdicts, ε, provenance), from
dashboard.model.glossary (through ui.terms) — the one place they are defined."""
import streamlit as st

from ui import terms

st.title("Glossary")
st.caption("The words the pages and the reports use. Column tooltips quote the first line of each.")
for term in terms.TERMS.values():
    st.subheader(term.title, anchor=term.key)
    st.markdown(f"*{term.short}*  \n{terms.long(term.key)}")
