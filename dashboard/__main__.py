"""`python -m dashboard ...`: the command line, in dashboard/cli/main.py.

Ctrl-C while its modules are still importing is one line and exit 130 (datasets.startup), like Ctrl-C at any later
moment (dashboard.cli.main.main)."""
import sys

from datasets.startup import interrupted_while_importing

with interrupted_while_importing("dashboard", "nothing was read"):
    from dashboard.cli.main import main   # what may be interrupted: pandas and the model's modules

if __name__ == "__main__":
    sys.exit(main())
