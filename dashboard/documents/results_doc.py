"""RESULTS.md, generated from the run files: `python -m dashboard results [--out RESULTS.md]`.

Nothing here is typed by hand and no run is named: which runs appear follows from rules on the run files, so a run
committed later shows up when the file is regenerated.
- A run's kind: dashboard.model.runs.run_kind (explain, tune, survey or sweep).
- Scores: per workload and (baseline, candidate) pair of a sweep (dashboard.model.runs.candidate_pairs, one plan timed
  against itself left out), every sweep that scores the pair at the commit of the newest such sweep (the
  back-to-back sweeps of one session), with load ratios and SOL per load.
- Pairs never scored: the newest sweep of each, with the gate's reason.
- The shipped plan over time: per commit, its newest complete sweep against the baseline (score, SOL per load), and
  per scored shape its route and µs in the oldest and newest of those and the sweep that brought the route in.
- Against the strongest peer: the newest scored sweep holding `best` and a peer (kernels/methods_library.py), `best`
  against the best of peers per shape (dashboard.model.peers, derived), per load and overall, each peer's failures named.
- Unscored shapes: the newest sweep of each pair with only nearby shapes.
- Kernels: the newest explain run of each workload that profiles every scored shape (dashboard.documents.kernel_report.tables):
  the gap to the floor per load and each call's largest finding.
- Noise bands: dashboard.model.noise's bands (dashboard/model/noise_bands.json, derived from the committed sweeps), the run
  files behind them.
Everything is computed by the dashboard's own functions (runs, scoring, views, kernel_report, noise);
output depends only on the run files (sorted by created_utc, then name), so it is byte-for-byte reproducible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from datasets import NEARBY_LOAD, RUNS_DIR
from datasets import devices
from datasets.jsonfile import read_json
from dashboard.documents import kernel_report
from dashboard.model import kernels, noise, peers, run_kinds, runs, scoring, views
from dashboard.model.workloads import default_workload

WHY_CHARS = 160     # a gate's reason or a finding is cut to this many characters in a table cell
LINK_DIR = "datasets/runs"  # run files are linked relative to the repository root, where RESULTS.md lives


@dataclass(frozen=True)
class Run:
    path: Path
    kind: str
    created: str                # created_utc as recorded
    commit: str                 # environment.git_sha, 7 characters ('?' when not recorded)
    workload: str
    candidates: tuple = ()      # every candidate with a result or a failure
    scored: bool = False        # some result is at a scored load (not only nearby shapes)
    complete: bool = False      # its results (an explain run: its calls) cover every scored shape of its workload
    device: str = devices.WRITEUP_DEVICE   # the device kind that measured it (datasets.devices: its table key)


def index_runs(runs_dir=RUNS_DIR, skipped: list[str] | None = None) -> list[Run]:
    """Every run file with its kind, date, commit, workload and candidates, oldest first (created_utc, then name).
    Read from the raw JSON: only the runs a section shows are validated and tabulated (dashboard.model.runs). A sweep
    without a single pair (interrupted before any pair was timed: candidates with failures only, or several
    candidates and no pair; one plan's results alone are a run of its own) has nothing to score or compare: it is
    left out, with one line appended to `skipped`."""
    out = []
    for path in runs.list_runs(runs_dir):
        run = read_json(path)
        env = run.get("environment") or {}
        workload = (run.get("workload") or {}).get("name") or default_workload().name
        records = [r for key in ("results", "failures") for r in run.get(key) or [] if isinstance(r, dict)]
        names = tuple(dict.fromkeys(str(r.get("candidate")) for r in records))
        scored = any(r.get("load") != NEARBY_LOAD for r in run.get("results") or [] if isinstance(r, dict))
        kind = runs.run_kind(run)
        if kind == runs.SWEEP and names and not run.get("pairs") and (len(names) > 1 or not run.get("results")):
            if skipped is not None:
                skipped.append(f"skipped {path.name}: no pairs ({run.get('status', '?')} run of {len(names)} "
                               f"candidate(s), none timed against its baseline)")
            continue
        timed = run.get("calls" if kind == runs.EXPLAIN else "results") or []
        have = {(r.get("load"), r.get("family")) for r in timed if isinstance(r, dict)}
        wanted = {(r.load, r.family) for r in runs.run_workload(run, path.name)[0].shapes.itertuples()}
        out.append(Run(path, kind, str(run.get("created_utc") or ""), str(env.get("git_sha") or "?")[:7],
                       workload, names, scored, wanted <= have, devices.lookup(env.get("gpu")).key))
    return sorted(out, key=lambda r: (r.created, r.path.name))


def link(path: Path, prefix: str = "") -> str:
    """A run file's name linked from a document at the repository root (`prefix` "../" for one a folder below)."""
    return f"[{path.name}]({prefix}{LINK_DIR}/{path.name})"


def _pct(x) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.1%}"


def _cut(text: str, chars: int = WHY_CHARS) -> str:
    """One table cell: no pipes, at most `chars` characters."""
    text = text.replace("|", "/").replace("\n", " ")
    return text if len(text) <= chars else text[:chars - 1].rstrip() + "…"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |",
            *["| " + " | ".join(map(str, r)) + " |" for r in rows], ""]


def _pairs(data: runs.RunData) -> list[tuple[str, str]]:
    repeats = set(noise.repeat_pairs(data)) if len(data.results) else set()
    return [p for p in runs.candidate_pairs(data) if p not in repeats and p[0] is not None]


def _wide(data: runs.RunData, base: str, cand: str) -> pd.DataFrame:
    """The pair's per-shape table (dashboard.model.views.wide_shapes) at the workload's scored loads."""
    wide = views.wide_shapes(runs.shape_table(data), data.pairs, base, cand,
                             runs.pair_gate(data, base, cand, scored_only=False))
    return wide[wide["load"].isin(data.workload.load_order)]


def _sol(data: runs.RunData, base: str, cand: str) -> pd.DataFrame:
    return views.load_sol(_wide(data, base, cand), scoring.family_weights(data.workload)).set_index("load")


class Loaded:
    """Run files validated and tabulated (dashboard.model.runs.load_run_data) once, when a section first needs them."""

    def __init__(self):
        self._data: dict[Path, runs.RunData] = {}

    def __call__(self, meta: Run) -> runs.RunData:
        if meta.path not in self._data:
            self._data[meta.path] = runs.load_run_data(meta.path)
        return self._data[meta.path]


class RunFiles:
    """The run files of one folder as the sections read them: the index (index_runs) built once, each file validated
    and tabulated once (Loaded), and the shipped plan's history computed once per list of sweeps (RESULTS.md and the
    per-load block of kernels/README.md both show it). build() and per_load_block() take one in place of a folder."""

    def __init__(self, runs_dir=RUNS_DIR):
        self.skipped: list[str] = []   # one line per run file left out (index_runs)
        self.index = index_runs(runs_dir, self.skipped)
        self.load = Loaded()
        self._history: dict[tuple, tuple[list, list[pd.DataFrame]]] = {}

    def history(self, sweeps: list[Run]) -> tuple[list, list[pd.DataFrame]]:
        """(_plan_history of `sweeps`, _routes of each of its sweeps)."""
        key = tuple(meta.path for meta in sweeps)
        if key not in self._history:
            hist = _plan_history(sweeps, self.load)
            self._history[key] = hist, [_routes(data) for _, data, _ in hist]
        return self._history[key]


def _files(source) -> RunFiles:
    return source if isinstance(source, RunFiles) else RunFiles(source)


def _newest_sweeps_per_pair(sweeps: list[Run], load: Loaded, same_commit: bool):
    """[(pair, Run, RunData)], newest sweep first: for each (baseline, candidate) pair, the newest sweep among
    `sweeps` that has it — and with `same_commit`, every other sweep of it at that sweep's commit. A run is only
    loaded when it may hold a pair not settled yet (judged from the candidate names in the index)."""
    newest: dict[str, str] = {}     # candidate -> commit of the newest sweep it was taken from
    others: set[str] = set()        # names that are only ever a baseline or one plan timed twice
    out = []
    for meta in reversed(sweeps):
        if not any(c not in others and newest.get(c, meta.commit) == meta.commit for c in meta.candidates):
            continue
        data = load(meta)
        pairs = [p for p in _pairs(data) if newest.get(p[1], meta.commit) == meta.commit]
        others |= set(data.candidates()) - {c for _, c in _pairs(data)}
        for pair in pairs:
            if same_commit or pair[1] not in newest:
                out.append((pair, meta, data))
            newest[pair[1]] = meta.commit
    return out


def _score_section(name: str, sweeps: list[Run], load: Loaded) -> list[str]:
    """Scores per pair (the sweeps at the newest scored sweep's commit) with SOL per load, and pairs never scored."""
    scored, refused, statuses = {}, {}, {}
    pending, wanted = sweeps, None   # wanted: after the first pass, the candidates still looked for further back
    while pending:
        found = [f for f in _newest_sweeps_per_pair(pending, load, same_commit=True)
                 if wanted is None or f[0][1] in wanted]
        retry = set()
        for pair, meta, data in found:
            rows = statuses.setdefault(meta.path, runs.status_rows(data))
            try:
                breakdown = scoring.score_long(rows, *pair, data.workload)
            except scoring.ScoringError as exc:
                gate = getattr(exc, "gate", None)
                refused.setdefault(pair, (meta, gate.message(first=1) if gate is not None else str(exc)))
                retry.add(pair[1])
                continue
            scored.setdefault(pair, []).append((meta, data, breakdown))
        # A pair refused in its newest sweep may have been scored in an older one: look further back for those.
        retry -= {c for _, c in scored}
        oldest = min((m.created for p, m, _ in found if p[1] in retry), default=None)
        pending = [m for m in pending if oldest is not None and m.created < oldest and set(m.candidates) & retry]
        wanted = retry
    if not scored and not refused:
        return []
    loads = load(sweeps[-1]).workload.load_order
    lines = [f"### Scores: `{name}`", "",
             "Per (baseline, candidate) pair: the newest sweep that scores it and every other sweep of it at that "
             "commit (measured times; ratios and scores derived: each load Σ w·baseline ÷ Σ w·candidate over its "
             "shapes, the score their geometric mean, both sides correct at every scored shape).", ""]
    rows, sol_rows = [], []
    for (base, cand), hits in scored.items():
        for meta, data, breakdown in hits:
            ratios = breakdown.load_ratios()
            rows.append([f"`{cand}` vs `{base}`", f"**{breakdown.score:.4f}**", *[f"{ratios[l]:.3f}" for l in loads],
                         meta.created[:10], f"`{meta.commit}`", link(meta.path)])
            sol = _sol(data, base, cand)
            for side, col in ((cand, "sol_candidate"), (base, "sol_baseline")):
                sol_rows.append([f"`{side}`", *[_pct(sol[col].get(l)) for l in loads], link(meta.path)])
    lines += _table(["pair", "score", *loads, "date", "commit", "run file"], rows)
    lines += ["SOL per load (Σ floor ÷ Σ time, *derived*; floors from each run's own HBM read probes and measured "
              "compute peak):", ""]
    lines += _table(["candidate", *loads, "run file"], list(dict.fromkeys(map(tuple, sol_rows))))
    never = [(pair, why) for pair, why in refused.items() if pair not in scored]
    if never:
        lines += ["Pairs no sweep scored (the newest sweep of each; the correctness gate's reason, first shape):", ""]
        lines += _table(["pair", "why", "run file"],
                        [[f"`{c}` vs `{b}`", _cut(why), link(meta.path)] for (b, c), (meta, why) in never])
    return lines


def _plan_history(sweeps: list[Run], load: Loaded) -> list[tuple[Run, runs.RunData, scoring.ScoreBreakdown]]:
    """The shipped plan against the baseline, per commit its newest complete sweep that scores the pair, oldest
    commit first."""
    plan = run_kinds.SHIPPED_PLAN
    per_commit: dict[str, Run] = {}
    for meta in sweeps:
        if meta.complete and {"baseline", plan} <= set(meta.candidates):
            per_commit.pop(meta.commit, None)
            per_commit[meta.commit] = meta          # insertion order: by the commit's newest sweep
    hist = []
    for meta in per_commit.values():
        data = load(meta)
        try:
            breakdown = scoring.score_long(runs.status_rows(data), "baseline", plan, data.workload)
        except scoring.ScoringError:
            continue
        hist.append((meta, data, breakdown))
    return hist


def _routes(data: runs.RunData) -> pd.DataFrame:
    return _wide(data, "baseline", run_kinds.SHIPPED_PLAN).set_index("shape")[["method", "candidate_us",
                                                                              "sol_candidate"]]


def _route_since(hist, routes: list[pd.DataFrame]) -> dict:
    """Per scored shape of the newest sweep: the sweep from which its route has run there unchanged. `routes`:
    _routes of each sweep of `hist`, in its order (built once by the caller)."""
    last = routes[-1]
    since = {}
    for shape in last.index:
        start = hist[-1][0]
        for (meta, _, _), r in zip(reversed(hist[:-1]), reversed(routes[:-1])):
            if shape not in r.index or r.at[shape, "method"] != last.at[shape, "method"]:
                break
            start = meta
        since[shape] = start
    return since


def _history_section(name: str, sweeps: list[Run], files: RunFiles) -> list[str]:
    """The shipped plan against the baseline over time: per commit its newest complete sweep that scores the pair
    (score and SOL per load), per load the time and SOL then and now with the routes that changed, then per scored
    shape the route and time in the oldest and the newest of those sweeps, with the sweep from which the newest
    route has run there unchanged (the one that brought it in)."""
    plan = run_kinds.SHIPPED_PLAN
    hist, routes = files.history(sweeps)
    if len(hist) < 2:
        return []
    loads = hist[-1][1].workload.load_order
    rows = []
    for meta, data, breakdown in hist:
        sol = _sol(data, "baseline", plan)["sol_candidate"]
        rows.append([meta.created[:10], f"`{meta.commit}`", f"**{breakdown.score:.4f}**",
                     *[_pct(sol.get(l)) for l in loads], link(meta.path)])
    lines = [f"### The shipped plan over time: `{name}`", "",
             f"`{plan}` vs `baseline`, per commit the newest complete sweep that scores the pair (measured times; "
             "score and SOL per load derived as above):", "",
             *_table(["date", "commit", "score", *loads, "run file"], rows)]
    first, last = routes[0], routes[-1]
    since = _route_since(hist, routes)
    lines += _per_load_table(hist, first, last, since)
    shape_rows = []
    for shape in last.index:
        old = first.loc[shape] if shape in first.index else None
        new = last.loc[shape]
        shape_rows.append([shape, f"`{old['method']}`" if old is not None else "–",
                           f"{old['candidate_us']:.2f}" if old is not None else "–", f"`{new['method']}`",
                           f"{new['candidate_us']:.2f}", _pct(new["sol_candidate"]), link(since[shape].path)])
    lines += [f"Per scored shape: `{plan}`'s route and µs in the oldest ({link(hist[0][0].path)}) and the newest "
              f"({link(hist[-1][0].path)}) of those sweeps, SOL in the newest, and the sweep from which the newest "
              "route has run there unchanged:", "",
              *_table(["shape", "route then", "µs then", "route now", "µs now", "SOL now", "route since"],
                      shape_rows)]
    return lines


def _per_load_table(hist, first: pd.DataFrame, last: pd.DataFrame, since: dict, prefix: str = "") -> list[str]:
    """Per load: the baseline's and the plan's Σ µs and SOL in the oldest and the newest sweep of the history, and
    which routes changed in between (each with the sweep that brought it in): what closed which part of the gap.
    `prefix` goes before each run file's link (a document outside the repository root)."""
    plan = run_kinds.SHIPPED_PLAN
    (meta0, data0, _), (meta1, data1, _) = hist[0], hist[-1]
    wide0, wide1 = _wide(data0, "baseline", plan), _wide(data1, "baseline", plan)
    sol0, sol1 = _sol(data0, "baseline", plan), _sol(data1, "baseline", plan)
    rows = []
    for name in data1.workload.load_order:
        w0, w1 = wide0[wide0["load"] == name], wide1[wide1["load"] == name]
        changed = []
        for shape, family in zip(w1["shape"], w1["family"]):
            if shape not in first.index or first.at[shape, "method"] != last.at[shape, "method"]:
                was = f"{first.at[shape, 'candidate_us']:.2f}" if shape in first.index else "–"
                changed.append(f"{family} `{last.at[shape, 'method'].split(' ', 1)[0]}` {was} → "
                               f"{last.at[shape, 'candidate_us']:.2f} ({link(since[shape].path, prefix)})")
        rows.append([name, f"{w1['baseline_us'].sum():.2f}", _pct(sol1["sol_baseline"].get(name)),
                     f"{w0['candidate_us'].sum():.2f}", _pct(sol0["sol_candidate"].get(name)),
                     f"{w1['candidate_us'].sum():.2f}", _pct(sol1["sol_candidate"].get(name)),
                     "; ".join(changed) or "–"])
    return [f"Per load (measured µs summed over its shapes; SOL derived): `baseline` in the newest sweep "
            f"({link(meta1.path, prefix)}), `{plan}` in the oldest ({link(meta0.path, prefix)}) and the newest, and "
            "the routes that changed in between, each with its µs then → now and the sweep from which it has run "
            "there unchanged:", "",
            *_table(["load", "baseline Σ µs", "baseline SOL", f"{plan} then Σ µs", "SOL then", f"{plan} now Σ µs",
                     "SOL now", "routes changed: µs then → now (since)"], rows)]


def per_load_block(source=RUNS_DIR, prefix: str = "../") -> str:
    """The per-load table of the default workload's shipped plan (the one in RESULTS.md), for a document one folder
    below the repository root (kernels/README.md): run files linked through `prefix`. `source`: a folder of run
    files or a RunFiles (the one build() read)."""
    files = _files(source)
    name = default_workload().name
    sweeps = [r for r in files.index if r.kind == runs.SWEEP and r.workload == name and r.candidates and r.scored]
    # one device's history: the write-up's device where it has sweeps, else the newest sweep's
    home = devices.lookup(devices.WRITEUP_DEVICE).key
    device = home if any(r.device == home for r in sweeps) else (sweeps[-1].device if sweeps else home)
    sweeps = [r for r in sweeps if r.device == device]
    hist, routes = files.history(sweeps)
    if len(hist) < 2:
        return ""
    return "\n".join(_per_load_table(hist, routes[0], routes[-1], _route_since(hist, routes), prefix)).rstrip() + "\n"


BLOCK_BEGIN = "<!-- per-load table: generated by `python -m dashboard results --readme kernels/README.md`; do not edit -->"
BLOCK_END = "<!-- end of the generated per-load table -->"


def splice(text: str, block: str, where: str) -> str:
    """`text` with what lies between BLOCK_BEGIN and BLOCK_END replaced by `block`; ValueError naming `where` when
    the markers are not there once each, in that order."""
    begin, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
    if text.count(BLOCK_BEGIN) != 1 or text.count(BLOCK_END) != 1 or end < begin:
        raise ValueError(f"{where}: needs the lines {BLOCK_BEGIN!r} and {BLOCK_END!r} once each, in that order")
    return text[:begin + len(BLOCK_BEGIN)] + "\n" + block + ("\n" if block else "") + text[end:]


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) and math.isfinite(hi) else "—"


def _peer_section(sweeps: list[Run], load: Loaded) -> list[str]:
    """`best` against the best of peers in the newest scored sweep that holds both (dashboard.model.peers)."""
    for meta in reversed(sweeps):
        if "best" not in meta.candidates or not set(meta.candidates) & set(peers.PEER_NAMES):
            continue
        pc = peers.peer_comparison(load(meta))
        if pc is None:
            continue
        c, o = pc.comparison, pc.comparison.overall.iloc[0]
        rows = [[r.load, f"{r.ratio:.3f}" if math.isfinite(r.ratio) else "—", _ci(r.ci_low, r.ci_high), r.verdict,
                 r.band_source] for r in c.loads.itertuples()]
        rows.append(["**overall**", f"**{o.score:.3f}**" if math.isfinite(o.score) else "—", _ci(o.ci_low, o.ci_high),
                     o.verdict, o.band_source])
        lines = ["### `best` vs the strongest peer", "",
                 f"`best` against `{peers.BEST_OF_PEERS}` in {link(meta.path)} — {peers.DERIVED_NOTE}; "
                 "ratio > 1: `best` is faster; verdicts as on the Compare page.", ""]
        lines += _table(["load", "ratio", "95% CI", "verdict", "band (dashboard.model.noise)"], rows)
        for p in pc.peers.itertuples():
            failing = f"; **failing** at {len(p.failing)}: {_cut(', '.join(p.failing))}" if p.failing else ""
            lines.append(f"- `{p.peer}`: correct at {p.correct}/{p.scored_shapes} scored shapes, the fastest peer at "
                         f"{p.fastest_at}{failing}")
        return lines + [""]
    return []


def _nearby_section(name: str, sweeps: list[Run], load: Loaded) -> list[str]:
    """The newest nearby-only sweep of each pair: shapes, correct on both sides, per-shape ratios."""
    rows = []
    for (base, cand), meta, data in _newest_sweeps_per_pair(sweeps, load, same_commit=False):
        gate = runs.pair_gate(data, base, cand, scored_only=False)
        pairs = data.pairs[(data.pairs["baseline"] == base) & (data.pairs["candidate"] == cand)]
        usable = pairs[pairs["shape"].isin(set(gate.usable["shape"]))]
        same = views.same_route(data.results, base, cand)
        same_shapes = set(same.index[same])
        own, lib = usable[~usable["shape"].isin(same_shapes)], usable[usable["shape"].isin(same_shapes)]
        spread = (lambda r: f"{r.min():.3f} – {r.max():.3f} (median {r.median():.3f})" if len(r) else "–")
        rows.append([f"`{cand}` vs `{base}`", len(gate.shapes), len(gate.usable),
                     f"{len(own)}: {spread(own['ratio_median'])}", f"{len(lib)}: {spread(lib['ratio_median'])}",
                     meta.created[:10], link(meta.path)])
    if not rows:
        return []
    return [f"### Shapes outside the score: `{name}`", "",
            "The newest sweep of each pair over nearby and extra M only (never scored). Per-shape paired ratio "
            "(baseline ÷ candidate, median of rounds), apart where the candidate ran its own route and where it "
            "dispatched the baseline's own call (there the ratio is one call timed twice).", "",
            *_table(["pair", "shapes", "correct on both sides", "own route: shapes, ratio", "same call: shapes, ratio",
                     "date", "run file"], rows)]


def _explain_section(name: str, explains: list[Run]) -> list[str]:
    """The newest explain run of the workload: gap to the floor per load by cause, and each call's top finding."""
    if not explains:
        return []
    meta = explains[-1]
    data = kernels.from_run_data(runs.load_run_data(meta.path))
    t = kernel_report.tables(data)
    lines = [f"### Where the time goes: `{name}`", "",
             f"{link(meta.path)} ({meta.created[:10]}, commit `{meta.commit}`): per call, Nsight Compute's bytes, "
             "grid and throughputs of one cold call and the kernel times of one CUDA-graph replay (measured); floors, "
             "gaps and their parts derived (`python -m dashboard explain RUN` prints every kernel). Gap to the floor "
             "per load, µs summed over the load's shapes:", ""]
    gaps = t["gap per load"]
    parts = list(kernels.GAP_PARTS)
    lines += _table(["candidate", "load", "time", "floor", "gap", *kernels.GAP_PARTS.values(), "kernels per call",
                     "SOL"],
                    [[f"`{r['candidate']}`", r["load"], f"{r['time_sum_us']:.2f}", f"{r['floor_sum_us']:.2f}",
                      f"{r['gap_sum_us']:.2f}", *[f"{r[p] + 0.0:.2f}" for p in parts],
                      f"{r['launches_per_call']:.1f}", _pct(r["sol"])] for _, r in gaps.iterrows()])
    calls, found = t["calls"], t["findings"]
    rows = []
    for _, c in calls.iterrows():
        mine = found[(found["shape"] == c["shape"]) & (found["candidate"] == c["candidate"])] if len(found) else found
        top = mine.iloc[0]["text"] if len(mine) else "–"
        rows.append([c["shape"], f"`{c['candidate']}`", f"`{c['method']}`" if isinstance(c["method"], str) else "–",
                     int(c["launches"]), f"{c['time_us']:.2f}", f"{c['floor_us']:.2f}", _pct(c["sol"]),
                     _cut(str(top))])
    lines += ["Per call: the largest finding (`dashboard/model/kernel_findings.py` rules, by the µs it explains):", ""]
    lines += _table(["shape", "candidate", "method", "kernels", "µs", "floor µs", "SOL", "finding"], rows)
    return lines


def _noise_section() -> list[str]:
    """dashboard.model.noise's bands, as every verdict quotes them, with the run files behind them."""
    rows = [[noise.KIND_WORDS[b.kind], b.level, b.key, f"±{b.frac:.1%}".replace("%", " %"), b.gpu, b.n_runs,
             b.n_pairs] for b in noise.summary_rows()]
    names = noise.files()
    return ["## Noise bands", "",
            "Every FAST / SLOW / SAME / AMBIGUOUS reads a 95% interval against one of these bands "
            "(`dashboard/model/noise.py` says what each is and how it is derived; `" + noise.COMMAND + "` writes them "
            "from the committed sweeps). Within one run: the within-run band; across runs: the cross-run band, or "
            "the relative one where both runs hold the baseline.", "",
            *_table(["band", "level", "kept for", "±", "GPU", "run files", "pairs of identical routes"], rows),
            f"Run files behind them ({len(names)}): {', '.join(link(Path(n)) for n in names)}.", ""]


def _index_section(index: list[Run]) -> list[str]:
    return ["## Every run file", "",
            *_table(["created (UTC)", "kind", "workload", "commit", "run file"],
                    [[r.created[:16].replace("T", " "), r.kind, r.workload, f"`{r.commit}`", link(r.path)]
                     for r in reversed(index)])]


def build(source=RUNS_DIR) -> str:
    """The whole RESULTS.md text from the run files of `source` (a folder, or a RunFiles)."""
    files = _files(source)
    index, load = files.index, files.load
    lines = ["# Results", "",
             "Generated by `python -m dashboard results --out RESULTS.md` from the run files in `datasets/runs/`; "
             "do not edit (a test regenerates it from the committed runs and compares). Times are **measured** on "
             "the GPU each run file names; ratios, scores, floors and SOL are *derived* from them. Which runs "
             "appear follows from rules on the run files (`dashboard/documents/results_doc.py`).", ""]
    # One section per workload and device kind: runs of different devices are never scored, compared or put in one
    # history together (the write-up's device first, then the others as they first appear).
    home = devices.lookup(devices.WRITEUP_DEVICE).key
    for name in dict.fromkeys(r.workload for r in index):
        kinds = sorted(dict.fromkeys(r.device for r in index if r.workload == name), key=lambda d: d != home)
        for device in kinds:
            mine = [r for r in index if r.workload == name and r.device == device]
            sweeps = [r for r in mine if r.kind == runs.SWEEP and r.candidates]
            body = _score_section(name, [r for r in sweeps if r.scored], load) + \
                _history_section(name, [r for r in sweeps if r.scored], files) + \
                _peer_section([r for r in sweeps if r.scored], load) + \
                _nearby_section(name, [r for r in sweeps if not r.scored], load) + \
                _explain_section(name, [r for r in mine if r.kind == runs.EXPLAIN and r.complete])
            if body:
                lines += [f"## Workload `{name}` on {device}", "", *body]
    lines += _noise_section()
    lines += _index_section(index)
    return "\n".join(lines).rstrip() + "\n"
