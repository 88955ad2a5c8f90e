"""--shapes selections: which of a workload's shapes (or which other M values) to measure.

    select_shapes(selection, workload) -> list[dict]     # shape rows (Workload.shape), in order, no repeats
    parse_selection(selection) -> list[Part]             # syntax only, before the workload is known

Grammar (spaces around separators are ignored):

    SELECTION := PART ("+" PART)*
    PART      := WORD                     official | nearby | all, over every family
               | FAMILIES ":" ITEMS       e.g. qkv_gate:1,64,512    o,down:official
               | "M=" ITEMS               every family, e.g. M=3,17
    FAMILIES  := family ("," family)*
    ITEMS     := ITEM ("," ITEM)*,  ITEM := a positive integer M | WORD

official = the scored shapes (loads × families), nearby = the workload's nearby list (families × M), all = both.
An integer M gives Workload.shape(family, M): the scored shape when M is a load's M, else an unscored shape with
load "nearby" (never scored, whether or not M is in the nearby list); N follows the family's N_by_M rule. Rows keep
the order they are named in; a shape named twice appears once (where first named).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from datasets.shapes import shape_key_of
from datasets.workload_spec import MAX_M, SELECTION_WORDS

INT_RE = re.compile(r"[+-]?[0-9]+")


class ShapeSelectionError(ValueError):
    """A --shapes selection that is malformed or names what the workload lacks; one line, names the selection."""


@dataclass(frozen=True)
class Part:
    families: tuple[str, ...] | None   # None: every family of the workload
    items: tuple                       # ints (M) and words (official / nearby / all)


def _shown(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


def _fail(selection: str, problem: str):
    raise ShapeSelectionError(f"shapes {_shown(selection)}: {problem}")


def _item(selection: str, text: str):
    if text in SELECTION_WORDS:
        return text
    if not INT_RE.fullmatch(text):
        _fail(selection, f"expected an M (a positive integer) or one of {', '.join(SELECTION_WORDS)}, got "
                         f"{_shown(text, 20)}")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > len(str(MAX_M)):   # int() of thousands of digits raises ValueError of its own
        _fail(selection, f"M={_shown(text, 20)} is over the limit {MAX_M:,}")
    M = int(text)
    if M <= 0:
        _fail(selection, f"M must be a positive integer, got {text!r}")
    if M > MAX_M:
        _fail(selection, f"M={M} is over the limit {MAX_M:,}")
    return M


def _items(selection: str, text: str) -> tuple:
    parts = [t.strip() for t in text.split(",")]
    if not all(parts):
        _fail(selection, f"empty item in {text.strip()!r} (expected M values or words, separated by ',')")
    return tuple(_item(selection, t) for t in parts)


def parse_selection(selection: str) -> list[Part]:
    """Check the syntax of a selection and split it into parts; ShapeSelectionError otherwise."""
    if not isinstance(selection, str) or not selection.strip():
        _fail(str(selection), "empty selection; expected official, nearby, all, FAMILY:M,... or M=M,...")
    parts = []
    for raw in selection.split("+"):
        text = raw.strip()
        if not text:
            _fail(selection, "empty part (a '+' with nothing on one side)")
        if "=" in text:
            lhs, rhs = (t.strip() for t in text.split("=", 1))
            if lhs != "M":
                _fail(selection, f"in {text!r}: only 'M=' is understood before '=', got {lhs!r}")
            parts.append(Part(None, _items(selection, rhs)))
        elif ":" in text:
            lhs, rhs = text.split(":", 1)
            families = tuple(f.strip() for f in lhs.split(","))
            if not all(families):
                _fail(selection, f"in {text!r}: empty family name before ':'")
            parts.append(Part(families, _items(selection, rhs)))
        elif text in SELECTION_WORDS:
            parts.append(Part(None, (text,)))
        else:
            _fail(selection, f"{text!r} is not a selection; expected official, nearby, all, FAMILY:M,... "
                             f"(e.g. {text}:official) or M=M,...")
    return parts


def _rows(workload, families: list[str], item, selection: str) -> list[dict]:
    if item == "official":
        return [workload.shape(f, entry["M"]) for entry in workload.loads for f in families]
    if item == "nearby":
        if not workload.nearby_m:
            _fail(selection, f"workload {workload.name} lists no nearby M values; name them instead (M=3,17)")
        return [workload.shape(f, M) for f in families for M in workload.nearby_m]
    if item == "all":
        return (_rows(workload, families, "official", selection)
                + [workload.shape(f, M) for f in families for M in workload.nearby_m])
    return [workload.shape(f, item) for f in families]


def select_shapes(selection: str, workload) -> list[dict]:
    """The shape rows a selection names in `workload` (see the module docstring); ShapeSelectionError otherwise."""
    rows: dict[str, dict] = {}
    for part in parse_selection(selection):
        families = list(part.families) if part.families is not None else list(workload.family_order)
        unknown = [f for f in families if f not in workload.families]
        if unknown:
            _fail(selection, f"unknown family {unknown[0]!r}; {workload.name} has {', '.join(workload.family_order)}")
        for item in part.items:
            for row in _rows(workload, families, item, selection):
                rows.setdefault(shape_key_of(row), row)
    return list(rows.values())
