"""app_pages/first_run.py: the imports' objects frozen out of the collector for the process's first script run
only (its second run unfreezes them, so the first session's own cycles are collected again)."""
import gc

from app_pages import first_run


def test_freezes_on_the_first_run_unfreezes_on_the_second_and_then_does_nothing(monkeypatch):
    monkeypatch.setattr(first_run, "_RUNS", [0])
    gc.unfreeze()
    try:
        first_run.freeze_imports()
        frozen = gc.get_freeze_count()
        assert frozen > 1000          # pytest's, pandas's, streamlit's objects: everything alive now
        first_run.freeze_imports()
        assert gc.get_freeze_count() == 0
        first_run.freeze_imports()
        assert gc.get_freeze_count() == 0 and first_run._RUNS == [3]
    finally:
        gc.unfreeze()


def test_a_cycle_made_during_the_first_run_is_collected_after_the_second(monkeypatch):
    monkeypatch.setattr(first_run, "_RUNS", [0])
    gc.unfreeze()
    try:
        first_run.freeze_imports()

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a
        marker = []
        import weakref

        ref = weakref.ref(a, lambda _: marker.append("collected"))
        gc.freeze()                   # what Streamlit's first run leaves behind, as first_run describes
        del a, b
        gc.collect()
        assert ref() is not None      # frozen: never collected while the freeze holds
        first_run.freeze_imports()    # the second script run
        gc.collect()
        assert ref() is None and marker == ["collected"]
    finally:
        gc.unfreeze()
