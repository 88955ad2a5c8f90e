"""`python -m profiler.worker`: the child side of the worker protocol (profiler/worker/process.py's docstring):
read one JSON message per line on stdin, answer on the original stdout, exit with the parent."""
from __future__ import annotations

import faulthandler
import json
import os
import select
import sys
import threading

from profiler.worker import steps
from profiler.worker.session import session
from profiler.worker.steps import Fatal, current, step
from profiler.worker.tasks import run_task

# The reply serializer, bound before any candidate is imported: one that wraps json.dumps later changes nothing
# the parent reads (and profiler.worker.integrity names it).
_DUMPS = json.dumps


def _exit_with_parent(parent_pid: int, protocol_fd: int, every_s: float = 1.0) -> None:
    """End this worker within a second of its parent's death (a killed CLI or dask worker): an orphan would go on
    timing its shape on the GPU while a fresh worker measures there too. The parent is gone when the protocol pipe's
    writing end closes (POLLHUP: also inside the sandbox's PID namespace, where this process is pid 1 and its
    parent is outside) or, outside a PID namespace, when this process is re-parented."""
    poller = select.poll()
    poller.register(protocol_fd, 0)   # POLLHUP and POLLERR are reported whatever the mask
    while True:
        if poller.poll(every_s * 1000) or (parent_pid and os.getppid() != parent_pid):
            os._exit(0)


def child_main() -> int:
    """`python -m profiler.worker`: the child side of the protocol."""

    proto_out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)  # a candidate's print() goes to stderr, never into the protocol
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
    # A segfault prints the candidate's Python frames to stderr, which the parent keeps (the current thread
    # only: the parent-watch thread's frames would come first and name nothing useful).
    faulthandler.enable(all_threads=False)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(), proto_in.fileno()), daemon=True).start()

    def send(msg: dict) -> None:
        proto_out.write(_DUMPS(msg, allow_nan=True) + "\n")
        proto_out.flush()

    def step_held(candidate, phase) -> None:
        """Report the step, then wait for the parent's "go": it checks for stray processes while this process is
        held between two steps. Anything else (an "exit", the end of the pipe) ends this process."""
        send({"msg": "step", "candidate": candidate, "phase": phase})
        line = proto_in.readline()
        if not line or json.loads(line).get("op") != "go":
            os._exit(0)

    def ask_input(candidate, graph) -> dict:
        """The next timed call's input, made by the parent now; anything but its reply ends this process."""
        send({"msg": "input", "candidate": candidate, "graph": graph})
        line = proto_in.readline()
        reply = json.loads(line) if line else {}
        if reply.get("op") != "input":
            os._exit(0)
        return reply

    steps.report_to(step_held)
    steps.verdicts_to(lambda candidate, shape, reasons: send({"msg": "verdict", "candidate": candidate,
                                                             "shape": shape, "reasons": reasons}))
    steps.feed_from(ask_input, lambda candidate, graph, payload: send({"msg": "output", "candidate": candidate,
                                                                        "graph": graph} | payload))
    sess = None
    while line := proto_in.readline():
        msg = json.loads(line)
        try:
            if msg["op"] == "exit":
                return 0
            if msg["op"] == "init":
                step(None, "start")
                sess = session(msg["config"])
                sess.integrity.watch_fd(proto_out.fileno(), "the reply pipe")
                sess.integrity.watch_fd(proto_in.fileno(), "the request pipe")
                send({"msg": "ready", "pid": os.getpid(), "environment": sess.environment()})
                continue
            result = run_task(msg["task"], sess.config)
            sess.assert_integrity("the task")   # the reply path as it was at start, nothing left to outlive it
            send({"msg": "done", "result": result})
        except Fatal as exc:
            send({"msg": "fatal", "candidate": exc.candidate, "phase": exc.phase, "kind": exc.kind,
                  "error": exc.error})
            return 3
        except SystemExit as exc:  # a candidate's sys.exit() outside a guarded step
            send({"msg": "fatal", "candidate": current()[0], "phase": current()[1], "kind": "exit",
                  "error": f"called sys.exit({exc.code!r})"})
            return 3
        except Exception as exc:
            why = sess.healthy() if sess is not None else None
            text = f"{type(exc).__name__}: {exc}"[:500]
            if why is not None or sess is None:
                send({"msg": "fatal", "candidate": current()[0], "phase": current()[1],
                      "kind": "cuda_fault" if why else "start", "error": text})
                return 3
            send({"msg": "error", "error": text})
    return 0

