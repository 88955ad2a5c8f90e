"""The workload spec (datasets/workload.json) as DataFrames: the 30 scored shapes and the nearby shapes."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from datasets.errors import DatasetError
from datasets.jsonfile import JsonInputError, read_json
from datasets.paths import WORKLOAD_JSON

SHAPE_COLUMNS = ["load", "family", "M", "N", "K", "x_dtype", "w_dtype", "y_dtype", "weight", "rel_l2_tol"]
KNOWN_DTYPES = ("bfloat16", "float16", "float32")
NEARBY_LOAD = "nearby"


@dataclass(frozen=True)
class Workload:
    shapes: pd.DataFrame          # 30 scored shapes, loads in spec order × families in spec order
    nearby: pd.DataFrame          # generalization shapes, load == "nearby", never scored
    families: dict                # family name -> its JSON record
    loads: list                   # [{"load": ..., "M": ...}, ...] in spec order
    contract: dict                # correctness-contract constants
    load_order: list
    family_order: list

    def shape_key(self, load: str, family: str, M: int) -> str:
        """The key used in run files and UIs (INTERFACES.md, 'Shape identity')."""
        return f"nearby/{family}/M{M}" if load == NEARBY_LOAD else f"{load}/{family}"


def _require(record: dict, key: str, kind, path: Path, where: str):
    if key not in record:
        raise DatasetError(path, f"{where}.{key}", "missing")
    value = record[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise DatasetError(path, f"{where}.{key}", f"expected a positive integer, got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                          or not math.isfinite(value) or value <= 0):
        raise DatasetError(path, f"{where}.{key}", f"expected a positive number, got {value!r}")
    if kind is str and value not in KNOWN_DTYPES:
        raise DatasetError(path, f"{where}.{key}", f"expected one of {KNOWN_DTYPES}, got {value!r}")
    return value


def _family_row(path: Path, name: str, fam: dict, load: str, M: int, N: int) -> dict:
    where = f"families.{name}"
    row = {"load": load, "family": name, "M": M, "N": N, "K": _require(fam, "K", int, path, where)}
    for key in ("x_dtype", "w_dtype", "y_dtype"):
        row[key] = _require(fam, key, str, path, where)
    row["weight"] = _require(fam, "weight", float, path, where)
    row["rel_l2_tol"] = float(_require(fam, "rel_l2_tol", float, path, where))
    return row


def _scored_n(path: Path, name: str, fam: dict, M: int) -> int:
    """The family's N at this M: its general N unless N_by_M overrides it (unpooler at M=1 and M=8)."""
    n_by_m = fam.get("N_by_M", {})
    if str(M) in n_by_m:
        return _require(n_by_m, str(M), int, path, f"families.{name}.N_by_M")
    return _require(fam, "N", int, path, f"families.{name}")


def load_workload(path: str | Path | None = None) -> Workload:
    path = Path(path) if path is not None else WORKLOAD_JSON
    try:
        spec = read_json(path)
    except JsonInputError as exc:
        raise DatasetError(path, "(json)", str(exc).split(": ", 1)[-1]) from None
    if not isinstance(spec, dict):
        raise DatasetError(path, "(json)", f"top level must be an object, got {type(spec).__name__}")
    for key in ("families", "loads", "contract", "nearby"):
        if key not in spec:
            raise DatasetError(path, key, "missing")
    families = spec["families"]
    loads = spec["loads"]
    load_order = []
    rows = []
    for i, entry in enumerate(loads):
        load = entry.get("load")
        if not isinstance(load, str) or not load or load == NEARBY_LOAD:
            raise DatasetError(path, f"loads[{i}].load", f"expected a load name, got {load!r}")
        if load in load_order:
            raise DatasetError(path, f"loads[{i}].load", f"duplicate load {load!r}")
        load_order.append(load)
        M = _require(entry, "M", int, path, f"loads[{i}]")
        for name, fam in families.items():
            rows.append(_family_row(path, name, fam, load, M, _scored_n(path, name, fam, M)))
    nearby_m = spec["nearby"].get("M", [])
    nearby_rows = []
    for name, fam in families.items():
        for j, M in enumerate(nearby_m):
            _require({"M": M}, "M", int, path, f"nearby.M[{j}]")
            N = _require(fam, "N", int, path, f"families.{name}")  # general N, never the N_by_M slice
            nearby_rows.append(_family_row(path, name, fam, NEARBY_LOAD, M, N))
    return Workload(
        shapes=pd.DataFrame(rows, columns=SHAPE_COLUMNS),
        nearby=pd.DataFrame(nearby_rows, columns=SHAPE_COLUMNS),
        families=dict(families), loads=list(loads), contract=dict(spec["contract"]),
        load_order=load_order, family_order=list(families),
    )
