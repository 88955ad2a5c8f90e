"""`python -m profiler run|probe|tune|explain|survey|step`: the command line (profiler/cli/main.py).

`kill -USR1 <pid>` prints the stack of every thread of the command to its stderr and lets it go on (faulthandler):
where a run that seems stuck is waiting.

Ctrl-C while the command's modules are still importing (seconds: pandas, the kernels' registry) is one line and exit
130, like Ctrl-C at any later moment (profiler.cli.main.main); where the shell made the command ignore SIGINT (a
background job), it keeps ignoring it."""
import faulthandler
import signal
import sys


def _interrupted_while_importing(signum, frame):
    sys.stderr.write("profiler: interrupted while starting (nothing was run)\n")
    raise SystemExit(130)


_ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _ours:
    signal.signal(signal.SIGINT, _interrupted_while_importing)
from profiler.cli.main import main  # noqa: E402  (after the handler: the import is what may be interrupted)

if _ours:
    signal.signal(signal.SIGINT, signal.default_int_handler)
faulthandler.register(signal.SIGUSR1, all_threads=True)
raise SystemExit(main())
