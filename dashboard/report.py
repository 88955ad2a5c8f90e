"""Whole-run and per-shape reports: standalone HTML (interactive figures, plotly.js inline so it opens offline),
Markdown, CSV and JSON. Headless: `python -m dashboard report RUN.json|official.csv --out DIR`.

A report only arranges what dashboard/ computed (runs, scoring, views, compare) and figures drew.
"""
from __future__ import annotations

import argparse
import html as html_lib
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from dashboard import compare, figures, kernels, runs, scoring, views

SOURCE_WORDS = {"measured": "measured (run file)", "published": "published (write-up, official run)",
                "uploaded": "uploaded table (as given)"}
EXIT_BAD_INPUT = 2


@dataclass
class Report:
    title: str
    stem: str
    source: str
    summary: dict
    tables: dict[str, pd.DataFrame]
    figures: list[go.Figure] = field(default_factory=list)
    main_table: str = "shapes"

    def csv(self) -> str:
        return self.tables[self.main_table].to_csv(index=False)

    def json(self) -> str:
        tables = {name: json.loads(df.to_json(orient="records")) for name, df in self.tables.items()}
        return json.dumps({"title": self.title, "source": SOURCE_WORDS.get(self.source, self.source),
                           "summary": _jsonable(self.summary), "tables": tables}, indent=1)

    def markdown(self) -> str:
        lines = [f"# {self.title}", "", f"Source: {SOURCE_WORDS.get(self.source, self.source)}. Derived numbers "
                 "(ratios, scores, floors, SOL) are computed by projlab's dashboard from those times.", ""]
        lines += [f"- **{k}**: {_fmt(v)}" for k, v in self.summary.items()]
        for name, df in self.tables.items():
            lines += ["", f"## {name}", "", _md_table(df)]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """Standalone page: plotly.js inline once, every figure interactive, no network needed."""
        parts = [f"<h1>{_e(self.title)}</h1>",
                 f"<p class='src'>Source: {_e(SOURCE_WORDS.get(self.source, self.source))}. Derived numbers are "
                 "computed by projlab's dashboard from those times.</p>", "<dl>"]
        parts += [f"<dt>{_e(k)}</dt><dd>{_e(_fmt(v))}</dd>" for k, v in self.summary.items()]
        parts.append("</dl>")
        for fig in self.figures:
            parts.append(fig.to_html(full_html=False, include_plotlyjs=False, default_width="100%"))
        for name, df in self.tables.items():
            parts += [f"<h2>{_e(name)}</h2>", df.to_html(index=False, na_rep="—", float_format=_float,
                                                         classes="tbl", border=0)]
        return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                f"<title>{_e(self.title)}</title><script type='text/javascript'>{get_plotlyjs()}</script>"
                "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}.src{color:#555}"
                "dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:bold}"
                ".tbl{border-collapse:collapse;font-size:.85em}.tbl td,.tbl th{padding:2px 8px;"
                "border-bottom:1px solid #ddd;text-align:right}</style></head><body>"
                + "\n".join(parts) + "</body></html>")

    def write(self, out_dir, formats=("html", "md", "csv", "json")) -> list[Path]:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        writers = {"html": self.html, "md": self.markdown, "csv": self.csv, "json": self.json}
        paths = []
        for fmt in formats:
            path = out_dir / f"{self.stem}.{fmt}"
            path.write_text(writers[fmt](), encoding="utf-8")
            paths.append(path)
        return paths


# --- formatting helpers ----------------------------------------------------------------------------------------
def _e(text) -> str:
    return html_lib.escape(str(text))


def _float(x: float) -> str:
    return f"{x:.4g}" if abs(x) >= 1e5 or (x != 0 and abs(x) < 1e-3) else f"{x:.4f}"


def _fmt(v) -> str:
    if isinstance(v, float):
        return "—" if not math.isfinite(v) else _float(v)
    return str(v)


def _jsonable(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _md_table(df: pd.DataFrame) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "—" if not math.isfinite(v) else _float(v)
        return str(v).replace("|", "\\|")
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


# --- building ----------------------------------------------------------------------------------------------------
def build(data: runs.RunData, baseline: str, candidate: str, workload, official: pd.DataFrame | None = None,
          source: str = "measured", shape: str | None = None) -> Report:
    """Whole-run report, or a per-shape one when `shape` is a shape key (e.g. 'decode 1/router')."""
    if shape is not None:
        return _shape_report(data, baseline, candidate, workload, source, shape)
    return _run_report(data, baseline, candidate, workload, official, source)


def _run_report(data, baseline, candidate, workload, official, source) -> Report:
    label = data.run.get("label", data.path.stem)
    table = runs.shape_table(data, workload)
    wide = views.wide_shapes(table, data.pairs, baseline, candidate)
    env = data.run.get("environment", {})
    summary = {"run": label, "status": data.run.get("status", "complete"), "gpu": env.get("gpu", "—"),
               "created_utc": data.run.get("created_utc", "—"), "baseline": baseline, "candidate": candidate}
    tables: dict[str, pd.DataFrame] = {}
    tag = SOURCE_WORDS.get(source, source)
    figs = [figures.load_time_bars(wide, {baseline: "baseline_us", candidate: "candidate_us"}, tag,
                                   workload.load_order)]
    try:
        bd = runs.run_score(data, baseline, candidate, workload)
    except scoring.ScoringError as exc:
        summary["score"] = f"not scored: {exc}"
        bd = None
    if bd is not None:
        summary.update({"score": bd.score, "time_saved": f"{bd.time_saved:.2%}",
                        "score_equivalent_baseline_us": bd.equiv_baseline_us,
                        "score_equivalent_candidate_us": bd.equiv_candidate_us})
        loads = bd.loads.merge(views.load_sol(wide, scoring.family_weights(workload)), on="load", how="left")
        has_samples = data.results["samples_us"].map(lambda s: isinstance(s, list) and len(s) > 0).all()
        if has_samples:
            cmp = compare.compare_candidates(data.results[data.results["load"] != "nearby"], baseline,
                                             [candidate], label, scoring.family_weights(workload))
            o = cmp.overall.iloc[0]
            summary.update({"score_ci_low": o["ci_low"], "score_ci_high": o["ci_high"], "verdict": o["verdict"]})
            loads = loads.merge(cmp.loads[["load", "ci_low", "ci_high", "verdict"]], on="load", how="left")
        tables["loads"] = loads
        figs.append(figures.ratio_bars(loads.assign(label=loads["load"]), f"{tag}; ratios derived"))
    tables["shapes"] = wide
    curve = runs.probe_curve(data)
    if curve is not None:
        pts = views.roofline_points(table, [baseline, candidate])
        figs += [figures.roofline(pts, curve.tbps_max_point, data.run.get("compute_peak_tflops"), tag),
                 figures.time_vs_floor(pts, tag)]
    if source == "measured" and not data.probes.empty:
        figs.append(figures.probe_curve(data.probes, None, "measured"))
    if source == "measured" and official is not None:
        side = views.local_vs_official(table, official)
        if len(side):
            tables["local vs official"] = side
    if len(data.environment):
        tables["environment"] = data.environment.astype(str)
    return Report(f"projlab report — {label}: {candidate} vs {baseline}", _slug(f"{label}_{candidate}_vs_{baseline}"),
                  source, summary, tables, figs)


def _shape_report(data, baseline, candidate, workload, source, shape) -> Report:
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
    cols = [c for c in ("candidate", "method", "median_us", "ci_low_us", "ci_high_us", "n_samples", "correct",
                        "sol", "flags") if c in rows]
    cands = rows[cols].copy()
    cands["flags"] = cands["flags"].map(lambda f: ", ".join(f) if isinstance(f, list) else "")
    res = data.results[data.results["shape"] == shape]
    samples = {r.candidate: list(r.samples_us) for r in res.itertuples()
               if isinstance(r.samples_us, list) and r.samples_us}
    if {baseline, candidate} <= set(res["candidate"]):
        sub = res[res["candidate"].isin([baseline, candidate])]
        cmp = compare.compare_candidates(sub, baseline, [candidate], label, scoring.family_weights(workload))
        s = cmp.shapes.iloc[0]
        summary.update({"baseline": baseline, "candidate": candidate, "ratio": float(s["ratio"]),
                        "ratio_ci_low": float(s["ci_low"]), "ratio_ci_high": float(s["ci_high"]),
                        "verdict": s["verdict"]})
    tag = SOURCE_WORDS.get(source, source)
    figs = []
    if samples:
        figs.append(figures.samples_figure(samples, summary["floor_us"], f"{shape}: timing samples", tag))
    figs.append(figures.time_vs_floor(rows, tag))
    return Report(f"projlab shape report — {label}: {shape}", _slug(f"{label}_{shape}"), source, summary,
                  {"candidates": cands}, figs, main_table="candidates")


def build_from_path(path, baseline: str | None = None, candidate: str | None = None, shape: str | None = None,
                    workload=None) -> Report:
    """Report for a run file (.json) or an official-format per-shape table (.csv)."""
    from datasets import load_official, load_seed_probes, load_workload

    path = Path(path)
    workload = workload or load_workload()
    official = load_official(workload=workload)
    if path.suffix.lower() == ".csv":
        table = load_official(path, workload)
        is_official = path.resolve() == Path(runs.RUNS_DIR).parent.joinpath("official_036.csv").resolve()
        name = views.OFFICIAL_CANDIDATE if is_official else "candidate"
        data = views.official_run_data(table, load_seed_probes(), path, candidate=name)
        return build(data, "baseline", name, workload, official, "published" if is_official else "uploaded", shape)
    data = runs.load_run_data(path)
    if kernels.is_explain_run(data.run):  # an explain run: its kernel breakdown (dashboard.kernel_report)
        from dashboard import kernel_report

        return kernel_report.build_report(kernels.from_run_data(data), workload, candidate, shape)
    if baseline is None or candidate is None:
        pairs = runs.candidate_pairs(data)
        if not pairs:
            raise ValueError(f"{path.name}: needs results for two candidates (found {data.candidates()})")
        baseline, candidate = pairs[0]
    return build(data, baseline, candidate, workload, official, "measured", shape)


def main(argv: list[str] | None = None) -> int:
    """`python -m dashboard report RUN --out DIR`: write the report in every format; bad input → exit 2."""
    from datasets import DatasetError
    from profiler.runfile import RunFileError

    p = argparse.ArgumentParser(prog="python -m dashboard report", description=__doc__.splitlines()[0])
    p.add_argument("path", help="a run file (datasets/runs/*.json) or an official-format per-shape CSV")
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--baseline", help="baseline candidate in the run (default: the run's first pair)")
    p.add_argument("--candidate", help="candidate in the run (default: the run's first pair)")
    p.add_argument("--shape", help="write a per-shape report for this key, e.g. 'decode 1/router'")
    p.add_argument("--format", default="html,md,csv,json", help="comma-separated subset of html,md,csv,json")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    bad = sorted(set(formats) - {"html", "md", "csv", "json"})
    try:
        if bad:
            raise ValueError(f"unknown format(s) {bad}; choose from html, md, csv, json")
        if not Path(args.path).is_file():
            raise ValueError(f"{args.path}: no such file")
        rep = build_from_path(args.path, args.baseline, args.candidate, args.shape)
        paths = rep.write(args.out, formats)
    except (DatasetError, RunFileError, scoring.ScoringError, ValueError, KeyError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in paths:
        print(path)
    return 0
