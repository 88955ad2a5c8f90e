"""Dispatch: which method each family runs at a chosen M under a plan; the whole plan; official shapes' regions.

A plan entry may be N-specific ("N": 1024 applies only to a weight with N=1024); every lookup here passes the
workload's N for (family, M) (Workload.n_at), as the profiler does. Which plan, and which workload it is read against,
is decided in ui/plans.py (a generic plan: the workload picked here)."""
import streamlit as st

from ui import figures, plans, state, uploads, widgets

st.title("Dispatch")
st.caption("Plans are data files (kernels/plans/*.json). Methods are what the plan **says** runs, not a measurement.")
names = plans.plan_names()
c1, c2 = st.columns([1, 2])
UPLOAD = "(upload a plan JSON)"


def _pick_workload(workloads: list[str], default: str) -> str:
    return c2.selectbox("Workload (a generic plan serves any)", workloads, key="dispatch_workload",
                        index=workloads.index(default))


choice = state.url_selectbox(c1, "Plan", names + [UPLOAD], "plan", "best" if "best" in names else names[0],
                              key="dispatch_plan", what="plan")
try:
    up = None
    if choice == UPLOAD:
        up = c2.file_uploader(f"Plan JSON (at most {uploads.MAX_UPLOAD_MB} MB)", type=["json"], key="dispatch_upload",
                              max_upload_size=uploads.MAX_UPLOAD_MB)
        if up is None:
            st.info("Upload a plan file to inspect it.")
            st.stop()
    opened = plans.open_plan(None if choice == UPLOAD else choice, up, _pick_workload)
except plans.PLAN_ERRORS as exc:
    st.error(widgets.md_text(f"Cannot use plan {choice!r}: {exc}"))
    st.stop()
plan, wl, wl_note = opened.plan, opened.workload, opened.note

st.markdown(f"**{widgets.md_text(plan.name)}** — {widgets.md_text(plan.description)}  \nGPU: "
            f"{widgets.md_code(plan.gpu or 'not tuned on a GPU')} · tuned from: {widgets.md_code(plan.tuned_from or '—')}")
st.caption(f"Workload: **{widgets.md_text(wl.name)}** — " + widgets.md_text(
    f"families {', '.join(wl.family_order)}; loads {', '.join(f'{load} (M={M})' for load, M in wl.load_m.items())}"))
if wl_note:
    st.info(widgets.md_text(wl_note))
if plan.notes:
    with st.expander("Plan notes"):
        st.write(plan.notes)

M = st.slider("Token rows M", 1, 256, 16, key="dispatch_M")
at_m = plans.dispatch_at(plan, wl, M)
st.subheader(f"At M = {M}")
st.caption("N is the workload's N at this M. An entry's N is 'any' for a generic entry, or the only N it applies "
           "to (an N-specific entry wins over a generic one at its N).")
st.dataframe(at_m, hide_index=True, width="stretch")

table = plans.plan_table(plan)
regions_fig, shapes_fig = plans.figure_frames(plan, wl, table)
st.plotly_chart(figures.dispatch_figure(regions_fig, shapes_fig, f"plan {plan.name} (data file)", selected_M=M),
                width="stretch", theme=None)
st.subheader("The whole plan")
st.dataframe(table.drop(columns=["config"]), hide_index=True, width="stretch", column_config={
    "label": st.column_config.TextColumn("config", width=300), "note": st.column_config.TextColumn(width=380)})
widgets.download_csv(table.drop(columns=["config"]), f"plan_{plan.name}.csv")
st.subheader("Where each scored shape of the workload falls")
st.dataframe(plans.shape_regions(plan, wl), hide_index=True, width="stretch")
