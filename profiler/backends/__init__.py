"""The backend layer: where the commands' units of work run (profiler/README.md, "Backends").

base.py: the Backend protocol, the Task (a unit of work and what it records when lost), for_each; pool.py: the
parent's worker pool; isolate.py: the pool tasks and the one retry-without-the-culprit loop; local.py: this host's
backend; dask.py: the dask backend; open.py: open_backends. Imports profiler.worker and below, never a command.
"""
