"""Facts about one projection shape y[M,N] = x[M,K] @ w[N,K]^T that need no workload: its key, dtype sizes, bytes.

A shape is a mapping with the SHAPE_COLUMNS keys (a dict from Workload.shape / select_shapes, a run-file result,
a DataFrame row). Its *load* says whether it is scored: a workload's own load names are scored; the reserved load
"nearby" marks every unscored M (the workload's nearby list, an M the user names, the tuner's M±1 neighbours) and
is never scored. One unscored label keeps a shape's identity a function of (family, M): the committed tune runs
already time M=127 and M=257 (neighbours of 128 and 256, not in muse's nearby list) as "nearby", and a later
`--shapes o:127` run lines up with them.
"""
from __future__ import annotations

from typing import Mapping

SHAPE_COLUMNS = ["load", "family", "M", "N", "K", "x_dtype", "w_dtype", "y_dtype", "weight", "rel_l2_tol"]

# Bytes per element of the torch-style dtype names a workload may use (torch.<name>.itemsize).
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
KNOWN_DTYPES = tuple(DTYPE_BYTES)

NEARBY_LOAD = "nearby"   # the load of every unscored shape; no workload may name a load so
SHAPE_ID_FIELDS = ("load", "family", "M", "N", "K")   # what names one shape in every run-file record


def is_scored_load(load: str) -> bool:
    return load != NEARBY_LOAD


def shape_key(load: str, family: str, M: int) -> str:
    """The key of a shape in run files and UIs: f"{load}/{family}" for a scored shape (one M per load),
    f"nearby/{family}/M{M}" for an unscored one ("nearby/o/M9")."""
    if is_scored_load(load):
        return f"{load}/{family}"
    return f"{NEARBY_LOAD}/{family}/M{int(M)}"


def shape_key_of(shape: Mapping) -> str:
    return shape_key(shape["load"], shape["family"], shape["M"])


def shape_identity(shape: Mapping) -> dict:
    """The identity fields of a run-file record (SHAPE_ID_FIELDS): load and family as given, M, N, K as ints."""
    return {"load": shape["load"], "family": shape["family"], "M": int(shape["M"]), "N": int(shape["N"]),
            "K": int(shape["K"])}


def dtype_signature(shape: Mapping) -> tuple[str, str, str]:
    """(x_dtype, w_dtype, y_dtype) of a shape row or a workload family record: what a kernel method must compute
    (kernels/method.py serves dtype signatures, not family names)."""
    return (str(shape["x_dtype"]), str(shape["w_dtype"]), str(shape["y_dtype"]))


def n_at(family_record: Mapping, M: int) -> int:
    """A workload family record's N at M: its N_by_M entry, else its N (the one N-by-M rule; Workload.n_at)."""
    return int(family_record.get("N_by_M", {}).get(str(int(M)), family_record["N"]))


def dtype_bytes(name: str) -> int:
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {sorted(DTYPE_BYTES)}") from None


def weight_bytes(shape: Mapping) -> int:
    return int(shape["N"]) * int(shape["K"]) * dtype_bytes(shape["w_dtype"])


def bytes_moved(M, N, K, x_dtype: str = "bfloat16", w_dtype: str = "bfloat16", y_dtype: str = "bfloat16"):
    """The one byte count: read w[N,K] and x[M,K] once, write y[M,N] once, each at its stored dtype (no scratch,
    no rereads). M, N, K may be ints or numpy arrays / pandas Series (plain arithmetic broadcasts)."""
    return N * K * dtype_bytes(w_dtype) + M * K * dtype_bytes(x_dtype) + M * N * dtype_bytes(y_dtype)


def shape_bytes(shape: Mapping) -> int:
    """Bytes the projection must move at least once: weights + input + output, each at its stored dtype
    (the floor the task itself counts)."""
    return int(bytes_moved(int(shape["M"]), int(shape["N"]), int(shape["K"]), shape["x_dtype"], shape["w_dtype"],
                           shape["y_dtype"]))
