"""Ctrl-C while a command line is still importing its modules (pandas, the kernels' registry: a second or more) is
one line and exit 130, like Ctrl-C at any later moment (each command's main catches KeyboardInterrupt); where the
shell made the command ignore SIGINT (a background job), it keeps ignoring it. Imports only the standard library,
so a __main__.py can take it before anything slow loads."""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager


@contextmanager
def interrupted_while_importing(prog: str, nothing_done: str):
    """Inside the block, SIGINT prints '<prog>: interrupted while starting (<nothing_done>)' to stderr and exits
    130; afterwards the default handler (KeyboardInterrupt) is back. Does nothing where SIGINT is not the default
    (ignored by the shell, or handled by an embedding program)."""
    ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def _interrupted(signum, frame):
        sys.stderr.write(f"{prog}: interrupted while starting ({nothing_done})\n")
        raise SystemExit(130)

    if ours:
        signal.signal(signal.SIGINT, _interrupted)
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
