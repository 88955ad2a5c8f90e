"""The worker layer: candidates are loaded, prepared, checked and timed in a separate process (profiler/README.md).

process.py: the protocol and the parent's handle of one child (Worker); child.py: the child's loop; session.py: the
child's per-process state; tasks.py: the table from task kind to task body; shape_task.py, explain_task.py: the
bodies; settings.py: the sweep settings a shape task carries; steps.py: step reporting; records.py: run-file
records both sides build. Imports only profiler.check and profiler.measure below it.
"""
