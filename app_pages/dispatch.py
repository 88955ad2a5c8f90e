"""Dispatch: which method each family runs at a chosen M under a plan; the whole plan; official shapes' regions.

A plan entry may be N-specific ("N": 1024 applies only to a weight with N=1024); every lookup here passes the
workload's N for (family, M) (Workload.n_at), as the profiler does. The workload is the one the plan records
("workload": {"name", "fingerprint"}, found in datasets/workloads/ by name and checked by fingerprint); a generic plan
(only "*" entries, e.g. baseline) serves any workload, picked here; a plan that names families but records no
workload was tuned before plans recorded one: muse_bf16_proj's."""
from datasets import DatasetError, list_workloads, load_workload
from datasets.jsonfile import JsonInputError, parse_json, read_json

import pandas as pd
import streamlit as st

from dashboard import figures, sources
from kernels.plans import ANY_FAMILY, PLANS_DIR, PlanError, list_plans, plan_from_dict
from ui import loaders, state, uploads, widgets

st.title("Dispatch")
st.caption("Plans are data files (kernels/plans/*.json). Methods are what the plan **says** runs, not a measurement.")
names = list_plans()
c1, c2 = st.columns([1, 2])
UPLOAD = "(upload a plan JSON)"
# Only the project's plans (kernels/plans/*.json, by name) or an upload: a typed server path could reveal which
# files exist and print parts of any JSON the server can read.


def plan_workload(data, name: str, column):
    """(workload, note | None) to read the plan against: the one it records, the one picked for a generic plan,
    or the default with a note saying it was assumed. Errors are PlanError/DatasetError lines."""
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        return loaders.workload(), None       # plan_from_dict names what is wrong with the file
    rec = data.get("workload")
    if isinstance(rec, dict) and isinstance(rec.get("name"), str):
        if rec["name"] not in list_workloads():
            raise PlanError(f"{name}: tuned for workload {rec['name']!r}, which is not in datasets/workloads/ "
                            f"(known: {', '.join(list_workloads())})")
        return load_workload(rec["name"]), None   # plan_from_dict checks the recorded fingerprint against it
    if rec is None and set(data["families"]) == {ANY_FAMILY}:
        names = list_workloads()
        picked = column.selectbox("Workload (a generic plan serves any)", names, key="dispatch_workload",
                                  index=names.index(loaders.workload().name))
        return load_workload(picked), None
    if rec is None:
        return loaders.workload(), (f"{name} does not record its workload; assuming the default "
                                   f"{loaders.workload().name}.")
    return loaders.workload(), None           # a malformed field: plan_from_dict names it


choice = state.url_selectbox(c1, "Plan", names + [UPLOAD], "plan", "best" if "best" in names else names[0],
                              key="dispatch_plan", what="plan")
try:
    if choice == UPLOAD:
        up = c2.file_uploader(f"Plan JSON (at most {uploads.MAX_UPLOAD_MB} MB)", type=["json"], key="dispatch_upload",
                              max_upload_size=uploads.MAX_UPLOAD_MB)
        if up is None:
            st.info("Upload a plan file to inspect it.")
            st.stop()
        name = sources.safe_name(up.name, "plan.json")
        try:
            data = parse_json(up.getvalue(), name, max_bytes=uploads.MAX_UPLOAD_BYTES)
        except JsonInputError as exc:
            raise PlanError(str(exc)) from None
    else:
        name = f"{choice}.json"
        try:
            data = read_json(PLANS_DIR / name, kind="plan")
        except JsonInputError as exc:
            raise PlanError(str(exc)) from None
    wl, wl_note = plan_workload(data, name, c2)
    plan = plan_from_dict(data, name if choice == UPLOAD else str(PLANS_DIR / name), wl)
except (PlanError, DatasetError, ValueError, OSError) as exc:
    st.error(widgets.md_text(f"Cannot use plan {choice!r}: {exc}"))
    st.stop()

st.markdown(f"**{widgets.md_text(plan.name)}** — {widgets.md_text(plan.description)}  \nGPU: "
            f"{widgets.md_code(plan.gpu or 'not tuned on a GPU')} · tuned from: {widgets.md_code(plan.tuned_from or '—')}")
st.caption(f"Workload: **{widgets.md_text(wl.name)}** — " + widgets.md_text(
    f"families {', '.join(wl.family_order)}; loads {', '.join(f'{load} (M={M})' for load, M in wl.load_m.items())}"))
if wl_note:
    st.info(widgets.md_text(wl_note))
if plan.notes:
    with st.expander("Plan notes"):
        st.write(plan.notes)


def n_at(family: str, M: int) -> int:
    """The workload's N for (family, M) (muse: the unpooler is N=1024 at M=1 and M=8, N=8192 elsewhere)."""
    return wl.n_at(family, M)


def n_text(n) -> str:
    return "any" if n is None else str(int(n))


def lookup(family: str, M: int, N: int) -> dict:
    try:
        e = plan.entry(family, M, N)
    except PlanError:
        return {"method": "(not covered)", "config": "", "range": "", "entry N": ""}
    return {"method": e.method, "config": e.label, "range": f"{e.lo}–{e.hi}", "entry N": n_text(e.N)}


M = st.slider("Token rows M", 1, 256, 16, key="dispatch_M")
at_m = pd.DataFrame([{"family": f, "N": n_at(f, M), **lookup(f, M, n_at(f, M))} for f in plan.families])
st.subheader(f"At M = {M}")
st.caption("N is the workload's N at this M. An entry's N is 'any' for a generic entry, or the only N it applies "
           "to (an N-specific entry wins over a generic one at its N).")
st.dataframe(at_m, hide_index=True, width="stretch")

rows = plan.table()
table = pd.DataFrame([{**r, "N": n_text(r["N"])} for r in rows])
specific = {(r["family"], r["N"]) for r in rows if r["N"] is not None}


def lane(family: str, N) -> str:
    """The figure's row: N-specific entries get their own lane, 'unpooler N=1024'."""
    return family if N is None else f"{family} N={int(N)}"


regions_fig = table.assign(family=[lane(r["family"], r["N"]) for r in rows])
shapes = wl.shapes[["load", "family", "M", "N"]]
shapes_fig = shapes.assign(family=[lane(r.family, r.N if (r.family, r.N) in specific else None)
                                   for r in shapes.itertuples()])
st.plotly_chart(figures.dispatch_figure(regions_fig, shapes_fig, f"plan {plan.name} (data file)", selected_M=M),
                width="stretch", theme=None)
st.subheader("The whole plan")
st.dataframe(table.drop(columns=["config"]), hide_index=True, width="stretch", column_config={
    "label": st.column_config.TextColumn("config", width=300), "note": st.column_config.TextColumn(width=380)})
widgets.download_csv(table.drop(columns=["config"]), f"plan_{plan.name}.csv")
st.subheader("Where each scored shape of the workload falls")
regions = pd.DataFrame([{"load": r.load, "family": r.family, "M": r.M, "N": r.N, **lookup(r.family, int(r.M), int(r.N))}
                        for r in shapes.itertuples()])
regions = regions.assign(method=regions["config"]).drop(columns=["config"])  # the full label, as run files show it
st.dataframe(regions, hide_index=True, width="stretch")
