"""The one way projlab reads a JSON document it did not write itself (run files, plans, workloads, uploads).

Python's json module recurses once per nesting level, so '[' * 1000 + ']' * 1000 raises RecursionError deep
inside it (and deeply nested values break later recursive code too). It also takes the last of two equal keys in
one object without a word ({"median_us": 5, "median_us": 50} reads as 50), and NaN/Infinity, which are not JSON.
Every problem here becomes one JsonInputError whose message names the source, the problem and, where it can, the
field's path, never a traceback. A leading UTF-8 byte-order mark (what Windows editors write) is dropped, as the
CSV reader drops it (datasets/csvread.py):

    read_json(path, max_bytes=None, max_depth=MAX_DEPTH) -> object
    parse_json(data: bytes | str, name, max_bytes=None, max_depth=MAX_DEPTH) -> object

Callers re-raise it as their own error type (RunFileError, PlanError, DatasetError) with `str(exc)`.

Every string of a document read here (values and keys) comes back with its control characters (C0 and C1: ESC,
CR, LF, NUL...) and its bidirectional-text controls (right-to-left overrides and isolates) shown escaped, as
`\x1b`, `\r`, `\u202e`: a candidate name, a method or a reason in a run file cannot move a terminal's cursor, colour
its text, fake an output line or reverse what a reader sees in any report or page (escape_controls; HTML escaping
is the report's and the figures' job, dashboard/figures.py html_labels).
"""
from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path

from datasets.paths import link_outside_project
from datasets.shapes import shape_key

# Control characters (C0, DEL, C1), the Arabic letter mark, LRM/RLM, the line and paragraph separators and the
# bidi embeddings, overrides and isolates: nothing a name, a method or a reason needs, all of it able to rewrite
# what a terminal or a page shows.
_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
UNSAFE_CHARS = re.compile(f"[{_UNSAFE}]")
# The same, as they can appear in JSON text: escaped (\u00XX, \n-style) or, for DEL and the non-ASCII ones, raw (a
# raw C0 character is JSON whitespace between tokens, or refused by the parser inside a string). A document without
# any of them is returned as parsed, with no walk over its strings.
_ESCAPED_UNSAFE = re.compile(r"\\(?:u(?:00[01][0-9a-fA-F]|00[79][0-9a-fA-F]|008[0-9a-fA-F]|061[cC]|200[eEfF]|"
                             r"202[89a-eA-E]|206[6-9])|[nrtbf])")
_RAW_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _may_hold_unsafe(text: str) -> bool:
    """Both searches start from what every match holds (a backslash; a non-ASCII character or DEL), which Python
    finds at memory speed: one regex with the raw class as an alternative took 75 ms per MB here."""
    if "\\" in text and _ESCAPED_UNSAFE.search(text):
        return True
    return ("\x7f" in text or not text.isascii()) and _RAW_UNSAFE.search(text) is not None


def escape_controls(text: str) -> str:
    """`text` with every unsafe character (UNSAFE_CHARS) written as its Python escape ('\x1b', '\r', '\u202e')."""
    return UNSAFE_CHARS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _escape_strings(value):
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {escape_controls(k): _escape_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape_strings(v) for v in value]
    return value


# No projlab document nests deeper than ~6 levels (run file -> results -> record -> error -> reasons);
# 64 leaves room for user extras while staying far below Python's recursion limit (1000).
MAX_DEPTH = 64


class JsonInputError(ValueError):
    """A JSON document that cannot be used; the message names the source and the problem in one line."""


BOM = "\ufeff"


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name} (NaN/Infinity are not JSON)")


class _DuplicateKey(ValueError):
    """Two equal keys in one JSON object: which value is meant is ambiguous, so the document is refused."""


def _unique_keys(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(f"duplicate key {key!r} in one object (which of its values is meant is ambiguous)")
    return out


class _Marker:
    """Where a NaN / Infinity or a repeated key sat, found by a second, lenient parse (only after the strict one
    failed)."""

    def __init__(self, name: str):
        self.name = name


def _mark_duplicates(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        out[key] = _Marker(key) if key in out else value
    return out


def _where(text: str) -> str:
    """' at results[3].median_us (decode 16/o, best)': the field path of the first NaN/Infinity or repeated key and,
    inside a shape's record (load, family, M), which shape and candidate; '' when it cannot be found."""
    try:
        doc = json.loads(text, parse_constant=_Marker, object_pairs_hook=_mark_duplicates)
    except (ValueError, RecursionError):
        return ""
    stack = [("", doc, None)]
    while stack:
        path, value, parent = stack.pop()
        if isinstance(value, _Marker):
            where = f" at {path or '(top level)'}"
            if isinstance(parent, dict) and {"load", "family", "M"} <= set(parent):
                shape = shape_key(parent["load"], parent["family"], parent["M"])
                where += f" ({shape}{', ' + str(parent['candidate']) if 'candidate' in parent else ''})"
            return where
        if isinstance(value, dict):
            stack += [(f"{path}.{k}" if path else str(k), v, value) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            stack += [(f"{path}[{i}]", v, value) for i, v in reversed(list(enumerate(value)))]
    return ""


# A JSON string: quote, then runs of ordinary characters or backslash escapes, then quote (the unrolled form, so the
# regex engine never backtracks inside a long string).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str) -> int:
    """Deepest [ / { nesting outside strings, without recursion.

    Strings are cut out by a regex and only the brackets left are walked: a per-character Python loop spent
    0.35 s on the 13 committed run files (8 MB) every time the app started."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_json(data: bytes | str, name: str, max_bytes: int | None = None, max_depth: int = MAX_DEPTH):
    """Decode (UTF-8), check size and nesting, then parse; JsonInputError names `name` and the problem."""
    if max_bytes is not None and len(data) > max_bytes:
        raise JsonInputError(f"{name}: {len(data):,} bytes is over the {max_bytes:,}-byte limit")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"{name}: not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") \
                from None
    else:
        text = data
    text = text.removeprefix(BOM)
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonInputError(f"{name}: JSON nested {depth} levels deep (at most {max_depth} accepted)")
    try:
        doc = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
        return _escape_strings(doc) if _may_hold_unsafe(text) else doc
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"{name}: not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        if "integer string conversion" in str(exc):   # Python's own limit on the digits of an int literal
            raise JsonInputError(f"{name}: not valid JSON: a number with more than "
                                 f"{sys.get_int_max_str_digits():,} digits") from None
        where = _where(text) if isinstance(exc, _DuplicateKey) or "non-standard JSON constant" in str(exc) else ""
        raise JsonInputError(f"{name}: not valid JSON: {exc}{where}") from None


# What a '.gz' file may expand to when the caller sets no limit: 16x the largest committed run file (3.3 MB), so a
# small compressed file cannot make the reader allocate gigabytes (a "zip bomb").
MAX_GZIP_BYTES = 64 * 1024 * 1024


def _gunzip(data: bytes, name: str, max_bytes: int) -> bytes:
    """Decompress a gzip member, refusing output over `max_bytes` before it is all in memory."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise JsonInputError(f"{name}: not a gzip file ({exc})") from None
    if len(out) > max_bytes:
        raise JsonInputError(f"{name}: expands to over {max_bytes:,} bytes (the limit)")
    if not inflater.eof:
        raise JsonInputError(f"{name}: the gzip data is cut short")
    if inflater.unused_data:   # a second member or trailing bytes: not the one document `gzip -n -9` writes
        raise JsonInputError(f"{name}: {len(inflater.unused_data):,} byte(s) after the end of the gzip data (a "
                             f"second member or trailing garbage)")
    return out


def read_bytes(path, max_bytes: int | None = None) -> bytes:
    """A JSON file's bytes, decompressed where it is gzip ('.gz': the limit applies to the decompressed text); an
    unreadable file, a directory or a missing file is a JsonInputError."""
    path = Path(path)
    if link_outside_project(path):
        raise JsonInputError(f"{path.name}: a link to a file outside the project ({path.resolve()}); not read")
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise JsonInputError(f"{path.name}: {path.stat().st_size:,} bytes is over the {max_bytes:,}-byte limit")
        data = path.read_bytes()
    except OSError as exc:
        raise JsonInputError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".gz":
        data = _gunzip(data, path.name, MAX_GZIP_BYTES if max_bytes is None else max_bytes)
    return data


def read_json(path, max_bytes: int | None = None, max_depth: int = MAX_DEPTH):
    """Read (read_bytes) and parse a JSON file, plain or gzip-compressed."""
    path = Path(path)
    return parse_json(read_bytes(path, max_bytes), path.name, max_bytes=max_bytes, max_depth=max_depth)
