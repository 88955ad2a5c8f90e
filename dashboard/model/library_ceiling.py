"""The library ceiling: what cuBLASLt does at a shape when asked well, beside what F.linear gets from it.

F.linear takes the first configuration cuBLASLt's heuristic lists; the library can do better with another one of
that list or with one beyond it (kernels/launch/cublaslt.py). tests/benchmarks/bench_cublaslt_search.py measured
both, cold and paired in one process, per shape: its files (datasets/cublaslt_search, read by
datasets.lt_search) are the source here -- no run file's timer asks the library more than once per shape.

    ceiling(shapes, gpu=None, folder=None) -> (DataFrame, notes)

One row per shape of `shapes` (columns load, family, M, N, K and the three dtypes) that a search file covers, BF16
only (what the search times), from the newest file that covers it (file names sort by date) and, with `gpu`, was
measured on that GPU: torch_linear's µs, the heuristic's fastest configuration (orientation, µs), the library's
fastest of all finals (µs, orientation, identity), `ceiling_x` = torch_linear ÷ library best (derived, both from
the same file), `over_heuristic` (the paired ratio the file records for that find), the file and library version.
`notes`: one line per search file left out (unreadable, or another GPU).
"""
from __future__ import annotations

import pandas as pd

from datasets.errors import DatasetError
from datasets.lt_search import read_search, search_files
from datasets.shapes import shape_key

IDENT_KEYS = ("tile_id", "split_k", "reduction", "custom", "cluster_shape_id", "stages_id", "swizzle")
COLUMNS = ["shape", "load", "family", "M", "N", "K", "torch_linear_us", "heuristic_orient", "heuristic_us",
           "library_route", "library_us", "library_config", "ceiling_x", "over_heuristic", "source",
           "cublaslt_version"]


def with_dtypes(shapes: pd.DataFrame, workload) -> pd.DataFrame:
    """`shapes` (load, family, M, N, K, ...) with each family's dtypes from `workload` (what ceiling() filters on)."""
    out = shapes.copy()
    for i, col in enumerate(("x_dtype", "w_dtype", "y_dtype")):
        out[col] = out["family"].map(lambda f: workload.dtypes(f)[i])
    return out


def _identity(config: dict) -> str:
    return " ".join(f"{k}={config[k]}" for k in IDENT_KEYS if k in config)


def ceiling(shapes: pd.DataFrame, gpu: str | None = None, folder=None) -> tuple[pd.DataFrame, list[str]]:
    notes, files = [], []
    for path in reversed(search_files(folder)):           # newest first
        try:
            found = read_search(path)
        except DatasetError as exc:
            notes.append(f"left out: {exc}")
            continue
        if gpu is not None and found.gpu is not None and found.gpu != gpu:
            notes.append(f"left out: {path.name} was measured on {found.gpu}, not {gpu}")
            continue
        files.append(found)
    rows = []
    bf16 = ("bfloat16",) * 3
    for s in shapes.itertuples(index=False):
        if tuple(getattr(s, c, "bfloat16") for c in ("x_dtype", "w_dtype", "y_dtype")) != bf16:
            continue
        covering = ((f, f.shape(int(s.M), int(s.N), int(s.K))) for f in files)
        report, shape = next(((f, hit) for f, hit in covering if hit is not None), (None, None))
        if shape is None:
            continue
        base, heur = shape.best("torch_linear"), shape.best("heuristic")
        best = min(shape.finals, key=lambda f: f.median_us)
        rows.append({"shape": shape_key(s.load, s.family, s.M), "load": s.load, "family": s.family, "M": int(s.M),
                     "N": int(s.N), "K": int(s.K),
                     "torch_linear_us": base.median_us if base else None,
                     "heuristic_orient": heur.orient if heur else None,
                     "heuristic_us": heur.median_us if heur else None,
                     "library_route": best.kind if best.kind == "torch_linear" else f"{best.kind} {best.orient}",
                     "library_us": best.median_us, "library_config": _identity(best.config),
                     "ceiling_x": base.median_us / best.median_us if base else None,
                     "over_heuristic": best.vs_heuristic if best.kind == "found" else None,
                     "source": report.path.name, "cublaslt_version": report.cublaslt_version})
    return pd.DataFrame(rows, columns=COLUMNS), notes


def caption(table: pd.DataFrame) -> str:
    """One line under a ceiling table: where the numbers come from and what is derived."""
    if table.empty:
        return ("No cuBLASLt search covers these shapes (python3 tests/benchmarks/bench_cublaslt_search.py on a GPU "
                "host writes one into datasets/cublaslt_search/).")
    files = ", ".join(sorted(set(table["source"])))
    return (f"Measured by the cuBLASLt search benchmark ({files}; cold, paired, one process; not this run's timer): "
            "torch_linear is F.linear's own pick, 'heuristic' the fastest configuration the library lists, 'library' "
            "the fastest of everything re-measured, found beyond the list or not. Ceiling × = torch_linear ÷ library "
            "(derived from the same file).")
