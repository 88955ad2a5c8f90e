"""`best` against the strongest peer: per shape, the fastest correct peer of the same sweep (TunableOp, torch.compile
max-autotune, FlashInfer: kernels/methods_library.py) as one virtual series, BEST_OF_PEERS, labelled derived, compared
with the candidate through dashboard.model.compare.compare (the same gate, bootstrap and verdicts as Compare).

    peer_comparison(data, candidate="best") -> PeerComparison | None   (None: the run holds no peer or no candidate)
    format_peer_comparison(pc) -> str                                   (dashboard summarize, RESULTS.md)

The virtual series takes, at each scored shape, the samples of the peer with the lowest median among those that were
correct and timed there: those samples come from the same paired rounds as the candidate's (one shape task times
every candidate), so the comparison stays paired. Picking the minimum of noisy medians favours the peers, never the
candidate. A peer that failed the contract (or was not timed) at a shape is left out of the minimum there and named
with its shapes in `peers` -- shown failing, never dropped silently; a shape where no peer was correct is a failed
shape of the virtual series, so its load and the overall row get NO SCORE.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.model import compare, scoring
from dashboard.model.compare import SHAPE_KEY
from kernels.methods_library import PEER_NAMES

BEST_OF_PEERS = "best of peers (derived)"
DERIVED_NOTE = ("derived: per shape the fastest peer that was correct there, from this sweep's measured times "
                "(same inputs, same paired rounds)")


@dataclass
class PeerComparison:
    candidate: str
    peers: pd.DataFrame                 # per peer: peer, scored shapes, correct, fastest_at, failing (shape names)
    winners: pd.DataFrame               # per scored shape: SHAPE_KEY + peer (the fastest correct one) or None
    comparison: compare.Comparison      # reference BEST_OF_PEERS, series `candidate`


def run_peers(data) -> list[str]:
    """The peers among the run's candidates (timed somewhere, or only failing), in registry order."""
    names = set(data.results["candidate"]) if len(data.results) else set()
    names |= set(data.failures["candidate"]) if len(data.failures) else set()
    return [p for p in PEER_NAMES if p in names]


def _scored(df: pd.DataFrame, data) -> pd.DataFrame:
    return df[df["load"].isin(list(data.workload.load_order))] if data.workload is not None else \
        df[df["load"] != compare.NEARBY_LOAD]


def _shape_name(key) -> str:
    return f"{key[0]}/{key[1]}"


def best_of_peers(data, peers: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the virtual series, its winner per shape, the per-peer table) from the run's peer series."""
    frames = [_scored(compare.series_from_run(data, p, p), data) for p in peers]
    every = scoring.with_status(pd.concat(frames, ignore_index=True))
    rows, winners, fastest = [], [], {p: 0 for p in peers}
    for key, g in every.groupby(SHAPE_KEY, sort=False):
        ok = g[(g["status"] == scoring.OK) & np.isfinite(g["median_us"].astype(float))]
        if len(ok):
            win = ok.loc[ok["median_us"].astype(float).idxmin()]
            fastest[win["series"]] += 1
            rows.append(win.to_dict() | {"series": BEST_OF_PEERS, "route": win.get("route")})
            winners.append(dict(zip(SHAPE_KEY, key)) | {"peer": win["series"]})
        else:
            why = "; ".join(f"{r.series}: {r.status}" for r in g.itertuples())
            rows.append(dict(zip(SHAPE_KEY, key)) | {"series": BEST_OF_PEERS, "median_us": np.nan,
                                                     "samples_us": None, "route": None, "status": scoring.FAILED,
                                                     "reason": f"no peer correct here ({why})",
                                                     "pair_group": data.path.name})
            winners.append(dict(zip(SHAPE_KEY, key)) | {"peer": None})
    table = []
    for p, frame in zip(peers, frames):
        f = scoring.with_status(frame)
        bad = f[f["status"] != scoring.OK]
        table.append({"peer": p, "scored_shapes": int(len(f)), "correct": int(len(f) - len(bad)),
                      "fastest_at": fastest[p],
                      "failing": [f"{_shape_name(k)} {s}" for k, s in
                                  zip(map(tuple, bad[SHAPE_KEY].to_numpy()), bad["status"])]})
    series = pd.DataFrame(rows)
    series = series[["series", *SHAPE_KEY, "median_us", "samples_us", "route", "status", "reason", "pair_group"]]
    return series.reset_index(drop=True), pd.DataFrame(winners), pd.DataFrame(table)


def peer_comparison(data, candidate: str = "best") -> PeerComparison | None:
    """`candidate` against BEST_OF_PEERS on the run's scored shapes, per load and overall (module docstring); None
    where the run has no peer or no such candidate."""
    peers = run_peers(data)
    if not peers or candidate in peers or candidate not in set(data.results.get("candidate", ())):
        return None
    virtual, winners, table = best_of_peers(data, peers)
    cand = _scored(compare.series_from_run(data, candidate, candidate), data)
    weights = scoring.family_weights(data.workload) if data.workload is not None else None
    comp = compare.compare(pd.concat([virtual, cand], ignore_index=True), BEST_OF_PEERS, weights)
    return PeerComparison(candidate, table, winners, comp)


def _ci(lo, hi) -> str:
    return f"[{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) else "[no CI]"


def format_peer_comparison(pc: PeerComparison) -> str:
    """The summarize block: per load and overall, the candidate's speed-up over the best of peers with its CI and
    verdict; then each peer: correct at how many scored shapes, fastest at how many, and where it failed."""
    c = pc.comparison
    lines = [f"{pc.candidate} vs {BEST_OF_PEERS} — {DERIVED_NOTE}; ratio > 1: {pc.candidate} is faster"]
    for r in c.loads.itertuples():
        ratio = f"{r.ratio:.3f} {_ci(r.ci_low, r.ci_high)}" if np.isfinite(r.ratio) else "—"
        lines.append(f"  {r.load:<12} peers Σw·t {r.reference_us:9.2f} µs  {pc.candidate} {r.series_us:9.2f} µs  "
                     f"ratio {ratio}  {r.verdict}  ({r.band_source})")
    o = c.overall.iloc[0]
    score = f"{o.score:.3f} {_ci(o.ci_low, o.ci_high)}" if np.isfinite(o.score) else "—"
    lines.append(f"  overall (geomean of load ratios): {score}  {o.verdict}  ({o.band_source})")
    if not c.gates[pc.candidate].ok:
        lines.append(f"  {c.gates[pc.candidate].message()}")
    for p in pc.peers.itertuples():
        text = f"  peer {p.peer}: correct at {p.correct}/{p.scored_shapes} scored shapes, fastest peer at {p.fastest_at}"
        if p.failing:
            shown = ", ".join(p.failing[:4]) + (f" (+{len(p.failing) - 4} more)" if len(p.failing) > 4 else "")
            text += f"; FAILING at {len(p.failing)}: {shown} (left out of the best of peers there)"
        lines.append(text)
    return "\n".join(lines)


def format_setups(records: list[dict]) -> str:
    """One line per (candidate, shape) whose record carries a peer's set-up (results[].setup of a sweep, calls[].setup
    of an explain run): what the tuning or compile cost and chose -- torch_compile's generated kernels by name."""
    lines = []
    for r in records:
        for peer, s in (r.get("setup") or {}).items():
            what = [f"{k.removesuffix('_seconds')} {s[k]:.2f} s" for k in ("compile_seconds", "autotune_seconds",
                                                                           "tune_seconds") if k in s]
            if s.get("kernels"):
                what.append("kernels " + ", ".join(s["kernels"]))
            if s.get("results"):
                what.append("picked " + "; ".join(",".join(map(str, row[1:3])) for row in s["results"]))
            lines.append(f"  {r['load']}/{r['family']} M={r['M']} {r.get('candidate', '')} ({peer}): " + "; ".join(what))
    return "\n".join(["peer set-up (measured on the run's GPU, outside every timed interval):", *lines]) if lines else ""
