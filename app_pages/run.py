"""Run: profile plans live on a CUDA GPU (progress bar, new run file), or say exactly how to do it elsewhere.

The Streamlit process never imports torch: the GPU check asks the NVIDIA driver directly (profiler.measure.telemetry,
libcuda through ctypes, milliseconds), and the sweep runs its candidates in a worker process (profiler.worker),
so a candidate that crashes or hangs cannot take the app down with it.
"""
import importlib.util
import shlex

import streamlit as st
from ui import loaders, widgets


CLI = "python -m profiler run --plan baseline --plan best --shapes official"


def _cuda() -> tuple[bool, str]:
    """(available, device name or why not), from the driver API; torch is only looked up, not imported."""
    from profiler.measure.telemetry import cuda_device_name

    if importlib.util.find_spec("torch") is None:
        return False, "PyTorch is not installed in this environment."
    name = cuda_device_name()
    if name is None:
        return False, "There is no NVIDIA driver (libcuda.so.1) or no usable GPU on this machine."
    return True, name


st.title("Run — profile kernels live")
ok, why = _cuda()
if not ok:
    st.warning(f"Live runs need an NVIDIA GPU with CUDA. {why}")
    st.markdown("Everything else in projlab works here from committed runs. To measure, run this on a GPU host "
                "(an H200 for numbers comparable with the committed runs), then copy the new file from "
                "`datasets/runs/` here — it appears in the sidebar automatically:")
    st.code(CLI, language="bash")
    st.markdown("Other useful forms: `--device cpu` (no GPU: checks a candidate and times it on this machine's "
                "CPU, its own floors and verdicts; a CPU time ranks candidates here, it says nothing about a GPU's), "
                "`--shapes nearby|all|qkv_gate:1,64|M=3,17`, `--workload NAME|FILE` (another "
                "model's projections, datasets/workloads/), `--mode stream`, `--candidate path/to/module.py`, "
                "`python -m profiler probe`, `python -m dashboard summarize RUN.json`.")
    st.stop()

from datasets import DatasetError, list_workloads, load_workload  # noqa: E402
from datasets.selection import ShapeSelectionError, select_shapes  # noqa: E402
from kernels.plans import PlanError, list_plans, load_plan  # noqa: E402  (torch-free; only reached with CUDA)

st.success(f"CUDA device: {why}")
plans = list_plans()
c0, c1, c2, c3 = st.columns(4)
names = list_workloads()
wl_name = c0.selectbox("Workload", names, index=names.index(loaders.workload().name), key="run_workload")
chosen = c1.multiselect("Plans", plans, default=[p for p in ("baseline", "seed036") if p in plans], key="run_plans")
shapes = c2.text_input("Shapes (official, nearby, all, FAMILY:M,..., M=M,...; join with +)", "official",
                       key="run_shapes")
mode = c3.selectbox("Mode", ["cold", "stream"], key="run_mode")
label = st.text_input("Run label (letters, digits, . _ -; anything else becomes -)", "app-run", key="run_label")
try:       # every input is checked here, one line each, before a worker starts
    workload = load_workload(wl_name)
    shape_rows = select_shapes(shapes, workload)
    for p in chosen:
        load_plan(p, workload)
except (DatasetError, ShapeSelectionError, PlanError) as exc:
    st.error(str(exc))
    st.stop()
cmd = "python -m profiler run " + f"--workload {wl_name} " + " ".join(f"--plan {shlex.quote(p)}" for p in chosen) \
    + f" --shapes {shlex.quote(shapes)} --mode {mode} --label {shlex.quote(label)}"
st.caption("The first plan is the baseline of every pair. Equivalent CLI:")
st.code(cmd, language="bash")
if st.button("Run now", type="primary", disabled=not chosen, key="run_go"):
    import datetime as dt
    from pathlib import Path

    from datasets import RUNS_DIR
    from datasets.runfile import RunFileError, run_filename, safe_label
    from profiler.commands.sweep import SweepInputError, SweepSettings, WorkerStartError, run_sweep
    from profiler.worker.process import WorkerDied, WorkerError

    bar = st.progress(0.0, text="starting the worker process")
    log = st.empty()

    def progress(stage: str, i: int, n: int) -> None:
        bar.progress(min(i / max(n, 1), 1.0), text=f"{stage}: {i}/{n}")

    label = safe_label(label)
    out = Path(RUNS_DIR) / run_filename(dt.date.today(), why, label)
    if out.exists():
        st.error(f"{out.name} exists; runs are never overwritten — pick another label")
        st.stop()
    try:
        settings = SweepSettings(mode=mode, shapes=shapes, command=cmd, screened=True, unprivileged=True)
        run = run_sweep(chosen, shape_rows, out, label=label, settings=settings, progress=progress,
                        log=lambda m: log.text(m), workload=workload)
    except (SweepInputError, WorkerStartError, RunFileError, WorkerError, WorkerDied) as exc:  # one line
        st.error(f"Run failed: {exc}")
        st.stop()
    bar.progress(1.0, text="done")
    st.success(f"Saved {out} (status {run.get('status', 'complete')}); the other pages now open on it.")
    if run.get("failures"):
        st.warning(f"{len(run['failures'])} candidate x shape failures (not timed, not scored):")
        st.dataframe([{k: f.get(k) for k in ("load", "family", "M", "candidate", "kind", "phase")} |
                      {"reason": "; ".join(f["reasons"])[:300]} for f in run["failures"]], hide_index=True)
    st.session_state["_sel_source"] = out.name  # ui.view.pick opens on it (the sidebar's source, by file name)
    from dashboard import runs, scoring

    data = runs.load_run_data(out)
    for base, cand in runs.candidate_pairs(data):
        try:
            bd = runs.run_score(data, base, cand)
        except scoring.ScoringError as exc:
            st.warning(widgets.md_text(f"{cand} vs {base}: not scored: {exc}"))
            continue
        st.metric(f"{widgets.md_text(cand)} vs {widgets.md_text(base)} — score (measured times; derived)", f"{bd.score:.4f}×")
        if bd.accuracy:
            st.warning(widgets.md_text(f"{cand}: {bd.accuracy}"))
        if bd.screen:
            st.warning(widgets.md_text(f"{cand}: {bd.screen}"))
        st.dataframe(bd.loads, hide_index=True, width="stretch")
