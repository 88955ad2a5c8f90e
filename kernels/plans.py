"""Dispatch plans: per family, ordered inclusive M-ranges -> method + config, loaded from kernels/plans/<name>.json.

An entry may carry an optional integer "N": it then applies only when the weight's N equals it (the unpooler
runs N=1024 at M=1 and M=8 but N=8192 at every other M, so a method tuned at M=8 must not spill onto N=8192).
Entries without "N" are generic: they apply to any N. Within a family, the generic entries and the entries of
each N are separate lists, each ordered and non-overlapping in M; they may overlap each other.

SELECT RULE -- `Plan.entry/select/describe(family, M, N=None)`:
  1. N=None means "the caller did not say": the plan uses the workload's N for (family, M) (N_by_M, else the
     family's N; the workload the plan was validated against). So select("unpooler", 8) is the entry that
     runs the scored shape, exactly as PlanCandidate dispatches it. Callers that know the weight's N should
     pass it. (A Plan built without a workload and a family it has no N for: generic entries only.)
  2. An N-specific entry whose N equals N and whose range holds M wins.
  3. Otherwise the generic entry whose range holds M.
  4. Otherwise PlanError naming the plan file, family, M and N.

Shape checks are checked at every M of a range (up to SHAPE_CHECK_MAX_M, and at the upper end) with the entry's N,
or, for a generic entry, with the workload's N for that M (as before N-specific entries existed).
Coverage: every scored (family, M, N) of the workload must be selectable (N-specific or generic), and every
family's generic entries must cover 1..DISPATCH_MAX_M without a gap (so any M and any N dispatch).

WORKLOAD -- a plan is validated against one workload (datasets/workload.py) and records the one it was tuned for:
  "workload": {"name": ..., "fingerprint": ...}   (Workload.ref). load_plan/plan_from_dict refuse a plan whose
  recorded workload differs from the one given (name or fingerprint) with one PlanError line. A plan without the
  field that names families was written before plans recorded their workload: it is taken as muse_bf16_proj's.
  The family "*" holds entries for every family of the workload that the plan does not list by name; a plan
  whose only family is "*" records no workload and runs on any workload (baseline.json: torch_linear everywhere).
Each family's entries are checked against that family's dtypes in the workload: a method must compute the
family's (x_dtype, w_dtype, y_dtype) (kernels/method.py serves dtype signatures, not family names).

Torch-free. A plan that names an unknown method, an invalid config, a method that does not compute a family's
dtypes, a range its shape check rejects, overlapping or unordered ranges, or that leaves a scored (family, M, N)
uncovered raises PlanError naming the plan file, the family and the M (and N) or field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kernels.method import PlanError, format_config
from kernels.registry import get_method

PLANS_DIR = Path(__file__).resolve().parent / "plans"
TOP_KEYS = {"name", "description", "gpu", "tuned_from", "notes", "families", "workload"}
ANY_FAMILY = "*"         # entries for every workload family the plan does not list by name
WORKLOAD_KEYS = {"name", "fingerprint"}
REQUIRED_TOP = {"name", "families"}
ENTRY_KEYS = {"M", "N", "method", "config", "note"}
# Config keys that no longer exist, with the one value old plans (and the plans inside old run files) carry for
# them: dropped as a plan loads, so a config names only what its kernel reads. splitk_atomic_v2 / _kn's PREFETCH
# was always 0 once its L2-prefetching variants measured slower (kernels/methods_triton/dense.py, SPLITK_ATOMIC_V2_CONFIGS).
RETIRED_KEYS = {"splitk_atomic_v2": {"PREFETCH": 0}, "splitk_atomic_kn": {"PREFETCH": 0}}


def migrate_config(method: str, config: dict) -> dict:
    """`config` without the retired keys of `method` at their one old value (any other value stays, and the
    method refuses it as an unknown key)."""
    retired = RETIRED_KEYS.get(method, {})
    return {k: v for k, v in config.items() if not (k in retired and v == retired[k])}
SHAPE_CHECK_MAX_M = 512  # shape checks are checked at every M of a range up to here, and at the range's upper end
# Every plan dispatches every M from 1 to here for every family it lists (its generic entries cover the whole
# range without a gap), so a run never meets "no entry covers M". 2^20 tokens in one projection call is far
# beyond any decode or prefill step of this workload; the tuner fills the M above its tuned range with the
# library (with_library_fallback).
DISPATCH_MAX_M = 1 << 20
LIBRARY_METHOD = "torch_linear"   # serves every family at every shape: the fallback outside tuned ranges
LIBRARY_NOTE = "library fallback beyond the tuned range (not measured; torch_linear serves every shape)"

__all__ = ["PlanError", "Plan", "Entry", "load_plan", "plan_from_dict", "list_plans", "format_config", "PLANS_DIR",
           "DISPATCH_MAX_M", "with_library_fallback"]




@dataclass(frozen=True)
class Entry:
    family: str
    lo: int
    hi: int
    method: str
    config: dict
    note: str = ""
    N: int | None = None  # None: generic (any N); else the entry applies only when the weight's N equals it

    @property
    def label(self) -> str:
        return format_config(self.method, self.config)

    @property
    def scope(self) -> str:
        """'any N' or 'N=1024' -- how the Dispatch page and error messages name the entry's N."""
        return "any N" if self.N is None else f"N={self.N}"

    def holds(self, M: int) -> bool:
        return self.lo <= M <= self.hi


@dataclass
class Plan:
    name: str
    path: str
    description: str
    gpu: str | None
    tuned_from: str | None
    notes: str
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    workload: object = None          # the datasets.workload.Workload the plan was validated against
    recorded: dict | None = None     # the plan's "workload" field ({"name", "fingerprint"}); None: any workload
    any_family: list | None = None   # the raw "*" entries (written back by to_dict), None when the plan has none
    from_any: frozenset = frozenset()  # the families whose entries come from "*" (not listed by name)

    @property
    def families(self) -> list[str]:
        return list(self.entries)

    def n_at(self, family: str, M: int) -> int | None:
        """The workload's N for (family, M) (Workload.n_at); None for a family the workload does not have."""
        if self.workload is None or family not in self.workload.families:
            return None
        return self.workload.n_at(family, M)

    def entry(self, family: str, M: int, N: int | None = None) -> Entry:
        """The entry that runs family at (M, N); see the SELECT RULE in the module docstring."""
        if N is None:
            N = self.n_at(family, M)
        es = self.entries.get(family, [])
        if N is not None:
            for e in es:
                if e.N == N and e.holds(M):
                    return e
        for e in es:
            if e.N is None and e.holds(M):
                return e
        n_txt = "N unknown" if N is None else f"N={N}"
        raise PlanError(f"{self.path}: family {family!r}: no entry covers M={M} {n_txt}")

    def select(self, family: str, M: int, N: int | None = None) -> tuple[str, dict]:
        """(method name, config) that runs family at M with weight N (N=None: the workload's N at M)."""
        e = self.entry(family, M, N)
        return e.method, dict(e.config)

    def describe(self, family: str, M: int, N: int | None = None) -> str:
        return self.entry(family, M, N).label

    def table(self) -> list[dict]:
        """One row per entry, in file order: family, N (None = any N), M_lo, M_hi, method, config (dict), label,
        note."""
        return [{"family": e.family, "N": e.N, "M_lo": e.lo, "M_hi": e.hi, "method": e.method,
                 "config": dict(e.config), "label": e.label, "note": e.note}
                for es in self.entries.values() for e in es]

    def covering(self, family: str, M_max: int = 256, N: int | None = None) -> list[dict]:
        """Contiguous runs of M in 1..M_max with the same entry, gaps included (method None). N as in select():
        None follows the workload's N at each M (what runs on the workload). Each run's "N" is its entry's N
        (None = generic entry, or a gap)."""
        runs: list[dict] = []
        for M in range(1, M_max + 1):
            try:
                e = self.entry(family, M, N)
                key = (e.N, e.lo, e.hi)
                label, method, config, e_n = e.label, e.method, dict(e.config), e.N
            except PlanError:
                key, label, method, config, e_n = None, "(not covered)", None, None, None
            if runs and runs[-1]["_key"] == key:
                runs[-1]["M_hi"] = M
            else:
                runs.append({"_key": key, "M_lo": M, "M_hi": M, "N": e_n, "method": method, "config": config,
                             "label": label})
        for r in runs:
            del r["_key"]
        return runs

    def gaps(self, family: str, M_max: int = 256, N: int | None = None) -> list[tuple[int, int]]:
        return [(r["M_lo"], r["M_hi"]) for r in self.covering(family, M_max, N) if r["method"] is None]

    def methods_for(self, family: str, N: int | None = None) -> list[tuple[str, dict]]:
        """Distinct (method, config) pairs this family's entries use, in entry order. With N: only the entries
        that can run at that N (generic ones and those whose N equals it)."""
        seen, out = set(), []
        for e in self.entries.get(family, []):
            if N is not None and e.N is not None and e.N != N:
                continue
            key = (e.method, json.dumps(e.config, sort_keys=True))
            if key not in seen:
                seen.add(key)
                out.append((e.method, dict(e.config)))
        return out

    def to_dict(self) -> dict:
        """The plan as its file holds it: named families, the "*" entries as written, the recorded workload."""
        named = {f: es for f, es in self.entries.items() if f not in self.from_any}
        out = {"name": self.name, "description": self.description, "gpu": self.gpu, "tuned_from": self.tuned_from,
               "notes": self.notes,
               "families": {f: [{"M": [e.lo, e.hi], **({"N": e.N} if e.N is not None else {}), "method": e.method,
                                 "config": dict(e.config), **({"note": e.note} if e.note else {})} for e in es]
                            for f, es in named.items()}}
        if self.any_family is not None:
            out["families"][ANY_FAMILY] = [dict(e) for e in self.any_family]
        if self.recorded is not None:
            out["workload"] = dict(self.recorded)
        return out


def generic_with_library(entries: list[dict]) -> list[dict]:
    """The family's entries with every gap of the generic (no "N") entries in 1..DISPATCH_MAX_M filled by the
    library (torch_linear), merged into an adjacent library entry where there is one. N-specific entries are
    kept as they are, after the generic ones."""
    generic = sorted((dict(e, M=list(e["M"])) for e in entries if "N" not in e), key=lambda e: e["M"][0])
    specific = [dict(e, M=list(e["M"])) for e in entries if "N" in e]
    out: list[dict] = []
    nxt = 1
    for e in generic + [None]:
        lo = e["M"][0] if e is not None else DISPATCH_MAX_M + 1
        if lo > nxt:
            gap_hi = min(lo - 1, DISPATCH_MAX_M)
            if out and out[-1]["method"] == LIBRARY_METHOD and out[-1]["config"] == {}:
                out[-1]["M"][1] = gap_hi
                if LIBRARY_NOTE not in out[-1].get("note", ""):
                    out[-1]["note"] = "; ".join(filter(None, (out[-1].get("note"), LIBRARY_NOTE)))
            else:
                out.append({"M": [nxt, gap_hi], "method": LIBRARY_METHOD, "config": {}, "note": LIBRARY_NOTE})
        if e is None:
            break
        out.append(e)
        nxt = e["M"][1] + 1
    return out + specific


def with_library_fallback(plan: dict) -> dict:
    """A copy of a plan dict whose every family dispatches 1..DISPATCH_MAX_M (generic_with_library per family).
    The tuner writes plans this way; it also brings an older plan file's coverage up to date without
    re-measuring anything (the added entries are the library, labelled as not measured)."""
    out = dict(plan)
    out["families"] = {fam: generic_with_library(entries) for fam, entries in plan["families"].items()}
    return out


def list_plans() -> list[str]:
    return sorted(p.stem for p in PLANS_DIR.glob("*.json"))


def _resolve(name_or_path) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if text.endswith(".json") or path.exists() or "/" in text:
        return path
    return PLANS_DIR / f"{text}.json"


def load_plan(name_or_path, workload=None) -> Plan:
    """Load and validate a plan by name (kernels/plans/<name>.json) or path."""
    path = _resolve(name_or_path)
    if not path.exists():
        raise PlanError(f"{path}: no such plan file (known plans: {list_plans()})")
    from datasets.jsonfile import JsonInputError, read_json

    try:
        data = read_json(path, kind="plan")
    except JsonInputError as exc:
        raise PlanError(f"{path}: {str(exc).split(': ', 1)[-1]}") from None
    return plan_from_dict(data, str(path), workload)


def _scored(workload) -> dict[str, list[tuple[int, int, int]]]:
    """family -> [(M, N, K)] for the scored shapes."""
    out: dict[str, list] = {}
    for row in workload.shapes.itertuples():
        out.setdefault(row.family, []).append((int(row.M), int(row.N), int(row.K)))
    return out


def _int_range(where: str, rng) -> tuple[int, int]:
    ok = (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in rng))
    if not ok:
        raise PlanError(f"{where}: field 'M' must be [lo, hi] integers, got {rng!r}")
    lo, hi = rng
    if lo < 1 or hi < lo:
        raise PlanError(f"{where}: field 'M' must satisfy 1 <= lo <= hi, got {rng!r}")
    if hi > DISPATCH_MAX_M:
        raise PlanError(f"{where}: field 'M' must end at most at {DISPATCH_MAX_M} (the largest M a plan "
                        f"dispatches), got {rng!r}")
    return lo, hi


def _entry(where: str, family: str, raw, workload) -> Entry:
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: entry must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - ENTRY_KEYS)
    if unknown:
        raise PlanError(f"{where}: unknown field(s) {unknown}")
    for key in ("M", "method", "config"):
        if key not in raw:
            raise PlanError(f"{where}: missing field {key!r}")
    lo, hi = _int_range(where, raw["M"])
    N = raw.get("N")
    if not isinstance(raw.get("note", ""), str):
        raise PlanError(f"{where} (M {lo}..{hi}): field 'note' must be a string, got {raw['note']!r}")
    if N is not None and (not isinstance(N, int) or isinstance(N, bool) or N < 1):
        raise PlanError(f"{where} (M {lo}..{hi}): field 'N' must be a positive integer (or absent: any N), "
                        f"got {N!r}")
    where = f"{where} (M {lo}..{hi}{'' if N is None else f', N={N}'})"
    if not isinstance(raw["method"], str):
        raise PlanError(f"{where}: field 'method' must be a string")
    try:
        method = get_method(raw["method"])
    except PlanError as exc:
        raise PlanError(f"{where}: field 'method': {exc}") from None
    config = raw["config"]
    if not isinstance(config, dict):
        raise PlanError(f"{where}: field 'config' must be an object")
    config = migrate_config(method.name, config)
    reason = method.check_config(config)
    if reason:
        raise PlanError(f"{where}: field 'config': {reason}")
    spec = workload.family(family)
    reason = method.dtype_reason(spec)
    if reason:
        raise PlanError(f"{where}: {reason} (family {family!r} of workload {workload.name})")
    K = int(spec["K"])
    for M in (*range(lo, min(hi, SHAPE_CHECK_MAX_M) + 1), hi):
        n = workload.n_at(family, M) if N is None else N
        reason = method.supports(spec, M, n, K, config)
        if reason:
            raise PlanError(f"{where}: method {method.name!r} rejects M={M} N={n}: {reason}")
    return Entry(family, lo, hi, method.name, dict(config), str(raw.get("note", "")), N)


def _check_order(path: str, family: str, parsed: list[Entry]) -> None:
    """Generic entries, and the entries of each N, are each ascending and disjoint in M (in file order)."""
    groups: dict = {}
    for e in parsed:
        groups.setdefault(e.N, []).append(e)
    for N, es in groups.items():
        scope = "" if N is None else f" (entries for N={N})"
        for prev, cur in zip(es, es[1:]):
            if cur.lo <= prev.hi:
                kind = "overlaps" if cur.hi >= prev.lo and cur.lo >= prev.lo else "is out of order after"
                raise PlanError(f"{path}: family {family!r}{scope}: range M {cur.lo}..{cur.hi} {kind} "
                                f"M {prev.lo}..{prev.hi} (ranges must be ascending and disjoint)")


def _check_dispatch(path: str, family: str, parsed: list[Entry]) -> None:
    """The generic entries (ascending, disjoint: _check_order) cover 1..DISPATCH_MAX_M without a gap."""
    nxt = 1
    for e in (e for e in parsed if e.N is None):
        if e.lo > nxt:
            break
        nxt = e.hi + 1
    if nxt <= DISPATCH_MAX_M:
        generic = [e for e in parsed if e.N is None and e.lo > nxt]
        gap_hi = generic[0].lo - 1 if generic else DISPATCH_MAX_M
        raise PlanError(f"{path}: family {family!r}: M {nxt}..{gap_hi} is not covered by a generic entry (a plan "
                        f"must dispatch every M from 1 to {DISPATCH_MAX_M} at any N; "
                        "with_library_fallback fills gaps with torch_linear)")


def _recorded(path: str, data: dict) -> dict | None:
    """The plan's "workload" field, checked: {"name": str, "fingerprint": str}, or None (absent)."""
    rec = data.get("workload")
    if rec is None:
        return None
    if not (isinstance(rec, dict) and set(rec) == WORKLOAD_KEYS and all(isinstance(v, str) for v in rec.values())):
        raise PlanError(f"{path}: field 'workload' must be {{\"name\": str, \"fingerprint\": str}} (the workload "
                        f"the plan was tuned for), got {rec!r}")
    return dict(rec)


def _check_workload(path: str, data: dict, workload) -> dict | None:
    """The recorded workload ref; PlanError when it is not `workload` (a plan without one that names families is
    the default workload's: it was written before plans recorded theirs)."""
    rec = _recorded(path, data)
    families = data["families"]
    if rec is None and set(families) == {ANY_FAMILY}:
        return None   # a generic plan: every family of any workload
    if rec is None:
        from datasets.paths import DEFAULT_WORKLOAD

        if workload.name == DEFAULT_WORKLOAD:
            return None
        raise PlanError(f"{path}: records no workload, so it is for the default workload {DEFAULT_WORKLOAD}, not "
                        f"{workload.name}; tune a plan for it (python -m profiler tune --workload {workload.cli_ref} "
                        f"--out-plan kernels/plans/<name>.json)")
    if rec != workload.ref:
        raise PlanError(f"{path}: tuned for workload {rec['name']} (fingerprint {rec['fingerprint']}), not "
                        f"{workload.name} (fingerprint {workload.fingerprint}); tune a plan for it (python -m "
                        f"profiler tune --workload {workload.cli_ref} --out-plan kernels/plans/<name>.json)")
    return rec


def plan_from_dict(data, path: str = "<plan>", workload=None) -> Plan:
    """Validate a plan's JSON object against `workload` (None: the default workload); `path` names it in errors."""
    if workload is None:
        from datasets import load_workload

        workload = load_workload()
    if not isinstance(data, dict):
        raise PlanError(f"{path}: top level must be an object")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise PlanError(f"{path}: unknown field(s) {unknown}; allowed {sorted(TOP_KEYS)}")
    missing = sorted(REQUIRED_TOP - set(data))
    if missing:
        raise PlanError(f"{path}: missing field(s) {missing}")
    for key in ("name", "description", "notes"):
        if key in data and not isinstance(data[key], str):
            raise PlanError(f"{path}: field {key!r} must be a string")
    for key in ("gpu", "tuned_from"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise PlanError(f"{path}: field {key!r} must be a string or null")
    families = data["families"]
    if not isinstance(families, dict):
        raise PlanError(f"{path}: field 'families' must be an object")
    recorded = _check_workload(path, data, workload)
    for family, raw_entries in families.items():
        if family != ANY_FAMILY and family not in workload.families:
            raise PlanError(f"{path}: family {family!r}: not a family of workload {workload.name} "
                            f"({', '.join(workload.family_order)})")
        if not isinstance(raw_entries, list):
            raise PlanError(f"{path}: family {family!r}: must be a list of entries")
    any_raw = families.get(ANY_FAMILY)
    from_any = [f for f in workload.family_order if f not in families] if any_raw is not None else []
    entries: dict[str, list[Entry]] = {}
    for family in [f for f in families if f != ANY_FAMILY] + from_any:
        raw_entries = families[family] if family in families else any_raw
        label = family if family in families else f"{ANY_FAMILY} (as {family})"
        parsed = [_entry(f"{path}: family {label!r} entry {i + 1}", family, raw, workload)
                  for i, raw in enumerate(raw_entries)]
        _check_order(path, family, parsed)
        _check_dispatch(path, family, parsed)
        entries[family] = parsed
    plan = Plan(name=data["name"], path=path, description=data.get("description", ""), gpu=data.get("gpu"),
                tuned_from=data.get("tuned_from"), notes=data.get("notes", ""), entries=entries,
                workload=workload, recorded=recorded,
                any_family=[dict(e) for e in any_raw] if any_raw is not None else None, from_any=frozenset(from_any))
    for family, shapes in _scored(workload).items():
        if family not in entries:   # (a listed family dispatches every M at any N: _check_dispatch)
            M, N, _K = shapes[0]
            raise PlanError(f"{path}: family {family!r}: missing (scored M={M} N={N} is not covered)")
    return plan
