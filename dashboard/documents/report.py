"""Whole-run and per-shape reports: standalone HTML (interactive figures, plotly.js inline so it opens offline),
Markdown, CSV and JSON. Headless: `python -m dashboard report RUN.json|official.csv --out DIR`
(dashboard.cli.report_cli, which sends an explain run to dashboard.documents.kernel_report).

A report only arranges what dashboard/ computed (runs, scoring, views, compare) and figures drew. Imports go one
way: kernel_report builds its Report with this module; this module knows nothing of kernel breakdowns.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from datasets import devices
from dashboard.cli import summary as summary_text
from dashboard.model import compare, eager, glossary, kernels, library_ceiling, noise, runs, scoring, sources, step, views, workloads
from dashboard.plots import figures, roofline_figures
from dashboard.documents import files
from dashboard.documents import report_render as render

SOURCE_WORDS = sources.PROVENANCE  # one definition of the provenance words, shared with the app and the CLI


@dataclass
class Report:
    """`summary` and `tables` are the data (JSON, and the CSV of `main_table`, keep every column and full precision);
    `facts` and `display` are what a person reads (formatted, with units; compact per-shape table) in HTML and
    Markdown; `notes` explain (the idle clock, the terms used)."""
    title: str
    stem: str
    source: str
    summary: dict
    tables: dict[str, pd.DataFrame]
    figures: list[go.Figure] = field(default_factory=list)
    main_table: str = "shapes"
    facts: list[tuple[str, str]] = field(default_factory=list)
    display: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[render.Note] = field(default_factory=list)
    gate: scoring.Gate | None = None   # the pair's gate over the scored shapes; not ok → the report has no score

    @property
    def source_line(self) -> str:
        return (f"Source: {SOURCE_WORDS.get(self.source, self.source)}. Derived numbers (ratios, scores, floors, "
                "SOL, CIs) are computed by projlab's dashboard from those times.")

    def _facts(self) -> list[tuple[str, str]]:
        """The formatted facts, or (a report built without them, e.g. dashboard.documents.kernel_report) the summary's."""
        return self.facts or [(k.replace("_", " "), _cell(v)) for k, v in self.summary.items()]

    def _display(self) -> dict[str, pd.DataFrame]:
        return self.display or {name: _numbers(df) for name, df in self.tables.items()}

    def csv(self) -> str:
        return self.tables[self.main_table].to_csv(index=False)

    def json(self) -> str:
        tables = {name: json.loads(df.to_json(orient="records")) for name, df in self.tables.items()}
        return json.dumps({"title": self.title, "source": SOURCE_WORDS.get(self.source, self.source),
                           "summary": render.jsonable(self.summary), "tables": tables}, indent=1)

    def markdown(self) -> str:
        return render.markdown(self.title, self.source_line, self._facts(), self._display(), self.notes)

    def html(self) -> str:
        """Standalone page: plotly.js inline once, every figure interactive, no network needed."""
        specs = [pio.to_json(fig, validate=False, pretty=False) for fig in self.figures]
        template = pio.json.to_json_plotly(pio.templates[figures.REPORT_TEMPLATE].to_plotly_json())
        return render.html(self.title, self.source_line, self._facts(), specs, self._display(), self.notes,
                           get_plotlyjs(), template)

    def write(self, out_dir, formats=("html", "md", "csv", "json"), inputs=()) -> list[Path]:
        """Each format atomically (dashboard.documents.files: never over an input or a run file, never into datasets/)."""
        writers = {"html": self.html, "md": self.markdown, "csv": self.csv, "json": self.json}
        return files.write_files(out_dir, {f"{self.stem}.{fmt}": writers[fmt] for fmt in formats}, inputs)


# --- formatting: numbers a person reads ---------------------------------------------------------------------
def _num(x, fmt: str) -> str:
    return "—" if x is None or pd.isna(x) else format(x, fmt)


def _pct(x) -> str:
    return _num(x, ".1%")


def _us(x) -> str:
    return _num(x, ",.3f")


def _not_scored(row) -> str:
    """Why the gate keeps a shape out, for the ratio cell: 'not scored: incorrect (candidate)'."""
    for role in ("candidate", "baseline"):
        status = row.get(f"status_{role}")
        if isinstance(status, str) and status != scoring.OK:
            return f"not scored: {status.replace('_', ' ')} ({role})"
    return "not scored"


def _shapes_display(wide: pd.DataFrame) -> pd.DataFrame:
    """The compact per-shape table of a report (the full one is the CSV)."""
    usable = wide["usable"] if "usable" in wide else pd.Series(True, index=wide.index)
    return pd.DataFrame({
        "shape": wide["shape"], "method": wide["method"].fillna("—"),
        "baseline µs": wide["baseline_us"].map(_us), "candidate µs": wide["candidate_us"].map(_us),
        "ratio ×": [_num(r["ratio"], ".3f") if ok else _not_scored(r) for ok, (_, r) in zip(usable, wide.iterrows())],
        "paired ratio [95% CI]": views.readable_shapes(wide)["paired_ci"],
        "floor µs": wide["floor_us"].map(_us), "SOL": wide["sol_candidate"].map(_pct),
        "correct": wide["correct"].map(lambda c: "yes" if bool(c) else "NO"),
        **_eager_display(wide)})


def _eager_display(wide: pd.DataFrame) -> dict:
    """Eager (host-inclusive) times beside the graph times, when the run records them (dashboard.model.eager)."""
    if "eager_candidate_us" not in wide or wide[["eager_baseline_us", "eager_candidate_us"]].isna().all().all():
        return {}
    host = [", ".join(side for side, flag in (("baseline", b), ("candidate", c)) if flag)
            for b, c in zip(wide["host_bound_baseline"], wide["host_bound_candidate"])]
    return {"baseline eager µs": wide["eager_baseline_us"].map(_us),
            "candidate eager µs": wide["eager_candidate_us"].map(_us),
            "host > kernel (eager)": [h or "—" for h in host]}


def _loads_display(loads: pd.DataFrame, baseline: str, candidate: str) -> pd.DataFrame:
    out = pd.DataFrame({"load": loads["load"], "ratio ×": loads["ratio"].map(lambda x: _num(x, ".4f"))})
    if "ci_low" in loads:
        out["95% CI"] = [views.ci_text(lo, hi) for lo, hi in zip(loads["ci_low"], loads["ci_high"])]
        out["verdict"] = loads["verdict"]
    out[f"Σw·{baseline} µs"] = loads["baseline_sum_us"].map(lambda x: _num(x, ",.1f"))
    out[f"Σw·{candidate} µs"] = loads["candidate_sum_us"].map(lambda x: _num(x, ",.1f"))
    out["SOL baseline"] = loads["sol_baseline"].map(_pct)
    out["SOL candidate"] = loads["sol_candidate"].map(_pct)
    return out


def _cell(v) -> str:
    return _num(v, ",.4g") if isinstance(v, float) else str(v)


def _numbers(df: pd.DataFrame, fmt: str = ",.3f") -> pd.DataFrame:
    return df.apply(lambda col: col.map(lambda x: _num(x, fmt)) if pd.api.types.is_float_dtype(col) else col)


def _terms_note(keys: list[str], workload) -> render.Note:
    return render.Note("Terms", glossary.markdown(keys, workload), markdown=True)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


# --- building ----------------------------------------------------------------------------------------------------
def build(data: runs.RunData, baseline: str, candidate: str, workload=None, official: pd.DataFrame | None = None,
          source: str = "measured", shape: str | None = None, include_below_floor: bool = False) -> Report:
    """Whole-run report, or a per-shape one when `shape` is a shape key (e.g. 'decode 1/router'). The workload is
    the run's own unless given; `official` (muse_bf16_proj's published table) is joined only for that workload."""
    workload = runs.workload_of(data, workload)
    if shape is not None:
        return _shape_report(data, baseline, candidate, workload, source, shape, include_below_floor)
    return _run_report(data, baseline, candidate, workload, official, source, include_below_floor)


@dataclass
class _Section:
    """One section of a run report: what it adds to each part of the Report (the Report is the sections in order)."""
    summary: dict = field(default_factory=dict)
    facts: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    display: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    notes: list = field(default_factory=list)


@dataclass
class _RunContext:
    """What every section of one run's report reads: the run, the pair, and the tables derived once."""
    data: runs.RunData
    baseline: str
    candidate: str
    workload: object
    official: pd.DataFrame | None
    source: str
    include_below_floor: bool
    label: str
    table: pd.DataFrame        # runs.shape_table
    wide: pd.DataFrame         # views.wide_shapes of the pair, every shape (the gate over all of them)
    env: dict

    @property
    def tag(self) -> str:
        return SOURCE_WORDS.get(self.source, self.source)

    @property
    def measured(self) -> bool:
        return self.source == "measured"


def _header_section(c: _RunContext) -> _Section:
    summary = {"run": c.label, "status": c.data.run.get("status", "complete"), "gpu": c.env.get("gpu", "—"),
               "created_utc": c.data.run.get("created_utc", "—"), "baseline": c.baseline, "candidate": c.candidate,
               "workload": c.workload.name}
    if c.data.workload_note:
        summary["workload_note"] = c.data.workload_note
    device_word = "Device" if devices.of_run(c.data.run).is_cpu else "GPU"
    facts = [("Run", f"{c.label} ({c.data.path.name})"), ("Status", summary["status"]), (device_word, summary["gpu"]),
             ("Workload", workloads.describe(c.workload) + (" — assumed: the run does not record its workload"
                                                            if c.data.workload_note else "")),
             ("Created (UTC)", summary["created_utc"]), ("Baseline", c.baseline), ("Candidate", c.candidate)]
    return _Section(summary=summary, facts=facts)


def _load_times_section(c: _RunContext) -> _Section:
    scored_wide = c.wide[c.wide["load"].isin(c.workload.load_order)]
    if not len(scored_wide):
        return _Section()
    sides = {c.baseline: "baseline_us", c.candidate: "candidate_us"}
    return _Section(figures=[figures.load_time_bars(scored_wide, sides, f"{c.tag}; Σ floor derived",
                                                    c.workload.load_order, floor_col="floor_us")])


def _score_section(c: _RunContext) -> _Section:
    """The score, its interval and verdict where the run has samples, and the per-load table; or why there is none."""
    try:
        breakdown = runs.run_score(c.data, c.baseline, c.candidate, c.workload, c.include_below_floor)
    except scoring.ScoringError as exc:
        text = str(exc) if isinstance(exc, scoring.NoScore) else f"no score: {exc}"
        return _Section(summary={"score": text}, facts=[("Score", text)])
    out = _Section(summary={"score": breakdown.score, "time_saved": breakdown.time_saved,
                            "score_equivalent_baseline_us": breakdown.equiv_baseline_us,
                            "score_equivalent_candidate_us": breakdown.equiv_candidate_us,
                            "accuracy": breakdown.accuracy, "screen": breakdown.screen})
    out.facts.append(("Score (derived)", f"{breakdown.score:.4f}× (geometric mean of the {len(breakdown.loads)} load "
                                         f"ratios)"
                                         + (f" — {breakdown.accuracy}" if breakdown.accuracy else "")
                                         + (f" — {breakdown.screen}" if breakdown.screen else "")))
    weights = scoring.family_weights(c.workload)
    loads = breakdown.loads.merge(views.load_sol(c.wide, weights), on="load", how="left")
    if c.data.results["samples_us"].map(lambda s: isinstance(s, list) and len(s) > 0).all():
        cmp = compare.compare_candidates(c.data.results, c.baseline, [c.candidate], c.label, weights,
                                         failures=c.data.failures, include_below_floor=c.include_below_floor,
                                         gpu=noise.gpu_model(c.data), own=noise.own_for(c.data))
        o = cmp.overall.iloc[0]
        out.summary.update({"score_ci_low": o["ci_low"], "score_ci_high": o["ci_high"], "verdict": o["verdict"]})
        out.facts.append(("Score 95% CI (derived)", f"{views.ci_text(o['ci_low'], o['ci_high'])} — {o['verdict']} "
                                                    f"({o['band_source'] or 'no band: not scored'})"))
        loads = loads.merge(cmp.loads[["load", "ci_low", "ci_high", "verdict"]], on="load", how="left")
    out.facts += [("Time saved (derived)", f"{breakdown.time_saved:.2%} of the aggregate time"),
                  (f"Score-equivalent time, {c.baseline} (derived)", f"{breakdown.equiv_baseline_us:,.1f} µs"),
                  (f"Score-equivalent time, {c.candidate} (derived)", f"{breakdown.equiv_candidate_us:,.1f} µs")]
    out.tables["loads"] = loads
    out.display["Per load"] = _loads_display(loads, c.baseline, c.candidate)
    out.figures.append(figures.ratio_bars(loads.assign(label=loads["load"]), f"{c.tag}; ratios derived"))
    return out


def _shapes_section(c: _RunContext) -> _Section:
    return _Section(tables={"shapes": c.wide},
                    display={"Per shape (compact; every column is in the CSV)": _shapes_display(c.wide)})


def _eager_section(c: _RunContext) -> _Section:
    out = _Section()
    if eager.has_eager(c.table):
        out.summary["host_bound_results"] = int(c.wide["host_bound_baseline"].sum()
                                                + c.wide["host_bound_candidate"].sum())
    host = eager.host_bound_text(c.wide, c.baseline, c.candidate)
    if host:
        out.notes.append(render.Note("Eager vs graph (measured)", host))
    return out


def _roofline_section(c: _RunContext) -> _Section:
    out = _Section()
    curve = runs.probe_curve(c.data)
    if curve is not None:
        colors = figures.series_colors([c.baseline, c.candidate, *c.data.candidates()], c.baseline)
        pts = views.roofline_points(c.table, [c.baseline, c.candidate])
        device = devices.device_of(c.data.run) or (devices.WRITEUP_DEVICE if c.source == sources.PUBLISHED else None)
        out.figures += [roofline_figures.roofline(pts, curve.tbps_max_point, c.data.run.get("compute_peak_tflops"), c.tag,
                                         colors=colors, hollow=(c.baseline,), device=device),
                        roofline_figures.time_vs_floor(pts, c.tag, colors)]
    if c.measured and not c.data.probes.empty:
        out.figures.append(roofline_figures.probe_curve(c.data.probes, None, "measured"))
    return out


def _library_section(c: _RunContext) -> _Section:
    lib, lib_notes = library_ceiling.ceiling(library_ceiling.with_dtypes(c.wide, c.workload),
                                             gpu=c.env.get("gpu") if c.measured else None)
    out = _Section(notes=[render.Note("Library ceiling", " ".join([library_ceiling.caption(lib), *lib_notes]))])
    if len(lib):
        out.tables["library ceiling"] = lib
        out.display["Library ceiling: cuBLASLt asked well (its search benchmark, measured; not this run)"] = \
            _numbers(lib.drop(columns=["load", "family", "N", "K", "cublaslt_version"]))
    return out


def _official_section(c: _RunContext) -> _Section:
    """The run's times beside the published official table, where the run measured muse_bf16_proj."""
    muse_only = workloads.official_only(c.workload)
    if not c.measured:
        return _Section()
    if muse_only is not None:
        return _Section(summary={"official_table": muse_only},
                        notes=[render.Note("Official table", f"Not shown: {muse_only}.")])
    side = views.local_vs_official(c.table, c.official) if c.official is not None else pd.DataFrame()
    if not len(side):
        return _Section()
    return _Section(tables={"local vs official": side},
                    display={"Local (measured) vs official (published); different baselines": _numbers(side)})


def _clock_section(c: _RunContext) -> _Section:
    """What the run's device says about its times (a CPU's include host dispatch; a plan tuned elsewhere), and its
    clocks."""
    if not c.measured:
        return _Section()
    notes = [render.Note("Device", line.strip()) for line in summary_text.device_lines(c.data.run, c.data.results)]
    clock = views.clock_summary(c.data.run)
    facts = [("SM clock while measuring", views.mhz_range(clock))] if clock["sm_min_mhz"] is not None else []
    return _Section(facts=facts, notes=notes + [render.Note("Clock and throttling (measured)", views.clock_text(clock))])


def _sol_over_section(c: _RunContext) -> _Section:
    over = views.sol_over_100(c.wide)
    if not len(over):
        return _Section()
    return _Section(notes=[render.Note("SOL above 100%", f"{len(over)} point(s): "
                                       + ", ".join(f"{r.shape} {r.side} {r.sol:.1%}" for r in over.itertuples())
                                       + ". " + glossary.short("sol_over"))])


def _environment_section(c: _RunContext) -> _Section:
    if not len(c.data.environment):
        return _Section()
    env = c.data.environment.astype(str)
    return _Section(tables={"environment": env}, display={"Environment (measured)": env})


def _step_section(c: _RunContext) -> _Section:
    """A step run: the decode step beside the layer's shapes (dashboard.documents.step_report)."""
    if not step.has_step(c.data.run):
        return _Section()
    from dashboard.documents.step_report import add_step_section

    out = _Section()
    add_step_section(c.data, out.tables, out.display, out.figures, out.notes)
    return out


def _terms_section(c: _RunContext) -> _Section:
    official_terms = ["baselines"] if workloads.official_only(c.workload, "this run") is None else []
    eager_terms = ["eager"] if eager.has_eager(c.table) else []
    return _Section(notes=[_terms_note(["provenance", "ratio", "ci", "sigma_w", "score", "flags", *eager_terms,
                                       "floor", "sol", "sol_over", "verdicts", *official_terms, "clock"],
                                      c.workload)])


# A run report, section by section, in the order it reads.
RUN_SECTIONS = (_header_section, _load_times_section, _score_section, _shapes_section, _eager_section,
                _roofline_section, _library_section, _official_section, _clock_section, _sol_over_section,
                _environment_section, _step_section, _terms_section)


def _run_report(data, baseline, candidate, workload, official, source, include_below_floor=False) -> Report:
    label = data.run.get("label", data.path.stem)
    table = runs.shape_table(data, workload)
    scored = bool(data.results["load"].isin(workload.load_order).any())  # else a nearby-only run: gate them all
    gate = runs.pair_gate(data, baseline, candidate, workload, include_below_floor, scored_only=scored)
    wide = views.wide_shapes(table, data.pairs, baseline, candidate,
                             runs.pair_gate(data, baseline, candidate, workload, include_below_floor, False))
    ctx = _RunContext(data, baseline, candidate, workload, official, source, include_below_floor, label, table, wide,
                      data.run.get("environment", {}))
    whole = _Section()
    for section in RUN_SECTIONS:
        part = section(ctx)
        whole.summary |= part.summary
        whole.facts += part.facts
        whole.tables |= part.tables
        whole.display |= part.display
        whole.figures += part.figures
        whole.notes += part.notes
    return Report(f"projlab report — {label}: {candidate} vs {baseline}", slug(f"{label}_{candidate}_vs_{baseline}"),
                  source, whole.summary, whole.tables, whole.figures, facts=whole.facts, display=whole.display,
                  notes=whole.notes, gate=gate)


def _shape_report(data, baseline, candidate, workload, source, shape, include_below_floor=False) -> Report:
    label = data.run.get("label", data.path.stem)
    table = runs.shape_table(data, workload)
    rows = table[table["shape"] == shape]
    if rows.empty:
        raise ValueError(f"{data.path.name}: no results for shape {shape!r}; known: "
                         f"{list(dict.fromkeys(table['shape']))[:6]} ...")
    first = rows.iloc[0]
    summary = {"run": label, "shape": shape, "M": int(first["M"]), "N": int(first["N"]), "K": int(first["K"]),
               "bytes": int(first["bytes"]), "flops": int(first["flops"]),
               "intensity_flop_per_byte": float(first["intensity_flop_per_byte"]),
               "floor_us": float(first["floor_us"]), "bound": str(first["bound"])}
    facts = [("Run", f"{label} ({data.path.name})"), ("Shape", f"{shape}: M={summary['M']}, N={summary['N']:,}, "
                                                              f"K={summary['K']:,}"),
             ("Bytes moved", f"{summary['bytes'] / views.BYTES_PER_MB:,.2f} MB"),
             ("Work", f"{summary['flops'] / views.FLOP_PER_GFLOP:,.3f} GFLOP "
                      f"({summary['intensity_flop_per_byte']:.2f} FLOP/B)"),
             ("Floor (derived)", f"{summary['floor_us']:.3f} µs, {summary['bound']}-bound")]
    cols = [c for c in ("candidate", "method", "median_us", "ci_low_us", "ci_high_us", "n_samples", "correct",
                        "sol", "flags") if c in rows]
    cands = rows[cols].copy()
    cands["flags"] = cands["flags"].map(lambda f: ", ".join(f) if isinstance(f, list) else "")
    res = data.results[data.results["shape"] == shape]
    samples = {r.candidate: list(r.samples_us) for r in res.itertuples()
               if isinstance(r.samples_us, list) and r.samples_us}
    if {baseline, candidate} <= set(res["candidate"]):
        sub = res[res["candidate"].isin([baseline, candidate])]
        cmp = compare.compare_candidates(sub, baseline, [candidate], label, scoring.family_weights(workload),
                                         scored_only=False, include_below_floor=include_below_floor,
                                         gpu=noise.gpu_model(data), own=noise.own_for(data))
        s = cmp.shapes.iloc[0]
        summary.update({"baseline": baseline, "candidate": candidate, "ratio": float(s["ratio"]),
                        "ratio_ci_low": float(s["ci_low"]), "ratio_ci_high": float(s["ci_high"]),
                        "verdict": s["verdict"]})
        facts.append((f"{candidate} vs {baseline} (derived)",
                      f"{s['ratio']:.4f}× [95% CI {views.ci_text(s['ci_low'], s['ci_high'])}] — {s['verdict']} "
                      f"({s['band_source']})" if pd.notna(s["ratio"]) else
                      f"no ratio: {s['verdict']}"))
    tag = SOURCE_WORDS.get(source, source)
    colors = figures.series_colors([baseline, candidate, *data.candidates()], baseline)
    figs = []
    if samples:
        figs.append(figures.samples_figure(samples, summary["floor_us"], f"{shape}: timing samples", tag, colors))
    figs.append(roofline_figures.time_vs_floor(rows, tag, colors))
    shown = pd.DataFrame({"candidate": cands["candidate"], "method": cands.get("method", "—"),
                          "median µs": cands["median_us"].map(_us),
                          "95% CI µs": [views.ci_text(lo, hi, 3) for lo, hi in
                                        zip(cands.get("ci_low_us", pd.Series(index=cands.index, dtype=float)),
                                            cands.get("ci_high_us", pd.Series(index=cands.index, dtype=float)))],
                          "samples": cands.get("n_samples", "—"), "SOL": cands["sol"].map(_pct),
                          "correct": cands["correct"].map(lambda c: "yes" if bool(c) else "NO"),
                          "flags": cands["flags"]})
    lib, _ = library_ceiling.ceiling(library_ceiling.with_dtypes(rows.head(1), workload),
                                     gpu=data.run.get("environment", {}).get("gpu") if source == "measured" else None)
    if len(lib):
        c = lib.iloc[0]
        summary.update({"library_ceiling_x": float(c["ceiling_x"]), "library_best_us": float(c["library_us"]),
                        "library_torch_linear_us": float(c["torch_linear_us"]), "library_source": c["source"]})
        facts.append(("Library ceiling (cuBLASLt search, measured; not this run)",
                      f"torch_linear {c['torch_linear_us']:.2f} µs, the library's best {c['library_us']:.2f} µs "
                      f"({c['library_route']}: {c['library_config']}) = {c['ceiling_x']:.3f}× ({c['source']})"))
    notes = [_terms_note(["provenance", "ratio", "ci", "floor", "sol", "flags", "verdicts"], workload)]
    return Report(f"projlab shape report — {label}: {shape}", slug(f"{label}_{shape}"), source, summary,
                  {"candidates": cands}, figs, main_table="candidates", facts=facts,
                  display={"Candidates at this shape": shown}, notes=notes)


def build_from_path(path, baseline: str | None = None, candidate: str | None = None, shape: str | None = None,
                    workload=None, include_below_floor: bool = False) -> Report:
    """Report for a run file (.json) or an official-format per-shape table (.csv); the pair from
    dashboard.model.sources.resolve_pair (only --candidate: the baseline it was paired with)."""
    from datasets import load_official, load_workload

    path = Path(path)
    official = load_official(workload=load_workload())   # the published table is muse_bf16_proj's
    if path.suffix.lower() == ".csv":
        src = sources.table_source(path)
        data = sources.load(src, workload)
        return build(data, "baseline", sources.table_candidate(src), workload, official, src.provenance, shape)
    data = runs.load_run_data(path, workload)
    workload = data.workload
    if kernels.is_explain_run(data.run):
        raise ValueError(f"{path.name} is an explain run: its report is the kernel breakdown "
                         "(dashboard.documents.kernel_report; `python -m dashboard report` writes it)")
    baseline, candidate = sources.resolve_pair(data, baseline, candidate)
    return build(data, baseline, candidate, workload, official, "measured", shape, include_below_floor)
