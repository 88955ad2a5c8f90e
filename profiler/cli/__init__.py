"""The command line, `python -m profiler ...`: main.py (run, probe, and the dispatch to every subcommand),
options.py (the options every subcommand shares), and one module per subcommand with its own arguments (tune,
explain, survey). Imports profiler.commands and below."""
