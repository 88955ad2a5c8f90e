"""`python -m profiler.worker`: one worker process (the child side of profiler/worker/process.py's protocol)."""
from profiler.worker.child import child_main

raise SystemExit(child_main())
