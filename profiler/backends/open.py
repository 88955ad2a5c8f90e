"""open_backends: the backends a command runs on, one per GPU model.

    with open_backends(cluster, config, log) as backends:    # {gpu model: Backend}
        ...

cluster None: this host's one worker (profiler.backends.local; dask is never imported). Otherwise a dask cluster
('local', 'local:N' or a scheduler address; profiler.backends.dask), one backend per GPU model of its workers.
`config`: the worker processes' {"device", "mode", "flush_bytes", "init"}.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from profiler.backends.dask import ClusterError, Fleet  # noqa: F401  (what open_backends raises)
from profiler.backends.local import LocalBackend
from profiler.measure.telemetry import cuda_device_name


class Backends(dict):
    """{gpu model: Backend}, with what the commands need to know about where they run."""

    def __init__(self, groups: dict, on_this_host: bool, cluster: bool, cancel: Callable[[], None] = lambda: None):
        super().__init__(groups)
        self.cluster = cluster             # dask workers (several at once), not this host's one worker
        self.on_this_host = on_this_host   # the workers run on this host (a tool path found here is valid there)
        self.cancel = cancel               # Ctrl-C: stop every backend's tasks


@contextmanager
def open_backends(cluster: str | None, config: dict, log: Callable[[str], None] = print) -> Iterator[Backends]:
    if cluster is None:
        backend = LocalBackend(config, log)
        try:
            # This process never creates a CUDA context: the GPU's name comes from the driver.
            yield Backends({cuda_device_name() or "unknown-gpu": backend}, on_this_host=True, cluster=False)
        finally:
            backend.close()
        return
    fleet = Fleet(cluster, config, log)
    try:
        yield Backends(fleet.groups(), on_this_host=fleet.cluster is not None, cluster=True,
                       cancel=fleet.cancel)
    finally:
        fleet.close()
