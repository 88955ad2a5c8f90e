"""The noise model: how far two timings of the identical route read apart, and the verdict that follows from it.
Every FAST / SLOW / SAME / AMBIGUOUS in projlab (Compare page, Overview, reports, RESULTS.md, `python -m dashboard
compare`, the tuner, the canary) is `verdict(ci_low, ci_high, band)` with a `Band` looked up by
datasets.noise_model (below profiler/, so every layer asks the same model); this module derives the bands it reads.
Nothing else holds a "within noise" number.

Components (a route is a method label with its config, e.g. `gemv_wide BN=1 BK=8192 ...` or `torch_linear`, on one
GPU model):

- **Interval** (sampling noise): the 95% percentile bootstrap of the ratio (dashboard.model.compare). Two candidates of one
  run are paired by round (the profiler times them in alternating rounds); series of different runs are resampled
  independently.
- **Within-run band** (`WITHIN`): how far the identical route reads from itself inside one sweep — two candidates of
  one run dispatching the same route at a shape (e.g. `best` falling back to `torch_linear` beside `baseline`), and
  the repeatability runs that time one plan twice (`baseline` and `baseline#2`) or two controls. Used for a
  comparison inside one run.
- **Cross-run band** (`ACROSS`): how far the identical route reads between two sweeps of the same GPU model — the
  back-to-back sweeps of one commit, and every pair of committed sweeps where a candidate kept its route. It is the
  within-run noise and the between-run drift (buffer placement, clocks, the process) measured together, so a
  comparison of raw times across runs uses it in place of the within-run band.
- **Relative cross-run band** (`ACROSS_RR`): the same, for each side relative to its own run's `baseline` (ratio of
  ratios). A run's drift moves its baseline too, so most of it cancels; used where both runs hold the `baseline`
  plan on the same routes and neither compared side is that baseline.

Each band is derived (`derive`) from the committed run files, never typed: every pair of points of the identical
route (per shape; per load: every shape of the load on the same routes; overall: every scored shape) gives a
deviation max(a, b) ÷ min(a, b) − 1. A level's band is the QUANTILE of those deviations, rounded up to 0.1 %:
the largest seen per load and overall (no identical pair in the evidence reads FAST or SLOW there), the 99th
percentile per shape (thousands of pairs, where a few disturbed sweeps would otherwise set the band for all).
Per shape the band is kept per family and M range, per load per M range, when at least MIN_RUNS run files stand
behind it; otherwise the level's pooled band applies. A device without evidence gets no band from another device:
its comparisons use the run's own repeat (`own_bands`: e.g. `baseline` and `baseline#2` of one run) or read
NO VERDICT, "no repeat evidence on <device>", with how to make some.

The evidence is costly to gather (every sweep is read), so `python -m dashboard noise --out dashboard/model/noise_bands.json`
writes it to BANDS_FILE, with the run files behind every band; `tests/dashboard/test_noise.py` regenerates it and
compares, like RESULTS.md.

Verdicts, in nvbench's style, for a ratio interval [lo, hi] and a band ±b: FAST when lo > 1 + b, SLOW when
hi < 1 − b, SAME when the interval lies inside [1 − b, 1 + b], AMBIGUOUS otherwise; NO SAMPLES without an interval;
NO VERDICT without a band. A shape whose two sides ran the identical route (same route, same GPU model) is SAME ROUTE whatever it reads: its
difference is drift, never a speedup.
"""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd

from datasets import NEARBY_LOAD
from datasets.noise_model import (MIN_PAIRS, ACROSS, ACROSS_RR, AMBIGUOUS, ANY_GPU, BANDS_FILE, COMMAND, FAST, JUDGED, KIND_WORDS,
                                  KINDS, LEVELS, LOAD, M_RANGES, MIN_RUNS, MODE_WORDS, NO_SAMPLES, NO_VERDICT,
                                  OVERALL, POOLED, QUANTILE, ROUND_TO, SAME, SAME_ROUTE, SHAPE, SLOW, WITHIN, Band,
                                  NoiseError, band, ceil_band, files, fixed, has_evidence, headline, m_range,
                                  shape_key, summary_rows, verdict)
from dashboard.model import run_kinds, runs, scoring

RUN_BASELINE = "baseline"   # the `baseline` plan (F.linear for every family): the reference of a ratio of ratios

__all__ = ["ACROSS", "ACROSS_RR", "AMBIGUOUS", "ANY_GPU", "BANDS_FILE", "COMMAND", "FAST", "JUDGED", "KIND_WORDS",
           "KINDS", "LEVELS", "LOAD", "M_RANGES", "MIN_RUNS", "MODE_WORDS", "NO_SAMPLES", "NO_VERDICT", "OVERALL",
           "POOLED", "QUANTILE", "ROUND_TO", "SAME", "SAME_ROUTE", "SHAPE", "SLOW", "WITHIN", "Band", "NoiseError",
           "band", "files", "fixed", "has_evidence", "headline", "m_range", "shape_key", "summary_rows", "verdict",
           "RUN_BASELINE", "derive", "evidence", "own_bands", "own_for", "sweeps", "render", "repeat_pairs", "gpu_model"]


# ---- the evidence ---------------------------------------------------------------------------------------------

def repeat_pairs(data: runs.RunData) -> list[tuple[str, str]]:
    """(first, second) candidates of a run that time one plan against itself ('baseline' vs 'baseline#2')."""
    names = data.candidates()
    return [(b, c) for c in names for b in names if c != b and c.split("#", 1)[0] == b]


def gpu_model(data: runs.RunData) -> str:
    env = data.run.get("environment") or {}
    return str(env.get("gpu") or "") if isinstance(env, dict) else ""


def _routes(data: runs.RunData) -> pd.DataFrame:
    """One row per (candidate, scored shape) timed correctly and usable: candidate, load, family, M, route, us."""
    res = data.results
    if not len(res) or "method" not in res:
        return pd.DataFrame(columns=["candidate", "load", "family", "M", "route", "us"])
    res = scoring.with_status(res[res["load"] != NEARBY_LOAD])
    routed = [isinstance(m, str) and m != "" for m in res["method"]]
    res = res[(res["status"] == scoring.OK).to_numpy() & np.asarray(routed, dtype=bool)]
    return pd.DataFrame({"candidate": res["candidate"].to_numpy(), "load": res["load"].to_numpy(),
                         "family": res["family"].to_numpy(), "M": res["M"].astype(int).to_numpy(),
                         "route": res["method"].to_numpy(), "us": res["median_us"].astype(float).to_numpy()})


def _dev(a: float, b: float) -> float:
    return max(a, b) / min(a, b) - 1


def _pairs(entries: list[tuple], kind_rr: bool) -> list[tuple[str, float, str, str]]:
    """(kind, deviation, run a, run b) for every pair of entries (run, candidate, value) of the identical route."""
    out = []
    for (ra, ca, va), (rb, cb, vb) in itertools.combinations(entries, 2):
        if ra == rb:
            if kind_rr or ca == cb:
                continue
            out.append((WITHIN, _dev(va, vb), ra, rb))
        else:
            out.append((ACROSS_RR if kind_rr else ACROSS, _dev(va, vb), ra, rb))
    return out


def _sides(data: runs.RunData, table: pd.DataFrame, weights: dict, loads: list[str], families: list[str]):
    """Per candidate of one run: {(level, key tuple): (route signature, value, value relative to the baseline)}."""
    if table.empty:
        return {}
    t = table.assign(w=table["family"].map(lambda f: weights.get(f, 1.0)))
    base = t[t["candidate"] == RUN_BASELINE].set_index(["load", "family"])
    out = {}
    for cand, g in t.groupby("candidate", sort=False):
        rel_ok = cand != RUN_BASELINE and len(base)
        load_vals, complete = {}, True
        for row in g.itertuples(index=False):
            b = base.loc[(row.load, row.family)] if rel_ok and (row.load, row.family) in base.index else None
            rel = (row.us / float(b["us"]), str(b["route"])) if b is not None else None
            out.setdefault(cand, []).append((SHAPE, (row.load, row.family, row.M), (row.route,), row.us, rel))
        for load in loads:
            sub = g[g["load"] == load].set_index("family")
            if set(sub.index) != set(families):
                complete = False
                continue
            sig = tuple(sub.loc[f, "route"] for f in families)
            val = float((sub["w"] * sub["us"]).sum())
            rel = None
            bsub = base.loc[load] if rel_ok and load in base.index.get_level_values(0) else None
            if bsub is not None and set(bsub.index) == set(families):
                rel = (val / float((bsub["w"] * bsub["us"]).sum()), tuple(bsub.loc[f, "route"] for f in families))
            load_vals[load] = (sig, val, rel)
            out[cand].append((LOAD, (load, int(sub["M"].iloc[0])), sig, val, rel))
        if complete and load_vals:
            sig = tuple(load_vals[lo][0] for lo in loads)
            val = math.exp(np.mean([math.log(load_vals[lo][1]) for lo in loads]))
            rels = [load_vals[lo][2] for lo in loads]
            rel = None if any(r is None for r in rels) else (
                math.exp(np.mean([math.log(r[0]) for r in rels])), tuple(r[1] for r in rels))
            out[cand].append((OVERALL, (), sig, val, rel))
    return out


def evidence(datas) -> pd.DataFrame:
    """Every pair of points of the identical route among the sweeps `datas` (RunData): kind, level, gpu, key,
    dev, run_a, run_b. Runs of different workloads never pair at a load or overall (their loads differ)."""
    groups: dict[tuple, list] = {}
    for data in datas:
        wl = data.workload or runs.workload_of(data)
        table = _routes(data)
        weights = scoring.family_weights(wl)
        sides = _sides(data, table, weights, list(wl.load_order), list(wl.family_order))
        gpu, name = gpu_model(data), data.path.name
        for cand, points in sides.items():
            for level, where, sig, val, rel in points:
                key = (gpu, wl.name, level, where, sig)
                groups.setdefault(key + (False,), []).append((name, cand, val))
                if rel is not None:
                    groups.setdefault(key + (rel[1], True), []).append((name, cand, rel[0]))
    rows = []
    for key, entries in groups.items():
        gpu, _, level, where = key[:4]
        rr = key[-1]
        if level == SHAPE:
            band_key = shape_key(where[1], where[2])
        elif level == LOAD:
            band_key = m_range(where[1])
        else:
            band_key = POOLED
        for kind, dev, ra, rb in _pairs(entries, rr):
            rows.append((kind, level, gpu, band_key, dev, ra, rb))
    return pd.DataFrame(rows, columns=["kind", "level", "gpu", "key", "dev", "run_a", "run_b"])


def _band_entry(points: pd.DataFrame, level: str, index: dict) -> dict:
    files = sorted(set(points["run_a"]) | set(points["run_b"]))
    return {"band": ceil_band(float(points["dev"].quantile(QUANTILE[level]))), "runs": len(files),
            "pairs": int(len(points)), "largest": round(float(points["dev"].max()), 4),
            "files": [index[f] for f in files]}


def derive(datas) -> dict:
    """The bands file's content from sweeps `datas`: {"bands": {gpu: {kind: {level: {key: entry}}}}, "files": [...]},
    ANY_GPU pooled over all. An entry: band, runs (files behind it), pairs, largest deviation, files (indices into
    "files", the run files of the evidence)."""
    ev = evidence(datas)
    names = sorted(set(ev["run_a"]) | set(ev["run_b"]))
    index = {f: i for i, f in enumerate(names)}
    out: dict = {}
    for gpu, g in [*ev.groupby("gpu", sort=True), (ANY_GPU, ev)]:
        per_gpu = out.setdefault(gpu, {})
        for (kind, level), sub in g.groupby(["kind", "level"], sort=True):
            entries = {POOLED: _band_entry(sub, level, index)}
            if level != OVERALL:
                for key, ks in sub.groupby("key", sort=True):
                    entry = _band_entry(ks, level, index)
                    if entry["runs"] >= MIN_RUNS:
                        entries[key] = entry
            per_gpu.setdefault(kind, {})[level] = entries
    return {"generated_by": COMMAND, "rule": {"quantile": QUANTILE, "min_runs": MIN_RUNS, "round_to": ROUND_TO},
            "files": names, "bands": out}


def sweeps(runs_dir=None) -> list[runs.RunData]:
    """Every committed plan sweep and repeatability run (dashboard.model.run_kinds), read whole."""
    paths = runs.list_runs(runs_dir) if runs_dir is not None else runs.list_runs()
    read = [run_kinds.read_with_meta(p) for p in paths]
    return [data for data, meta in filter(None, read) if meta.kind in (run_kinds.SWEEP, run_kinds.REPEAT)]


def render(content: dict) -> str:
    """The bands file's text: one line per band entry (and per run file), so a diff shows what moved."""
    def dump(value, depth: int) -> str:
        pad = " " * depth
        if isinstance(value, dict) and not {"band", "files"} <= set(value):
            inner = [f'{pad} {json.dumps(k, ensure_ascii=False)}: {dump(v, depth + 1)}' for k, v in sorted(value.items())]
            return "{\n" + ",\n".join(inner) + f"\n{pad}}}"
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "[\n" + ",\n".join(f"{pad} {json.dumps(v)}" for v in value) + f"\n{pad}]"
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return dump(content, 0) + "\n"


def own_bands(data: runs.RunData) -> dict:
    """The run's own repeat evidence ({kind: {level: {key: entry}}}, as derive keeps it per device): identical
    routes of two candidates of this run (e.g. `baseline` and `baseline#2`), for datasets.noise_model.band's `own`;
    empty when the run has none."""
    ev = evidence([data])
    ev = ev[ev["kind"] == WITHIN]
    if ev.empty:
        return {}
    index = {f: i for i, f in enumerate(sorted(set(ev["run_a"]) | set(ev["run_b"])))}
    out: dict = {}
    for level, sub in ev.groupby("level", sort=True):
        if len(sub) < MIN_PAIRS:
            continue
        entries = {POOLED: _band_entry(sub, level, index)}
        if level != OVERALL:
            for key, ks in sub.groupby("key", sort=True):
                if len(ks) >= MIN_PAIRS:
                    entries[key] = _band_entry(ks, level, index)
        out.setdefault(WITHIN, {})[level] = entries
    return out


def own_for(data: runs.RunData) -> dict | None:
    """own_bands(data) where the run's device has no committed evidence (else None: the committed bands apply)."""
    return None if has_evidence(gpu_model(data) or None) else (own_bands(data) or None)
