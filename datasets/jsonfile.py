"""The one way projlab reads a JSON document it did not write itself (run files, plans, workloads, uploads).

Python's json module recurses once per nesting level, so '[' * 1000 + ']' * 1000 raises RecursionError deep
inside it (and deeply nested values break later recursive code too). It also takes the last of two equal keys in
one object without a word ({"median_us": 5, "median_us": 50} reads as 50), and NaN/Infinity, which are not JSON.
Every problem here becomes one JsonInputError whose message names the source, the problem and, where it can, the
field's path, never a traceback. A leading UTF-8 byte-order mark (what Windows editors write) is dropped, as the
CSV reader drops it (datasets/csvread.py):

    read_json(path, max_bytes=None, max_depth=MAX_DEPTH, kind="run file") -> object
    read_checked(path, kind, max_bytes=None) -> bytes    # any file from outside: regular, within LIMITS[kind]
    parse_json(data: bytes | str, name, max_bytes=None, max_depth=MAX_DEPTH) -> object

Callers re-raise it as their own error type (RunFileError, PlanError, DatasetError) with `str(exc)`.

Every string of a document read here (values and keys) comes back with its control characters (C0 and C1: ESC,
CR, LF, NUL...) and its bidirectional-text controls (right-to-left overrides and isolates) shown escaped, as
`\x1b`, `\r`, `\u202e`: a candidate name, a method or a reason in a run file cannot move a terminal's cursor, colour
its text, fake an output line or reverse what a reader sees in any report or page (datasets/text.py escape_controls;
HTML escaping is the report's and the figures' job, dashboard/plots/figures.py html_labels).
"""
from __future__ import annotations

import json
import os
import re
import stat
import sys
import zlib
from pathlib import Path

from datasets.paths import link_outside_project
from datasets.shapes import shape_key
from datasets.text import escape_strings

# The unsafe characters of datasets.text (UNSAFE_CHARS) as they can appear in JSON text: escaped (\u00XX, \n-style) or, for DEL and the non-ASCII ones, raw (a
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
        return escape_strings(doc) if _may_hold_unsafe(text) else doc
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"{name}: not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        if "integer string conversion" in str(exc):   # Python's own limit on the digits of an int literal
            raise JsonInputError(f"{name}: not valid JSON: a number with more than "
                                 f"{sys.get_int_max_str_digits():,} digits") from None
        where = _where(text) if isinstance(exc, _DuplicateKey) or "non-standard JSON constant" in str(exc) else ""
        raise JsonInputError(f"{name}: not valid JSON: {exc}{where}") from None


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


# The largest file of each kind projlab reads from outside (a path on a command line, a file in a data folder, an
# upload), checked before a byte is read: a sparse 1 GB "run file" is refused from its size, not read into memory.
# A run file: 16x the largest committed one (3.3 MB decompressed); a workload or a plan is a few KB; an upload is
# the app's per-file limit (ui/uploads.py shows it); a candidate module is Python source of a few hundred lines; a
# per-shape table is 90 rows (datasets/official_036.csv: 3 KB). A '.gz' file's decompressed text has the same limit,
# so a small compressed file cannot make the reader allocate gigabytes (a "zip bomb").
LIMITS = {"run file": 64 * 1024 * 1024, "workload": 1024 * 1024, "plan": 1024 * 1024,
          "upload": 16 * 1024 * 1024, "candidate module": 4 * 1024 * 1024, "table": 16 * 1024 * 1024}

_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a directory"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is ('a FIFO (named pipe)', 'a directory', ...), or None."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")


def read_checked(path, kind: str, max_bytes: int | None = None, *, links_ok: bool = False) -> bytes:
    """The bytes of a file from outside, read only once it is known to be a regular file within the size limit of
    its kind (LIMITS[kind], or `max_bytes`): a FIFO, a device, a socket or a directory is refused before it is
    opened for reading (a FIFO would block the reader for ever, a device could stream without end), and a file over
    the limit before any of it is read. At most limit + 1 bytes are ever read (a file that grows meanwhile is
    refused too). Every problem is one JsonInputError line naming the file, the kind and the limit. A link to a file
    outside the project is refused unless `links_ok` (a candidate module is the user's own file, anywhere)."""
    path = Path(path)
    limit = LIMITS[kind] if max_bytes is None else max_bytes
    if not links_ok and link_outside_project(path):
        raise JsonInputError(f"{path.name}: a link to a file outside the project ({path.resolve()}); not read")
    try:
        what = _not_regular(os.stat(path).st_mode)
        if what is None:   # opened without blocking (O_NONBLOCK) and checked again on the open file: no race
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
            try:
                info = os.fstat(fd)
                what = _not_regular(info.st_mode)
                if what is None and info.st_size <= limit:
                    with os.fdopen(fd, "rb", closefd=False) as handle:
                        data = handle.read(limit + 1)
                else:
                    data = b""
                size = max(info.st_size, len(data))
            finally:
                os.close(fd)
    except OSError as exc:
        raise JsonInputError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    if what is not None:
        raise JsonInputError(f"{path.name}: {what}, not a regular file; a {kind} must be a regular file (not read)")
    if size > limit:
        raise JsonInputError(f"{path.name}: {size:,} bytes is over the {limit:,}-byte limit for a {kind} (not read)")
    return data


def read_bytes(path, max_bytes: int | None = None, kind: str = "run file") -> bytes:
    """A JSON file's bytes (read_checked), decompressed where it is gzip ('.gz': the limit applies to the
    compressed file and to the decompressed text); an unreadable file, a FIFO or a directory, a file over the limit
    or a missing file is a JsonInputError."""
    path = Path(path)
    limit = LIMITS[kind] if max_bytes is None else max_bytes
    data = read_checked(path, kind, limit)
    if path.suffix.lower() == ".gz":
        data = _gunzip(data, path.name, limit)
    return data


def read_json(path, max_bytes: int | None = None, max_depth: int = MAX_DEPTH, kind: str = "run file"):
    """Read (read_bytes: a regular file within the limit of its `kind`) and parse a JSON file, plain or
    gzip-compressed."""
    path = Path(path)
    limit = LIMITS[kind] if max_bytes is None else max_bytes
    return parse_json(read_bytes(path, limit, kind), path.name, max_bytes=limit, max_depth=max_depth)
