"""Decode step: the whole step per candidate (a step run of `python -m profiler step`), where its time goes, Amdahl
predicted from the same run's per-shape ratios beside the measured step speedup, in-step vs isolated per family."""
import streamlit as st

from ui import state, steps, widgets

MAKE_ONE = ("Make one on the GPU: `python -m profiler step --workload llama31_8b_decode --plan baseline "
            "--plan kernels/plans/llama31_8b_decode.json --batches 1,8,32 --contexts 1024,4096`; on any machine "
            "`--device cpu` runs the same step at a small workload (tests/fixtures/workloads/tiny_layer.json).")

st.title("Decode step — what a projection win buys the model")
st.caption("How much faster one decode step runs with a candidate's projections (**measured**), beside what "
           "Amdahl predicts from the same run's per-shape ratios and the projections' share of the step "
           "(**derived**).")
found = steps.step_runs()
if not found:
    st.info("No step run among the run files. " + MAKE_ONE)
    st.stop()
name = state.url_selectbox(st, "Step run", list(found), "step_run", key="step_run", what="step run")
data = steps.step_data(found[name])
mode = state.url_selectbox(st, "Timing", {"cold": "cold (L2 flushed before each step)",
                                          "warm": "warm (steps back to back)"}, "step_mode", "cold",
                           key="step_mode", what="timing")
run_step = data.run["step"]
fams = steps.families(data)
st.caption(f"{widgets.md_text(name)}: {run_step['layers']} distinct layers per step (the model has "
           f"{(data.run.get('workload') or {}).get('layer', {}).get('model_layers', '?')}); workload "
           f"{widgets.md_text(data.workload.name)}; device {widgets.md_text(str(data.run['environment'].get('gpu')))}.")
if steps.on_cpu(data):
    st.warning("A CPU run: its times are wall-clock times of eager steps on a shared CPU, for checking the "
               "plumbing; they say nothing about a GPU.")

amd = steps.amdahl_table(data, mode)
st.subheader("Amdahl, predicted and measured")
if amd.empty:
    st.info("No candidate has a correct, timed step beside the baseline's at any point.")
else:
    shown = steps.display_amdahl(amd)
    point = ["batch", "context", "candidate"]
    # two tables, so each fits the page's width: Amdahl's numbers, then where predicted and measured part
    st.dataframe(shown[point + ["baseline µs", "candidate µs", "p (derived)", "s isolated (derived)", "predicted ×",
                                "measured ×", "measured 95% CI"]], hide_index=True, width="stretch")
    st.dataframe(shown[point + ["s in step (derived)", "pred. in-step ×", "from projection ratios",
                                "from the rest of the step", "predicted in interval", "contract at its shapes"]],
                 hide_index=True, width="stretch")
    st.caption("p: the baseline's projection time inside its step ÷ its step time (derived from the breakdown). "
               "s isolated: Σ baseline ÷ Σ candidate over the layer's families, the run's cold shapes at M = batch "
               "(derived from measured medians). predicted = 1/((1−p)+p/s) (derived). measured: the step's paired "
               "ratio with its 95 % interval. measured − predicted = (pred. in-step − predicted: the projections' "
               "ratio inside the step differs from alone) + (measured − pred. in-step: the rest of the step). "
               "— where a number cannot be formed (e.g. p over 100 % from a noisy CPU breakdown). The last column: "
               "whether the correctness contract passed the candidate at every projection shape of the step in this "
               "run (the step's own rule is rel-L2 only).")

pts = steps.points(data)
labels = {f"{b}/{c}": f"batch {b}, context {c}" for b, c in pts}
key = state.url_selectbox(st, "Point", labels, "step_point", key="step_point", what="point")
b, c = (int(part) for part in key.split("/"))
source = f"{name}, batch {b}, context {c}, {mode}"

here = steps.at_point(data, mode, amd, b, c)
parts = here.breakdown
if parts.empty:
    st.info("No candidate has a breakdown at this point.")
else:
    st.plotly_chart(steps.step_bars(parts, fams, f"measured parts ({parts['method'].iloc[0]}); the unattributed "
                                                  f"rest derived — {source}"), width="stretch", theme=None)
if not here.amdahl.empty:
    st.plotly_chart(steps.amdahl_curve(here.amdahl, f"curve derived; points measured (filled) and predicted "
                                                    f"(open) — {source}"), width="stretch", theme=None)
fam = here.families
if not fam.empty:
    st.subheader("In the step vs alone, per family")
    st.plotly_chart(steps.family_bars(fam, f"isolated: measured cold shapes; in-step: derived from the "
                                          f"breakdown ÷ layers — {source}"), width="stretch", theme=None)
    st.dataframe(steps.display_families(fam), hide_index=True, width="stretch")
bad = steps.failures(data)
if bad:
    st.subheader("Failures")
    st.markdown("\n".join(f"- {widgets.md_text(line)}" for line in bad))
st.caption("The same tables in a terminal: `python -m dashboard step RUN.json`. " + MAKE_ONE)
