"""The tuner's selection rules, torch-free: which candidates, the funnel, the neighbour and significance rules,
plan ranges per N and the library fallback that makes every plan dispatch any M.

The GPU work is ONE injected function with plain inputs and outputs (profiler/commands/tune.py provides the real one;
tests give a fake):

    measure(shape: dict, cands: list[(method, config)], timing: dict) -> {
        "timed": [{"method": str, "config": dict, "samples_us": [float, ...]}, ...],   # paired by index
        "rejected": {label: [reason, ...]},      # failed the correctness check: never timed
        "info": {...},                           # how the sampler stopped, dropped rounds, clocks
        "failures": [run-file failure record, ...]}   # optional: kept in the run file as they are (a worker
                                                      # that a candidate took down: its cause)
    shape: load, family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol; timing: measure_shape's keyword
    arguments plus "instances" (graph captures per candidate).

Algorithm for one scored (family, M) point (`tune_point`; the write-up's funnel):
 1. Candidates: every method computing the family's dtypes (x, w, y: kernels/method.py serves dtype signatures,
    never family names) x each of its configs whose shape check admits (M, N, K); the baseline (torch_linear) always
    among them, first.
 2. Screen: measure all (correctness first: a failing candidate is dropped with its reasons), SCREEN timing.
 3. Finals: the `finalists` fastest plus the baseline, measured again together with FINAL timing; winner =
    lowest median, runner-up = the next.
 4. Neighbours: winner, runner-up and baseline measured at M-1 and M+1 (where the winner's and runner-up's
    shape checks admit them), each at THAT neighbour's N (n_at: muse's unpooler M=7 and M=9 are N=8192 although
    M=8 is N=1024). Only neighbours at the point's N decide (`robust_choice`):
    a. a winner that fails correctness at one loses to the runner-up (or the baseline, if that failed too);
    b. a winner more than the band slower than the baseline at one is kept only with its plan range stopping
       short of those neighbours (`Decision.stops`: it is then dispatched at M and on its other side alone,
       the slow side going to the adjacent point's winner or the baseline), if that costs less (summed median
       over M and the deciding neighbours, the baseline's at the cut-off ones) than the baseline and than the
       runner-up -- the runner-up counting only if it is itself nowhere more than the band slower than the
       baseline;
    c. the winner is kept if at every one its median is within the band of the runner-up's or better;
       otherwise the one with the lower summed median over M and those neighbours wins.
    Then the verdict: a non-baseline choice stays only where its paired ratio vs the baseline at M reads FAST against
    the band (`keep_baseline_unless_significant`); otherwise the baseline is kept.
    The band is the noise model's (datasets.noise_model, the same the Compare page reads): the within-run band at
    the point's family and M range on the device being tuned (`point_band`). A device without repeat evidence has
    no band: neighbours must be no slower at all, and no win can be shown, so the baseline is kept and the rule
    note says how to make evidence.
 5. Ranges per N (`build_ranges`): the general-N points make the generic entries: every M in 1..max point goes
    to the nearest point's winner (midpoint rule; floor((a+b)/2) belongs to the lower point), else the other
    adjacent point's winner, else the baseline -- whichever its shape check admits and, for a winner kept with
    stops (4b), whichever does not reach past them. Points at another N (unpooler M=1
    and 8, N=1024) make N-specific entries spanning min..max of those points. Beyond the largest tuned M, the
    generic entries fall back to the library (torch_linear) up to kernels.plans.DISPATCH_MAX_M
    (kernels.plans.with_library_fallback): nothing was measured there, and the library serves every shape.
A timing whose median is not a positive finite number is not a speed: that candidate is recorded as failed
at that shape and never ranked.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from datasets.shapes import shape_identity
from datasets.shapes import n_at as n_for   # the one N-by-M rule (Workload.n_at on a family record)
from kernels.method import format_config
from kernels.plans import LIBRARY_METHOD, with_library_fallback
from datasets import noise_model
from profiler.measure.policy import TUNE_FINAL, TUNE_SCREEN
from profiler.measure.stats import bootstrap_ci, summarize_pairs

BASELINE = LIBRARY_METHOD
FINALISTS = 4

# The timing policy of each stage (profiler.measure.policy: TUNE_SCREEN ranks dozens of configs quickly, TUNE_FINAL
# is the sweep's RSE rule for finals and neighbours), as the dicts measure() takes and the tune run records.
SCREEN = TUNE_SCREEN.stage()
FINAL = TUNE_FINAL.stage()

Measure = Callable[[dict, list, dict], dict]


# ------------------------------------------------------------------------------------------ data records

@dataclass
class Point:
    """One (family, M) with its shape, load and the workload's family spec (dtypes, tolerance, N_by_M)."""
    family: str
    M: int
    N: int
    K: int
    load: str
    spec: dict

    def shape(self) -> dict:
        """The plain shape dict the measure function takes."""
        return {"load": self.load, "family": self.family, "M": self.M, "N": self.N, "K": self.K,
                **{k: self.spec[k] for k in ("x_dtype", "w_dtype", "y_dtype", "rel_l2_tol")}}


@dataclass
class Timed:
    """A candidate's samples at one M (us per call, overhead subtracted; paired by index within a stage)."""
    method: str
    config: dict
    samples: np.ndarray
    stage: str = "screen"

    @property
    def key(self) -> str:
        return format_config(self.method, self.config)

    @property
    def median(self) -> float:
        return float(np.median(self.samples)) if len(self.samples) else float("nan")


@dataclass
class Decision:
    family: str
    M: int
    method: str
    config: dict
    median_us: float
    baseline_us: float | None
    runner_up: str | None = None
    rule: str = ""
    neighbours: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    stops: list = field(default_factory=list)   # deciding neighbours where the choice was more than the band slower
    #                                             than the baseline: its plan range ends short of them (rule 4b)
    band: float | None = None                   # the noise band the point was decided with (None: no evidence)

    def to_dict(self) -> dict:
        return {"family": self.family, "M": self.M, "method": self.method, "config": self.config,
                "median_us": self.median_us, "baseline_us": self.baseline_us, "runner_up": self.runner_up,
                "rule": self.rule, "neighbours": self.neighbours, "rejected": self.rejected, "stops": self.stops,
                "band": self.band}

    def limits(self) -> tuple[int, int | None]:
        """(lowest, highest or None) M the choice may be dispatched at: M itself past a stop."""
        return (self.M if self.M - 1 in self.stops else 1, self.M if self.M + 1 in self.stops else None)


@dataclass
class Records:
    """What a tune adds to its run file: results, baseline-vs-candidate pairs and failures."""
    results: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    failures: list = field(default_factory=list)


def scored_points(workload, families=None) -> list[Point]:
    """The scored (family, M) points in workload order, optionally restricted to `families`."""
    return [Point(r["family"], r["M"], r["N"], r["K"], r["load"], workload.family(r["family"]))
            for r in workload.scored_rows() if not families or r["family"] in families]


def candidates(methods: dict, dtypes, M: int, N: int, K: int, only=None) -> list[tuple[str, dict]]:
    """(method, config) pairs computing `dtypes` (an (x, w, y) tuple, or the shape/family record holding them)
    whose shape check admits the shape; the baseline first."""
    out = []
    for name, method in methods.items():
        if not method.serves(dtypes) or (only and name not in only and name != BASELINE):
            continue
        if getattr(method, "opt_in", False) and not (only and name in only):   # a peer: tried when named
            continue
        out += [(name, dict(c)) for c in method.configs_for(M, N, K) if method.supports(dtypes, M, N, K, c) is None]
    out.sort(key=lambda c: c[0] != BASELINE)
    return out


# ------------------------------------------------------------------------------------------ measuring

def _timed(measured: dict, stage: str, pt: Point, records: Records) -> tuple[list[Timed], dict]:
    """Timed records of one measure() call; timings without a positive finite median become failures (and the
    call's own failure records are kept)."""
    records.failures += list(measured.get("failures", []))
    timed, failed = [], {}
    for row in measured["timed"]:
        t = Timed(row["method"], dict(row["config"]), np.asarray(row["samples_us"], dtype=np.float64), stage)
        if np.isfinite(t.median) and t.median > 0:
            timed.append(t)
        else:
            failed[t.key] = [f"no usable timing at stage {stage}: median {t.median!r} us"]
    for key, reasons in failed.items():
        records.failures.append({**shape_fields(pt), "candidate": key, "reasons": reasons})
    return timed, failed


def shape_fields(pt: Point) -> dict:
    """The identity fields of a point's run-file records (datasets.shapes.shape_identity)."""
    return shape_identity(vars(pt))


def result_records(pt: Point, timed: list[Timed]) -> list[dict]:
    """Run-file results (schema v1) for timed candidates (all passed the correctness check)."""
    out = []
    for t in timed:
        lo, hi = bootstrap_ci(t.samples) if len(t.samples) > 1 else (None, None)
        out.append({**shape_fields(pt), "candidate": t.key, "method": t.key, "median_us": t.median,
                    "ci_low_us": _num(lo), "ci_high_us": _num(hi), "samples_us": [float(v) for v in t.samples],
                    "n_samples": int(len(t.samples)), "correct": True, "error": None, "flags": [],
                    "stage": t.stage})
    return out


def pair_record(pt: Point, base: Timed, cand: Timed) -> dict:
    pair_stats = summarize_pairs(base.samples, cand.samples)
    for key in ("ratio_ci_low", "ratio_ci_high", "rse"):
        pair_stats[key] = _num(pair_stats[key])
    return {**shape_fields(pt), "baseline": BASELINE, "candidate": cand.key, "stage": cand.stage, **pair_stats}


def _num(v):
    return None if v is None or not np.isfinite(v) else float(v)


# ------------------------------------------------------------------------------------------ decisions

def rank(timed: list[Timed]) -> list[Timed]:
    return sorted(timed, key=lambda t: t.median)


def finalists(screen: list[Timed], n: int) -> list[tuple[str, dict]]:
    """The n fastest screened candidates, plus the baseline if it is not among them."""
    ranked = rank(screen)
    out = [(t.method, t.config) for t in ranked[:n]]
    if not any(m == BASELINE for m, _ in out):
        out += [(t.method, t.config) for t in ranked if t.method == BASELINE][:1]
    return out


def point_band(family: str, M: int, device: str | None) -> noise_model.Band:
    """The band a point is decided with: the within-run band at its family and M range on `device`
    (datasets.noise_model; None: the bands of every device with evidence, for a caller that names none)."""
    return noise_model.band(noise_model.WITHIN, noise_model.SHAPE, device, noise_model.shape_key(family, M))


def _pct(band: noise_model.Band | None) -> str:
    return f"{band.frac:.1%}" if band is not None and band.known else "0% (no repeat evidence)"


def robust_choice(winner: Timed, runner: Timed, neighbours: dict, base: Timed | None = None,
                  band: noise_model.Band | None = None) -> tuple[Timed, str]:
    """Apply the robustness rule (4a-c in the module docstring) at the deciding neighbours (same N as the point).
    neighbours: {M': (winner_median, runner_median)} or {M': (winner_median, runner_median, baseline_median)},
    None where that candidate failed correctness (or was not timed) at M'. `base`: the baseline's Timed at M
    (needed for rule b; without it, or without baseline medians, rule b is skipped). `band`: the point's noise band
    (point_band; None: no evidence, so "within" means no slower). Returns (choice, why)."""
    def at(medians, i):
        return medians[i] if len(medians) > i else None

    for m, medians in sorted(neighbours.items()):
        if at(medians, 0) is None and at(medians, 1) is not None:
            return runner, f"winner failed correctness at M={m}: runner-up taken"
        if at(medians, 0) is None and at(medians, 1) is None and base is not None and at(medians, 2) is not None:
            return base, f"winner and runner-up failed correctness at M={m}: baseline taken"
    if base is not None and winner.key != base.key:
        with_b = {m: medians for m, medians in neighbours.items()
                  if at(medians, 0) is not None and at(medians, 2) is not None}
        slow = slow_vs_baseline(neighbours, band)
        if slow:
            b_sum = base.median + sum(medians[2] for medians in with_b.values())
            # the winner with its range stopping short of the slow neighbours: the baseline's time there
            cut_sum = winner.median + sum(medians[2] if m in slow else medians[0] for m, medians in with_b.items())
            options = [(cut_sum, winner, f"winner kept at M, its range stopping short of M={slow}"),
                       (b_sum, base, "baseline taken")]
            if runner.key != base.key and all(at(medians, 1) is not None
                                              and noise_model.within(medians[1], medians[2], band)
                                              for medians in with_b.values()):
                options.append((runner.median + sum(medians[1] for medians in with_b.values()), runner,
                                "runner-up taken"))
            total, choice, name = min(options, key=lambda o: o[0])
            worst = max(with_b[m][0] / with_b[m][2] for m in slow)
            return choice, (f"winner >{_pct(band)} slower than the baseline at M={slow} (up to {worst:.3f}x "
                            f"its time): {name} (summed median over M and M+-1 {total:.2f} us)")
    both = {m: (medians[0], medians[1]) for m, medians in neighbours.items()
            if at(medians, 0) is not None and at(medians, 1) is not None}
    if not both:
        return winner, "no neighbour where both were timed: winner kept"
    if all(noise_model.within(w, r, band) for w, r in both.values()):
        return winner, f"winner within {_pct(band)} of the runner-up or better at M={sorted(both)}"
    w_sum = winner.median + sum(w for w, _ in both.values())
    r_sum = runner.median + sum(r for _, r in both.values())
    if r_sum < w_sum:
        return runner, (f"winner >{_pct(band)} slower at a neighbour; runner-up has the lower summed median "
                        f"over M and M+-1 ({r_sum:.2f} vs {w_sum:.2f} us)")
    return winner, (f"winner >{_pct(band)} slower at a neighbour but keeps the lower summed median over M "
                    f"and M+-1 ({w_sum:.2f} vs {r_sum:.2f} us)")


def slow_vs_baseline(neighbours: dict, band: noise_model.Band | None = None) -> list[int]:
    """The neighbours (robust_choice's {M': (winner, runner-up, baseline)} medians) where the winner was timed and
    is more than the band slower than the baseline."""
    return sorted(m for m, medians in neighbours.items()
                  if len(medians) > 2 and medians[0] is not None and medians[2] is not None
                  and not noise_model.within(medians[0], medians[2], band))


def keep_baseline_unless_significant(d: Decision, base: Timed, choice: Timed,
                                     band: noise_model.Band | None = None) -> str:
    """Fall back to the baseline unless `choice`'s paired ratio vs the baseline reads FAST against the band
    (datasets.noise_model.verdict, the Compare page's rule); returns a rule note."""
    if choice.method == BASELINE:
        return ""
    pair_stats = summarize_pairs(base.samples, choice.samples)
    said = noise_model.verdict(pair_stats["ratio_ci_low"], pair_stats["ratio_ci_high"], band)
    if said == noise_model.FAST:
        return (f"; beats baseline {pair_stats['ratio_median']:.3f}x "
                f"(CI {pair_stats['ratio_ci_low']:.3f}-{pair_stats['ratio_ci_high']:.3f}: "
                f"FAST against {band.text()})")
    d.method, d.config, d.median_us = base.method, base.config, base.median
    against = band.text() if band is not None else "no band"
    return (f"; baseline kept: {choice.key} only {pair_stats['ratio_median']:.3f}x "
            f"(CI {pair_stats['ratio_ci_low']:.3f}-{pair_stats['ratio_ci_high']:.3f}: {said} against {against})")


def neighbour_points(pt: Point, methods: dict, trio: list[Timed]) -> list[Point]:
    """M-1 and M+1 at their own N where the winner's and runner-up's (trio[0], trio[1]) shape checks admit them."""
    out = []
    for m in (pt.M - 1, pt.M + 1):
        n = n_for(pt.spec, m)
        if m >= 1 and all(methods[t.method].supports(pt.spec, m, n, pt.K, t.config) is None for t in trio[:2]):
            out.append(Point(pt.family, m, n, pt.K, "nearby", pt.spec))
    return out


# ------------------------------------------------------------------------------------------ one point

def skipped(cands: list, family: str, skip: dict | None) -> tuple[list, dict]:
    """(candidates to measure, {label: [reason]} for those `skip` names: {(method, config json, family): reason})."""
    keep, out = [], {}
    for name, config in cands:
        reason = (skip or {}).get((name, json.dumps(config, sort_keys=True), family))
        if reason and name != BASELINE:
            out[format_config(name, config)] = [reason]
        else:
            keep.append((name, config))
    return keep, out


def tune_point(pt: Point, methods: dict, measure: Measure, *, n_finalists: int = FINALISTS, only=None,
               screen: dict = SCREEN, final: dict = FINAL, records: Records | None = None, skip: dict | None = None,
               log: Callable[[str], None] = print, device: str | None = None) -> Decision:
    """Steps 1-4 of the module docstring at one scored point; appends what was measured to `records`.
    `skip`: candidates left out with a reason (kernels.warm: they raised when compiled in a worker); `device`: the
    driver-reported name of the device being tuned, whose noise band decides (point_band)."""
    band = point_band(pt.family, pt.M, device)
    records = records if records is not None else Records()
    cands, left_out = skipped(candidates(methods, pt.spec, pt.M, pt.N, pt.K, only), pt.family, skip)
    got = measure(pt.shape(), cands, screen)
    rejected = {**left_out, **got["rejected"]}
    screened, failed = _timed(got, "screen", pt, records)
    rejected.update(failed)
    if not screened:
        raise RuntimeError(f"{pt.family} M={pt.M}: no candidate passed the correctness check: {rejected}")
    got = measure(pt.shape(), finalists(screened, n_finalists), final)
    finals, failed = _timed(got, "final", pt, records)
    rejected.update({**got["rejected"], **failed})
    finals = rank(finals)
    if not finals:
        raise RuntimeError(f"{pt.family} M={pt.M}: no finalist could be timed: {rejected}")
    final_keys = {t.key for t in finals}
    records.results += result_records(pt, [t for t in rank(screened) if t.key not in final_keys] + finals)
    winner = finals[0]
    base = next((t for t in finals if t.method == BASELINE), None)
    if base is not None:
        records.pairs.append(pair_record(pt, base, winner))
    runner = finals[1] if len(finals) > 1 else None
    d = Decision(pt.family, pt.M, winner.method, winner.config, winner.median, base.median if base else None,
                 runner.key if runner else None, "single finalist", rejected=rejected, band=band.frac)
    if runner is not None:
        _apply_neighbours(d, pt, methods, measure, final, records, winner, runner, base, band)
    log(_summary(pt, rank(screened), finals, d, n_finalists))
    return d


def _apply_neighbours(d: Decision, pt: Point, methods, measure, final, records, winner, runner, base,
                      band: noise_model.Band) -> None:
    trio = [winner, runner] + ([base] if base is not None else [])
    neigh = {}
    for nb in neighbour_points(pt, methods, trio):
        unique = list({t.key: (t.method, t.config) for t in trio}.values())
        got = measure(nb.shape(), unique, final)
        timed, _ = _timed(got, "neighbour", nb, records)
        records.results += result_records(nb, timed)
        by_key = {t.key: t.median for t in timed}
        neigh[nb.M] = (nb.N, by_key.get(winner.key), by_key.get(runner.key),
                       by_key.get(base.key) if base is not None else None)
    deciding = {m: tuple(medians) for m, (n, *medians) in neigh.items() if n == pt.N}
    choice, d.rule = robust_choice(winner, runner, deciding, base, band)
    if choice is winner and base is not None and winner.key != base.key:
        d.stops = slow_vs_baseline(deciding, band)
    record_only = sorted(m for m, (n, *_) in neigh.items() if n != pt.N)
    if record_only:
        d.rule += (f"; M={record_only} timed at their own N {sorted({neigh[m][0] for m in record_only})} for the "
                   f"record only (this point's entry is for N={pt.N})")
    d.neighbours = {str(m): {"N": n, "winner": w, "runner_up": r, "baseline": b, "decides": n == pt.N}
                    for m, (n, w, r, b) in neigh.items()}
    d.method, d.config, d.median_us = choice.method, choice.config, choice.median
    if base is not None:
        d.rule += keep_baseline_unless_significant(d, base, choice, band)
        if d.method == BASELINE:
            d.stops = []


def _summary(pt: Point, screen: list[Timed], finals: list[Timed], d: Decision, n_finalists: int) -> str:
    base = d.baseline_us
    lines = [f"\n== {pt.load}/{pt.family} M={pt.M} N={pt.N} K={pt.K}: {len(screen)} timed, "
             f"{len(d.rejected)} rejected"]
    for t in finals:
        ratio = f"{base / t.median:6.3f}x" if base else "   n/a "
        lines.append(f"   final  {t.median:8.2f} us  {ratio}  {t.key}")
    lines += [f"   screen {t.median:8.2f} us           {t.key}" for t in screen[n_finalists:]]
    lines += [f"   REJECT {key}: {'; '.join(reasons)[:200]}" for key, reasons in d.rejected.items()]
    lines.append(f"   -> {format_config(d.method, d.config)} ({d.rule}; neighbours {d.neighbours})")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ ranges

def _owners(points: list[int], winners: dict, lo: int, hi: int, admits,
            limits: dict | None = None) -> list[tuple[int, int | None, tuple]]:
    """(M, owning point or None, (method, config)) for M in lo..hi: nearest point's winner (midpoint rule),
    else the other adjacent point's winner, else the baseline -- whichever `admits(choice, M)` first and lies
    within that point's `limits` ({point: (lowest M, highest M or None)}: a winner kept with stops, rule 4b)."""
    limits = limits or {}
    out = []
    for M in range(lo, hi + 1):
        below = max((p for p in points if p <= M), default=points[0])
        above = min((p for p in points if p >= M), default=points[-1])
        near = below if M <= (below + above) // 2 else above
        other = above if near == below else below
        for p in (near, other):
            low, high = limits.get(p, (1, None))
            if low <= M and (high is None or M <= high) and admits(winners[p], M):
                out.append((M, p, winners[p]))
                break
        else:
            out.append((M, None, (BASELINE, {})))
    return out


def _merge(owners, notes: dict, N: int | None) -> list[dict]:
    entries: list[dict] = []
    for M, p, (name, config) in owners:
        if entries and entries[-1]["method"] == name and entries[-1]["config"] == config:
            entries[-1]["M"][1] = M
            if p == M and p in notes and notes[p] not in entries[-1].get("note", ""):
                # a scored point inside a merged range: keep its note too (once)
                entries[-1]["note"] = "; ".join(filter(None, (entries[-1].get("note"), notes[p])))
            continue
        entry = {"M": [M, M], **({"N": N} if N is not None else {}), "method": name, "config": dict(config)}
        if p is not None and p in notes:
            entry["note"] = notes[p]
        entries.append(entry)
    return entries


def build_ranges(family: str, winners: dict, spec: dict, methods: dict, notes: dict | None = None,
                 limits: dict | None = None) -> list[dict]:
    """Ordered plan entries (step 5 of the module docstring): generic entries from the general-N points covering
    1..max(winners), then, per other N (sorted), entries with "N" spanning min..max of that N's points.
    `limits`: {point M: (lowest, highest or None)} for winners kept with stops. make_plan adds the library above
    max(winners)."""
    K, general = int(spec["K"]), int(spec["N"])
    notes = notes or {}
    by_n: dict[int, list[int]] = {}
    for M in sorted(winners):
        by_n.setdefault(n_for(spec, M), []).append(M)
    top = max(winners)

    def admits_generic(choice, M):
        name, config = choice
        return all(methods[name].supports(spec, M, n, K, config) is None for n in {n_for(spec, M), general})

    gen_points = by_n.pop(general, [])
    if gen_points:
        entries = _merge(_owners(gen_points, winners, 1, top, admits_generic, limits), notes, None)
    else:   # only off-N points tuned: the generic entry is the baseline
        entries = [{"M": [1, top], "method": BASELINE, "config": {}}]
    for N, pts in sorted(by_n.items()):
        def admits_n(choice, M, N=N):
            name, config = choice
            return methods[name].supports(spec, M, N, K, config) is None

        entries += _merge(_owners(pts, winners, pts[0], pts[-1], admits_n, limits), notes, N)
    return entries


def pin_points(entries: list[dict], pins: dict, spec: dict) -> list[dict]:
    """`entries` (a family's plan entries) with each pinned M re-dispatched by a one-M entry: {M: entry dict with
    "method", "config" and optionally "note"}. The entry list of M's N (the generic list when M is at the family's
    N, else the list with that "N") has the entry holding M cut around it; every other M keeps its entry."""
    general = int(spec["N"])
    out = [dict(e, M=list(e["M"]), config=dict(e["config"])) for e in entries]
    for M in sorted(pins):
        n = n_for(spec, M)
        scope = None if n == general else n
        pin = {"M": [M, M], **({"N": scope} if scope is not None else {}), "method": pins[M]["method"],
               "config": dict(pins[M]["config"]), **({"note": pins[M]["note"]} if pins[M].get("note") else {})}
        keep, at = [], None
        for e in out:
            if e.get("N") != scope:
                keep.append(e)
                continue
            lo, hi = e["M"]
            if lo <= M <= hi:
                keep += [dict(e, M=[lo, M - 1])] if lo < M else []
                at = len(keep)
                keep.append(pin)
                keep += [dict(e, M=[M + 1, hi])] if M < hi else []
            else:
                if at is None and lo > M:     # M sits in a gap of its list: before the first entry past it
                    at = len(keep)
                    keep.append(pin)
                keep.append(e)
        if at is None:
            keep.append(pin)
        out = keep
    return out


def make_plan(decisions: list[Decision], methods: dict, workload, base_plan: dict, gpu: str | None,
              run_path: str, notes: str, name: str = "best", only_m: list | None = None) -> dict:
    """The tuned plan for `workload` (it records the workload's name and fingerprint): tuned families from the
    decisions, the others from base_plan (its "*" entries spelt out per family); all with the fallback.
    `only_m` (the tune measured only these M): a tuned family keeps base_plan's entries and each decided M is
    re-dispatched by a one-M entry (pin_points), so no M is handed to a choice made at another M."""
    base = dict(base_plan["families"])
    generic = base.pop("*", None)
    families = {f: base[f] if f in base else [dict(e) for e in generic] for f in workload.family_order
                if f in base or generic is not None}
    plan = {"name": name, "description": "Tuned dispatch: per scored (family, M) the fastest correct method x "
            "config (cold timing, funnel + neighbour check; profiler/commands/tune.py)",
            "gpu": gpu, "tuned_from": run_path, "notes": notes, "workload": workload.ref, "families": families}
    by_family: dict = {}
    for d in decisions:
        by_family.setdefault(d.family, {})[d.M] = d
    for family, ds in by_family.items():
        winners = {M: (d.method, d.config) for M, d in ds.items()}
        note = {M: f"tuned at M={M}: {d.median_us:.2f} us" + (f" vs baseline {d.baseline_us:.2f} us"
                                                              if d.baseline_us else "")
                + (f"; not dispatched at M={d.stops} (more than the noise band "
                   f"{'±%.1f%%' % (100 * d.band) if d.band is not None else 'of none'} slower than the baseline there)"
                   if d.stops else "") for M, d in ds.items()}
        if only_m:
            pins = {M: {"method": d.method, "config": d.config,
                        "note": f"tuned at M={M}: {d.median_us:.2f} us"
                                + (f" vs baseline {d.baseline_us:.2f} us" if d.baseline_us else "")}
                    for M, d in ds.items()}
            plan["families"][family] = pin_points(plan["families"][family], pins, workload.family(family))
            continue
        limits = {M: d.limits() for M, d in ds.items() if d.stops}
        plan["families"][family] = build_ranges(family, winners, workload.family(family), methods, note, limits)
    return with_library_fallback(plan)
