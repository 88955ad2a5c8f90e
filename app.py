"""projlab dashboard — router only: page config, navigation, run the chosen page.

`streamlit run app.py`. Pages live in app_pages/ (not pages/, which would switch Streamlit to its legacy
multipage mode). Nothing here imports torch; only the Run page does, lazily, when it runs kernels.
"""
import streamlit as st

st.set_page_config(page_title="projlab — H200 projection roofline lab", page_icon="📈", layout="wide")


def _page(file: str, title: str, icon: str, default: bool = False) -> st.Page:
    return st.Page(f"app_pages/{file}.py", title=title, icon=icon, url_path=file, default=default)


pg = st.navigation({
    "Results": [_page("overview", "Overview", "🏁", default=True), _page("where_time_goes", "Where time goes", "⏱️"),
                _page("shapes", "Shapes", "🔢"), _page("compare", "Compare", "⚖️")],
    "Hardware": [_page("roofline", "Roofline", "📐"), _page("probes", "Probes", "📡")],
    "Plans": [_page("planner", "Planner", "🧮"), _page("dispatch", "Dispatch", "🔀"), _page("ledger", "Ledger", "📜")],
    "Measure": [_page("run", "Run", "▶️"), _page("reports", "Reports", "📄")],
})
pg.run()
