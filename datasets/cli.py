"""What every projlab command line shares: a bad argument is one line on stderr and exit status 2, never argparse's
usage block, and numbers are checked for their range where they are parsed.

    OneLineParser(...)                  an argparse.ArgumentParser whose error() prints
                                        "<prog>: error: <problem> (usage: <prog> -h)" and exits 2
    positive_float, positive_int, non_negative_int, seed_int    argparse `type=` functions

`python -m profiler` and `python -m dashboard` (and their subcommands) build their parsers from it, so a mistyped
choice, a missing argument and a negative time read the same way everywhere.
"""
from __future__ import annotations

import argparse
import math
import sys

EXIT_BAD_INPUT = 2
# Seeds feed torch.Generator.manual_seed (at most 2^64 - 1) and numpy's default_rng (non-negative) after offsets of
# up to ~1.6e7 are added (profiler/check/inputs.py): 2^32 leaves them all far inside both.
MAX_SEED = (1 << 32) - 1


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (what is wrong, and where the usage is), exit status 2."""

    def error(self, message: str):
        text = " ".join(message.split())
        sys.stderr.write(f"{self.prog}: error: {text} (usage: {self.prog} -h)\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _number(text: str, kind, what: str):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def _ranged(name: str, kind, what: str, admits):
    """An argparse `type=` function: `text` as `kind`, finite, and admitted by `admits`, else one line saying what
    was expected."""
    def parse(text: str):
        value = _number(text, kind, what)
        if not admits(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = parse.__qualname__ = name
    return parse


positive_float = _ranged("positive_float", float, "a positive number", lambda v: v > 0)
non_negative_float = _ranged("non_negative_float", float, "a number >= 0", lambda v: v >= 0)
positive_int = _ranged("positive_int", int, "a positive integer", lambda v: v > 0)
non_negative_int = _ranged("non_negative_int", int, "an integer >= 0", lambda v: v >= 0)
seed_int = _ranged("seed_int", int, f"an integer from 0 to {MAX_SEED}", lambda v: 0 <= v <= MAX_SEED)
