"""What the Dispatch page shows, read and decided here: the project's plans (kernels/plans/*.json, by name) or an
uploaded plan file, and the workload a plan is read against.

A plan records its workload ("workload": {"name", "fingerprint"}, found in datasets/workloads/ by name; the
fingerprint is checked by kernels.plans.plan_from_dict); a generic plan (only "*" entries, e.g. baseline) serves any
workload, the one the reader picks; a plan that names families but records no workload was tuned before plans
recorded one: the default workload's, said so in a note. Only the project's plans by name or an upload are read: a
typed server path could reveal which files exist and print parts of any JSON the server can read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from datasets import DatasetError, list_workloads, load_workload
from datasets.jsonfile import JsonInputError, parse_json, read_json
from kernels.plans import ANY_FAMILY, PLANS_DIR, PlanError, list_plans, plan_from_dict
from dashboard.model import sources
from ui import loaders, uploads

# What a plan file can get wrong: one line each, shown by the page.
PLAN_ERRORS = (PlanError, DatasetError, ValueError, OSError)
__all__ = ["PLAN_ERRORS", "PlanError", "PlanView", "open_plan", "plan_names", "plan_workload", "dispatch_at",
           "plan_table", "figure_frames", "shape_regions"]


@dataclass
class PlanView:
    plan: object            # kernels.plans.Plan
    workload: object        # datasets.Workload the plan is read against
    note: str | None        # why that workload, where it was assumed


def plan_names() -> list[str]:
    return list_plans()


def _generic(data) -> bool:
    return isinstance(data, dict) and data.get("workload") is None and isinstance(data.get("families"), dict) \
        and set(data["families"]) == {ANY_FAMILY}


def plan_workload(data, name: str, pick: Callable[[list[str], str], str]):
    """(workload, note | None) to read the plan against: the one it records, the one `pick(names, default)` chooses
    for a generic plan, or the default with a note saying it was assumed. PlanError/DatasetError for a recorded
    workload that is not in datasets/workloads/."""
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        return loaders.workload(), None       # plan_from_dict names what is wrong with the file
    rec = data.get("workload")
    if isinstance(rec, dict) and isinstance(rec.get("name"), str):
        if rec["name"] not in list_workloads():
            raise PlanError(f"{name}: tuned for workload {rec['name']!r}, which is not in datasets/workloads/ "
                            f"(known: {', '.join(list_workloads())})")
        return load_workload(rec["name"]), None   # plan_from_dict checks the recorded fingerprint against it
    if _generic(data):
        return load_workload(pick(list_workloads(), loaders.workload().name)), None
    if rec is None:
        return loaders.workload(), (f"{name} does not record its workload; assuming the default "
                                   f"{loaders.workload().name}.")
    return loaders.workload(), None           # a malformed field: plan_from_dict names it


def open_plan(choice: str | None, upload, pick: Callable[[list[str], str], str]) -> PlanView:
    """The project's plan `choice` (a name in kernels/plans/), or the uploaded file `upload` when choice is None,
    with its workload (plan_workload). Errors: PLAN_ERRORS, one line."""
    if choice is None:
        name = sources.safe_name(upload.name, "plan.json")
        try:
            data = parse_json(upload.getvalue(), name, max_bytes=uploads.MAX_UPLOAD_BYTES)
        except JsonInputError as exc:
            raise PlanError(str(exc)) from None
        where = name
    else:
        name = f"{choice}.json"
        try:
            data = read_json(PLANS_DIR / name, max_bytes=uploads.MAX_UPLOAD_BYTES)
        except JsonInputError as exc:
            raise PlanError(str(exc)) from None
        where = str(PLANS_DIR / name)
    workload, note = plan_workload(data, name, pick)
    return PlanView(plan_from_dict(data, where, workload), workload, note)


# --- what the plan dispatches where (the Dispatch page's tables and figure) ----------------------------------------
def _n_text(n) -> str:
    return "any" if n is None else str(int(n))


def _lookup(plan, family: str, M: int, N: int) -> dict:
    """The plan's entry at (family, M, N) as the page's columns; '(not covered)' where it has none."""
    try:
        e = plan.entry(family, M, N)
    except PlanError:
        return {"method": "(not covered)", "config": "", "range": "", "entry N": ""}
    return {"method": e.method, "config": e.label, "range": f"{e.lo}–{e.hi}", "entry N": _n_text(e.N)}


def dispatch_at(plan, workload, M: int) -> pd.DataFrame:
    """Per family of the plan: the workload's N at M (Workload.n_at, as the profiler looks it up) and the entry that
    serves it."""
    return pd.DataFrame([{"family": f, "N": workload.n_at(f, M), **_lookup(plan, f, M, workload.n_at(f, M))}
                         for f in plan.families])


def plan_table(plan) -> pd.DataFrame:
    """Every entry of the plan, its N as text ('any' for a generic entry)."""
    return pd.DataFrame([{**r, "N": _n_text(r["N"])} for r in plan.table()])


def _lane(family: str, N) -> str:
    """The figure's row: N-specific entries get their own lane, 'unpooler N=1024'."""
    return family if N is None else f"{family} N={int(N)}"


def figure_frames(plan, workload, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The dispatch figure's regions (plan_table's rows, each in its lane) and the workload's scored shapes, each in
    the lane of the entry that serves it."""
    rows = plan.table()
    specific = {(r["family"], r["N"]) for r in rows if r["N"] is not None}
    regions = table.assign(family=[_lane(r["family"], r["N"]) for r in rows])
    shapes = workload.shapes[["load", "family", "M", "N"]]
    shapes = shapes.assign(family=[_lane(r.family, r.N if (r.family, r.N) in specific else None)
                                   for r in shapes.itertuples()])
    return regions, shapes


def shape_regions(plan, workload) -> pd.DataFrame:
    """Each scored shape of the workload with the entry that serves it; 'method' is the full label, as run files
    show it."""
    regions = pd.DataFrame([{"load": r.load, "family": r.family, "M": r.M, "N": r.N,
                             **_lookup(plan, r.family, int(r.M), int(r.N))}
                            for r in workload.shapes[["load", "family", "M", "N"]].itertuples()])
    return regions.assign(method=regions["config"]).drop(columns=["config"])
