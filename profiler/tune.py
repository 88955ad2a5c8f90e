"""The tuning sweep: try every registered method x config per scored (family, M), write the `best` plan.

    python -m profiler tune --shapes official [--families router o ...] [--out-plan kernels/plans/best.json]
                            [--out-run datasets/runs/<date>_<gpu>_tune.json] [--budget-s 360]

Algorithm (the write-up's funnel, "Try a setting, check it" / "Search noise changes how I pick a winner"):
 1. Candidates at (family, M): every method serving the family x each of its `configs` whose guard admits
    (family, M, N, K). The baseline (torch_linear) is always among them.
 2. Correctness: one call on a fresh input with sparse probe rows, compared with the FP64 reference
    (profiler.contract.check_output: rel-L2, row bound, sparse rows). A failing candidate is dropped and its
    reasons recorded; the full lifecycle contract runs later on the finished plan (profiler run).
 3. Screen: each survivor captured in a CUDA graph and timed cold (ColdTimer: read-based L2 flush before every
    replay, overhead subtracted) for `screen_rounds` alternating rounds; rank by median.
 4. Finals: the `finalists` fastest plus the baseline, re-timed together for `final_rounds` paired rounds;
    winner = lowest median, runner-up = the next.
 5. Neighbours: winner, runner-up and baseline are checked and timed at M-1 and M+1 (where the winner's and
    runner-up's guards admit them), each at THAT neighbour's real N (n_for: the unpooler's M=7 and M=9 are
    N=8192 although M=8 is N=1024). Only neighbours that share the point's N decide (a point whose N differs
    from the family's N gets an N-specific plan entry, which never runs at another N); the others are timed
    and recorded for the run file only. ROBUSTNESS RULE at the deciding neighbours:
    a. a winner that fails correctness at one loses to the runner-up (or the baseline, if that failed too);
    b. BASELINE CHECK: a winner more than NOISE_TOL (2%) slower than the baseline at one loses to the better
       (lower summed median over M and the deciding neighbours) of the baseline and the runner-up, the
       runner-up counting only if it is itself nowhere more than NOISE_TOL slower than the baseline;
    c. the winner is kept if at every one its median is within NOISE_TOL of the runner-up's or better;
       otherwise the one with the lower summed median over M and those neighbours wins (the more robust one).
    Then MIN_WIN: a non-baseline choice whose paired ratio vs the baseline at M has a 95% CI low <= 1 + MIN_WIN
    gives way to the baseline (keep_baseline_unless_significant).
 6. Ranges, per N (build_ranges): the family's general-N points (N == the family's N) make the GENERIC entries,
    covering 1..max scored M: every M goes to the nearest general-N point's winner (boundary at the midpoint,
    floor((a+b)/2) belongs to the lower point; M below the smallest point takes its winner); if that
    winner's guard rejects M (at the workload's N for M, and at the family's N), the other adjacent point's
    winner, else the baseline. Points at another N (unpooler M=1 and M=8, N=1024) make N-SPECIFIC entries
    ("N": 1024) by the same rule, spanning only min..max of those points (e.g. [1, 1] and [2, 8]), guards
    checked at that N. Equal neighbours merge into one range, so every range's method is admitted by its
    guard at every M in it.
 7. Output: the plan (gpu, tuned_from = the run file, notes; families not tuned keep the --base-plan's
    entries) and a tune run file (results for every timed candidate, baseline-vs-winner pairs, the
    decisions under the top-level key "tune"); the run file is never overwritten.
Compile cost: Triton compiles each config once per constexpr set (M is never a constexpr), so the first call
of a config at a family dominates the sweep's time; the elapsed time is printed per shape and at the end.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BASELINE = "torch_linear"
NOISE_TOL = 0.02          # neighbours: the winner may be up to 2% slower than the runner-up and still be kept
# A custom method replaces the baseline only when its paired ratio's 95% CI lower bound beats 1 + MIN_WIN. The
# committed H200 baseline-vs-baseline runs (identical kernels) spread 0.975-1.046 per shape with tight CIs: a
# few-% per-shape offset is systematic (buffer placement), so a sub-2% win at one point is not evidence.
MIN_WIN = 0.02
SCREEN_ROUNDS = 12
FINAL_ROUNDS = 48
FINALISTS = 4
GRAPH_INSTANCES = 2      # graph captures per candidate, rotated between sampling batches
DEFAULT_BUDGET_S = 360.0  # the lead's target: the whole official tune in <= 6 minutes on the H200


# ------------------------------------------------------------------------------------------ data records

@dataclass
class Point:
    """One scored (family, M) with its shape and load."""
    family: str
    M: int
    N: int
    K: int
    load: str
    spec: dict            # the workload family spec (dtypes, tolerance, N_by_M)


@dataclass
class Timed:
    """A candidate's timing at one M: samples in us (overhead subtracted)."""
    method: str
    config: dict
    samples: np.ndarray
    stage: str = "screen"

    @property
    def key(self) -> str:
        return label(self.method, self.config)

    @property
    def median(self) -> float:
        return float(np.median(self.samples))


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


def label(method: str, config: dict) -> str:
    from kernels.plans import format_config

    return format_config(method, config)


def n_for(spec: dict, M: int) -> int:
    return int(spec.get("N_by_M", {}).get(str(M), spec["N"]))


# ------------------------------------------------------------------------------------------ candidates

def scored_points(workload, families=None) -> list[Point]:
    """The scored (family, M) points in workload order, optionally restricted to `families`."""
    points = []
    for row in workload.shapes.itertuples():
        if families and row.family not in families:
            continue
        points.append(Point(row.family, int(row.M), int(row.N), int(row.K), row.load,
                            workload.families[row.family]))
    return points


def candidates(methods: dict, family: str, M: int, N: int, K: int, only=None) -> list[tuple[str, dict]]:
    """(method, config) pairs whose guard admits the shape; the baseline first."""
    out = []
    for name, method in methods.items():
        if family not in method.families or (only and name not in only and name != BASELINE):
            continue
        for config in method.configs:
            if method.supports(family, M, N, K, config) is None:
                out.append((name, dict(config)))
    out.sort(key=lambda c: c[0] != BASELINE)
    return out


# ------------------------------------------------------------------------------------------ decisions

def rank(timed: list[Timed]) -> list[Timed]:
    return sorted(timed, key=lambda t: t.median)


def robust_choice(winner: Timed, runner: Timed, neighbours: dict, base: Timed | None = None) -> tuple[Timed, str]:
    """Apply the robustness rule (5a-c) at the deciding neighbours (same N as the point).
    neighbours: {M': (winner_median, runner_median)} or {M': (winner_median, runner_median, baseline_median)},
    None where that candidate failed correctness (or was not timed) at M'. `base`: the baseline's Timed at M
    (needed for rule b; without it, or without baseline medians, rule b is skipped). Returns (choice, why)."""
    def at(v, i):
        return v[i] if len(v) > i else None

    for m, v in sorted(neighbours.items()):
        if at(v, 0) is None and at(v, 1) is not None:
            return runner, f"winner failed correctness at M={m}: runner-up taken"
        if at(v, 0) is None and at(v, 1) is None and base is not None and at(v, 2) is not None:
            return base, f"winner and runner-up failed correctness at M={m}: baseline taken"
    if base is not None and winner.key != base.key:
        with_b = {m: v for m, v in neighbours.items() if at(v, 0) is not None and at(v, 2) is not None}
        slow = sorted(m for m, v in with_b.items() if v[0] > v[2] * (1 + NOISE_TOL))
        if slow:
            b_sum = base.median + sum(v[2] for v in with_b.values())
            options = [(b_sum, base, "baseline")]
            if runner.key != base.key and all(at(v, 1) is not None and v[1] <= v[2] * (1 + NOISE_TOL)
                                              for v in with_b.values()):
                options.append((runner.median + sum(v[1] for v in with_b.values()), runner, "runner-up"))
            total, choice, name = min(options, key=lambda o: o[0])
            worst = max(with_b[m][0] / with_b[m][2] for m in slow)
            return choice, (f"winner >{NOISE_TOL:.0%} slower than the baseline at M={slow} (up to {worst:.3f}x "
                            f"its time): {name} taken (summed median over M and M+-1 {total:.2f} us)")
    both = {m: (v[0], v[1]) for m, v in neighbours.items() if at(v, 0) is not None and at(v, 1) is not None}
    if not both:
        return winner, "no neighbour where both were timed: winner kept"
    if all(w <= r * (1 + NOISE_TOL) for w, r in both.values()):
        return winner, f"winner within {NOISE_TOL:.0%} of the runner-up or better at M={sorted(both)}"
    w_sum = winner.median + sum(w for w, _ in both.values())
    r_sum = runner.median + sum(r for _, r in both.values())
    if r_sum < w_sum:
        return runner, (f"winner >{NOISE_TOL:.0%} slower at a neighbour; runner-up has the lower summed median "
                        f"over M and M+-1 ({r_sum:.2f} vs {w_sum:.2f} us)")
    return winner, (f"winner >{NOISE_TOL:.0%} slower at a neighbour but keeps the lower summed median over M "
                    f"and M+-1 ({w_sum:.2f} vs {r_sum:.2f} us)")


def keep_baseline_unless_significant(d: "Decision", base: Timed, choice: Timed) -> str:
    """Fall back to the baseline when `choice` is not significantly faster (MIN_WIN); returns a rule note."""
    from profiler.stats import summarize_pairs

    if choice.method == BASELINE:
        return ""
    st = summarize_pairs(base.samples, choice.samples)
    if np.isfinite(st["ratio_ci_low"]) and st["ratio_ci_low"] > 1.0 + MIN_WIN:
        return f"; beats baseline {st['ratio_median']:.3f}x (CI low {st['ratio_ci_low']:.3f})"
    d.method, d.config, d.median_us = base.method, base.config, base.median
    return (f"; baseline kept: {choice.key} only {st['ratio_median']:.3f}x "
            f"(CI low {st['ratio_ci_low']:.3f} <= {1 + MIN_WIN:.2f})")


def _owners(points: list[int], winners: dict, lo: int, hi: int, admits) -> list[tuple[int, int | None, tuple]]:
    """(M, owning point or None, (method, config)) for M in lo..hi: nearest point's winner (midpoint rule),
    else the other adjacent point's winner, else the baseline -- whichever `admits(choice, M)` first."""
    out = []
    for M in range(lo, hi + 1):
        below = max((p for p in points if p <= M), default=points[0])
        above = min((p for p in points if p >= M), default=points[-1])
        near = below if M <= (below + above) // 2 else above
        other = above if near == below else below
        for p in (near, other):
            if admits(winners[p], M):
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


def build_ranges(family: str, winners: dict, spec: dict, methods: dict, notes: dict | None = None) -> list[dict]:
    """Ordered plan entries (rule 6 in the module docstring): generic entries from the general-N points covering
    1..max(winners), then, per other N (sorted), entries with "N" spanning min..max of that N's points."""
    K, general = int(spec["K"]), int(spec["N"])
    notes = notes or {}
    by_n: dict[int, list[int]] = {}
    for M in sorted(winners):
        by_n.setdefault(n_for(spec, M), []).append(M)
    top = max(winners)

    def admits_generic(choice, M):
        name, config = choice
        return all(methods[name].supports(family, M, n, K, config) is None for n in {n_for(spec, M), general})

    gen_points = by_n.pop(general, [])
    if gen_points:
        entries = _merge(_owners(gen_points, winners, 1, top, admits_generic), notes, None)
    else:   # only off-N points tuned: the generic entry is the baseline
        entries = [{"M": [1, top], "method": BASELINE, "config": {}}]
    for N, pts in sorted(by_n.items()):
        def admits_n(choice, M, N=N):
            name, config = choice
            return methods[name].supports(family, M, N, K, config) is None

        entries += _merge(_owners(pts, winners, pts[0], pts[-1], admits_n), notes, N)
    return entries


# ------------------------------------------------------------------------------------------ GPU work

class Sweep:
    """Holds the device, timer, methods, prepared states and the run being written."""

    def __init__(self, methods, timer, device, seed=0, screen_rounds=SCREEN_ROUNDS, final_rounds=FINAL_ROUNDS,
                 finalists=FINALISTS, log=print, only=None):
        self.methods, self.timer, self.device, self.seed = methods, timer, device, seed
        self.screen_rounds, self.final_rounds, self.finalists = screen_rounds, final_rounds, finalists
        self.log, self.only = log, only
        self._states: dict = {}
        self._weights: dict = {}
        self.results: list[dict] = []
        self.pairs: list[dict] = []

    # -- cases and states --------------------------------------------------------------------------------
    def weight(self, family, N, K, spec):
        from profiler.contract import make_weight

        key = (family, N, K)
        if key not in self._weights:
            self._weights = {k: v for k, v in self._weights.items() if k[0] == family}
            self._states = {k: v for k, v in self._states.items() if k[0] == family and k[1] == N}
            self._weights[key] = make_weight(family, N, K, self.seed, self.device, dtype=spec["w_dtype"])
        return self._weights[key]

    def state(self, family, N, K, spec, name, config):
        key = (family, N, name, json.dumps(config, sort_keys=True))
        if key not in self._states:
            self._states[key] = self.methods[name].prepare(self.weight(family, N, K, spec), family, config)
        return self._states[key]

    def check(self, family, M, N, K, spec, name, config, x, rows):
        """Quick correctness: one call vs the FP64 reference. Returns (ok, reasons, error-dict)."""
        from profiler.contract import check_output, reference

        try:
            st = self.state(family, N, K, spec, name, config)
            y = self.methods[name].run(st, x)
            ref = reference(x, self.weight(family, N, K, spec), spec["y_dtype"])
            c = check_output(y, ref, float(spec["rel_l2_tol"]), sparse_rows=rows, expect_shape=(M, N),
                             expect_dtype=spec["y_dtype"], where=f"{family} M={M}")
            return c.ok, c.reasons, c.to_dict()
        except Exception as exc:  # a candidate's bug is a verdict, not a sweep crash
            msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            return False, [msg], None

    def time(self, family, M, N, K, spec, cands, x, rounds, stage) -> list[Timed]:
        """Paired cold samples; GRAPH_INSTANCES captures per candidate, rotated between batches (the profiler
        saw identical graphs differ by up to 4% at one shape, so no candidate rides one lucky instance)."""
        insts = []
        for name, config in cands:
            st = self.state(family, N, K, spec, name, config)
            run = self.methods[name].run
            insts.append([self.timer.capture(lambda run=run, st=st: run(st, x)) for _ in range(GRAPH_INSTANCES)])
        per = max(1, -(-rounds // GRAPH_INSTANCES))
        samples = np.concatenate([self.timer.sample([g[b] for g in insts], per) for b in range(GRAPH_INSTANCES)])
        return [Timed(n, c, samples[:, i], stage) for i, (n, c) in enumerate(cands)]

    # -- one scored point -----------------------------------------------------------------------------------
    def tune_point(self, pt: Point) -> Decision:
        from profiler.contract import make_input

        fam, M, N, K, spec = pt.family, pt.M, pt.N, pt.K, pt.spec
        x, rows = make_input(M, K, self.seed + M, self.device, dtype=spec["x_dtype"])
        ok_cands, rejected = [], {}
        for name, config in candidates(self.methods, fam, M, N, K, self.only):
            ok, reasons, _ = self.check(fam, M, N, K, spec, name, config, x, rows)
            if ok:
                ok_cands.append((name, config))
            else:
                rejected[label(name, config)] = reasons
        if not ok_cands:
            raise RuntimeError(f"{fam} M={M}: no candidate passed the correctness check: {rejected}")
        screen = rank(self.time(fam, M, N, K, spec, ok_cands, x, self.screen_rounds, "screen"))
        final_c = [(t.method, t.config) for t in screen[:self.finalists]]
        if not any(n == BASELINE for n, _ in final_c):
            final_c += [(n, c) for n, c in ok_cands if n == BASELINE]
        finals = rank(self.time(fam, M, N, K, spec, final_c, x, self.final_rounds, "final"))
        final_keys = {t.key for t in finals}
        self._record(pt, [t for t in screen if t.key not in final_keys] + finals)
        winner = finals[0]
        base = next((t for t in finals if t.method == BASELINE), None)
        if base is not None:
            self._pair(pt, base, winner)
        runner = finals[1] if len(finals) > 1 else None
        d = Decision(fam, M, winner.method, winner.config, winner.median, base.median if base else None,
                     runner.key if runner else None, "single finalist", rejected=rejected)
        if runner is not None:
            neigh = self.neighbours(pt, winner, runner, base)
            deciding = {m: v[1:] for m, v in neigh.items() if v[0] == pt.N}
            choice, d.rule = robust_choice(winner, runner, deciding, base)
            record_only = sorted(m for m, v in neigh.items() if v[0] != pt.N)
            if record_only:
                d.rule += (f"; M={record_only} timed at their own N "
                           f"{sorted({neigh[m][0] for m in record_only})} for the record only (this point's "
                           f"entry is for N={pt.N})")
            d.neighbours = {str(m): {"N": n, "winner": w, "runner_up": r, "baseline": b, "decides": n == pt.N}
                            for m, (n, w, r, b) in neigh.items()}
            d.method, d.config, d.median_us = choice.method, choice.config, choice.median
            if base is not None:
                d.rule += keep_baseline_unless_significant(d, base, next(t for t in finals if t.key == choice.key))
        self._print(pt, screen, finals, d)
        return d

    def neighbours(self, pt: Point, winner: Timed, runner: Timed, base: Timed | None = None) -> dict:
        """{M': (N', winner, runner-up, baseline medians)} at M-1 and M+1, each timed at its own N' (n_for);
        None where that candidate failed correctness there (or, for the baseline, was not given)."""
        from profiler.contract import make_input

        out = {}
        for m in (pt.M - 1, pt.M + 1):
            n = n_for(pt.spec, m)
            if m < 1 or any(self.methods[t.method].supports(pt.family, m, n, pt.K, t.config) for t in
                            (winner, runner)):
                continue
            trio = [winner, runner] + ([base] if base is not None else [])
            x, rows = make_input(m, pt.K, self.seed + 1000 + m, self.device, dtype=pt.spec["x_dtype"])
            live, seen = [], set()
            for t in trio:
                if t.key in seen:
                    continue
                seen.add(t.key)
                if self.check(pt.family, m, n, pt.K, pt.spec, t.method, t.config, x, rows)[0]:
                    live.append((t.method, t.config))
            timed = {t.key: t for t in self.time(pt.family, m, n, pt.K, pt.spec, live, x, self.final_rounds,
                                                 "neighbour")} if live else {}
            nb = Point(pt.family, m, n, pt.K, "nearby", pt.spec)
            self._record(nb, list(timed.values()))
            meds = [timed[t.key].median if t.key in timed else None for t in (winner, runner)]
            b_med = timed[base.key].median if base is not None and base.key in timed else None
            out[m] = (n, *meds, b_med)
        return out

    # -- records -----------------------------------------------------------------------------------------
    def _record(self, pt: Point, timed: list[Timed]) -> None:
        from profiler.stats import bootstrap_ci

        for t in timed:
            lo, hi = bootstrap_ci(t.samples) if len(t.samples) > 1 else (None, None)
            self.results.append({
                "load": pt.load, "family": pt.family, "M": pt.M, "N": pt.N, "K": pt.K,
                "candidate": t.key, "method": t.key, "median_us": max(t.median, 1e-6),
                "ci_low_us": _num(lo), "ci_high_us": _num(hi),
                "samples_us": [float(v) for v in t.samples], "n_samples": int(len(t.samples)),
                "correct": True, "error": None, "flags": [], "stage": t.stage})

    def _pair(self, pt: Point, base: Timed, cand: Timed) -> None:
        from profiler.stats import summarize_pairs

        stats = summarize_pairs(base.samples, cand.samples)
        for key in ("ratio_ci_low", "ratio_ci_high", "rse"):
            stats[key] = _num(stats[key])
        self.pairs.append({"load": pt.load, "family": pt.family, "M": pt.M, "N": pt.N, "K": pt.K,
                           "baseline": BASELINE, "candidate": cand.key, **stats})

    def _print(self, pt: Point, screen, finals, d: Decision) -> None:
        base = d.baseline_us
        self.log(f"\n== {pt.load}/{pt.family} M={pt.M} N={pt.N} K={pt.K}: {len(screen)} timed, "
                 f"{len(d.rejected)} rejected")
        for t in finals:
            ratio = f"{base / t.median:6.3f}x" if base else "   n/a "
            self.log(f"   final  {t.median:8.2f} us  {ratio}  {t.key}")
        for t in screen[self.finalists:]:
            self.log(f"   screen {t.median:8.2f} us           {t.key}")
        for key, reasons in d.rejected.items():
            self.log(f"   REJECT {key}: {'; '.join(reasons)[:200]}")
        self.log(f"   -> {label(d.method, d.config)} ({d.rule}; neighbours {d.neighbours})")


def _num(v):
    return None if v is None or not np.isfinite(v) else float(v)


# ------------------------------------------------------------------------------------------ plan + run

def committed_run_path(run_path) -> str:
    """Where the tune run lives in the repo: its own path when written inside the checkout, else
    datasets/runs/<name> (a device host writes to $OUT; its run files are committed there under the same name)."""
    root = Path(__file__).resolve().parents[1]
    path = Path(run_path).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return f"datasets/runs/{path.name}"


def make_plan(decisions: list[Decision], methods: dict, workload, base_plan: dict, gpu: str | None,
              run_path: str, notes: str) -> dict:
    plan = {"name": "best", "description": "Tuned dispatch: per scored (family, M) the fastest correct method x "
            "config (cold timing, funnel + neighbour check; profiler/tune.py)",
            "gpu": gpu, "tuned_from": run_path, "notes": notes, "families": dict(base_plan["families"])}
    by_family: dict = {}
    for d in decisions:
        by_family.setdefault(d.family, {})[d.M] = d
    for family, ds in by_family.items():
        winners = {M: (d.method, d.config) for M, d in ds.items()}
        note = {M: f"tuned at M={M}: {d.median_us:.2f} us" + (f" vs baseline {d.baseline_us:.2f} us"
                                                              if d.baseline_us else "") for M, d in ds.items()}
        plan["families"][family] = build_ranges(family, winners, workload.families[family], methods, note)
    return plan


def default_run_path(gpu: str) -> Path:
    from datasets import RUNS_DIR
    from profiler.runfile import run_filename, utc_now

    return Path(RUNS_DIR) / run_filename(utc_now(), gpu, "tune")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m profiler tune", description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default="official", choices=["official"], help="which shapes to tune (scored)")
    p.add_argument("--families", nargs="+", default=None, help="restrict to these families")
    p.add_argument("--methods", nargs="+", default=None, help="restrict to these methods (baseline always in)")
    p.add_argument("--out-plan", default="kernels/plans/best.json")
    p.add_argument("--out-run", default=None, help="default datasets/runs/<date>_<gpu>_tune.json")
    p.add_argument("--base-plan", default="baseline", help="entries for families not tuned")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                   help="soft wall-clock budget; points left when it runs out keep the base plan's entries")
    p.add_argument("--screen-rounds", type=int, default=SCREEN_ROUNDS)
    p.add_argument("--final-rounds", type=int, default=FINAL_ROUNDS)
    p.add_argument("--finalists", type=int, default=FINALISTS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda")
    return p.parse_args(argv)


def main(argv=None) -> int:
    import torch

    from datasets import load_workload
    from kernels.plans import load_plan, plan_from_dict
    from kernels.registry import METHODS
    from profiler.runfile import RunWriter, new_run
    from profiler.telemetry import environment
    from profiler.timing import ColdTimer

    args = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = False   # the FP32 router baseline must not run TF32
    workload = load_workload()
    env = {k: v for k, v in environment(args.device).items() if v is not None}   # optional fields: omit, not null
    gpu = env.get("gpu") or "unknown-gpu"
    run_path = Path(args.out_run) if args.out_run else default_run_path(gpu)
    writer = RunWriter(run_path)                      # refuses an existing run file before any work
    timer = ColdTimer(args.device)
    env.update(replay_overhead_us=timer.overhead_us, replay_overhead_ci_us=list(timer.overhead_ci_us),
               settings={"mode": "cold", "tool": "tune", "shapes": args.shapes, "families": args.families,
                         "methods": args.methods, "flush_bytes": timer.flush_bytes, "seed": args.seed,
                         "screen_rounds": args.screen_rounds, "final_rounds": args.final_rounds,
                         "finalists": args.finalists, "noise_tol": NOISE_TOL, "budget_s": args.budget_s,
                         "command": "python -m profiler tune " + " ".join(argv or sys.argv[1:])})
    run = new_run("tune", env)
    sweep = Sweep(METHODS, timer, args.device, args.seed, args.screen_rounds, args.final_rounds,
                  args.finalists, only=args.methods)
    decisions, skipped = [], []
    for pt in scored_points(workload, args.families):
        if time.perf_counter() - t0 > args.budget_s:
            skipped.append(f"{pt.family} M={pt.M}")
            continue
        t_pt = time.perf_counter()
        decisions.append(sweep.tune_point(pt))
        print(f"   [{time.perf_counter() - t_pt:.1f} s for this point, {time.perf_counter() - t0:.1f} s total]")
        run.update(results=sweep.results, pairs=sweep.pairs, tune=[_decision_dict(d) for d in decisions])
        writer.flush(run)
    base = json.loads(Path(load_plan(args.base_plan).path).read_text())
    tuned = {d.family for d in decisions}
    skipped_fams = {s.split()[0] for s in skipped}
    decisions = [d for d in decisions if d.family not in skipped_fams]   # a half-tuned family keeps the base
    notes = (f"Tuned by profiler/tune.py on {gpu}, {len(decisions)} scored points; families "
             f"{sorted(tuned - skipped_fams)} tuned, others from plan {args.base_plan!r}. Rule: funnel "
             f"(screen {args.screen_rounds} rounds, {args.finalists} finalists + baseline x "
             f"{args.final_rounds} rounds), neighbour check M+-1 (same-N neighbours decide; winner vs runner-up and "
             f"vs baseline) with {NOISE_TOL:.0%} tolerance, baseline unless the win's CI low > {1 + MIN_WIN:.2f}, "
             f"ranges split at midpoints between scored M, per N (entries with \"N\" for points off the "
             f"family's N)." + (f" Budget ran out: {skipped} not tuned." if skipped else ""))
    plan = make_plan(decisions, METHODS, workload, base, gpu, committed_run_path(run_path), notes)
    plan_from_dict(plan, args.out_plan, workload)       # validate before writing
    Path(args.out_plan).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out_plan).write_text(json.dumps(plan, indent=1) + "\n")
    run["tune"] = [_decision_dict(d) for d in decisions]
    run["tune_plan"] = plan
    (writer.flush if skipped else writer.finalize)(run)
    print(f"\nplan -> {args.out_plan}\nrun  -> {run_path} ({'partial' if skipped else 'complete'})")
    print(f"tune elapsed {time.perf_counter() - t0:.1f} s")
    return 0


def _decision_dict(d: Decision) -> dict:
    return {"family": d.family, "M": d.M, "method": d.method, "config": d.config, "median_us": d.median_us,
            "baseline_us": d.baseline_us, "runner_up": d.runner_up, "rule": d.rule,
            "neighbours": d.neighbours, "rejected": d.rejected}


if __name__ == "__main__":
    sys.exit(main())
