"""Compile Triton methods ahead of a sweep, in parallel processes, so the sweep finds them in Triton's disk cache.

A Triton kernel compiles on its first launch per constexpr set and argument specialisation (an integer argument
equal to 1 or divisible by 16 gets its own variant), one compile at a time in a process; the tuner and the
config survey launch hundreds of (method, config, K) combinations. `warm(jobs, workers)` runs each job --
prepare the method on a random weight of the job's real shape and run it once at the job's M -- in one of
`workers` spawned processes (each with its own CUDA context) and returns the jobs that raised, with the error:
the sweep leaves those (method, config) out at that family (a kernel that faults would otherwise take the
sweep's own CUDA context down with it). Only compiles are shared (through Triton's cache directory); no result
of these calls is used.

    job = {"method": str, "config": dict, "family": str, "M": int, "N": int, "K": int, "w_dtype": "bfloat16"}
"""
from __future__ import annotations

import json
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor


def specialisation_class(M: int) -> str:
    """Which compiled variant an M selects for a kernel that specialises M (1, a multiple of 16, or other)."""
    return "1" if M == 1 else ("16n" if M % 16 == 0 else "other")


def unique_jobs(jobs: list[dict]) -> list[dict]:
    """Jobs that compile something different: one per (method, config, family dtype, N, K, M class)."""
    seen, out = set(), []
    for job in jobs:
        key = (job["method"], json.dumps(job["config"], sort_keys=True), job.get("w_dtype", "bfloat16"),
               int(job["N"]), int(job["K"]), specialisation_class(int(job["M"])))
        if key not in seen:
            seen.add(key)
            out.append(job)
    return out


def job_key(job: dict) -> tuple:
    """(method, config as sorted JSON, family): what a failed compile-and-run excludes from a sweep."""
    return (job["method"], json.dumps(job["config"], sort_keys=True), job["family"])


def _sync(device: str) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _run_jobs(jobs: list[dict], device: str) -> list[tuple[dict, str]]:
    """Worker: run each job once -> [(job, error line)]. After a CUDA error the context may be unusable (an
    illegal address is sticky): the worker then stops, and its remaining jobs are left to the sweep."""
    import torch

    from kernels.registry import get_method

    errors, weights = [], {}
    for job in jobs:
        N, K, M = int(job["N"]), int(job["K"]), int(job["M"])
        dtype = getattr(torch, job.get("w_dtype", "bfloat16"))
        try:
            if (N, K, dtype) not in weights:
                weights[(N, K, dtype)] = (torch.randn(N, K, device=device) * K ** -0.5).to(dtype)
            method = get_method(job["method"])
            state = method.prepare(weights[(N, K, dtype)], job["config"])
            method.run(state, torch.randn(M, K, device=device).to(torch.bfloat16))
            _sync(device)
        except Exception as exc:   # the sweep's own check will name it again, with the shape
            errors.append((job, f"{job['method']} {job['config']} {job['family']} M={M}: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}"[:300]))
            try:
                _sync(device)
            except Exception:
                break
    return errors


def warm(jobs: list[dict], workers: int = 8, device: str = "cuda") -> list[tuple[dict | None, str]]:
    """Compile every distinct job in `workers` processes (jobs of one shape stay in one process, so each weight
    is made once per process); returns (job, error line) for each job that raised, and (None, line) for a
    worker that died (a segfault): no job is blamed for that."""
    jobs = unique_jobs(jobs)
    if not jobs:
        return []
    workers = max(1, min(workers, len(jobs)))
    chunks: list[list[dict]] = [[] for _ in range(workers)]
    for i, job in enumerate(sorted(jobs, key=lambda j: (j["family"], j["N"], j["K"], j["method"]))):
        chunks[i * workers // len(jobs)].append(job)
    errors = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [(chunk, pool.submit(_run_jobs, chunk, device)) for chunk in chunks if chunk]
        for chunk, fut in futures:
            try:
                errors += fut.result()
            except Exception as exc:   # the process died: blame no job, keep the sweep going
                errors.append((None, f"compile worker died ({type(exc).__name__}: {exc}); its jobs are left "
                                         "to the sweep"[:300]))
    return errors
