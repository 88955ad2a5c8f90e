"""The child process of `python -m profiler explain`: `python -m profiler.explain_target JOBS.json STATUS.jsonl`.

It runs apart from the CLI so a candidate that crashes the process, or leaves a sticky CUDA error, costs one
recorded failure instead of the whole explain run; ncu launches it for the profiled pass.

JOBS.json (written by profiler.explain): {"mode": "check" | "ncu", "candidates": [spec, ...], "names": [...],
"seed": 0, "skip": [job, ...], "shapes": [{"shape": {workload row}, "jobs": [[job, candidate index], ...],
"trace": path or null}]}.

mode "check": per shape, each candidate is checked with the correctness contract (profiler.contract.check_candidate,
which also captures its CUDA graph); then the passing graphs are replayed once each under torch.profiler, each
behind an L2 flush, and the kernel sequence of every replay is recorded (profiler.kineto). The Chrome trace is
kept at the shape's "trace" path when one is given.
mode "ncu": per job, the candidate's call runs 3 times to warm up, then once inside the NVTX range
"projlab <job> <family> M<M> <candidate>" — the only kernels ncu profiles (profiler.ncu.NVTX_INCLUDE).

STATUS.jsonl gets one JSON line per event, flushed at once, so the parent knows how far a crashed child got:
{"event": "start", "stage": "check" | "kineto" | "ncu", "job" | "shape": n}, then {"event": "check", "job",
"ok", "error", "method"}, {"event": "kineto", "job", "sequence"}, {"event": "done", "stage", ...} or
{"event": "error", "stage", "job", "reason"}. Exit 3: the CUDA context broke (the parent restarts the rest).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

EXIT_CUDA_BROKEN = 3
WARMUP_CALLS = 3
FLUSH_L2_MULTIPLE = 4  # read 4 x L2 before each profiled replay, as the cold timer does (profiler/timing.py)


class _Status:
    def __init__(self, path):
        self.handle = open(path, "a", encoding="utf-8")

    def __call__(self, **event) -> None:
        event["t"] = round(time.time(), 3)  # wall clock: how long each job took (session time estimates)
        self.handle.write(json.dumps(event) + "\n")
        self.handle.flush()


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _cuda_ok(torch, device) -> bool:
    """False when the CUDA context is broken (a sticky error): nothing more can run in this process."""
    if device.type != "cuda":
        return True
    try:
        torch.cuda.synchronize(device)
        return True
    except Exception:
        return False


def _weight(shape, seed, device):
    from profiler.contract import make_weight

    return make_weight(shape["family"], int(shape["N"]), int(shape["K"]), seed, device, dtype=shape["w_dtype"])


def _check_shape(entry, cands, names, spec, status, torch, device) -> list[tuple[int, object]]:
    """Contract check of every job of one shape; returns (job, GraphHandle) of those that passed."""
    from profiler.contract import check_candidate, error_vs_baseline

    shape, seed = entry["shape"], spec["seed"]
    weight = _weight(shape, seed, device)
    passed, base_rel = [], None
    for job, j in entry["jobs"]:
        if job in spec["skip"]:
            continue
        status(event="start", stage="check", job=job)
        cand = cands[j]
        try:
            state = cand.prepare(shape["family"], weight)
            chk = check_candidate(cand, shape, device, seed=seed, weight=weight, state=state,
                                  baseline_rel_l2=base_rel, keep_graph=True)
        except Exception as exc:  # a harness-level failure (the contract reports candidate bugs as reasons)
            status(event="check", job=job, ok=False, error={"reasons": [f"check raised {_err(exc)}"]}, method=None)
            if not _cuda_ok(torch, device):
                sys.exit(EXIT_CUDA_BROKEN)
            continue
        if j == 0:
            base_rel = chk.rel_l2
            chk.vs_baseline = error_vs_baseline(chk.rel_l2, base_rel)
        method = str(cand.describe(shape["family"], int(shape["M"]), int(shape["N"])))
        status(event="check", job=job, ok=bool(chk.ok), error=_jsonable(chk.to_dict()), method=method)
        if not _cuda_ok(torch, device):
            sys.exit(EXIT_CUDA_BROKEN)
        if chk.ok and chk.graph is not None:  # a graph exists on CUDA only
            passed.append((job, chk.graph))
    return passed


def _jsonable(d: dict) -> dict:
    import math

    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _kineto_shape(i, entry, passed, status, torch, flush_buf) -> None:
    """Replay each passing graph once under torch.profiler, behind an L2 flush; record each replay's kernels."""
    from torch.profiler import ProfilerActivity, profile

    from profiler import kineto

    if not passed:
        return
    status(event="start", stage="kineto", shape=i)
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _, handle in passed:
                flush_buf.sum()
                torch.cuda.synchronize()
                handle.replay()
                torch.cuda.synchronize()
        keep = entry.get("trace")
        path = Path(keep) if keep else Path(tempfile.mkstemp(suffix=".json")[1])
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        if not keep:
            path.unlink()
        seqs = kineto.replay_sequences(trace)
        if len(seqs) != len(passed):
            raise kineto.TraceError(f"{len(seqs)} graph launches in the trace, {len(passed)} replayed")
        for (job, _), seq in zip(passed, seqs):
            status(event="kineto", job=job, sequence=seq)
    except Exception as exc:
        for job, _ in passed:
            status(event="error", stage="kineto", job=job, reason=f"kineto: {_err(exc)}")
    status(event="done", stage="kineto", shape=i)


def run_check(spec, cands, names, status, torch, device) -> None:
    """On CUDA: check + Kineto per shape. On CPU (tests of the crash handling): checks only, eager, no graphs."""
    on_cuda = device.type == "cuda"
    if on_cuda:
        l2 = int(torch.cuda.get_device_properties(device).L2_cache_size)
        flush_buf = torch.rand(FLUSH_L2_MULTIPLE * l2 // 4, device=device, dtype=torch.float32)
    for i, entry in enumerate(spec["shapes"]):
        passed = _check_shape(entry, cands, names, spec, status, torch, device)
        if on_cuda:
            _kineto_shape(i, entry, passed, status, torch, flush_buf)
            del passed
            torch.cuda.empty_cache()


def run_ncu(spec, cands, names, status, torch, device) -> None:
    from profiler.contract import make_input
    from profiler.ncu import RANGE_PREFIX

    for entry in spec["shapes"]:
        shape, seed = entry["shape"], spec["seed"]
        weight = None
        for job, j in entry["jobs"]:
            if job in spec["skip"]:
                continue
            status(event="start", stage="ncu", job=job)
            try:
                weight = weight if weight is not None else _weight(shape, seed, device)
                cand, fam = cands[j], shape["family"]
                state = cand.prepare(fam, weight)
                x, _ = make_input(int(shape["M"]), int(shape["K"]), seed + 300, device, dtype=shape["x_dtype"])
                for _ in range(WARMUP_CALLS):
                    cand.run(state, fam, x)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_push(f"{RANGE_PREFIX} {job} {fam} M{int(shape['M'])} {names[j]}")
                try:
                    cand.run(state, fam, x)
                    torch.cuda.synchronize()
                finally:  # a range left open would hold every later call inside it
                    torch.cuda.nvtx.range_pop()
                status(event="done", stage="ncu", job=job)
            except Exception as exc:
                status(event="error", stage="ncu", job=job, reason=f"profiled call raised {_err(exc)}")
                if not _cuda_ok(torch, device):
                    sys.exit(EXIT_CUDA_BROKEN)


def main(argv: list[str]) -> int:
    import torch

    from kernels.candidate import load_candidate

    spec = json.loads(Path(argv[0]).read_text())
    status = _Status(argv[1])
    # The FP32 router baseline runs true FP32, as in every timed sweep (profiler.sweep pins the same).
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(spec.get("device", "cuda"))
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    cands = [load_candidate(s) for s in spec["candidates"]]
    runner = {"check": run_check, "ncu": run_ncu}[spec["mode"]]
    runner(spec, cands, spec["names"], status, torch, device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
