"""Reports: export a whole-run or a per-shape report as standalone HTML (interactive, offline), Markdown, CSV, JSON.

Same exports headless: `python -m dashboard report RUN.json --out DIR`.
"""
from pathlib import Path

import streamlit as st

from app_pages import common, terms
from dashboard import report

st.title("Reports")
v = common.view()
common.caption_source(v)
terms.link()
st.markdown("Headless: `python -m dashboard report RUN.json --out DIR [--baseline B --candidate C] "
            "[--shape 'decode 1/router']`")
scope = st.radio("Scope", ["Whole run", "One shape"], horizontal=True, key="rep_scope")
shape = None
if scope == "One shape":
    keys = list(dict.fromkeys(v.data.results["shape"]))
    shape = st.selectbox("Shape", keys, key="rep_shape")


@st.cache_resource(show_spinner=False, max_entries=8)
def _report(path: str, mtime: float, baseline: str, candidate: str, source: str, shape: str | None, _data):
    """report.build once per (source file and its mtime, pair, scope): it bootstraps the score's CI and draws every
    figure, too slow to redo on each click. Reports are never modified after building, so one shared copy is fine."""
    return report.build(_data, baseline, candidate, common.workload(), common.official(), source=source, shape=shape)


try:
    rep = _report(v.path, Path(v.path).stat().st_mtime, v.baseline, v.candidate, v.source, shape, v.data)
except common.BAD_INPUT as exc:
    st.error(f"Cannot build the report: {exc}")
    st.stop()
st.markdown(f"**{rep.title}**")
stem = rep.stem
st.caption("Files are generated when you click. The HTML carries one compressed copy of plotly.js (about 2 MB in "
           "all) so it opens offline; the CSV has every per-shape column, the HTML and Markdown a compact table.")
c = st.columns(4)
c[0].download_button("HTML (interactive, offline)", rep.html, file_name=f"{stem}.html", mime="text/html",
                     key="rep_html")
c[1].download_button("Markdown", rep.markdown, file_name=f"{stem}.md", mime="text/markdown", key="rep_md")
c[2].download_button("CSV", rep.csv, file_name=f"{stem}.csv", mime="text/csv", key="rep_csv")
c[3].download_button("JSON", rep.json, file_name=f"{stem}.json", mime="application/json", key="rep_json")
with st.expander("Preview (Markdown)", expanded=False):
    st.markdown(rep.markdown())
