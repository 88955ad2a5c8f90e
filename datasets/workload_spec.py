"""The workload file schema (datasets/README.md, 'Workload files'), checked field by field, and its defaults.

    with_defaults(spec, name=None, contract=None) -> spec   # the missing optional-by-default fields filled in
    check_spec(spec, file, prefix="") -> None     # WorkloadSpecError naming the file and, for every problem at
                                                  # once, the field's path and the value

Only each family's N and K and the loads must be written: dtypes default to bfloat16 (the output to the weight's
dtype, what F.linear returns), the tolerance to the output dtype's standard (STANDARD_REL_L2_TOL), the weight to 1,
the contract to the default workload's, the name to the file's stem. Defaults are filled in before the workload is
fingerprinted, so a file that writes them out and one that leaves them to the defaults are the same workload.

Strict on purpose: an unknown field is an error (a misspelt "N_by_m" would otherwise be silently ignored and the
shapes would be wrong), and every number is checked for type and range. `prefix` names where the object sits in a
larger document (a run file embeds its workload under "workload", so its fields read "workload.families.o.K").
"""
from __future__ import annotations

import copy
import math
import re
from contextlib import contextmanager
from pathlib import Path

from datasets.errors import DatasetError
from datasets.shapes import KNOWN_DTYPES, NEARBY_LOAD

# Sanity limits, so a typo fails when the file is read rather than as an allocation error on the GPU. N and K of
# public LLM projections stay far below 2**20 (the largest are vocabulary heads, ~152k); M up to 2**16 covers decode
# batches and prefill chunks.
MAX_DIM = 1 << 20
MAX_M = 1 << 16
MAX_NAME = 80         # workload, family and load names end up in file names and one-line messages
# A workload's scored shapes are loads x families and every reader builds them: with no limit a 150 KB file of 2,000
# families and 2,000 loads is 4 million shapes (minutes of CPU in every reader). A model's decode step has under 10
# projection families and a handful of loads (the committed workloads: 5 x 6 and 4 x 4), so 64 each (4,096 shapes)
# leaves room and keeps every reader fast.
MAX_FAMILIES = 64
MAX_LOADS = 64
MAX_NEARBY_M = 256
# A family's weight multiplies its times inside each load's sum: outside this range the sums overflow or vanish in
# floating point (1e308 x 10 us is inf), and no model weighs one projection a million times another.
WEIGHT_RANGE = (1e-6, 1e6)

# Workload and family names end up in file names and in --shapes selections ("qkv_gate:1,64+o:8"), so they avoid
# spaces and the selection separators ':', ',', '+', '='; load names may hold spaces ("decode 1") but never '/',
# which separates the parts of a shape key.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
LOAD_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9 _.-]*[A-Za-z0-9])?")
SELECTION_WORDS = ("official", "nearby", "all")   # --shapes keywords: no family may be called that
MAX_LISTED = 10   # problems spelled out in one message; the rest are counted (WorkloadSpecError.problems has all)

TOP_REQUIRED = ("name", "source", "families", "loads", "contract")
TOP_OPTIONAL = ("description", "score", "nearby", "layer")   # layer: datasets/layer_spec.py
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
# Where a contract number stops meaning anything: a relative tolerance or fraction of 1 or more checks nothing, a
# probe row whose noise is not below its dominant entry is no probe, a row or column spacing past the largest M or
# K puts no probe row or outlier column in any input. (upper bound, inclusive?) per key; numbers are > 0 as well.
CONTRACT_LIMITS = {"sparse_probe_rel_tol": (1, False), "probe_noise_rel": (1, False),
                   "row_denominator_mean_fraction": (1, True), "row_denominator_floor": (1, True),
                   "sparse_probe_every_rows": (MAX_M, True), "sparse_probe_min_M": (MAX_M, True),
                   "outlier_column_every": (MAX_DIM, True),
                   # a typo guard: far past the default contract's 32x, and 1e300 would overflow BF16 weights to inf
                   "outlier_column_scale": (1 << 16, True)}
SCORE_OPTIONAL = ("per_load", "overall")
NEARBY_REQUIRED = ("M",)
NEARBY_OPTIONAL = ("note",)

DEFAULT_DTYPE = "bfloat16"
FAMILY_DEFAULT_WEIGHT = 1
# The whole-output rel-L2 tolerance a family gets from its output dtype when it names none. bfloat16 and float32 are
# the default workload's own choices (0.01 for its BF16 families, 0.0001 for the FP32 router); float16 rounds 8x
# finer than bfloat16 (10 vs 7 mantissa bits), so it gets bfloat16's tolerance / 10, projlab's choice.
STANDARD_REL_L2_TOL = {"bfloat16": 0.01, "float16": 0.001, "float32": 0.0001}


def with_defaults(spec, name: str | None = None, contract: dict | None = None):
    """A copy of `spec` with what a user may leave out filled in (module docstring): per family x_dtype, w_dtype,
    y_dtype, rel_l2_tol, weight; `name` (the file's stem) and a source saying so; missing contract numbers from
    `contract` (the default workload's). A field that is present is never changed, and anything malformed is left
    as it is for check_spec to report."""
    if not isinstance(spec, dict):
        return spec
    spec = copy.deepcopy(spec)
    if name is not None and NAME_RE.fullmatch(name):   # a stem unfit for a name leaves "name" to be written
        spec.setdefault("name", name)
        spec.setdefault("source", f"workload file {name}.json; unset dtypes, tolerances, weights and contract "
                                  "numbers are projlab's defaults (datasets/workload_spec.py)")
    families = spec.get("families")
    for fam in families.values() if isinstance(families, dict) else ():
        if not isinstance(fam, dict):
            continue
        fam.setdefault("x_dtype", DEFAULT_DTYPE)
        fam.setdefault("w_dtype", DEFAULT_DTYPE)
        fam.setdefault("y_dtype", fam["w_dtype"])
        if isinstance(fam["y_dtype"], str) and fam["y_dtype"] in STANDARD_REL_L2_TOL:
            fam.setdefault("rel_l2_tol", STANDARD_REL_L2_TOL[fam["y_dtype"]])
        fam.setdefault("weight", FAMILY_DEFAULT_WEIGHT)
    if contract is not None:
        given = spec.setdefault("contract", {})
        if isinstance(given, dict):
            for key in (*CONTRACT_NUMBERS, *CONTRACT_COUNTS, *CONTRACT_EXPONENTS):
                if key not in given and key in contract:
                    given[key] = copy.deepcopy(contract[key])
    return spec


class WorkloadSpecError(DatasetError):
    """Every problem of one workload object: `problems` is [(field, problem)], in the order of the file; the
    message names the file and each field with its value, on one line."""

    def __init__(self, file, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__(file, *problems[0])
        if len(problems) > 1:
            more = len(problems) - MAX_LISTED
            self.args = (f"{Path(file).name}: file, {len(problems)} problems: "
                         + "; ".join(f"field {field!r}: {problem}" for field, problem in problems[:MAX_LISTED])
                         + (f"; and {more} more" if more > 0 else ""),)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:   # an int too large for a float
        return False


class _Bad(Exception):
    """One field failed (already recorded): stop checking what depends on it."""


class _Checker:
    def __init__(self, file, prefix: str):
        self.file, self.prefix = file, prefix
        self.problems: list[tuple[str, str]] = []

    def note(self, field: str, problem: str) -> None:
        self.problems.append((f"{self.prefix}{field}" if field else self.prefix.rstrip(".") or "(top level)",
                              problem))

    def fail(self, field: str, problem: str):
        self.note(field, problem)
        raise _Bad

    @contextmanager
    def part(self):
        """A check whose failure does not stop the ones after it (a field, a load, a family)."""
        try:
            yield
        except _Bad:
            pass

    def done(self) -> None:
        if self.problems:
            raise WorkloadSpecError(self.file, self.problems)

    def record(self, value, field: str, required, optional, what: str = "an object") -> dict:
        """An object; every unknown and every missing key is a problem (all of them noted, then _Bad)."""
        if not isinstance(value, dict):
            self.fail(field, f"expected {what}, got {_shown(value)}")
        dot = f"{field}." if field else ""
        allowed = ", ".join(sorted((*required, *optional)))
        bad = [(f"{dot}{key}", f"unknown field; allowed: {allowed}") for key in sorted(set(value) - set(required)
                                                                                       - set(optional))]
        bad += [(f"{dot}{key}", "missing") for key in required if key not in value]
        for where, problem in bad:
            self.note(where, problem)
        if bad:
            raise _Bad
        return value

    def text(self, value, field: str, pattern: re.Pattern | None = None, rule: str = "") -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(field, f"expected a non-empty string, got {_shown(value)}")
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(field, f"expected {rule}, got {_shown(value)}")
        if pattern is not None and len(value) > MAX_NAME:
            self.fail(field, f"{len(value)} characters is over the limit {MAX_NAME} (names end up in file names), "
                             f"got {_shown(value)}")
        return value

    def count(self, value, field: str, limit: int | None = None) -> int:
        if not _is_int(value) or value <= 0:
            self.fail(field, f"expected a positive integer, got {_shown(value)}")
        if limit is not None and value > limit:
            self.fail(field, f"{_shown(value)} is over the sanity limit {limit:,}")
        return value

    def number(self, value, field: str, below: float | None = None, at_most: float | None = None,
               at_least: float | None = None) -> float:
        if not _is_number(value) or value <= 0:
            self.fail(field, f"expected a positive number, got {_shown(value)}")
        if below is not None and value >= below:
            self.fail(field, f"expected a number below {below}, got {_shown(value)}")
        if at_most is not None and value > at_most:
            self.fail(field, f"expected a number at most {at_most:g}, got {_shown(value)}")
        if at_least is not None and value < at_least:
            self.fail(field, f"expected a number at least {at_least:g}, got {_shown(value)}")
        return value

    def exponents(self, value, field: str) -> list:
        exact = isinstance(value, list) and value and all(_is_int(e) and abs(e) <= MAX_SCALE_EXPONENT for e in value)
        if not exact:
            self.fail(field, f"expected a non-empty list of integers within +-{MAX_SCALE_EXPONENT}, got "
                             f"{_shown(value)}")
        return value

    def dtype(self, value, field: str) -> str:
        if value not in KNOWN_DTYPES:
            self.fail(field, f"expected one of {', '.join(KNOWN_DTYPES)}, got {_shown(value)}")
        return value


def check_spec(spec, file, prefix: str = "") -> None:
    """Raise WorkloadSpecError naming every field of `spec` that breaks the workload schema (with_defaults first
    for a file a user wrote)."""
    c = _Checker(file, f"{prefix}." if prefix else "")
    if not isinstance(spec, dict):
        with c.part():
            c.fail("", f"expected a JSON object at the top level, got {_shown(spec)}")
        c.done()
    allowed = (*TOP_REQUIRED, *TOP_OPTIONAL)
    for key in sorted(set(spec) - set(allowed)):
        c.note(key, f"unknown field; allowed: {', '.join(sorted(allowed))}")
    for key in TOP_REQUIRED:
        if key not in spec:
            c.note(key, "missing")
    with c.part():
        if "name" in spec:
            c.text(spec["name"], "name", NAME_RE, "letters, digits, '_', '.' or '-' (the name is used in file names)")
    with c.part():
        if "source" in spec:
            c.text(spec["source"], "source")
    with c.part():
        if "description" in spec:
            c.text(spec["description"], "description")
    with c.part():
        if "score" in spec:
            for key in c.record(spec["score"], "score", (), SCORE_OPTIONAL):
                with c.part():
                    c.text(spec["score"][key], f"score.{key}")
    load_m: dict[int, str] | None = None   # None: the loads are broken, so nothing is checked against their M
    with c.part():
        if "loads" in spec:
            before = len(c.problems)
            found = _check_loads(c, spec["loads"])
            load_m = found if len(c.problems) == before else None
    with c.part():
        if "families" in spec:
            _check_families(c, spec["families"], load_m)
    with c.part():
        if "contract" in spec:
            _check_contract(c, spec["contract"])
    with c.part():
        if "nearby" in spec:
            _check_nearby(c, spec["nearby"], load_m)
    with c.part():
        if "layer" in spec:
            from datasets.layer_spec import check_layer   # it uses this module's checker

            check_layer(c, spec["layer"], spec.get("families"))
    c.done()


def _check_loads(c: _Checker, loads) -> dict[int, str]:
    """Each load names one M; names and M values are unique (so an M picks one scored shape per family)."""
    if not isinstance(loads, list) or not loads:
        c.fail("loads", f"expected a non-empty list of {{\"load\": name, \"M\": rows}}, got {_shown(loads)}")
    if len(loads) > MAX_LOADS:
        c.fail("loads", f"{len(loads):,} loads is over the limit {MAX_LOADS} (scored shapes are loads x families)")
    by_name: dict[str, int] = {}
    load_m: dict[int, str] = {}
    for i, entry in enumerate(loads):
        with c.part():
            _check_load(c, i, entry, by_name, load_m)
    return load_m


def _check_load(c: _Checker, i: int, entry, by_name: dict, load_m: dict) -> None:
    where = f"loads[{i}]"
    c.record(entry, where, LOAD_REQUIRED, LOAD_OPTIONAL)
    with c.part():
        name = c.text(entry["load"], f"{where}.load", LOAD_RE, "letters, digits, spaces, '_', '.' or '-' (no '/')")
        if name == NEARBY_LOAD:
            c.fail(f"{where}.load", f"{name!r} is reserved: it is the load of every unscored shape")
        if name in by_name:
            c.fail(f"{where}.load", f"duplicate load {name!r} (first at loads[{by_name[name]}])")
        by_name[name] = i
    with c.part():
        M = c.count(entry["M"], f"{where}.M", MAX_M)
        if M in load_m:
            c.fail(f"{where}.M", f"M={M} is already load {load_m[M]!r}; each load needs its own M")
        load_m[M] = entry["load"] if isinstance(entry["load"], str) else str(entry["load"])
    with c.part():
        if "note" in entry:
            c.text(entry["note"], f"{where}.note")


def _check_families(c: _Checker, families, load_m: dict[int, str]) -> None:
    if not isinstance(families, dict) or not families:
        c.fail("families", f"expected a non-empty object of families, got {_shown(families)}")
    if len(families) > MAX_FAMILIES:
        c.fail("families", f"{len(families):,} families is over the limit {MAX_FAMILIES} (scored shapes are loads x "
                           f"families)")
    for name, fam in families.items():
        with c.part():
            _check_family(c, name, fam, load_m)


def _key(name: str) -> str:
    """A key as a field path shows it: cut where it is too long to be a name anyway."""
    return name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."


def _check_family(c: _Checker, name: str, fam, load_m: dict[int, str]) -> None:
    where = f"families.{_key(name)}"
    if not NAME_RE.fullmatch(name) or name in SELECTION_WORDS or len(name) > MAX_NAME:
        c.fail(where, f"family name {_shown(name)}: expected at most {MAX_NAME} letters, digits, '_', '.' or '-', "
                      f"and not one of {', '.join(SELECTION_WORDS)} (used in --shapes selections)")
    if isinstance(fam, dict) and "rel_l2_tol" not in fam:
        # The tolerance defaults from the output dtype (with_defaults): with a dtype it does not know, the dtype is
        # the problem to name, not the tolerance it could not derive.
        bad = [k for k in ("x_dtype", "w_dtype", "y_dtype") if not (isinstance(fam.get(k), str)
                                                                      and fam[k] in KNOWN_DTYPES)]
        for key in bad:
            with c.part():
                c.dtype(fam.get(key), f"{where}.{key}")
        if bad:
            raise _Bad
    c.record(fam, where, FAMILY_REQUIRED, FAMILY_OPTIONAL)
    checks = [(c.count, "N", MAX_DIM), (c.count, "K", MAX_DIM), (c.dtype, "x_dtype"), (c.dtype, "w_dtype"),
              (c.dtype, "y_dtype"), (c.number, "rel_l2_tol", 1),
              (c.number, "weight", None, WEIGHT_RANGE[1], WEIGHT_RANGE[0])]
    for check, key, *limit in checks:
        with c.part():
            check(fam[key], f"{where}.{key}", *limit)
    with c.part():
        if "note" in fam:
            c.text(fam["note"], f"{where}.note")
    with c.part():
        if "N_by_M" in fam:
            _check_n_by_m(c, fam["N_by_M"], f"{where}.N_by_M", load_m)


def _check_n_by_m(c: _Checker, n_by_m, where: str, load_m: dict[int, str]) -> None:
    """{"<M>": N}: the family runs a different N at these scored M values (muse: the unpooler's N=1024 slice)."""
    if not isinstance(n_by_m, dict):
        c.fail(where, f"expected an object {{\"<M>\": N}}, got {_shown(n_by_m)}")
    for key, N in n_by_m.items():
        with c.part():
            _check_n_by_m_entry(c, key, N, where, load_m)


def _check_n_by_m_entry(c: _Checker, key: str, N, where: str, load_m: dict[int, str] | None) -> None:
    if not (key.isascii() and key.isdigit() and key[0] != "0"):
        c.fail(f"{where}.{_key(key)}", f"expected an M written as a positive integer key, got {_shown(key)}")
    if len(key) > len(str(MAX_M)) or int(key) > MAX_M:
        c.fail(f"{where}.{_key(key)}", f"M={_shown(key)} is over the sanity limit {MAX_M:,}")
    if load_m is not None and int(key) not in load_m:
        c.fail(f"{where}.{key}", f"M={key} is not the M of any load (loads have M "
                                 f"{', '.join(str(m) for m in load_m)}); N_by_M only overrides N at scored loads")
    c.count(N, f"{where}.{key}", MAX_DIM)


def _check_contract(c: _Checker, contract) -> None:
    c.record(contract, "contract", CONTRACT_NUMBERS + CONTRACT_COUNTS + CONTRACT_EXPONENTS, CONTRACT_OPTIONAL)
    for key in CONTRACT_NUMBERS + CONTRACT_COUNTS:
        high, inclusive = CONTRACT_LIMITS.get(key, (None, True))
        with c.part():
            if key in CONTRACT_COUNTS:
                c.count(contract[key], f"contract.{key}", high)
            else:
                c.number(contract[key], f"contract.{key}", below=None if inclusive else high,
                         at_most=high if inclusive else None)
    checks = [*((c.exponents, k) for k in CONTRACT_EXPONENTS), *((c.text, k) for k in CONTRACT_OPTIONAL
                                                                   if k in contract)]
    for check, key in checks:
        with c.part():
            check(contract[key], f"contract.{key}")


def _check_nearby(c: _Checker, nearby, load_m: dict[int, str]) -> None:
    """Unscored M values timed at each family's N; none may be a load's M (that shape is already scored)."""
    c.record(nearby, "nearby", NEARBY_REQUIRED, NEARBY_OPTIONAL)
    with c.part():
        if "note" in nearby:
            c.text(nearby["note"], "nearby.note")
    if not isinstance(nearby["M"], list):
        c.fail("nearby.M", f"expected a list of positive integers, got {_shown(nearby['M'])}")
    if len(nearby["M"]) > MAX_NEARBY_M:
        c.fail("nearby.M", f"{len(nearby['M']):,} values is over the limit {MAX_NEARBY_M}")
    seen: dict[int, int] = {}
    for j, M in enumerate(nearby["M"]):
        with c.part():
            c.count(M, f"nearby.M[{j}]", MAX_M)
            if M in seen:
                c.fail(f"nearby.M[{j}]", f"duplicate M={M} (first at nearby.M[{seen[M]}])")
            if load_m is not None and M in load_m:
                c.fail(f"nearby.M[{j}]", f"M={M} is the scored load {load_m[M]!r}; nearby M values are never scored")
            seen[M] = j
