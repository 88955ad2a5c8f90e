"""The command layer: sweep (`run`, `probe`), tune, explain, screen, and what they share: the run-file lifecycle
(runlife.py) and one command over several backends (fanout.py). Commands receive backends (profiler.backends) and
never import dask."""
