"""The one run-file lifecycle every command uses: flush after each item, Ctrl-C keeps the partial file, finalize.

    with RunLife(backend, writer, what="run") as life:
        life.start(new_run(...))          # the run dict this lifecycle writes
        ... life.flush() after every shape / point / chunk ...
        life.finalize()                   # status "complete" (complete=False: "partial", e.g. a tune's budget)

On Ctrl-C (KeyboardInterrupt inside the block; SIGTERM too under interrupt_on_sigterm) the backend's tasks are cancelled, its workers killed, the run marked
"interrupted" and flushed (status "partial"), one line says where it is, and the KeyboardInterrupt goes on up. The
backend is closed however the block ends. datasets.runfile.RunWriter refuses an existing file before any work and
writes atomically; a run file is never overwritten.
"""
from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """SIGTERM is Ctrl-C inside the body (main thread only): the run ends within seconds, its workers and every
    process they started killed, the partial file marked "interrupted" (RunLife.__exit__)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class RunLife:
    def __init__(self, backend, writer, what: str = "run", on_interrupt: Callable[[dict], None] | None = None,
                 say: bool = True):
        """`on_interrupt(run)`: what the command adds to an interrupted run before it is flushed (the sweep's
        wall time); `say`: print where the partial run is kept."""
        self.backend, self.writer, self.what = backend, writer, what
        self.on_interrupt, self.say = on_interrupt, say
        self.run: dict | None = None

    def __enter__(self) -> "RunLife":
        return self

    def start(self, run: dict) -> dict:
        self.run = run
        return run

    def flush(self) -> None:
        """Write the run as it is now (status "partial"), with the worker processes started so far."""
        self.run["environment"]["workers"] = self.backend.records()
        self.writer.flush(self.run)

    def finalize(self, complete: bool = True) -> dict:
        """Close the backend (its workers' records say how they ended), then write the run "complete" (or
        "partial" where complete is False)."""
        self.backend.close()
        self.run["environment"]["workers"] = self.backend.records()
        (self.writer.finalize if complete else self.writer.flush)(self.run)
        self.run["status"] = "complete" if complete else "partial"
        return self.run

    def __exit__(self, kind, exc, tb) -> bool:
        try:
            if kind is not None and issubclass(kind, KeyboardInterrupt):
                self.backend.cancel()
                self.backend.close(force=True)
                if self.run is not None:
                    if self.on_interrupt is not None:
                        self.on_interrupt(self.run)
                    self.run["environment"]["workers"] = self.backend.records()
                    self.run["interrupted"] = True
                    self.writer.flush(self.run)
                    if self.say:
                        print(f"\ninterrupted: partial {self.what} kept in {self.writer.path}", file=sys.stderr)
        finally:
            self.backend.close()
        return False
