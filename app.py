"""projlab dashboard — router only: page config, navigation, run the chosen page.

`streamlit run app.py`. Pages live in app_pages/ (not pages/, which would switch Streamlit to its legacy
multipage mode). Nothing here imports torch; only the Run page does, lazily, when it runs kernels.
"""
import streamlit as st
import streamlit.delta_generator as _delta_generator

from app_pages import common, first_run  # noqa: F401  common: pandas and dashboard/, which nearly every page imports
from dashboard import figures  # noqa: F401  plotly

first_run.freeze_imports()   # after the imports above (app_pages/first_run.py says why)

# Streamlit's first element of a process asks whether it runs in a REPL, to print a "use streamlit run" warning
# (delta_generator._maybe_print_use_warning -> env_util.is_repl -> inspect.stack(), which reads the source of every
# frame): 0.09-0.13 s of a fresh server's first page on 2 cores, measured with the browser test's fresh-server
# load. This script only runs under `streamlit run`, where that warning is never printed; when the flag is not
# there (another Streamlit version) this sets an unused name and changes nothing.
_delta_generator._use_warning_has_been_displayed = True

st.set_page_config(page_title="projlab — H200 projection roofline lab", page_icon=":material/speed:", layout="wide")


def _page(file: str, title: str, icon: str, default: bool = False) -> st.Page:
    return st.Page(f"app_pages/{file}.py", title=title, icon=f":material/{icon}:", url_path=file, default=default)


pg = st.navigation({
    # "/" is a hidden default page that runs the Overview's script, so the Overview keeps /overview as well
    "Results": [st.Page("app_pages/home.py", title="Overview", icon=":material/flag:", url_path="home",
                        default=True, visibility="hidden"),
                _page("overview", "Overview", "flag"),
                _page("where_time_goes", "Where time goes", "timer"), _page("kernels", "Kernels", "memory"),
                _page("shapes", "Shapes", "table_chart"), _page("compare", "Compare", "compare_arrows")],
    "Hardware": [_page("roofline", "Roofline", "show_chart"), _page("probes", "Probes", "sensors"),
                 _page("fleet", "Fleet", "dns")],
    "Plans": [_page("planner", "Planner", "calculate"), _page("dispatch", "Dispatch", "alt_route"),
              _page("ledger", "Ledger", "history")],
    "Measure": [_page("run", "Run", "play_arrow"), _page("reports", "Reports", "description")],
    "Help": [_page("glossary", "Glossary", "menu_book")],
})
pg.run()
