"""Run: profile plans live on a CUDA GPU (progress bar, new run file), or say exactly how to do it elsewhere.

This is the only page that may import torch, and only inside `_cuda()` / when the sweep starts.
"""
import importlib.util
import shlex

import streamlit as st

from app_pages import common

CLI = "python -m profiler run --plan baseline --plan best --shapes official"


def _cuda() -> tuple[bool, str]:
    """(available, why not). Imports torch lazily: the rest of the app never does."""
    if importlib.util.find_spec("torch") is None:
        return False, "PyTorch is not installed in this environment."
    import torch

    if not torch.cuda.is_available():
        return False, f"PyTorch {torch.__version__} sees no CUDA GPU on this machine."
    return True, torch.cuda.get_device_name(0)


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
st.code(cmd, language="bash")
if st.button("Run now", type="primary", disabled=len(chosen) < 2, key="run_go"):
    from profiler import sweep  # lazy: imports torch and the kernels

    bar = st.progress(0.0, text="starting")

    def progress(done: int, total: int, text: str = "") -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{done}/{total} {text}")

    try:
        path = sweep.run_from_app(plans=chosen, shapes=shapes, mode=mode, label=label, progress=progress)
    except Exception as exc:  # the sweep's own errors are user-facing here; show them without a traceback
        st.error(f"Run failed: {type(exc).__name__}: {exc}")
        st.stop()
    bar.progress(1.0, text="done")
    st.success(f"Saved {path}. Pick it in the sidebar on any page.")
    st.session_state.setdefault("uploaded_runs", []).append(str(path))
