"""The config survey's old module name: everything is in profiler.commands.survey (`python -m profiler survey`; the
subcommand `screen` stays as its alias). Kept while tests/profiler/test_cluster.py imports it by this name; nothing
else does."""
from profiler.commands.survey import *  # noqa: F401,F403
