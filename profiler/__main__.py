"""`python -m profiler run|probe|tune|explain|screen`: the command line (profiler/cli/main.py).

`kill -USR1 <pid>` prints the stack of every thread of the command to its stderr and lets it go on (faulthandler):
where a run that seems stuck is waiting."""
import faulthandler
import signal

from profiler.cli.main import main

faulthandler.register(signal.SIGUSR1, all_threads=True)
raise SystemExit(main())
