"""The workload file schema (datasets/README.md, 'Workload files'), checked field by field.

    check_spec(spec, file, prefix="") -> None     # DatasetError naming the file, the field's path and the value

Strict on purpose: an unknown field is an error (a misspelt "N_by_m" would otherwise be silently ignored and the
shapes would be wrong), and every number is checked for type and range. `prefix` names where the object sits in a
larger document (a run file embeds its workload under "workload", so its fields read "workload.families.o.K").
"""
from __future__ import annotations

import math
import re

from datasets.errors import DatasetError
from datasets.shapes import KNOWN_DTYPES, NEARBY_LOAD

# Sanity limits, so a typo fails when the file is read rather than as an allocation error on the GPU. N and K of
# public LLM projections stay far below 2**20 (the largest are vocabulary heads, ~152k); M up to 2**16 covers decode
# batches and prefill chunks.
MAX_DIM = 1 << 20
MAX_M = 1 << 16

# Workload and family names end up in file names and in --shapes selections ("qkv_gate:1,64+o:8"), so they avoid
# spaces and the selection separators ':', ',', '+', '='; load names may hold spaces ("decode 1") but never '/',
# which separates the parts of a shape key.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
LOAD_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9 _.-]*[A-Za-z0-9])?")
SELECTION_WORDS = ("official", "nearby", "all")   # --shapes keywords: no family may be called that

TOP_REQUIRED = ("name", "source", "families", "loads", "contract")
TOP_OPTIONAL = ("description", "score", "nearby")
FAMILY_REQUIRED = ("N", "K", "x_dtype", "w_dtype", "y_dtype", "rel_l2_tol", "weight")
FAMILY_OPTIONAL = ("N_by_M", "note")
LOAD_REQUIRED = ("load", "M")
LOAD_OPTIONAL = ("note",)
CONTRACT_NUMBERS = ("row_bound_factor", "row_denominator_mean_fraction", "row_denominator_floor",
                    "sparse_probe_rel_tol", "probe_noise_rel", "outlier_column_scale", "vs_baseline_flag_factor")
CONTRACT_COUNTS = ("sparse_probe_every_rows", "sparse_probe_min_M", "outlier_column_every")
CONTRACT_EXPONENTS = ("input_scale_exponents",)  # non-empty lists of integers: powers of two, exact scalings
MAX_SCALE_EXPONENT = 30                           # 2^30 x an O(1) input stays far inside BF16/FP32 range
CONTRACT_OPTIONAL = ("reference", "note", "probe_note")
SCORE_OPTIONAL = ("per_load", "overall")
NEARBY_REQUIRED = ("M",)
NEARBY_OPTIONAL = ("note",)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Checker:
    def __init__(self, file, prefix: str):
        self.file, self.prefix = file, prefix

    def fail(self, field: str, problem: str):
        raise DatasetError(self.file, f"{self.prefix}{field}" if field else self.prefix.rstrip(".") or "(top level)",
                           problem)

    def record(self, value, field: str, required, optional, what: str = "an object") -> dict:
        """An object with every required key and no unknown one."""
        if not isinstance(value, dict):
            self.fail(field, f"expected {what}, got {_shown(value)}")
        dot = f"{field}." if field else ""
        unknown = sorted(set(value) - set(required) - set(optional))
        if unknown:
            self.fail(f"{dot}{unknown[0]}", f"unknown field; allowed: {', '.join(sorted((*required, *optional)))}")
        for key in required:
            if key not in value:
                self.fail(f"{dot}{key}", "missing")
        return value

    def text(self, value, field: str, pattern: re.Pattern | None = None, rule: str = "") -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(field, f"expected a non-empty string, got {_shown(value)}")
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(field, f"expected {rule}, got {_shown(value)}")
        return value

    def count(self, value, field: str, limit: int | None = None) -> int:
        if not _is_int(value) or value <= 0:
            self.fail(field, f"expected a positive integer, got {_shown(value)}")
        if limit is not None and value > limit:
            self.fail(field, f"{value} is over the sanity limit {limit:,}")
        return value

    def number(self, value, field: str, below: float | None = None) -> float:
        if not _is_number(value) or value <= 0:
            self.fail(field, f"expected a positive number, got {_shown(value)}")
        if below is not None and value >= below:
            self.fail(field, f"expected a number below {below}, got {_shown(value)}")
        return value

    def dtype(self, value, field: str) -> str:
        if value not in KNOWN_DTYPES:
            self.fail(field, f"expected one of {', '.join(KNOWN_DTYPES)}, got {_shown(value)}")
        return value


def check_spec(spec, file, prefix: str = "") -> None:
    """Raise DatasetError at the first field of `spec` that breaks the workload schema."""
    c = _Checker(file, f"{prefix}." if prefix else "")
    c.record(spec, "", TOP_REQUIRED, TOP_OPTIONAL, "a JSON object at the top level")
    c.text(spec["name"], "name", NAME_RE, "letters, digits, '_', '.' or '-' (the name is used in file names)")
    c.text(spec["source"], "source")
    if "description" in spec:
        c.text(spec["description"], "description")
    if "score" in spec:
        for key in c.record(spec["score"], "score", (), SCORE_OPTIONAL):
            c.text(spec["score"][key], f"score.{key}")
    load_m = _check_loads(c, spec["loads"])
    _check_families(c, spec["families"], load_m)
    _check_contract(c, spec["contract"])
    if "nearby" in spec:
        _check_nearby(c, spec["nearby"], load_m)


def _check_loads(c: _Checker, loads) -> dict[int, str]:
    """Each load names one M; names and M values are unique (so an M picks one scored shape per family)."""
    if not isinstance(loads, list) or not loads:
        c.fail("loads", f"expected a non-empty list of {{\"load\": name, \"M\": rows}}, got {_shown(loads)}")
    by_name: dict[str, int] = {}
    load_m: dict[int, str] = {}
    for i, entry in enumerate(loads):
        where = f"loads[{i}]"
        c.record(entry, where, LOAD_REQUIRED, LOAD_OPTIONAL)
        name = c.text(entry["load"], f"{where}.load", LOAD_RE, "letters, digits, spaces, '_', '.' or '-' (no '/')")
        if name == NEARBY_LOAD:
            c.fail(f"{where}.load", f"{name!r} is reserved: it is the load of every unscored shape")
        if name in by_name:
            c.fail(f"{where}.load", f"duplicate load {name!r} (first at loads[{by_name[name]}])")
        by_name[name] = i
        M = c.count(entry["M"], f"{where}.M", MAX_M)
        if M in load_m:
            c.fail(f"{where}.M", f"M={M} is already load {load_m[M]!r}; each load needs its own M")
        load_m[M] = name
        if "note" in entry:
            c.text(entry["note"], f"{where}.note")
    return load_m


def _check_families(c: _Checker, families, load_m: dict[int, str]) -> None:
    if not isinstance(families, dict) or not families:
        c.fail("families", f"expected a non-empty object of families, got {_shown(families)}")
    for name, fam in families.items():
        where = f"families.{name}"
        if not NAME_RE.fullmatch(name) or name in SELECTION_WORDS:
            c.fail(where, f"family name {name!r}: expected letters, digits, '_', '.' or '-', and not one of "
                          f"{', '.join(SELECTION_WORDS)} (used in --shapes selections)")
        c.record(fam, where, FAMILY_REQUIRED, FAMILY_OPTIONAL)
        c.count(fam["N"], f"{where}.N", MAX_DIM)
        c.count(fam["K"], f"{where}.K", MAX_DIM)
        for key in ("x_dtype", "w_dtype", "y_dtype"):
            c.dtype(fam[key], f"{where}.{key}")
        c.number(fam["rel_l2_tol"], f"{where}.rel_l2_tol", below=1)
        c.number(fam["weight"], f"{where}.weight")
        if "note" in fam:
            c.text(fam["note"], f"{where}.note")
        if "N_by_M" in fam:
            _check_n_by_m(c, fam["N_by_M"], f"{where}.N_by_M", load_m)


def _check_n_by_m(c: _Checker, n_by_m, where: str, load_m: dict[int, str]) -> None:
    """{"<M>": N}: the family runs a different N at these scored M values (muse: the unpooler's N=1024 slice)."""
    if not isinstance(n_by_m, dict):
        c.fail(where, f"expected an object {{\"<M>\": N}}, got {_shown(n_by_m)}")
    for key, N in n_by_m.items():
        if not (key.isascii() and key.isdigit() and key[0] != "0"):
            c.fail(f"{where}.{key}", f"expected an M written as a positive integer key, got {key!r}")
        if int(key) not in load_m:
            c.fail(f"{where}.{key}", f"M={key} is not the M of any load (loads have M "
                                     f"{', '.join(str(m) for m in load_m)}); N_by_M only overrides N at scored loads")
        c.count(N, f"{where}.{key}", MAX_DIM)


def _check_contract(c: _Checker, contract) -> None:
    c.record(contract, "contract", CONTRACT_NUMBERS + CONTRACT_COUNTS + CONTRACT_EXPONENTS, CONTRACT_OPTIONAL)
    for key in CONTRACT_NUMBERS:
        c.number(contract[key], f"contract.{key}")
    for key in CONTRACT_EXPONENTS:
        value = contract[key]
        exact = isinstance(value, list) and value and all(_is_int(e) and abs(e) <= MAX_SCALE_EXPONENT for e in value)
        if not exact:
            c.fail(f"contract.{key}", f"expected a non-empty list of integers within +-{MAX_SCALE_EXPONENT}, "
                                      f"got {_shown(value)}")
    for key in CONTRACT_COUNTS:
        c.count(contract[key], f"contract.{key}")
    for key in CONTRACT_OPTIONAL:
        if key in contract:
            c.text(contract[key], f"contract.{key}")


def _check_nearby(c: _Checker, nearby, load_m: dict[int, str]) -> None:
    """Unscored M values timed at each family's N; none may be a load's M (that shape is already scored)."""
    c.record(nearby, "nearby", NEARBY_REQUIRED, NEARBY_OPTIONAL)
    if not isinstance(nearby["M"], list):
        c.fail("nearby.M", f"expected a list of positive integers, got {_shown(nearby['M'])}")
    seen: dict[int, int] = {}
    for j, M in enumerate(nearby["M"]):
        c.count(M, f"nearby.M[{j}]", MAX_M)
        if M in seen:
            c.fail(f"nearby.M[{j}]", f"duplicate M={M} (first at nearby.M[{seen[M]}])")
        if M in load_m:
            c.fail(f"nearby.M[{j}]", f"M={M} is the scored load {load_m[M]!r}; nearby M values are never scored")
        seen[M] = j
    if "note" in nearby:
        c.text(nearby["note"], "nearby.note")
