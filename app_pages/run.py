"""Run: profile plans live on a CUDA GPU (progress bar, new run file), or say exactly how to do it elsewhere.

The Streamlit process never imports torch: the GPU check asks the NVIDIA driver directly (profiler.measure.telemetry,
libcuda through ctypes, milliseconds), and the sweep runs its candidates in a worker process (profiler.worker),
so a candidate that crashes or hangs cannot take the app down with it.
"""
import shlex

import streamlit as st
from ui import loaders, measure, widgets


CLI = "python -m profiler run --plan baseline --plan best --shapes official"


st.title("Run — profile kernels live")
ok, why = measure.cuda()
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

st.success(f"CUDA device: {why}")
plans = measure.plan_names()
c0, c1, c2, c3 = st.columns(4)
names = loaders.workload_names()
wl_name = c0.selectbox("Workload", names, index=names.index(loaders.workload().name), key="run_workload")
chosen = c1.multiselect("Plans", plans, default=[p for p in ("baseline", "seed036") if p in plans], key="run_plans")
shapes = c2.text_input("Shapes (official, nearby, all, FAMILY:M,..., M=M,...; join with +)", "official",
                       key="run_shapes")
mode = c3.selectbox("Mode", ["cold", "stream"], key="run_mode")
label = st.text_input("Run label (letters, digits, . _ -; anything else becomes -)", "app-run", key="run_label")
try:       # every input is checked here, one line each, before a worker starts
    workload, shape_rows = measure.check_inputs(wl_name, shapes, chosen)
except measure.InputError as exc:
    st.error(str(exc))
    st.stop()
cmd = "python -m profiler run " + f"--workload {wl_name} " + " ".join(f"--plan {shlex.quote(p)}" for p in chosen) \
    + f" --shapes {shlex.quote(shapes)} --mode {mode} --label {shlex.quote(label)}"
st.caption("The first plan is the baseline of every pair. Equivalent CLI:")
st.code(cmd, language="bash")
if st.button("Run now", type="primary", disabled=not chosen, key="run_go"):
    bar = st.progress(0.0, text="starting the worker process")
    log = st.empty()

    def progress(stage: str, i: int, n: int) -> None:
        bar.progress(min(i / max(n, 1), 1.0), text=f"{stage}: {i}/{n}")

    try:
        out, label = measure.new_run_path(why, label)
    except measure.RunFailed as exc:
        st.error(str(exc))
        st.stop()
    try:
        run = measure.sweep(chosen, shape_rows, out, label=label, mode=mode, shapes=shapes, command=cmd,
                            workload=workload, progress=progress, log=lambda m: log.text(m))
    except measure.RunFailed as exc:  # one line
        st.error(f"Run failed: {exc}")
        st.stop()
    bar.progress(1.0, text="done")
    st.success(f"Saved {out} (status {run.get('status', 'complete')}); the other pages now open on it.")
    if run.get("failures"):
        st.warning(f"{len(run['failures'])} candidate x shape failures (not timed, not scored):")
        st.dataframe([{k: f.get(k) for k in ("load", "family", "M", "candidate", "kind", "phase")} |
                      {"reason": "; ".join(f["reasons"])[:300]} for f in run["failures"]], hide_index=True)
    st.session_state["_sel_source"] = out.name  # ui.view.pick opens on it (the sidebar's source, by file name)
    for cand, base, breakdown, why_not in measure.scores(out):
        if breakdown is None:
            st.warning(widgets.md_text(f"{cand} vs {base}: not scored: {why_not}"))
            continue
        st.metric(f"{widgets.md_text(cand)} vs {widgets.md_text(base)} — score (measured times; derived)",
                  f"{breakdown.score:.4f}×")
        if breakdown.accuracy:
            st.warning(widgets.md_text(f"{cand}: {breakdown.accuracy}"))
        if breakdown.screen:
            st.warning(widgets.md_text(f"{cand}: {breakdown.screen}"))
        st.dataframe(breakdown.loads, hide_index=True, width="stretch")
