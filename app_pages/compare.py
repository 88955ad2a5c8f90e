"""Compare: 2..N candidates / runs side by side — per-shape ratios with CI and verdicts, per-load and overall rows.

Series are told apart by colour (verdicts by marker symbol), named short (run date · run label · candidate) with
the full name on hover. The SAME band ε comes from the measured run-to-run spread of the repeatability runs among
the sources (dashboard.repeatability), one band per level; without one it is 1%, said next to the slider.
"""
from pathlib import Path

import pandas as pd
import streamlit as st

from app_pages import common, terms
from dashboard import compare, figures, glossary, repeatability, scoring, views


@st.cache_data(show_spinner=False)
def _bands(key: tuple, _datas) -> "repeatability.SameBands | None":
    """SAME bands of the run sources, once per set of (path, mtime)."""
    return repeatability.same_bands(_datas, common.workload())


@st.cache_data(show_spinner=False, max_entries=32)
def _compare(key: tuple, ref: str, eps: float, _frames) -> compare.Comparison:
    """The bootstrap comparison, once per (series and their files' mtimes, reference, ε): it resamples every
    shape a thousand times, too slow to redo on each widget change."""
    weights = scoring.family_weights(common.workload())
    return compare.compare(pd.concat(_frames, ignore_index=True), ref, weights, eps)


st.title("Compare")
terms.link("verdicts", "eps", "ci", "baselines")
with st.expander("Upload a run file or a per-shape CSV to compare"):
    common.upload_widget("upload_compare")

# Every (source, candidate) the app knows about is a possible series.
options: dict[str, tuple] = {}
run_datas, errors = [], []
for label, (kind, path) in common.sources().items():
    try:
        if kind == "table":
            table = common.official(path)
            for col, name in (("baseline_us", "baseline"), ("candidate_us", "036" if label == common.OFFICIAL_LABEL
                                                             else "candidate")):
                options[f"{label} · {name}"] = ("table", path, col, name, views.series_label(label, path, name))
        else:
            data = common.run_data(path)
            run_datas.append(data)
            for cand in data.candidates():
                options[f"{label} · {cand}"] = ("run", path, cand, cand, views.series_label(label, path, cand))
    except common.BAD_INPUT as exc:
        errors.append(f"{label}: {exc}")
for e in errors:
    st.error(f"Skipped a source that cannot be read — {e}")

keys = list(options)
first = common.default_run_path()  # open on the run the other pages open on: its baseline against its last candidate
opening = [k for k in keys if first and k.startswith(f"run: {first.name} · ")]
runs_first = [k for k in keys if options[k][0] == "run"]
default = ([opening[0], opening[-1]] if len(opening) >= 2 else runs_first[:2] if len(runs_first) >= 2
           else keys[:2])
chosen = st.multiselect("Series to compare (2 or more)", keys, default=default, key="cmp_series",
                        format_func=lambda k: options[k][4])
if len(chosen) < 2:
    st.info("Pick at least two series.")
    st.stop()


wl = common.workload()
bands = _bands(tuple((str(d.path), Path(d.path).stat().st_mtime) for d in run_datas), run_datas)
c1, c2 = st.columns(2)
ref = c1.selectbox("Reference (ratios are reference ÷ series)", chosen, key="cmp_ref",
                   format_func=lambda k: options[k][4])
eps_default = bands.shape if bands else compare.EPS_DEFAULT
eps = c2.slider("SAME band ε per shape (±)", 0.002, 0.10, eps_default, 0.001, format="%.3f", key="cmp_eps",
                help=glossary.short("eps"))
if bands:
    c2.caption(f"{bands.describe()} Load and overall verdicts use their own bands (±{bands.load:.1%}, "
               f"±{bands.score:.1%}). Runs: {', '.join(bands.runs)}.")
else:
    c2.caption(f"No repeatability run among the sources, so ε defaults to {compare.EPS_DEFAULT:.0%}: the 95% CI "
               "half-width at the profiler's 0.5% RSE stopping rule. Identical kernels differed by up to ±5% per "
               "shape on the H200 (see the glossary), so per-shape SAME/FAST/SLOW at 1% over-reads noise.")

kinds = {options[k][0] for k in chosen}
if kinds == {"table", "run"}:
    st.warning("A published table is compared with local runs: their baselines differ (the write-up's SGLang path "
               "on the evaluator vs torch F.linear here), so ratios across them measure the baselines as much as "
               "the kernels. " + glossary.short("baselines"))

frames = []
for key in chosen:
    kind, path, col, name, _ = options[key]
    if kind == "table":
        frames.append(compare.series_from_table(common.official(path), col, key, path))
    else:
        frames.append(compare.series_from_results(common.run_data(path).results, col, key, path))
scored = [f[f["load"] != "nearby"] for f in frames]
files = tuple((k, options[k][1], Path(options[k][1]).stat().st_mtime) for k in chosen)
try:
    res = _compare(files, ref, eps, scored)
except ValueError as exc:
    st.error(f"Cannot compare: {exc}")
    st.stop()
if bands:
    res = repeatability.apply_bands(res, bands)
if res.note:
    st.warning(res.note)
st.caption("Times: measured (runs) or published (tables) as named; ratios, CIs and verdicts are **derived**. "
           "Two candidates of the same run are paired by round; different runs are resampled independently.")

short = {k: options[k][4] for k in chosen}
num = st.column_config.NumberColumn
series_col = st.column_config.TextColumn("series", width=300)
for frame in (res.overall, res.loads, res.shapes):
    if len(frame):
        frame.insert(0, "name", frame["series"].map(short))

st.subheader("Overall")
st.dataframe(res.overall, hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "n_loads", "score", "ci_low", "ci_high", "delta_pct", "verdict"],
             column_config={"name": series_col,
                            **common.ratio_ci_columns("score", "score vs reference × (derived)"),
                            "delta_pct": num("Δ score-equivalent time %", format="%+.2f")})
if (res.overall["n_loads"] < 6).any():
    st.caption("Fewer than six loads in common: this is a geometric mean over the loads present, not the "
               "benchmark score.")
st.subheader("Per load")
st.dataframe(res.loads, hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "load", "ratio", "ci_low", "ci_high", "verdict", "reference_us", "series_us",
                           "delta_pct"],
             column_config={"name": series_col, "reference_us": num("Σw·reference µs", format="%.1f"),
                            "series_us": num("Σw·series µs", format="%.1f"), **common.ratio_ci_columns(),
                            "delta_pct": num("Δ time %", format="%+.2f")})
st.subheader("Per shape")
order = views.shape_order(wl.load_order, wl.family_order)
st.plotly_chart(figures.compare_figure(res.shapes, eps, "derived from the series' samples", short, order),
                width="stretch")
verdicts = st.multiselect("Verdicts", list(compare.VERDICTS), default=list(compare.VERDICTS), key="cmp_verdicts")
shown = res.shapes[res.shapes["verdict"].isin(verdicts)]
st.dataframe(shown, hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "load", "family", "M", "reference_us", "series_us", "delta_us", "ratio",
                           "ci_low", "ci_high", "verdict"],
             column_config={"name": st.column_config.TextColumn("series", width=260), "M": num("M", width=50),
                            "reference_us": num("reference µs", format="%.3f"),
                            "series_us": num("series µs", format="%.3f"), "delta_us": num("Δ µs", format="%+.3f"),
                            **common.ratio_ci_columns("ratio", "ratio of medians ×")})
common.download_csv(shown, "compare_shapes.csv")
if len(res.dropped):
    with st.expander(f"{len(res.dropped)} rows outside the intersection"):
        st.dataframe(res.dropped, hide_index=True, width="stretch")
