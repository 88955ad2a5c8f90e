"""Run: profile plans live on a CUDA GPU (progress bar, new run file), or say exactly how to do it elsewhere.

This is the only page that may import torch, and only once "Run now" is pressed: the GPU check below asks the
NVIDIA driver directly (libcuda through ctypes), which takes milliseconds instead of torch's ~1.5 s import.
"""
import ctypes
import importlib.util
import shlex

import streamlit as st

from app_pages import common

CLI = "python -m profiler run --plan baseline --plan best --shapes official"


def _cuda() -> tuple[bool, str]:
    """(available, device name or why not), from the driver API; torch is only looked up, not imported."""
    if importlib.util.find_spec("torch") is None:
        return False, "PyTorch is not installed in this environment."
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False, "There is no NVIDIA driver (libcuda.so.1) on this machine."
    count, dev, name = ctypes.c_int(0), ctypes.c_int(0), ctypes.create_string_buffer(256)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return False, "The NVIDIA driver reports no usable GPU."
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    cuda.cuDeviceGetName(name, len(name), dev)
    return True, name.value.decode(errors="replace")


st.title("Run — profile kernels live")
ok, why = _cuda()
if not ok:
    st.warning(f"Live runs need an NVIDIA GPU with CUDA. {why}")
    st.markdown("Everything else in projlab works here from committed runs. To measure, run this on a GPU host "
                "(an H200 for numbers comparable with the committed runs), then copy the new file from "
                "`datasets/runs/` here — it appears in the sidebar automatically:")
    st.code(CLI, language="bash")
    st.markdown("Other useful forms: `--shapes nearby|all`, `--mode stream`, `--candidate path/to/module.py`, "
                "`python -m profiler probe`, `python -m profiler summarize RUN.json`.")
    st.stop()

from kernels.plans import list_plans  # noqa: E402  (torch-free; only reached with CUDA)

st.success(f"CUDA device: {why}")
plans = list_plans()
c1, c2, c3 = st.columns(3)
chosen = c1.multiselect("Plans", plans, default=[p for p in ("baseline", "seed036") if p in plans], key="run_plans")
shapes = c2.selectbox("Shapes", ["official", "nearby", "all"], key="run_shapes")
mode = c3.selectbox("Mode", ["cold", "stream"], key="run_mode")
label = st.text_input("Run label (letters, digits, . _ -)", "app-run", key="run_label")
cmd = "python -m profiler run " + " ".join(f"--plan {shlex.quote(p)}" for p in chosen) + \
    f" --shapes {shapes} --mode {mode} --label {shlex.quote(label)}"
st.caption("The first plan is the baseline of every pair. Equivalent CLI:")
st.code(cmd, language="bash")
if st.button("Run now", type="primary", disabled=not chosen, key="run_go"):
    import datetime as dt
    from pathlib import Path

    import torch  # lazy: only this page, only with CUDA

    from datasets import RUNS_DIR
    from kernels.candidate import load_candidate
    from profiler.runfile import run_filename
    from profiler.sweep import SweepSettings, run_sweep, select_shapes

    bar = st.progress(0.0, text="starting")
    log = st.empty()

    def progress(stage: str, i: int, n: int) -> None:
        bar.progress(min(i / max(n, 1), 1.0), text=f"{stage}: {i}/{n}")

    try:
        if not torch.cuda.is_available():
            raise RuntimeError(f"PyTorch {torch.__version__} was built without CUDA; install a CUDA build")
        out = Path(RUNS_DIR) / run_filename(dt.date.today(), torch.cuda.get_device_name(), label)
        if out.exists():
            raise FileExistsError(f"{out.name} exists; runs are never overwritten — pick another label")
        candidates = [load_candidate(p) for p in chosen]
        settings = SweepSettings(mode=mode, shapes=shapes, command=cmd)
        run = run_sweep(candidates, select_shapes(shapes), out, label=label, settings=settings, progress=progress,
                        log=lambda m: log.text(m))
    except Exception as exc:  # plan, candidate, file and CUDA errors are user-facing here: no traceback
        st.error(f"Run failed: {type(exc).__name__}: {exc}")
        st.stop()
    bar.progress(1.0, text="done")
    st.success(f"Saved {out} (status {run.get('status', 'complete')}); the other pages now open on it.")
    st.session_state["_sel_source"] = out.name  # common.view opens on it (the sidebar's source, by file name)
    from dashboard import runs, scoring

    data = runs.load_run_data(out)
    for base, cand in runs.candidate_pairs(data):
        try:
            bd = runs.run_score(data, base, cand, common.workload())
        except scoring.ScoringError as exc:
            st.warning(f"{cand} vs {base}: not scored: {exc}")
            continue
        st.metric(f"{cand} vs {base} — score (measured times; derived)", f"{bd.score:.4f}×")
        st.dataframe(bd.loads, hide_index=True, width="stretch")
