"""`python -m dashboard ...`: the command line, in dashboard/cli/main.py."""
import sys

from dashboard.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
