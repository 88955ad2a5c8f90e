"""Dispatch: which method each family runs at a chosen M under a plan; the whole plan; official shapes' regions."""
import json

import pandas as pd
import streamlit as st

from app_pages import common
from dashboard import figures
from kernels.plans import PlanError, list_plans, load_plan, plan_from_dict

st.title("Dispatch")
st.caption("Plans are data files (kernels/plans/*.json). Methods are what the plan **says** runs, not a measurement.")
names = list_plans()
c1, c2 = st.columns([1, 2])
UPLOAD, PATH = "(upload a plan JSON)", "(a plan file path)"
choice = c1.selectbox("Plan", names + [UPLOAD, PATH], index=names.index("seed036") if "seed036" in names else 0,
                      key="dispatch_plan")
try:
    if choice == PATH:
        path = c2.text_input("Plan file path", key="dispatch_path")
        if not path:
            st.info("Type the path of a plan JSON file.")
            st.stop()
        plan = load_plan(path, common.workload())
    elif choice == UPLOAD:
        up = c2.file_uploader("Plan JSON", type=["json"], key="dispatch_upload")
        if up is None:
            st.info("Upload a plan file to inspect it.")
            st.stop()
        try:
            data = json.loads(up.getvalue())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PlanError(f"{up.name}: not valid JSON: {exc}") from None
        plan = plan_from_dict(data, up.name, common.workload())
    else:
        plan = load_plan(choice, common.workload())
except (PlanError, ValueError, OSError) as exc:
    st.error(f"Cannot use plan {choice!r}: {exc}")
    st.stop()

st.markdown(f"**{plan.name}** — {plan.description}  \nGPU: `{plan.gpu or 'not tuned on a GPU'}` · tuned from: "
            f"`{plan.tuned_from or '—'}`")
if plan.notes:
    with st.expander("Plan notes"):
        st.write(plan.notes)

M = st.slider("Token rows M", 1, 256, 16, key="dispatch_M")
at_m = pd.DataFrame([{"family": f, "method": plan.entry(f, M).method, "config": plan.describe(f, M),
                      "range": f"{plan.entry(f, M).lo}–{plan.entry(f, M).hi}"} for f in plan.families])
st.subheader(f"At M = {M}")
st.dataframe(at_m, hide_index=True, width="stretch")

table = pd.DataFrame(plan.table())
shapes = common.workload().shapes[["load", "family", "M"]]
st.plotly_chart(figures.dispatch_figure(table, shapes, f"plan {plan.name} (data file)", selected_M=M),
                width="stretch")
st.subheader("The whole plan")
st.dataframe(table.drop(columns=["config"]), hide_index=True, width="stretch")
common.download_csv(table.drop(columns=["config"]), f"plan_{plan.name}.csv")
st.subheader("Where each official shape falls")
regions = shapes.assign(method=[plan.describe(r.family, r.M) for r in shapes.itertuples()],
                        range=[f"{plan.entry(r.family, r.M).lo}–{plan.entry(r.family, r.M).hi}"
                               for r in shapes.itertuples()])
st.dataframe(regions, hide_index=True, width="stretch")
