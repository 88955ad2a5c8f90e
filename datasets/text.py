"""Text from outside (a name, a method, a reason, a worker's output line) shown as data, never as a terminal command.

    escape_controls(text, layout=False) -> str    # the one escaping function for terminals
    escape_strings(value) -> value                # every string of a JSON-like value (keys included) escaped
    escaped_output()                              # context: sys.stdout / sys.stderr escape whatever is written

Control characters (C0, DEL, C1: ESC and so every ANSI sequence, CR, NUL, BEL...) and the bidirectional-text
controls (right-to-left overrides and isolates, LRM/RLM, the Arabic letter mark, the line and paragraph separators)
are written as their Python escapes ('\\x1b', '\\r', '\\u202e'): a name cannot move a terminal's cursor, colour its
text, change its title, clear its screen, fake an output line or reverse what a reader sees. `layout=True` keeps
newline and tab (what a program's own multi-line output needs): the command lines use it on their whole output
(escaped_output), and escape a name's own newlines (layout=False) where they format it.
"""
from __future__ import annotations

import re
import sys
from contextlib import contextmanager

_BIDI = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
UNSAFE_CHARS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")   # all of them but \t and \n


def _escape(match: re.Match) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def escape_controls(text: str, layout: bool = False) -> str:
    """`text` with every unsafe character (UNSAFE_CHARS) written as its Python escape; with `layout`, newline and
    tab are kept."""
    return (_UNSAFE_BUT_LAYOUT if layout else UNSAFE_CHARS).sub(_escape, text)


def escape_strings(value):
    """`value` (str, dict, list, tuple, anything else) with escape_controls applied to every string in it."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {escape_strings(k): escape_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escape_strings(v) for v in value)
    return value


class EscapedStream:
    """A text stream that writes escape_controls(text, layout=True) of whatever it is given to `raw`; everything
    else (flush, fileno, isatty, encoding, buffer) is the raw stream's."""

    def __init__(self, raw):
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(escape_controls(text, layout=True))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self.raw, name)


@contextmanager
def escaped_output():
    """sys.stdout and sys.stderr as EscapedStreams for the block (a command line's whole run: its own lines, the
    lines it forwards from a worker, a traceback), put back after."""
    saved = sys.stdout, sys.stderr
    sys.stdout = saved[0] if isinstance(saved[0], EscapedStream) else EscapedStream(saved[0])
    sys.stderr = saved[1] if isinstance(saved[1], EscapedStream) else EscapedStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
