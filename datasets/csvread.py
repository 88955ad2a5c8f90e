"""Strict CSV reading: every cell is parsed by its column's type and a bad cell names file, row and field.

The csv module (not pandas.read_csv) is used on purpose: it keeps the raw strings and the exact row numbers
that the error messages need, and it never guesses a dtype.
"""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Callable

import pandas as pd

from datasets.errors import DatasetError
from datasets.jsonfile import JsonInputError, read_checked


# Python's int() and float() also take '8_192' and '1_0.5' (literal digit separators) and int() any Unicode digit
# ('١'): a cell holds ASCII digits, an optional sign and, for a number, one decimal point and an exponent.
INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
FLOAT_TEXT = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")
MAX_DIGITS = 30   # more digits than any count or time here has; int() of a 5000-digit cell would raise otherwise


def parse_int(text: str) -> int:
    if not INT_TEXT.fullmatch(text) or len(text.strip()) > MAX_DIGITS:
        raise ValueError("not an integer")   # int("1.5") would raise too: a fractional M/N/K is never rounded
    return int(text)


def parse_float(text: str) -> float:
    if not FLOAT_TEXT.fullmatch(text):
        raise ValueError("not a number")     # nan, inf, '1_000' included
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


def parse_optional_float(text: str) -> float:
    return math.nan if text.strip() == "" else parse_float(text)


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def parse_str(text: str) -> str:
    if text.strip() == "":
        raise ValueError("empty")
    return text


def parse_optional_str(text: str) -> str:
    return text


PARSER_NAMES = {parse_int: "an integer", parse_float: "a number", parse_optional_float: "a number or empty",
                parse_bool: "true/false", parse_str: "a non-empty string", parse_optional_str: "a string"}


def read_typed_csv(path: str | Path, columns: dict[str, Callable[[str], object]]) -> pd.DataFrame:
    """Read `path`, require every column in `columns` and parse each cell; extra columns are kept as text.

    A leading byte-order mark (what Excel's "CSV UTF-8" writes) is dropped, as pandas does ("utf-8-sig")."""
    path = Path(path)
    try:
        return _read(path, columns)
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start:exc.start + 1]
        raise DatasetError(path, "(encoding)", f"not UTF-8 text (byte {exc.start}: {bad!r}); save it as \"CSV UTF-8\""
                           ) from None
    except csv.Error as exc:   # a cell over the csv module's field limit, a NUL byte, a bad quote
        raise DatasetError(path, "(csv)", f"not a readable CSV table: {exc}") from None
    except OSError as exc:
        raise DatasetError(path, "(file)", f"cannot read: {exc.strerror or exc}") from None
    except JsonInputError as exc:   # not a regular file, or over the size limit (read_checked)
        raise DatasetError(path, "(file)", str(exc).split(": ", 1)[-1]) from None


def _read(path: Path, columns: dict[str, Callable[[str], object]]) -> pd.DataFrame:
    with io.StringIO(read_checked(path, "table").decode("utf-8-sig"), newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        seen: dict[str, int] = {}
        for i, name in enumerate(header, start=1):  # DictReader would silently keep only the last one
            if name in seen:
                raise DatasetError(path, name, f"column {name!r} appears twice in the header (columns {seen[name]} "
                                   f"and {i})", row=1)
            seen[name] = i
        for name in columns:
            if name not in header:
                marks = " (a byte-order mark U+FEFF is inside the header: save the file as UTF-8 once)" \
                    if any("\ufeff" in h for h in header) else ""
                raise DatasetError(path, name, f"column missing from the header (found {header}){marks}", row=1)
        rows = []
        for row_number, raw in enumerate(reader, start=1):
            parsed = {}
            for name in header:
                text = raw.get(name)
                if text is None:
                    raise DatasetError(path, name, "row has fewer cells than the header", row=row_number)
                parser = columns.get(name, parse_optional_str)
                try:
                    parsed[name] = parser(text)
                except ValueError:
                    raise DatasetError(path, name, f"expected {PARSER_NAMES[parser]}, got {text!r}",
                                       row=row_number) from None
            if None in raw:  # DictReader files surplus cells under the key None
                raise DatasetError(path, header[-1], "row has more cells than the header", row=row_number)
            rows.append(parsed)
    return pd.DataFrame(rows, columns=header)
