"""Eager (host-inclusive) time beside graph time.

Every time projlab scores is a CUDA-graph replay (what serving engines run): the kernels alone, without the
Python dispatch and launch cost each eager call pays. A run may also record, per result, `eager_us`: the time per
call when called eagerly in a loop (host-inclusive, measured by the profiler; older runs lack it). It is shown
beside the graph time, never scored: a plan can win replayed and lose eagerly, where the host, not the kernel,
sets the time.

    with_eager(wide, table, baseline, candidate) -> wide + eager_baseline_us, eager_candidate_us,
                                                    host_baseline_us, host_candidate_us, host_bound_baseline,
                                                    host_bound_candidate
    host_bound(eager_us, median_us)   -> bool array   host cost (eager − graph) above the kernel time (graph)
    has_eager(table)                  -> bool
    host_bound_text(wide, baseline, candidate) -> str | None   one line naming the host-bound shapes
"""
from __future__ import annotations

import numpy as np
import pandas as pd

SIDES = ("baseline", "candidate")


def has_eager(table: pd.DataFrame) -> bool:
    return "eager_us" in table and bool(pd.to_numeric(table["eager_us"], errors="coerce").notna().any())


def host_bound(eager_us, median_us) -> np.ndarray:
    """The host costs more than the kernel: eager − graph > graph (NaN where either is missing: not flagged)."""
    eager, graph = np.asarray(eager_us, dtype=float), np.asarray(median_us, dtype=float)
    with np.errstate(invalid="ignore"):
        return (eager - graph) > graph


def with_eager(wide: pd.DataFrame, table: pd.DataFrame, baseline: str, candidate: str) -> pd.DataFrame:
    """views.wide_shapes' rows with each side's eager time, host cost (eager − graph) and host-bound flag; NaN /
    False where the run has no eager time."""
    out = wide.copy()
    for side, name in zip(SIDES, (baseline, candidate)):
        rows = table[table["candidate"] == name].set_index("shape")
        eager = pd.to_numeric(rows["eager_us"], errors="coerce") if "eager_us" in rows else \
            pd.Series(np.nan, index=rows.index)
        out[f"eager_{side}_us"] = eager.reindex(out["shape"]).to_numpy()
        out[f"host_{side}_us"] = out[f"eager_{side}_us"] - out[f"{side}_us"]
        out[f"host_bound_{side}"] = host_bound(out[f"eager_{side}_us"], out[f"{side}_us"])
    return out


def host_bound_text(wide: pd.DataFrame, baseline: str, candidate: str, first: int = 6) -> str | None:
    """'Host cost exceeds kernel time eagerly at 7 shapes: best at decode 1/o (eager 14.2 µs vs graph 4.1 µs),
    …' — None when no shape is host-bound (or the run has no eager times)."""
    hits = []
    for side, name in zip(SIDES, (baseline, candidate)):
        col = f"host_bound_{side}"
        if col not in wide:
            continue
        for r in wide[wide[col]].itertuples():
            hits.append(f"{name} at {r.shape} (eager {getattr(r, f'eager_{side}_us'):.1f} µs vs graph "
                        f"{getattr(r, f'{side}_us'):.1f} µs)")
    if not hits:
        return None
    more = f", … {len(hits) - first} more" if len(hits) > first else ""
    return (f"Host cost exceeds kernel time when called eagerly at {len(hits)} shape result(s): "
            f"{', '.join(hits[:first])}{more}. The score uses graph replays (what serving engines run); "
            "deployed without CUDA graphs these calls are host-bound.")
