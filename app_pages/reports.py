"""Reports: export a whole-run or a per-shape report as standalone HTML (interactive, offline), Markdown, CSV, JSON.

Same exports headless: `python -m dashboard report RUN.json --out DIR`.
"""
import streamlit as st
from ui import loaders, state, terms, view, widgets


st.title("Reports")
selection = view.pick()
view.caption_source(selection)
terms.link()
st.markdown("Headless: `python -m dashboard report RUN.json --out DIR [--baseline B --candidate C] "
            "[--shape 'decode 1/router']`")
scope = st.radio("Scope", ["Whole run", "One shape"], horizontal=True, key="rep_scope")
shape = None
if scope == "One shape":
    keys = list(dict.fromkeys(selection.data.results["shape"]))
    shape = state.url_selectbox(st, "Shape", keys, "shape", keys[0], key="rep_shape", what="shape")
try:
    rep = loaders.report_for(selection, shape)
except loaders.BAD_INPUT as exc:
    st.error(f"Cannot build the report: {widgets.md_text(exc)}")
    st.stop()
st.markdown(f"**{widgets.md_text(rep.title)}**")
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
