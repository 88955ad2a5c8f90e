"""`python -m profiler run|probe|tune|explain|survey|step`: the command line (profiler/cli/main.py).

`kill -USR1 <pid>` prints the stack of every thread of the command to its stderr and lets it go on (faulthandler):
where a run that seems stuck is waiting.

Ctrl-C while the command's modules are still importing is one line and exit 130 (datasets.startup), like Ctrl-C
at any later moment (profiler.cli.main.main)."""
import faulthandler
import signal

from datasets.startup import interrupted_while_importing

with interrupted_while_importing("profiler", "nothing was run"):
    from profiler.cli.main import main   # what may be interrupted: pandas, the kernels' registry

faulthandler.register(signal.SIGUSR1, all_threads=True)
raise SystemExit(main())
