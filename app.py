"""projlab dashboard — router only: page config, navigation, run the chosen page.

`streamlit run app.py`. Pages live in app_pages/ and their plumbing in ui/ (not pages/, which would switch Streamlit to its legacy
multipage mode). Nothing here imports torch; only the Run page does, lazily, when it runs kernels.
"""
import streamlit as st

from ui import figures  # noqa: F401  plotly (dashboard/plots), which nearly every page draws with
from ui import view  # noqa: F401  pandas, dashboard/ and the loaders, which nearly every page imports

# The browser tab's icon is an emoji, which Streamlit draws as an inline SVG: a ":material/...:" page icon becomes a
# request to fonts.gstatic.com on every page (an error per page offline). The navigation's own icons use the Material
# Symbols font Streamlit serves itself.
st.set_page_config(page_title="projlab — projection roofline lab", page_icon="⏱️", layout="wide")


def _page(file: str, title: str, icon: str, default: bool = False) -> st.Page:
    return st.Page(f"app_pages/{file}.py", title=title, icon=f":material/{icon}:", url_path=file, default=default)


pg = st.navigation({
    # "/" is a hidden default page that runs the Overview's script, so the Overview keeps /overview as well
    "Results": [st.Page("app_pages/home.py", title="Overview", icon=":material/flag:", url_path="home",
                        default=True, visibility="hidden"),
                _page("overview", "Overview", "flag"),
                _page("where_time_goes", "Where time goes", "timer"), _page("kernels", "Kernels", "memory"),
                _page("shapes", "Shapes", "table_chart"), _page("compare", "Compare", "compare_arrows"),
                _page("step", "Decode step", "stacked_bar_chart")],
    "Hardware": [_page("roofline", "Roofline", "show_chart"), _page("probes", "Probes", "sensors"),
                 _page("fleet", "Fleet", "dns")],
    "Plans": [_page("planner", "Planner", "calculate"), _page("dispatch", "Dispatch", "alt_route"),
              _page("ledger", "Ledger", "history")],
    "Measure": [_page("run", "Run", "play_arrow"), _page("reports", "Reports", "description")],
    "Help": [_page("glossary", "Glossary", "menu_book")],
})
pg.run()
