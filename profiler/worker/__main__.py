"""`python -m profiler.worker`: one worker process (the child side of profiler/worker/process.py's protocol).

It ends with os._exit once the protocol is over: no atexit hook or finalizer a candidate registered runs after the
parent stopped listening (the parent kills whatever such code would have started anyway: process.stop_tree)."""
import os
import sys

from profiler.worker.child import child_main

code = child_main()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except Exception:
        pass
os._exit(code)
