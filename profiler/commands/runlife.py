"""The one run-file lifecycle every command uses: flush after each item, Ctrl-C keeps the partial file, finalize.

    with RunLife(backend, writer, what="run") as life:
        life.start(new_run(...))          # the run dict this lifecycle writes
        ... life.flush() after every shape / point / chunk ...
        life.finalize()                   # status "complete" (complete=False: "partial", e.g. a tune's budget)

On Ctrl-C (KeyboardInterrupt inside the block; SIGTERM too under interrupt_on_sigterm) the backend's tasks are cancelled, its workers killed, the run marked
"interrupted" and flushed (status "partial"), the KeyboardInterrupt goes on up carrying the file's path where one was
written (`kept`: interrupted before anything was recorded, during the canary say, there is none), and the command
line prints one line (interrupted_line): "partial run in FILE" only when FILE exists. The
backend is closed however the block ends. datasets.runfile.RunWriter refuses an existing file before any work and
writes atomically; a run file is never overwritten.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


def interrupted_line(cmd: str, exc: BaseException, what: str = "run") -> str:
    """The one line a command prints after Ctrl-C or SIGTERM: where the partial file is, when one was written (the
    paths RunLife put on the KeyboardInterrupt, each checked to exist), else that none was."""
    kept = [p for p in dict.fromkeys(getattr(exc, "kept", ())) if Path(p).exists()]
    who = f"profiler {cmd}:" if cmd else "profiler:"
    if kept:
        return f"{who} interrupted; partial {what} in {', '.join(map(str, kept))}"
    return f"{who} interrupted before any result was recorded (no {what} file written)"


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
    def __init__(self, backend, writer, what: str = "run", on_interrupt: Callable[[dict], None] | None = None):
        """`on_interrupt(run)`: what the command adds to an interrupted run before it is flushed (the sweep's
        wall time)."""
        self.backend, self.writer, self.what = backend, writer, what
        self.on_interrupt = on_interrupt
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
                path = getattr(self.writer, "path", None)
                if path is not None and Path(path).exists():
                    exc.kept = [*getattr(exc, "kept", ()), str(path)]
        finally:
            self.backend.close()
        return False
