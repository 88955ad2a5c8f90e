"""The target-score input the Overview and the Planner share (not a page itself)."""
import streamlit as st

from dashboard.model import views


def target_input(key: str, selection, score: float, box=st) -> float:
    """A target-score number input that opens above the current score (dashboard.model.views.default_target).

    It resets when the source, baseline or candidate changes (a new score needs a new default) and when the page is
    revisited (Streamlit drops a widget's state when its page is left)."""
    owner = (selection.label, selection.baseline, selection.candidate)
    if key not in st.session_state or st.session_state.get(f"_{key}_for") != owner:
        st.session_state[f"_{key}_for"] = owner
        st.session_state[key] = views.default_target(score)
    return box.number_input("Target score", min_value=1.0, max_value=3.0, step=0.005, format="%.4f", key=key,
                            help="Opens at the first 0.01 step at least 1% above the current score.")
