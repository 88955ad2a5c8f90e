"""Dispatch plans: per family, ordered inclusive M-ranges -> method + config, loaded from kernels/plans/<name>.json.

Torch-free. A plan that names an unknown method, an invalid config, a family a method does not serve, a range
its guard rejects, overlapping or unordered ranges, or that leaves a scored (family, M) uncovered raises
PlanError naming the plan file, the family and the M or field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kernels.method import PlanError
from kernels.registry import get_method

PLANS_DIR = Path(__file__).resolve().parent / "plans"
TOP_KEYS = {"name", "description", "gpu", "tuned_from", "notes", "families"}
REQUIRED_TOP = {"name", "families"}
ENTRY_KEYS = {"M", "method", "config", "note"}
GUARD_CHECK_MAX_M = 512  # guards are checked at every M of a range up to here, and at the range's upper end

__all__ = ["PlanError", "Plan", "Entry", "load_plan", "plan_from_dict", "list_plans", "format_config", "PLANS_DIR"]


def format_config(method: str, config: dict) -> str:
    """'gemv BN=1 num_warps=16 cache=.cg' -- the human label used in run files and the Dispatch page."""
    parts = [f"{k}={v if v != '' else 'default'}" for k, v in config.items()]
    return " ".join([method, *parts])


@dataclass(frozen=True)
class Entry:
    family: str
    lo: int
    hi: int
    method: str
    config: dict
    note: str = ""

    @property
    def label(self) -> str:
        return format_config(self.method, self.config)


@dataclass
class Plan:
    name: str
    path: str
    description: str
    gpu: str | None
    tuned_from: str | None
    notes: str
    entries: dict[str, list[Entry]] = field(default_factory=dict)

    @property
    def families(self) -> list[str]:
        return list(self.entries)

    def entry(self, family: str, M: int) -> Entry:
        for e in self.entries.get(family, []):
            if e.lo <= M <= e.hi:
                return e
        raise PlanError(f"{self.path}: family {family!r}: no entry covers M={M}")

    def select(self, family: str, M: int) -> tuple[str, dict]:
        """(method name, config) that runs family at M."""
        e = self.entry(family, M)
        return e.method, dict(e.config)

    def describe(self, family: str, M: int) -> str:
        return self.entry(family, M).label

    def table(self) -> list[dict]:
        """One row per entry: family, M_lo, M_hi, method, config (dict), label, note."""
        return [{"family": e.family, "M_lo": e.lo, "M_hi": e.hi, "method": e.method, "config": dict(e.config),
                 "label": e.label, "note": e.note} for es in self.entries.values() for e in es]

    def covering(self, family: str, M_max: int = 256) -> list[dict]:
        """Contiguous runs of M in 1..M_max with the same entry, gaps included (method None)."""
        runs: list[dict] = []
        for M in range(1, M_max + 1):
            try:
                e = self.entry(family, M)
                key = (e.lo, e.hi)
                label, method, config = e.label, e.method, dict(e.config)
            except PlanError:
                key, label, method, config = None, "(not covered)", None, None
            if runs and runs[-1]["_key"] == key:
                runs[-1]["M_hi"] = M
            else:
                runs.append({"_key": key, "M_lo": M, "M_hi": M, "method": method, "config": config, "label": label})
        for r in runs:
            del r["_key"]
        return runs

    def gaps(self, family: str, M_max: int = 256) -> list[tuple[int, int]]:
        return [(r["M_lo"], r["M_hi"]) for r in self.covering(family, M_max) if r["method"] is None]

    def methods_for(self, family: str) -> list[tuple[str, dict]]:
        """Distinct (method, config) pairs this family's entries use, in entry order."""
        seen, out = set(), []
        for e in self.entries.get(family, []):
            key = (e.method, json.dumps(e.config, sort_keys=True))
            if key not in seen:
                seen.add(key)
                out.append((e.method, dict(e.config)))
        return out

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "gpu": self.gpu, "tuned_from": self.tuned_from,
                "notes": self.notes,
                "families": {f: [{"M": [e.lo, e.hi], "method": e.method, "config": dict(e.config),
                                  **({"note": e.note} if e.note else {})} for e in es]
                             for f, es in self.entries.items()}}


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
    if not path.is_file():
        raise PlanError(f"{path}: no such plan file (known plans: {list_plans()})")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}: not valid JSON: {exc}") from None
    return plan_from_dict(data, str(path), workload)


def _scored(workload) -> dict[str, list[tuple[int, int, int]]]:
    """family -> [(M, N, K)] for the scored shapes."""
    out: dict[str, list] = {}
    for row in workload.shapes.itertuples():
        out.setdefault(row.family, []).append((int(row.M), int(row.N), int(row.K)))
    return out


def _n_for(family_spec: dict, M: int) -> int:
    return int(family_spec.get("N_by_M", {}).get(str(M), family_spec["N"]))


def _int_range(where: str, rng) -> tuple[int, int]:
    ok = (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in rng))
    if not ok:
        raise PlanError(f"{where}: field 'M' must be [lo, hi] integers, got {rng!r}")
    lo, hi = rng
    if lo < 1 or hi < lo:
        raise PlanError(f"{where}: field 'M' must satisfy 1 <= lo <= hi, got {rng!r}")
    return lo, hi


def _entry(where: str, family: str, raw, spec: dict) -> Entry:
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: entry must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - ENTRY_KEYS)
    if unknown:
        raise PlanError(f"{where}: unknown field(s) {unknown}")
    for key in ("M", "method", "config"):
        if key not in raw:
            raise PlanError(f"{where}: missing field {key!r}")
    lo, hi = _int_range(where, raw["M"])
    where = f"{where} (M {lo}..{hi})"
    if not isinstance(raw["method"], str):
        raise PlanError(f"{where}: field 'method' must be a string")
    try:
        method = get_method(raw["method"])
    except PlanError as exc:
        raise PlanError(f"{where}: field 'method': {exc}") from None
    config = raw["config"]
    if not isinstance(config, dict):
        raise PlanError(f"{where}: field 'config' must be an object")
    reason = method.check_config(config)
    if reason:
        raise PlanError(f"{where}: field 'config': {reason}")
    if family not in method.families:
        raise PlanError(f"{where}: method {method.name!r} does not serve family {family!r}")
    K = int(spec["K"])
    for M in (*range(lo, min(hi, GUARD_CHECK_MAX_M) + 1), hi):
        reason = method.supports(family, M, _n_for(spec, M), K, config)
        if reason:
            raise PlanError(f"{where}: method {method.name!r} rejects M={M}: {reason}")
    return Entry(family, lo, hi, method.name, dict(config), str(raw.get("note", "")))


def plan_from_dict(data, path: str = "<plan>", workload=None) -> Plan:
    """Validate a plan's JSON object; `path` names it in errors."""
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
    entries: dict[str, list[Entry]] = {}
    for family, raw_entries in families.items():
        if family not in workload.families:
            raise PlanError(f"{path}: family {family!r}: not a workload family {sorted(workload.families)}")
        if not isinstance(raw_entries, list):
            raise PlanError(f"{path}: family {family!r}: must be a list of entries")
        spec = workload.families[family]
        parsed = [_entry(f"{path}: family {family!r} entry {i + 1}", family, raw, spec)
                  for i, raw in enumerate(raw_entries)]
        for prev, cur in zip(parsed, parsed[1:]):
            if cur.lo <= prev.hi:
                kind = "overlaps" if cur.hi >= prev.lo and cur.lo >= prev.lo else "is out of order after"
                raise PlanError(f"{path}: family {family!r}: range M {cur.lo}..{cur.hi} {kind} "
                                f"M {prev.lo}..{prev.hi} (ranges must be ascending and disjoint)")
        entries[family] = parsed
    plan = Plan(name=data["name"], path=path, description=data.get("description", ""), gpu=data.get("gpu"),
                tuned_from=data.get("tuned_from"), notes=data.get("notes", ""), entries=entries)
    for family, shapes in _scored(workload).items():
        for M, _N, _K in shapes:
            if family not in entries:
                raise PlanError(f"{path}: family {family!r}: missing (scored M={M} is not covered)")
            try:
                plan.entry(family, M)
            except PlanError:
                raise PlanError(f"{path}: family {family!r}: scored M={M} is not covered by any range") from None
    return plan
