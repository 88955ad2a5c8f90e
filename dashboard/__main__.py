"""`python -m dashboard ...`: the command line, in dashboard/cli/main.py.

Ctrl-C while its modules are still importing (pandas: a second or more) is one line and exit 130, like Ctrl-C at any
later moment (dashboard.cli.main.main); where the shell made the command ignore SIGINT (a background job), it keeps
ignoring it."""
import signal
import sys


def _interrupted_while_importing(signum, frame):
    sys.stderr.write("dashboard: interrupted while starting (nothing was read)\n")
    raise SystemExit(130)


_ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _ours:
    signal.signal(signal.SIGINT, _interrupted_while_importing)
from dashboard.cli.main import main  # noqa: E402  (after the handler: the import is what may be interrupted)

if _ours:
    signal.signal(signal.SIGINT, signal.default_int_handler)

if __name__ == "__main__":
    sys.exit(main())
