"""The dask backend: `python -m profiler run|tune|explain --cluster local|local:N|tcp://HOST:8786`.

dask is an optional dependency (requirements-scale.txt): this module imports it only inside the functions that
use it, so it imports cleanly without dask; profiler.backends.open calls it only when --cluster is given.

The unit of work is a Task (profiler.backends.base: one shape with all its candidates, so paired timing never
spans workers; a tuner point's stages stay on one worker). Each dask worker runs task.run with its own
profiler.backends.pool.WorkerPool, so a candidate's CUDA fault still only ends a projlab worker process, never the
dask worker. The caller keeps the rules and the run files: ClusterGroup is a Backend (like
profiler.backends.local.LocalBackend), `parallel` tasks at a time. This module never imports a command.

- `local`: a dask cluster on this host with one worker per visible GPU, each pinned with CUDA_VISIBLE_DEVICES;
  `local:N` the first N GPUs (on device "cpu", N unpinned workers: tests). A scheduler address: its workers as
  they are (start each with one thread and one GPU: README).
- Never two timing workers on one GPU: every dask worker reports the GPU its projlab worker sees (UUID, else host +
  PCI bus id); two on one GPU are refused with one line before anything is measured (they would time each
  other's contention).
- One run file (and, for tune, one plan) per GPU model: results of mixed models are never scored together.
  Several models: the file names get the model's slug (`..._nvidia-h100-80gb-hbm3.json`).
- A task whose dask worker dies is retried once (the scheduler's allowed-failures is set to 1), then the task's
  own `lost` record is returned (a shape task: a failure of every candidate it carried); the sweep goes on.
- environment.workers[] holds every projlab worker process of the run with its dask worker, host and GPU;
  results/failures/shape_info point into it (`worker`); environment.cluster lists the dask workers.
- Ctrl-C cancels the cluster's tasks and keeps the partial run files.
"""
from __future__ import annotations

import json
import os
import re
import threading
import uuid
from copy import deepcopy
from typing import Callable

from profiler.backends.base import Task
from profiler.backends.isolate import ENVIRONMENT
from profiler.backends.pool import WorkerPool

ALLOWED_FAILURES = 1          # a task is retried once after its dask worker died, then KilledWorker
CONNECT_TIMEOUT_S = 30.0
START_TIMEOUT_S = 300.0       # local cluster: workers up and their projlab workers started
LOG_KEEP = 200                # log lines a task brings back from its dask worker
ADDRESS_CHECK_S = 10.0        # how often a task bound to worker addresses checks that one of them is still there


class ClusterError(RuntimeError):
    """The cluster cannot be used as asked (bad address, no workers, two timing workers on one GPU); one line."""


# ============================================================================================ on the dask worker

_POOLS: dict = {}


class _Log:
    """A pool's log on a dask worker: kept and sent back with each task's result."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(str(line))
        del self.lines[:-LOG_KEEP]

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines


def _pool(sweep_id: str, config: dict):
    """This dask worker's WorkerPool for one sweep (another sweep's pools are closed first)."""
    key = (sweep_id, json.dumps(config, sort_keys=True))
    for old in [k for k in _POOLS if k[0] != sweep_id]:
        _POOLS.pop(old).close()
    if key not in _POOLS:
        pool = WorkerPool(config, _Log())
        pool.uid = uuid.uuid4().hex
        _POOLS[key] = pool
    return _POOLS[key]


def on_dask_worker(sweep_id: str, config: dict, fn: Callable, args: tuple) -> dict:
    """Run fn(pool, *args) with this dask worker's pool -> the result, the pool's process records and log."""
    from distributed import get_worker

    pool = _pool(sweep_id, config)
    me = get_worker()
    try:
        result = fn(pool, *args)
    finally:
        log = pool.log.take()
    return {"result": result, "records": deepcopy(pool.records), "pool": pool.uid, "log": log,
            "dask_worker": str(me.name), "address": me.address}


def close_pools(sweep_id: str, force: bool = False) -> None:
    """End this dask worker's projlab workers of one sweep (client.run)."""
    for key in [k for k in _POOLS if k[0] == sweep_id]:
        _POOLS.pop(key).close(force)


def _shipped():
    """(run_task, close) as functions defined here, inside a function: cloudpickle sends such functions by value,
    and their arguments and results go as pickled bytes, so the scheduler -- which unpickles every task it is
    given -- needs no projlab checkout; only the workers import profiler."""
    def run_task(blob: bytes) -> bytes:
        import cloudpickle

        from profiler.backends.dask import on_dask_worker

        sweep_id, config, fn, args = cloudpickle.loads(blob)
        try:
            return cloudpickle.dumps(("ok", on_dask_worker(sweep_id, config, fn, args)))
        except Exception as exc:   # raised again in the caller's process (SweepInputError, WorkerStartError, ...)
            return cloudpickle.dumps(("error", exc))

    def close(sweep_id: str, force: bool) -> None:
        from profiler.backends.dask import close_pools as close_them

        close_them(sweep_id, force)

    return run_task, close


RUN_TASK, CLOSE_POOLS = _shipped()


def _pack(sweep_id: str, config: dict, fn: Callable, args: tuple) -> bytes:
    import cloudpickle

    return cloudpickle.dumps((sweep_id, config, fn, args))


def _unpack(blob: bytes) -> dict:
    import cloudpickle

    status, value = cloudpickle.loads(blob)
    if status == "error":
        raise value
    return value


# ============================================================================================ in this process

def visible_gpus() -> list[str]:
    """The GPUs a local cluster may pin (CUDA_VISIBLE_DEVICES entries, else the driver's device count), without
    creating a CUDA context here."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and not d.strip().startswith("-")]
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return []
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return []
    return [str(i) for i in range(count.value)]


def parse_cluster(text: str) -> tuple[str, object]:
    """'local' -> ("local", None); 'local:N' -> ("local", N); 'tcp://host:8786' or 'host:8786' -> ("address", text).
    An address names its port (dask's client refuses one without: "missing port number"), from 1 to 65535."""
    text = str(text).strip()
    if text == "local":
        return "local", None
    match = re.fullmatch(r"local:(\d{1,6})", text)
    if match and int(match.group(1)) >= 1:
        return "local", int(match.group(1))
    match = re.fullmatch(r"([a-z0-9+]+://)?[^\s:/]+:(\d{1,5})", text)
    if match and 1 <= int(match.group(2)) <= 65535 and not text.startswith("local"):
        return "address", text
    raise ClusterError(f"--cluster {text!r}: expected 'local', 'local:N' (N >= 1) or a scheduler address such as "
                       f"tcp://HOST:8786")


def _local_cluster(n: int | None, cpu: bool, log):
    """A SpecCluster on this host: n workers (one thread each, no memory limit: the projlab worker holds the GPU
    memory), pinned one per GPU on CUDA."""
    import logging

    from distributed import Nanny, Scheduler, SpecCluster

    if cpu:
        if n is None:
            raise ClusterError("--cluster local on device cpu: give the number of workers, local:N")
        pins = [None] * n
    else:
        gpus = visible_gpus()
        if not gpus:
            raise ClusterError("--cluster local: no visible GPU (CUDA_VISIBLE_DEVICES / the driver lists none)")
        if n is not None and n > len(gpus):
            raise ClusterError(f"--cluster local:{n}: only {len(gpus)} visible GPU(s) ({','.join(gpus)}); never two "
                               f"timing workers on one GPU (they would time each other's contention)")
        pins = gpus[:n or len(gpus)]
    workers = {f"projlab-{i}" + (f"-gpu{pin}" if pin is not None else ""): {
        "cls": Nanny, "options": {"nthreads": 1, "memory_limit": 0, "silence_logs": logging.ERROR,
                                  "env": {"CUDA_VISIBLE_DEVICES": pin} if pin is not None else {}}}
        for i, pin in enumerate(pins)}
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "dashboard_address": ":0",
                                               "allowed_failures": ALLOWED_FAILURES}}
    log(f"starting a local dask cluster: {len(workers)} worker(s)"
        + (f", pinned to GPUs {','.join(str(p) for p in pins)}" if not cpu else " (cpu)"))
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR, name="projlab")


class Fleet:
    """A dask client, the GPU each dask worker times on, and the workers grouped by GPU model."""

    def __init__(self, spec: str, config: dict, log: Callable[[str], None] = print):
        from distributed import Client

        kind, arg = parse_cluster(spec)
        self.config, self.log, self.spec = dict(config), log, spec
        self.sweep_id = uuid.uuid4().hex
        self.cluster, self.cancelled = None, threading.Event()
        self._futures: set = set()
        self._lock = threading.Lock()
        try:
            if kind == "local":
                self.cluster = _local_cluster(arg, str(config.get("device")) == "cpu", log)
                self.client = Client(self.cluster, timeout=CONNECT_TIMEOUT_S)
                self.client.wait_for_workers(len(self.cluster.worker_spec), timeout=START_TIMEOUT_S)
            else:
                self.client = Client(arg, timeout=CONNECT_TIMEOUT_S)
                self._retry_once(arg)
        except ClusterError:
            self.close()
            raise
        except (OSError, TimeoutError, ValueError) as exc:   # ValueError: dask refuses the address itself
            self.close()
            raise ClusterError(f"--cluster {spec}: cannot reach the dask scheduler: {type(exc).__name__}: {exc}")
        try:
            self.envs = self._identify()
        except BaseException:
            self.close()
            raise

    # -- start ---------------------------------------------------------------------------------------------
    def _retry_once(self, address: str) -> None:
        """Set the scheduler's allowed-failures to 1 (a task is retried once after its worker died)."""
        def set_failures(dask_scheduler=None, n=ALLOWED_FAILURES):   # nested: sent by value, the scheduler host
            dask_scheduler.allowed_failures = n                        # needs no projlab checkout
            return n

        try:
            self.client.run_on_scheduler(set_failures)
            self.log(f"connected to the dask scheduler at {address}; a task is retried once after a worker death")
        except Exception as exc:
            self.log(f"connected to the dask scheduler at {address}; could not set its allowed-failures to "
                     f"{ALLOWED_FAILURES} ({type(exc).__name__}: {exc}): a task whose worker dies is retried as "
                     f"the scheduler is configured (distributed.scheduler.allowed-failures, default 3)")

    def _identify(self) -> dict[str, dict]:
        """{dask worker name: the environment its projlab worker reports}; refuses two workers on one GPU."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if not workers:
            raise ClusterError(f"--cluster {self.spec}: the scheduler has no workers (start them with `dask worker`)")
        futures = {addr: self.client.submit(RUN_TASK, _pack(self.sweep_id, self.config, ENVIRONMENT.run, ()),
                                            workers=[addr], allow_other_workers=False, pure=False)
                   for addr in workers}
        envs = {}
        for addr, fut in futures.items():
            try:
                out = _unpack(fut.result(timeout=START_TIMEOUT_S))
            except TimeoutError:
                raise ClusterError(f"dask worker {addr}: its projlab worker did not start within "
                                   f"{START_TIMEOUT_S:.0f} s") from None
            except ModuleNotFoundError as exc:   # the worker runs outside a projlab checkout
                raise ClusterError(f"dask worker {addr} cannot import {exc.name!r}: start `dask worker` from a "
                                   f"projlab checkout of the same commit with PYTHONPATH set to it (README, "
                                   f"'--cluster')") from None
            envs[out["dask_worker"]] = out["result"] | {"dask_address": addr, "dask_host": workers[addr]["host"]}
        gpu_share = {}
        for name, env in sorted(envs.items()):
            gpu_share.setdefault(_gpu_identity(env), []).append(name)
        shared = {gpu: names for gpu, names in gpu_share.items() if gpu is not None and len(names) > 1}
        if shared:
            gpu, names = next(iter(shared.items()))
            raise ClusterError(f"dask workers {', '.join(names)} all time on GPU {gpu[1]} ({envs[names[0]].get('gpu')}) "
                               f"of host {envs[names[0]].get('hostname')}: one timing worker per GPU (they would time "
                               f"each other's contention); pin each with CUDA_VISIBLE_DEVICES")
        for name, env in sorted(envs.items()):
            self.log(f"dask worker {name} ({env['dask_address']}): {env.get('gpu') or 'cpu'} "
                     f"{env.get('gpu_uuid') or ''} on {env.get('hostname')}")
        return envs

    def groups(self) -> dict[str, "ClusterGroup"]:
        """One backend per GPU model (sorted by model), its dask workers by name. With several models, a model's
        tasks are restricted to its hosts (a host restriction outlives a worker's restart, an address does not);
        where one host has GPUs of two models, to its workers' addresses."""
        by_model: dict[str, list[str]] = {}
        for name, env in sorted(self.envs.items()):
            by_model.setdefault(env.get("gpu") or "cpu", []).append(name)
        if len(by_model) == 1:
            return {model: ClusterGroup(self, model, names, None) for model, names in by_model.items()}
        host_models: dict[str, set] = {}
        for env in self.envs.values():
            host_models.setdefault(env["dask_host"], set()).add(env.get("gpu") or "cpu")
        mixed = any(len(models) > 1 for models in host_models.values())
        out = {}
        for model, names in sorted(by_model.items()):
            where = [self.envs[n]["dask_address"] for n in names] if mixed else sorted(
                {self.envs[n]["dask_host"] for n in names})
            out[model] = ClusterGroup(self, model, names, where)
        return out

    # -- tasks ---------------------------------------------------------------------------------------------
    def submit(self, fn: Callable, args: tuple, workers: list[str] | None, loose: bool):
        if self.cancelled.is_set():
            raise KeyboardInterrupt("the sweep was cancelled")
        fut = self.client.submit(RUN_TASK, _pack(self.sweep_id, self.config, fn, args), workers=workers,
                                 allow_other_workers=loose, pure=False)
        with self._lock:
            self._futures.add(fut)
        return fut

    def wait(self, fut, addresses: list[str] | None = None) -> dict:
        """The task's output; KeyboardInterrupt after cancel(); distributed.KilledWorker after its second death.
        `addresses`: the task is bound to these workers (a host with two GPU models): ClusterError once none of
        them is left, instead of waiting for a worker that a restart gave another address."""
        from concurrent.futures import CancelledError

        try:
            while addresses:
                try:
                    return _unpack(fut.result(timeout=ADDRESS_CHECK_S))
                except TimeoutError:
                    alive = self.client.scheduler_info(n_workers=-1)["workers"]
                    if fut.status == "pending" and not set(addresses) & set(alive):
                        raise ClusterError(f"the dask workers {addresses} this task was bound to are gone (a "
                                           f"host with GPUs of two models binds tasks to worker addresses)")
            return _unpack(fut.result())
        except CancelledError:
            raise KeyboardInterrupt("the sweep was cancelled") from None
        finally:
            with self._lock:
                self._futures.discard(fut)

    def cancel(self) -> None:
        """Ctrl-C: cancel every task of this sweep on the cluster (the callers then keep their partial runs)."""
        self.cancelled.set()
        with self._lock:
            futures = list(self._futures)
        if futures:
            try:
                self.client.cancel(futures, force=True)
            except Exception:
                pass

    def close_pools(self, names: list[str], force: bool = False) -> None:
        addresses = [a for a, w in self.client.scheduler_info(n_workers=-1)["workers"].items()
                     if str(w.get("name")) in names]
        try:
            self.client.run(CLOSE_POOLS, self.sweep_id, force, workers=addresses)
        except Exception as exc:   # a worker gone meanwhile: its projlab worker ended with it
            self.log(f"closing the dask workers' projlab workers: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        client, cluster = getattr(self, "client", None), self.cluster
        self.client = self.cluster = None
        if client is not None:
            try:
                if cluster is None:
                    client.run(CLOSE_POOLS, self.sweep_id, True)
            except Exception:
                pass
            client.close()
        if cluster is not None:
            cluster.close()


def _gpu_identity(env: dict):
    """What makes two dask workers time on the same GPU: its UUID, else host + PCI bus id (None on CPU)."""
    if env.get("gpu_uuid"):
        return ("uuid", env["gpu_uuid"])
    if env.get("pci_bus_id"):
        return ("pci", f"{env.get('hostname')}/{env['pci_bus_id']}")
    return None


class ClusterGroup:
    """The dask workers of one GPU model as a Backend (profiler.backends.base)."""

    def __init__(self, fleet: Fleet, model: str, names: list[str], where: list[str] | None):
        self.fleet, self.model, self.names, self.where = fleet, model, list(names), where
        self.parallel = len(names)
        self._records: list[dict] = []
        self._index: dict[tuple, int] = {}
        self._pins: dict[str, str] = {}
        self._counts: dict[str, int] = {n: 0 for n in names}
        self._lock = threading.Lock()
        self._closed = False
        self._pool_of: list[str] = []            # the dask-side pool of each record
        self._pool_now: dict[str, str] = {}      # dask worker name -> its pool (a restarted worker has a new one)

    def call(self, task: Task, *args, pin: str | None = None):
        """task.run(pool, *args) on one of this group's dask workers (with `pin`, the one that ran that pin
        before). A task whose worker died twice returns task.lost(args, why) -- what that unit of work declares it
        leaves (a shape task: failure records); a task that declares nothing raises ClusterError."""
        from distributed import KilledWorker

        target = self._pins.get(pin) if pin else None
        workers = [target] if target else self.where
        fut = self.fleet.submit(task.run, args, workers, loose=target is not None)
        bound = workers if workers and not target and all("://" in w for w in workers) else None
        try:
            out = self.fleet.wait(fut, bound)
        except KilledWorker as exc:
            why = (f"its dask worker died while running it, and again after one retry on another worker "
                   f"({type(exc).__name__}: {exc})")
            if task.lost is None:
                raise ClusterError(f"{task.name} task: {why}") from None
            self.fleet.log(f"[{self.model}] task lost: {why}")
            return task.lost(args, why[:500])
        for line in out["log"]:
            self.fleet.log(f"[{out['dask_worker']}] {line}")
        result = self._absorb(out)
        if pin:
            self._pins[pin] = out["dask_worker"]
        return result

    def environment(self) -> dict:
        """The environment of the worker that answers, with environment.cluster (this model's dask workers)."""
        return dict(self.call(ENVIRONMENT)) | {"cluster": self.describe()}

    def _absorb(self, out: dict):
        """Merge the dask worker's process records into this group's, and point the result's `worker` fields at
        them."""
        env = self.fleet.envs.get(out["dask_worker"], {})
        with self._lock:
            self._pool_now[out["dask_worker"]] = out["pool"]
            mapping = {}
            for i, rec in enumerate(out["records"]):
                key = (out["pool"], i)
                if key not in self._index:
                    self._index[key] = len(self._records)
                    self._records.append({})
                    self._pool_of.append(out["pool"])
                g = self._index[key]
                self._records[g].update(rec | {"index": g, "dask_worker": out["dask_worker"],
                                               "hostname": rec.get("hostname") or env.get("hostname")})
                mapping[i] = g
            self._counts[out["dask_worker"]] = self._counts.get(out["dask_worker"], 0) + 1
        return _remap(out["result"], mapping)

    def describe(self) -> dict:
        """environment.cluster: the scheduler and this model's dask workers (name, host, GPU)."""
        info = {"scheduler": self.fleet.spec if self.fleet.cluster is None else "local",
                "gpu_model": self.model, "workers": []}
        for name in self.names:
            env = self.fleet.envs.get(name, {})
            info["workers"].append({"name": name, "hostname": env.get("hostname"), "gpu": env.get("gpu"),
                                    "gpu_uuid": env.get("gpu_uuid"), "pci_bus_id": env.get("pci_bus_id")})
        return info

    def records(self) -> list[dict]:
        return self._records

    def detail(self) -> str:
        """Tasks finished per dask worker (the progress bar's postfix)."""
        return " ".join(f"{name}:{n}" for name, n in sorted(self._counts.items()))

    def cancel(self) -> None:
        self.fleet.cancel()

    def close(self, force: bool = False) -> None:
        if self.fleet.client is None or self._closed:
            return
        self._closed = True
        self.fleet.close_pools(self.names, force)
        for rec, pool in zip(self._records, self._pool_of):
            if rec.get("ended") != "running":
                continue
            if pool != self._pool_now.get(rec["dask_worker"]):   # its dask worker died and was replaced
                rec["ended"] = "lost with its dask worker (the worker process died or was restarted)"
            else:
                rec["ended"] = "stopped (interrupted)" if force else "closed"


def _remap(result, mapping: dict):
    """Worker indices of a dask worker's pool -> the group's (results, pairs, failures records and "worker")."""
    if not isinstance(result, dict) or not mapping:
        return result
    out = dict(result)
    for key in ("results", "pairs", "failures"):
        if isinstance(out.get(key), list):
            out[key] = [r | {"worker": mapping.get(r["worker"], r["worker"])} if isinstance(r, dict) and
                        r.get("worker") is not None else r for r in out[key]]
    if out.get("worker") is not None:
        out["worker"] = mapping.get(out["worker"], out["worker"])
    return out
