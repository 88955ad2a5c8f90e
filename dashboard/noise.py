"""The noise model: how far two timings of the identical route read apart, and the verdict that follows from it.
Every FAST / SLOW / SAME / AMBIGUOUS in projlab (Compare page, Overview, reports, RESULTS.md, `python -m dashboard
compare`) is `verdict(ci_low, ci_high, band)` with a `Band` from here; nothing else holds a "within noise" number.

Components (a route is a method label with its config, e.g. `gemv_wide BN=1 BK=8192 ...` or `torch_linear`, on one
GPU model):

- **Interval** (sampling noise): the 95% percentile bootstrap of the ratio (dashboard.compare). Two candidates of one
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
behind it; otherwise the level's pooled band applies. A GPU model without evidence gets the band pooled over the
GPU models that have it, and its source says so.

The evidence is costly to gather (every sweep is read), so `python -m dashboard noise --out dashboard/noise_bands.json`
writes it to BANDS_FILE, with the run files behind every band; `tests/dashboard/test_noise.py` regenerates it and
compares, like RESULTS.md.

Verdicts, in nvbench's style, for a ratio interval [lo, hi] and a band ±b: FAST when lo > 1 + b, SLOW when
hi < 1 − b, SAME when the interval lies inside [1 − b, 1 + b], AMBIGUOUS otherwise; NO SAMPLES without an interval.
A shape whose two sides ran the identical route (same route, same GPU model) is SAME ROUTE whatever it reads: its
difference is drift, never a speedup.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from datasets import NEARBY_LOAD
from dashboard import run_kinds, runs, scoring

WITHIN, ACROSS, ACROSS_RR = "within", "across", "across_rr"
KINDS = (WITHIN, ACROSS, ACROSS_RR)
SHAPE, LOAD, OVERALL = "shape", "load", "overall"
LEVELS = (SHAPE, LOAD, OVERALL)
QUANTILE = {SHAPE: 0.99, LOAD: 1.0, OVERALL: 1.0}
MIN_RUNS = 4            # run files behind a keyed band; fewer, and the level's pooled band applies
ROUND_TO = 0.001        # bands are shown as percentages with one decimal
M_RANGES = ((1, 1), (2, 32), (33, 256), (257, None))
POOLED = "pooled"
ANY_GPU = "*"           # bands pooled over every GPU model with evidence
RUN_BASELINE = "baseline"   # the `baseline` plan (F.linear for every family): the reference of a ratio of ratios
BANDS_FILE = Path(__file__).with_name("noise_bands.json")
COMMAND = "python3 -m dashboard noise --out dashboard/noise_bands.json"

FAST, SLOW, SAME, AMBIGUOUS, NO_SAMPLES, SAME_ROUTE = "FAST", "SLOW", "SAME", "AMBIGUOUS", "NO SAMPLES", "SAME ROUTE"
JUDGED = (FAST, SLOW, SAME, AMBIGUOUS)

KIND_WORDS = {WITHIN: "within-run band", ACROSS: "cross-run band",
              ACROSS_RR: "cross-run band (each side relative to its run's baseline)"}
MODE_WORDS = {WITHIN: "paired within one run (candidates timed in alternating rounds)",
              ACROSS: "across runs, raw times (not both runs hold the baseline on the same routes)",
              ACROSS_RR: "across runs, each side relative to its own run's baseline (ratio of ratios)"}


class NoiseError(ValueError):
    """The bands file is missing or malformed (one line naming it)."""


@dataclass(frozen=True)
class Band:
    """A ±frac band with where it comes from: kind, level, the key it was kept for, and its evidence."""

    frac: float
    kind: str
    level: str
    key: str = POOLED
    n_runs: int = 0
    n_pairs: int = 0
    gpu: str = ""
    given: bool = False     # a caller's fixed band, not the model's

    def text(self) -> str:
        """'cross-run band ±3.1 %, from 42 repeated sweeps (router M 2–32)': printed next to every verdict."""
        if self.given:
            return f"band ±{self.frac:.1%} (given, not derived from repeat evidence)"
        where = "" if self.key == POOLED else f" ({self.key})"
        gpu = f"; measured on {self.gpu}" if self.gpu else ""
        evidence = (f"{self.n_runs} run files timing one route twice" if self.kind == WITHIN else
                    f"{self.n_runs} repeated sweeps")
        return f"{KIND_WORDS[self.kind]} ±{self.frac:.1%}, from {evidence}{where}{gpu}".replace("%", " %")


def fixed(frac: float) -> Band:
    """A band the caller chose (tests, an explicit override): labelled as given."""
    return Band(float(frac), WITHIN, POOLED, given=True)


def verdict(ci_low: float, ci_high: float, band: float) -> str:
    """FAST / SLOW / SAME / AMBIGUOUS from a ratio interval and a band ±band; NO SAMPLES without an interval."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return NO_SAMPLES
    if ci_low > 1 + band:
        return FAST
    if ci_high < 1 - band:
        return SLOW
    if ci_low >= 1 - band and ci_high <= 1 + band:
        return SAME
    return AMBIGUOUS


def m_range(M: int) -> str:
    for lo, hi in M_RANGES:
        if M >= lo and (hi is None or M <= hi):
            return f"M {lo}" if lo == hi else f"M {lo}–{hi}" if hi else f"M ≥ {lo}"
    return f"M {M}"


def shape_key(family: str, M: int) -> str:
    return f"{family} {m_range(int(M))}"


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


def _ceil(x: float) -> float:
    return math.ceil(round(x / ROUND_TO, 6)) * ROUND_TO


def _band_entry(points: pd.DataFrame, level: str, index: dict) -> dict:
    files = sorted(set(points["run_a"]) | set(points["run_b"]))
    return {"band": round(_ceil(float(points["dev"].quantile(QUANTILE[level]))), 4), "runs": len(files),
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
    """Every committed plan sweep and repeatability run (dashboard.run_kinds), read whole."""
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


# ---- the bands in use ----------------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def _content(path: str) -> dict:
    try:
        content = json.loads(Path(path).read_text())
        if not isinstance(content.get("bands"), dict) or not isinstance(content.get("files"), list):
            raise ValueError("no 'bands' object or 'files' list")
        return content
    except (OSError, ValueError, AttributeError) as exc:
        raise NoiseError(f"{Path(path).name}: cannot read the noise bands ({exc}); regenerate: {COMMAND}") from exc


def _read(path: str) -> dict:
    return _content(path)["bands"]


def band(kind: str, level: str, gpu: str | None = None, key: str | None = None, path=BANDS_FILE) -> Band:
    """The band for a comparison of `kind` at `level` on `gpu` (a GPU model; None or unknown: pooled over all),
    kept for `key` (shape: shape_key(family, M); load: m_range(M)) where the evidence supports it."""
    bands = _read(str(path))
    own = gpu if gpu in bands else None
    levels = (bands.get(own or ANY_GPU) or {}).get(kind) or {}
    entries = levels.get(level)
    if not entries:
        # no evidence of this kind at this level (e.g. a GPU without repeat runs): the cross-run band stands in
        for alt in (ACROSS, WITHIN):
            entries = ((bands.get(own or ANY_GPU) or {}).get(alt) or {}).get(level)
            if entries:
                kind = alt
                break
    if not entries:
        raise NoiseError(f"{Path(path).name}: no {level} band for {kind}; regenerate: {COMMAND}")
    use = key if key in entries else POOLED
    e = entries[use]
    measured_on = own or ", ".join(g for g in bands if g != ANY_GPU)
    note = measured_on if own else f"{measured_on} (no repeat evidence for {gpu})" if gpu else measured_on
    return Band(float(e["band"]), kind, level, use, int(e["runs"]), int(e["pairs"]), note)


def files(path=BANDS_FILE) -> list[str]:
    """Every run file behind the bands."""
    return list(_content(str(path))["files"])


def summary_rows(gpu: str | None = None, path=BANDS_FILE) -> list[Band]:
    """Every pooled band and every keyed one, per GPU model with evidence: what RESULTS.md lists."""
    bands = _read(str(path))
    gpus = [gpu] if gpu else [g for g in sorted(bands) if g != ANY_GPU]
    rows = []
    for g in gpus:
        for kind in KINDS:
            for level in LEVELS:
                for key in (bands[g].get(kind) or {}).get(level) or {}:
                    rows.append(band(kind, level, g, key, path))
    return rows


def headline(path=BANDS_FILE) -> str:
    """One sentence with the pooled bands per kind and level, for the glossary and the pages."""
    bands = _read(str(path))
    gpus = [g for g in sorted(bands) if g != ANY_GPU]
    parts = []
    for kind in KINDS:
        vals = []
        for level in LEVELS:
            try:
                b = band(kind, level, gpus[0] if gpus else None, None, path)
            except NoiseError:
                continue
            vals.append(f"±{b.frac:.1%} per {level}".replace("%", " %").replace("per overall", "overall"))
        if vals:
            b0 = band(kind, LOAD, gpus[0] if gpus else None, None, path)
            parts.append(f"{KIND_WORDS[kind]} {', '.join(vals)} (from {b0.n_runs} run files)")
    return "; ".join(parts) + (f", measured on {', '.join(gpus)}" if gpus else "")
