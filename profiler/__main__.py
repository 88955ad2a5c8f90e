"""`python -m profiler run|probe|tune|explain|screen`: the command line (profiler/cli/main.py)."""
from profiler.cli.main import main

raise SystemExit(main())
