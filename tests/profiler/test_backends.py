"""The backend layer without a worker process: the one retry-without-the-culprit loop, what a lost task records,
and open_backends without --cluster (no dask imported: tests/profiler/test_cluster.py)."""
from profiler.backends import isolate
from profiler.backends.isolate import SHAPE, without_culprits
from profiler.worker.process import WorkerDied

SHAPE_ROW = {"load": "decode 1", "family": "o", "M": 1, "N": 64, "K": 256}


class FakePool:
    """Answers call(live) from a script: a candidate name -> the worker dies in its check."""

    def __init__(self, deadly=(), phase="check"):
        self.deadly, self.phase, self.died_with, self.calls = set(deadly), phase, [], []

    def died(self, why):
        self.died_with.append(why)

    def run(self, live):
        self.calls.append([c["name"] for c in live])
        for c in live:
            if c["name"] in self.deadly:
                raise WorkerDied("died", "exit code 7", c["name"] if self.phase == "check" else None, self.phase)
        return {"ran": [c["name"] for c in live]}


def _live(*names):
    return [{"spec": n, "name": n} for n in names]


def test_the_culprit_is_left_out_and_the_others_run_again():
    pool, blamed = FakePool(deadly={"b"}), []
    out = without_culprits(pool, _live("a", "b", "c"), pool.run, lambda exc, c: blamed.append(c) or c)
    assert out == {"ran": ["a", "c"]} and blamed == [["b"]]
    assert pool.calls == [["a", "b", "c"], ["a", "c"]] and pool.died_with == ["died: exit code 7"]


def test_a_death_that_names_no_candidate_blames_all_of_them_or_the_first():
    pool = FakePool(deadly={"a"}, phase="time")
    assert without_culprits(pool, _live("a", "b"), pool.run, lambda exc, c: c) is None      # nobody left
    assert pool.calls == [["a", "b"]]
    pool = FakePool(deadly={"a"}, phase="time")
    out = without_culprits(pool, _live("a", "b"), pool.run, lambda exc, c: c, unknown="first")
    assert out == {"ran": ["b"]}


def test_on_death_may_keep_everyone_for_another_try():
    pool, tries = FakePool(deadly={"b"}), []

    def once(exc, culprits):
        tries.append(culprits)
        pool.deadly.clear()          # e.g. the optional step that killed it is switched off
        return []

    assert without_culprits(pool, _live("a", "b"), pool.run, once) == {"ran": ["a", "b"]} and tries == [["b"]]


def test_a_lost_shape_task_records_a_failure_for_every_candidate_it_carried():
    got = SHAPE.lost((SHAPE_ROW, _live("baseline", "x"), {}, None), "its dask worker died twice")
    assert [f["candidate"] for f in got["failures"]] == ["baseline", "x"]
    assert all((f["kind"], f["phase"]) == ("died", "dask") and f["M"] == 1 for f in got["failures"])
    assert got["results"] == [] and got["incidents"] == {}


def test_every_pool_task_is_a_task_and_only_those_that_can_be_lost_say_so():
    assert [t.name for t in (isolate.ENVIRONMENT, isolate.LOAD, isolate.PROBES, SHAPE)] == \
        ["environment", "load", "probes", "shape"]
    assert SHAPE.lost is not None and isolate.ENVIRONMENT.lost is None


def test_open_backends_without_a_cluster_is_this_hosts_worker_and_no_dask():
    from profiler.backends.local import LocalBackend
    from profiler.backends.open import open_backends

    with open_backends(None, {"device": "cpu", "mode": "cold", "flush_bytes": None, "init": None},
                       lambda m: None) as backends:
        assert len(backends) == 1 and not backends.cluster and backends.on_this_host
        assert isinstance(next(iter(backends.values())), LocalBackend)
