"""A workload (datasets/workloads/<name>.json): the projections one model runs, and every fact derived from them.

    load_workload(ref=None, *, inside_project=False) -> Workload   # a name, a path, or None (muse_bf16_proj)
    resolve_workload(ref=None, *, inside_project=False) -> Path
    list_workloads() -> list[str]                                  # names in datasets/workloads/
    workload_from_dict(spec, source="<workload>", prefix="") -> Workload
    Workload.to_dict() -> dict                                     # what a run file embeds under "workload"
    Workload.ref -> {"name", "fingerprint"}                        # what a plan records (kernels/plans.py)
    Workload.dtypes(family) -> (x_dtype, w_dtype, y_dtype)         # what a kernel method must compute
    workload_of_run(run, source="<run>") -> (Workload, note | None)

The facts (N at (family, M), shape rows, keys) are Workload methods; shape-only facts (dtype and shape bytes, the
shape key) live in datasets/shapes.py. Every other layer asks here instead of reading the JSON fields itself.
"""
from __future__ import annotations

import copy
import hashlib
import json
import shlex
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping

import pandas as pd

from datasets.errors import DatasetError
from datasets.jsonfile import JsonInputError, read_json
from datasets.paths import DEFAULT_WORKLOAD, PROJECT_DIR, WORKLOAD_JSON, WORKLOADS_DIR
from datasets.selection import select_shapes
from datasets.shapes import NEARBY_LOAD, SHAPE_COLUMNS, shape_key
from datasets.shapes import dtype_signature
from datasets.shapes import n_at as family_n_at
from datasets.workload_spec import NAME_RE, check_spec, with_defaults

__all__ = ["Workload", "load_workload", "resolve_workload", "list_workloads", "workload_from_dict",
           "workload_of_run", "RUN_KEY", "DEFAULT_WORKLOAD", "SHAPE_COLUMNS", "NEARBY_LOAD"]

RUN_KEY = "workload"                    # the run file's top-level field holding Workload.to_dict()


@dataclass(frozen=True, eq=False)
class Workload:
    shapes: pd.DataFrame          # scored shapes, loads in spec order × families in spec order
    nearby: pd.DataFrame          # the nearby list's shapes (load "nearby"), families × M, never scored
    families: dict                # family name -> its JSON record
    loads: list                   # [{"load": ..., "M": ...}, ...] in spec order
    contract: dict                # correctness-contract constants
    load_order: list
    family_order: list
    name: str
    spec: dict                    # the validated JSON object, as read (what to_dict returns)
    origin: str                   # where it came from: a file path, or "<run file> (embedded)"

    # --- facts ---------------------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        return self.spec["source"]

    @property
    def nearby_m(self) -> list[int]:
        return list(self.spec.get("nearby", {}).get("M", []))

    @property
    def load_m(self) -> dict[str, int]:
        """load name -> M, in spec order."""
        return {entry["load"]: int(entry["M"]) for entry in self.loads}

    @cached_property
    def _load_of_m(self) -> dict[int, str]:
        return {int(entry["M"]): entry["load"] for entry in self.loads}

    def load_at(self, M: int) -> str | None:
        """The scored load whose M this is, or None (each load has its own M; the loader checks it). A dict built
        once: every shape row asks, so a scan of the loads per call made reading a workload quadratic."""
        return self._load_of_m.get(int(M))

    def is_scored(self, load: str) -> bool:
        return load in self.load_order

    def family(self, name: str) -> dict:
        """The family's JSON record; ValueError naming the workload's families when `name` is not one."""
        if name not in self.families:
            raise ValueError(f"unknown family {name!r}; {self.name} has {', '.join(self.family_order)}")
        return self.families[name]

    def n_at(self, family: str, M: int) -> int:
        """The family's N at M: its N_by_M entry (only at a scored load's M), else its N. The one N-by-M rule."""
        return family_n_at(self.family(family), M)

    def shape_key(self, load: str, family: str, M: int) -> str:
        """The key used in run files and UIs (datasets.shapes.shape_key)."""
        return shape_key(load, family, M)

    def shape(self, family: str, M: int) -> dict:
        """The shape row at any (family, M): the scored one when M is a load's M, else an unscored "nearby" one
        (whether or not M is in the nearby list). N follows n_at, so the row depends on (family, M) only."""
        M = int(M)
        spec = self.family(family)
        load = self.load_at(M) or NEARBY_LOAD
        return {"load": load, "family": family, "M": M, "N": self.n_at(family, M), "K": int(spec["K"]),
                "x_dtype": spec["x_dtype"], "w_dtype": spec["w_dtype"], "y_dtype": spec["y_dtype"],
                "weight": spec["weight"], "rel_l2_tol": float(spec["rel_l2_tol"])}

    def scored_rows(self) -> list[dict]:
        """The scored shapes as dicts, in the order of `shapes` (loads × families)."""
        return [self.shape(family, entry["M"]) for entry in self.loads for family in self.family_order]

    def nearby_rows(self) -> list[dict]:
        """The nearby shapes as dicts, in the order of `nearby` (families × nearby M)."""
        return [self.shape(family, M) for family in self.family_order for M in self.nearby_m]

    def select(self, selection: str) -> list[dict]:
        """Shape rows for a --shapes selection (datasets.selection.select_shapes)."""
        return select_shapes(selection, self)

    @property
    def fingerprint(self) -> str:
        """12 hex digits identifying what is measured and scored (names, N, K, dtypes, tolerances, weights, loads,
        nearby M, contract), blind to prose fields, so two runs can be checked to share a workload."""
        measured = {"name": self.name,
                    "families": {f: {k: v for k, v in rec.items() if k != "note"} for f, rec in self.families.items()},
                    "loads": [[entry["load"], entry["M"]] for entry in self.loads],
                    "contract": {k: v for k, v in self.contract.items() if k not in ("note", "reference")},
                    "nearby": self.nearby_m}
        return hashlib.sha256(json.dumps(measured, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def cli_ref(self) -> str:
        """What `--workload` takes to mean this workload: its name when it is a file of datasets/workloads/ (or a
        run's copy of one), else the path of the file it was read from."""
        origin = Path(self.origin)
        if origin.suffix == ".json" and origin.is_file() and origin.resolve().parent != WORKLOADS_DIR.resolve():
            return shlex.quote(str(origin))
        return self.name

    @property
    def ref(self) -> dict:
        """{"name", "fingerprint"}: how a plan records the workload it was tuned for (kernels/plans.py)."""
        return {"name": self.name, "fingerprint": self.fingerprint}

    def dtypes(self, family: str) -> tuple[str, str, str]:
        """The family's (x_dtype, w_dtype, y_dtype) (datasets.shapes.dtype_signature)."""
        return dtype_signature(self.family(family))

    def to_dict(self) -> dict:
        """The JSON object to embed in a run file (under RUN_KEY); workload_from_dict reads it back."""
        return copy.deepcopy(self.spec)


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SHAPE_COLUMNS)


def _default_contract() -> dict:
    """The default workload's contract numbers, what a workload file that writes none gets (read raw: the default
    file is complete, so no defaults are needed to read it)."""
    try:
        contract = read_json(WORKLOAD_JSON, kind="workload").get("contract")
    except (JsonInputError, AttributeError):
        return {}
    return contract if isinstance(contract, dict) else {}


def workload_from_dict(spec, source: str = "<workload>", prefix: str = "", origin: str = "",
                       name: str | None = None) -> Workload:
    """Fill in the defaults (datasets.workload_spec.with_defaults; `name` is the file's stem, for a file), validate
    (DatasetError names `source` and every bad field) and build the Workload. Defaults come first, so the
    fingerprint of a file that writes them out is that of one that leaves them out."""
    spec = with_defaults(spec, name, _default_contract())
    check_spec(spec, source, prefix)
    bare = Workload(shapes=_frame([]), nearby=_frame([]), families=spec["families"], loads=spec["loads"],
                    contract=spec["contract"], load_order=[e["load"] for e in spec["loads"]],
                    family_order=list(spec["families"]), name=spec["name"], spec=spec, origin=origin or source)
    return Workload(shapes=_frame(bare.scored_rows()), nearby=_frame(bare.nearby_rows()),
                    families=bare.families, loads=bare.loads, contract=bare.contract, load_order=bare.load_order,
                    family_order=bare.family_order, name=bare.name, spec=spec, origin=bare.origin)


# --- finding and reading workload files ----------------------------------------------------------------------
def list_workloads() -> list[str]:
    return sorted(p.stem for p in WORKLOADS_DIR.glob("*.json") if p.is_file())


def resolve_workload(ref: str | Path | None = None, *, inside_project: bool = False) -> Path:
    """The file a workload reference means: None or "" -> the default (muse_bf16_proj); a bare name (no '/', no
    '.json') -> datasets/workloads/<name>.json; anything else is a path to a .json file. With inside_project (the
    app, where a path is typed by whoever uses the page) a path must lie inside the repository."""
    if ref is None or str(ref) == "":
        return WORKLOAD_JSON
    text = str(ref)
    if isinstance(ref, str) and NAME_RE.fullmatch(text) and not text.endswith(".json"):
        path = WORKLOADS_DIR / f"{text}.json"
        if not path.is_file():
            raise DatasetError(text, "workload", f"no workload named {text!r} in datasets/workloads/ "
                                                 f"(known: {', '.join(list_workloads())}); or give a .json path")
        return path
    path = Path(text)
    if path.suffix != ".json":
        raise DatasetError(path, "workload", f"expected a workload name or a .json file, got {text!r}")
    if inside_project and not path.resolve().is_relative_to(PROJECT_DIR):
        raise DatasetError(path, "workload", f"{text!r} is outside the project; only files inside it are read here")
    return path


def load_workload(ref: str | Path | None = None, *, inside_project: bool = False) -> Workload:
    """Read and validate a workload by name or path (see resolve_workload); errors are one DatasetError line."""
    path = resolve_workload(ref, inside_project=inside_project)
    try:
        spec = read_json(path, kind="workload")
    except JsonInputError as exc:
        raise DatasetError(path, "(json)", str(exc).split(": ", 1)[-1]) from None
    workload = workload_from_dict(spec, str(path), origin=str(path), name=path.stem)
    if path.resolve().parent == WORKLOADS_DIR and path.stem != workload.name:
        raise DatasetError(path, "name", f"{workload.name!r} differs from the file name; a workload in "
                                         f"datasets/workloads/ is found by its name, so it must be {path.stem!r}")
    return workload


# --- the workload of a run file ------------------------------------------------------------------------------
def workload_of_run(run: Mapping, source: str = "<run>") -> tuple[Workload, str | None]:
    """The workload a run was measured with: its embedded RUN_KEY object, or for a run recorded before runs carried
    one, the default workload, with a note (to show the reader) saying it was assumed."""
    if RUN_KEY in run:
        name = Path(source).name
        return workload_from_dict(run[RUN_KEY], name, RUN_KEY, origin=f"{name} (embedded)"), None
    note = (f"{Path(source).name} does not record its workload (it was written before run files embedded one); "
            f"assuming the default workload {DEFAULT_WORKLOAD}.")
    return load_workload(), note

