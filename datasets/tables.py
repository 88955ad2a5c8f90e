"""Loaders for the published CSV tables: official 036 shape timings, the seed ledger, the seed HBM probes."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from datasets.csvread import (parse_bool, parse_float, parse_int, parse_optional_float, parse_optional_str,
                              parse_str, read_typed_csv)
from datasets.errors import DatasetError
from datasets.paths import OFFICIAL_036_CSV, SEED_LEDGER_CSV, SEED_PROBES_CSV
from datasets.runfile import MAX_US_PER_CALL
from datasets.workload import Workload, load_workload

OFFICIAL_COLUMNS = {"load": parse_str, "family": parse_str, "M": parse_int, "N": parse_int, "K": parse_int,
                    "baseline_us": parse_float, "candidate_us": parse_float}
LEDGER_COLUMNS = {"candidate": parse_str, "track": parse_str, "kind": parse_str, "score": parse_optional_float,
                  "ci_low": parse_optional_float, "ci_high": parse_optional_float, "status": parse_str,
                  "approx": parse_bool, "note": parse_optional_str}
LEDGER_KINDS = ("check", "scored", "local")
LEDGER_STATUSES = ("passed", "failed", "queued")
PROBE_COLUMNS = {"label": parse_str, "bytes": parse_int, "us": parse_float, "bytes_basis": parse_optional_str}


def _check_positive(path: Path, frame: pd.DataFrame, columns: list[str], at_most: float | None = None) -> None:
    for column in columns:
        for row, value in enumerate(frame[column], start=1):
            if value <= 0:
                raise DatasetError(path, column, f"expected a positive value, got {value!r}", row=row)
            if at_most is not None and value > at_most:
                raise DatasetError(path, column, f"expected a time in us of at most {at_most:.0e} (1 s per call, "
                                                 f"as in run files), got {value!r}", row=row)


def check_shapes(path: Path, frame: pd.DataFrame, workload: Workload) -> None:
    """Every row is one of the workload's scored shapes (right M, N, K), none twice, none missing."""
    expected = {(r.load, r.family): (r.M, r.N, r.K) for r in workload.shapes.itertuples()}
    seen: dict[tuple, int] = {}
    for row, rec in enumerate(frame.itertuples(), start=1):
        key = (rec.load, rec.family)
        if key not in expected:
            field = "load" if rec.load not in workload.load_order else "family"
            shown = f"{rec.load}/{rec.family}"
            shown = shown if shown.isprintable() else ascii(shown)   # a NUL or a control character, made visible
            raise DatasetError(path, field, f"unknown shape {shown}", row=row)
        if key in seen:
            raise DatasetError(path, "family", f"duplicate shape {rec.load}/{rec.family} (first at row {seen[key]})",
                               row=row)
        seen[key] = row
        for name, want in zip("MNK", expected[key]):
            if getattr(rec, name) != want:
                raise DatasetError(path, name, f"{rec.load}/{rec.family} has {name}={want} in the workload, "
                                   f"got {getattr(rec, name)}", row=row)
    missing = [f"{load}/{family}" for (load, family) in expected if (load, family) not in seen]
    if missing:
        raise DatasetError(path, "family", f"missing shape(s) {', '.join(missing)}", after_row=len(frame))


def load_official(path: str | Path | None = None, workload: Workload | None = None) -> pd.DataFrame:
    """The write-up's 30 official shape timings of candidate 036 (published, three decimals)."""
    path = Path(path) if path is not None else OFFICIAL_036_CSV
    frame = read_typed_csv(path, OFFICIAL_COLUMNS)[list(OFFICIAL_COLUMNS)]
    _check_positive(path, frame, ["baseline_us", "candidate_us"], at_most=MAX_US_PER_CALL)
    check_shapes(path, frame, workload or load_workload())
    return frame


def load_ledger(path: str | Path | None = None) -> pd.DataFrame:
    """The candidates the write-up gives a number for; `score` is NaN where none was given (failed/queued)."""
    path = Path(path) if path is not None else SEED_LEDGER_CSV
    frame = read_typed_csv(path, LEDGER_COLUMNS)[list(LEDGER_COLUMNS)]
    seen: dict[tuple, int] = {}
    for row, rec in enumerate(frame.itertuples(), start=1):
        if rec.kind not in LEDGER_KINDS:
            raise DatasetError(path, "kind", f"expected one of {LEDGER_KINDS}, got {rec.kind!r}", row=row)
        if rec.status not in LEDGER_STATUSES:
            raise DatasetError(path, "status", f"expected one of {LEDGER_STATUSES}, got {rec.status!r}", row=row)
        key = (rec.candidate, rec.kind)
        if key in seen:
            raise DatasetError(path, "kind", f"duplicate {rec.candidate} {rec.kind} (first at row {seen[key]})",
                               row=row)
        seen[key] = row
    return frame


def load_seed_probes(path: str | Path | None = None) -> pd.DataFrame:
    """The write-up's HBM read probes (bytes, µs) from the handoff lab; observed there, not hardware limits."""
    path = Path(path) if path is not None else SEED_PROBES_CSV
    frame = read_typed_csv(path, PROBE_COLUMNS)[list(PROBE_COLUMNS)]
    _check_positive(path, frame, ["bytes"])
    _check_positive(path, frame, ["us"], at_most=MAX_US_PER_CALL)
    seen: dict[int, int] = {}
    for row, nbytes in enumerate(frame["bytes"], start=1):
        if nbytes in seen:
            raise DatasetError(path, "bytes", f"duplicate probe size {nbytes} (first at row {seen[nbytes]})",
                               row=row)
        seen[nbytes] = row
    return frame
