"""Which workload a view shows, and what belongs to one workload only (torch- and streamlit-free).

Every run is read with its own workload (datasets.workload_of_run: embedded in the run, or for a run written before
runs embedded one, muse_bf16_proj with a note). The published data — the official 30-shape table, the seed ledger
and the seed probes (datasets/official_036.csv, seed_ledger.csv, seed_probes.csv) — belong to muse_bf16_proj: they
are joined with a run only when the run's workload is that one (same name and fingerprint).

    default_workload()          -> Workload   muse_bf16_proj, read once
    same_workload(a, b)         -> bool       same name and fingerprint (what is measured and scored)
    is_official(workload)       -> bool       the workload the published tables belong to
    official_only(workload, what="this run") -> str | None   None for muse, else the one line that says why not
    mismatch(named)             -> str | None one line naming the workloads when [(label, Workload)] differ
    family_colors(families)     -> {family: colour}, fixed for muse's five, palette order for any other
"""
from __future__ import annotations

from functools import lru_cache

from datasets import DEFAULT_WORKLOAD, Workload, load_workload

# Colours of muse's five families, kept as they were (every committed figure and report uses them); any other
# family gets the next unused colour of PALETTE in the workload's family order.
MUSE_COLORS = {"qkv_gate": "#4c78a8", "o": "#f58518", "pooler": "#54a24b", "unpooler": "#b279a2",
               "router": "#e45756"}
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6", "#9d755d",
           "#bab0ac"]


@lru_cache(maxsize=1)
def default_workload() -> Workload:
    return load_workload()


def same_workload(a: Workload, b: Workload) -> bool:
    return a.name == b.name and a.fingerprint == b.fingerprint


def is_official(workload: Workload) -> bool:
    """True when the published tables (official 036, ledger, seed probes) belong to this workload."""
    return same_workload(workload, default_workload())


def describe(workload: Workload) -> str:
    """'llama31_8b_decode (4 families: qkv, o, gate_up, down; 4 loads: decode 1, …)'."""
    return (f"{workload.name} ({len(workload.family_order)} families: {', '.join(workload.family_order)}; "
            f"{len(workload.load_order)} loads: {', '.join(workload.load_order)})")


def official_only(workload: Workload, what: str = "this run") -> str | None:
    """None when the published muse tables apply to `workload`; else the line that says they do not."""
    if is_official(workload):
        return None
    if workload.name == DEFAULT_WORKLOAD:
        return (f"the official table is for {DEFAULT_WORKLOAD}; {what} embeds a workload of that name with "
                f"different shapes or contract (fingerprint {workload.fingerprint}), so it is not joined")
    return f"the official table is for {DEFAULT_WORKLOAD}; {what} is {workload.name}"


def mismatch(named: list[tuple[str, Workload]]) -> str | None:
    """One line when the labelled workloads are not all the same (shape-by-shape pairing would be meaningless)."""
    if not named:
        return None
    first_label, first = named[0]
    for label, other in named[1:]:
        if not same_workload(first, other):
            a = first.name if first.name != other.name else f"{first.name} ({first.fingerprint})"
            b = other.name if first.name != other.name else f"{other.name} ({other.fingerprint})"
            return (f"cannot compare shape by shape: {first_label} is workload {a}, {label} is workload {b}; "
                    "each run's own score is shown instead")
    return None


def family_colors(families) -> dict[str, str]:
    """One colour per family, in the given (workload) order: muse's fixed colours, else the next palette colour
    not already used. Deterministic for a family order; never a KeyError for an unknown family."""
    out: dict[str, str] = {}
    families = list(dict.fromkeys(map(str, families)))
    for fam in families:
        if fam in MUSE_COLORS:
            out[fam] = MUSE_COLORS[fam]
    free = [c for c in PALETTE if c not in out.values()] or PALETTE
    i = 0
    for fam in families:
        if fam not in out:
            out[fam] = free[i % len(free)]
            i += 1
    return out


_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def count_word(n: int) -> str:
    """'six' for 6 (prose reads 'the six loads'); digits above twelve."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)
