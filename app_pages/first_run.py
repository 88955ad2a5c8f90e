"""The first script run of a server process, kept out of the garbage collector's walk over what the imports left.

Not a page. A fresh server's first page imports pandas, plotly and dashboard/, which leave ~100k objects that live as
long as the process; every full collection walks them all, holding the GIL: the automatic ones while that first
script run unpickles its cached tables, and the one Streamlit runs after every script run (runner.postScriptGC),
while the browser is fetching the chart's code from this same process. On the 2-core development machine that
post-run collection took 0.67-0.86 s of the app's first page (the bare Streamlit page's 0.28-0.44 s; both while the
browser loaded the page), 15-45 ms with those objects frozen (gc.freeze).

The freeze ends with the process's second script run: it also freezes the first session's own objects, and a frozen
reference cycle is never collected, so left in place it kept that session's upload folder on disk until the server
exited (measured with a 1-s disconnected-session TTL); after gc.unfreeze they are collected like everything else.
"""
import gc
import threading

_LOCK = threading.Lock()
_RUNS = [0]


def freeze_imports() -> None:
    """Call at the start of every script run, after the imports: freezes on the process's first run, unfreezes on
    its second, does nothing after that."""
    with _LOCK:
        _RUNS[0] += 1
        runs = _RUNS[0]
    if runs == 1:
        gc.freeze()
    elif runs == 2:
        gc.unfreeze()
