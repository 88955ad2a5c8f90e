"""The worker process's step reporting: which candidate and phase run now, and the exception that ends the process.

`step(candidate, phase)` is called BEFORE each step of a task; in a child process it sends a "step" message to the
parent and waits for its answer (profiler.worker.child wires it), so a death from then on is blamed on that candidate
and phase, and a process an earlier step left running is found while no step runs.

`verdict(candidate, shape, reasons)` sends a judged call's failure to the parent the moment it is found, before any
other candidate code runs: once sent it is out of the worker's reach, and the parent applies it to the task's
result whatever the worker's reply says (profiler.worker.records.apply_verdicts).

`parent_feed(candidate, graph)` -> (ask, tell) for one timed graph where a parent judges the timed calls (a CPU
worker: profiler.worker.call_judge), else None: ask() asks the parent for the next call's input and waits for it,
tell(payload) sends the output the call left, without waiting (profiler.check.timed.FreshFeed).
"""
from __future__ import annotations

from typing import Any, Callable


class Fatal(Exception):
    """The worker process must end after reporting this (sticky CUDA error, sys.exit, tainted globals)."""

    def __init__(self, kind: str, error: str, candidate: str | None = None, phase: str | None = None):
        super().__init__(error)
        self.kind, self.error, self.candidate, self.phase = kind, error, candidate, phase


_REPORT: list[Callable[[str | None, str], None]] = [lambda candidate, phase: None]
_CURRENT: dict[str, Any] = {"candidate": None, "phase": None}


def step(candidate: str | None, phase: str) -> None:
    """Tell the parent (if any) which candidate and phase run next; a death from here on is theirs."""
    _CURRENT.update(candidate=candidate, phase=phase)
    _REPORT[0](candidate, phase)



def current() -> tuple[str | None, str | None]:
    """(candidate, phase) of the step running now (the last step() call)."""
    return _CURRENT["candidate"], _CURRENT["phase"]


def report_to(send: Callable[[str | None, str], None]) -> None:
    """Send every later step(candidate, phase) to `send` as well (the child process: to its parent)."""
    _REPORT[0] = send


_VERDICT: list[Callable[[str, dict, list], None]] = [lambda candidate, shape, reasons: None]


def verdict(candidate: str, shape: dict, reasons: list[str]) -> None:
    """A judged call of `candidate` at `shape` failed for `reasons`: tell the parent now (a process with no parent
    keeps its own result)."""
    _VERDICT[0](candidate, shape, reasons)


def verdicts_to(send: Callable[[str, dict, list], None]) -> None:
    """Send every later verdict(...) to `send` (the child process: to its parent, without waiting)."""
    _VERDICT[0] = send


_FEED: list = [None]


def parent_feed(candidate: str, graph: str) -> tuple | None:
    """(ask, tell) bound to one graph of `candidate` where a parent makes the timed inputs and judges the outputs;
    None where none does (then the worker makes and judges them itself)."""
    if _FEED[0] is None:
        return None
    ask, tell = _FEED[0]
    return (lambda: ask(candidate, graph)), (lambda payload: tell(candidate, graph, payload))


def feed_from(ask: Callable[[str, str], dict] | None, tell: Callable[[str, str, dict], None] | None = None) -> None:
    """The parent's side of every later parent_feed(...): ask(candidate, graph) -> its reply with the next input,
    tell(candidate, graph, payload); None: no parent judges."""
    _FEED[0] = None if ask is None else (ask, tell)
