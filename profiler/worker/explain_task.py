"""Explain's per-shape work, run in the worker process (profiler.worker.process task kinds "explain_check", "explain_ncu").

    {"kind": "explain_check", "shape": {...}, "candidates": [{"spec", "name", "job"}, ...], "seed": 0,
     "trace": path | None, "kineto": true}
        -> {"kind": "explain_check", "calls": [{"job", "ok", "error", "method"}, ...],
            "kineto": {job: sequence}, "kineto_errors": {job: reason}}
        Every candidate is checked with the full correctness contract (profiler.check.contract.check_candidate, guarded
        like a sweep's check, which also captures its CUDA graph); then each passing graph is replayed once behind
        an L2 flush under torch.profiler and its kernel sequence recorded (profiler.measure.kineto). On CPU (tests): checks
        only, eager, no graphs. The Chrome trace is kept at "trace" when given.
    {"kind": "explain_ncu", "shape": {...}, "candidates": [{"spec", "name", "job"}, ...], "seed": 0}
        -> {"kind": "explain_ncu", "done": [job, ...], "errors": {job: reason}}
        Per candidate, in order: WARMUP_CALLS calls, then one inside the NVTX range "projlab <job> <family> M<M>
        <name>" -- the only kernels ncu profiles (profiler.measure.ncu.NVTX_INCLUDE); the worker runs under ncu
        (profiler.worker.process.Worker's `prefix`).

Each candidate step is announced to the parent (profiler.worker.steps.step: "check", "kineto", "ncu"), so a worker that
dies or hangs is blamed on the candidate and phase it was in; the parent (profiler.commands.explain) then records that job's
failure and carries on in a fresh worker. Job numbers are the parent's: they tie an ncu kernel to its call.
"""
from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from profiler.check.contract import CudaFault, check_candidate
from profiler.check.guards import TaintedProcess
from profiler.check.inputs import fresh_salt, make_input
from profiler.check.rules import error_vs_baseline
from profiler.measure import kineto
from profiler.measure.ncu import RANGE_PREFIX
from profiler.measure.policy import SWEEP
from profiler.worker.shape_task import assert_healthy, setup_record
from profiler.worker.steps import Fatal, step

WARMUP_CALLS = 3
FLUSH_L2_MULTIPLE = 4  # read 4 x L2 before each profiled replay, as the cold timer does (profiler/measure/timing.py)


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _jsonable(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _prepared(sess, c: dict, shape: dict, seed: int):
    """(candidate, state, None) or (None, None, reasons): loaded and prepared as in a sweep (guarded, cached)."""

    cand = sess.load(c["spec"], c["name"])
    if cand is None:
        return None, None, [f"load: {sess.load_errors[c['spec']]['error']}"]
    state, reasons = sess.state(c["spec"], c["name"], cand, shape, sess.weight(shape, seed), seed)
    if reasons:
        assert_healthy(sess, c["name"], "prepare", reasons)
        return None, None, reasons
    return cand, state, None


def explain_check(sess, task: dict) -> dict:
    """The "explain_check" task (module docstring)."""

    shape, seed = task["shape"], int(task.get("seed", 0))
    # One salt for every candidate of the shape (inputs.make_input): none can know the inputs ahead.
    salt = task["input_salt"] if task.get("input_salt") is not None else fresh_salt()
    calls, passed, base_rel = [], [], None
    for j, c in enumerate(task["candidates"]):
        cand, state, reasons = _prepared(sess, c, shape, seed)
        if reasons:
            calls.append({"job": c["job"], "ok": False, "error": {"reasons": reasons}, "method": None})
            continue
        step(c["name"], "check")
        try:
            chk = check_candidate(cand, shape, sess.device, seed=seed, weight=sess.own_weight(c["spec"], shape, seed),
                                  pristine=sess.weight(shape, seed), state=state,
                                  baseline_rel_l2=base_rel, keep_graph=sess.cuda, guard=sess.guard,
                                  contract=sess.workload.contract if sess.workload is not None else None,
                                  salt=salt)
        except CudaFault as exc:
            raise Fatal("cuda_fault", str(exc), c["name"], "check") from None
        except TaintedProcess as exc:
            raise Fatal("tainted", str(exc), c["name"], "check") from None
        if j == 0:
            base_rel = chk.rel_l2
            chk.vs_baseline = error_vs_baseline(chk.rel_l2, base_rel)
        method = str(cand.describe(shape["family"], int(shape["M"]), int(shape["N"])))
        calls.append({"job": c["job"], "ok": bool(chk.ok), "error": _jsonable(chk.to_dict()), "method": method}
                     | setup_record(cand, state, shape))
        if not chk.ok:
            assert_healthy(sess, c["name"], "check", chk.reasons)
        elif chk.graph is not None:  # a graph exists on CUDA only
            passed.append((c["job"], chk.graph))
    sequences, errors = {}, {}
    if passed and task.get("kineto", True):
        step(None, "kineto")
        sequences, errors = _kineto(sess, passed, task.get("trace"))
    return {"kind": "explain_check", "calls": calls, "kineto": sequences, "kineto_errors": errors}


def _kineto(sess, passed: list, keep: str | None) -> tuple[dict, dict]:
    """Replay each passing graph once under torch.profiler, behind an L2 flush -> ({job: sequence}, {job: error})."""
    import torch
    from torch.profiler import ProfilerActivity, profile


    flush = getattr(sess, "explain_flush", None)
    if flush is None:
        l2 = int(torch.cuda.get_device_properties(sess.device).L2_cache_size)
        flush = sess.explain_flush = torch.rand(FLUSH_L2_MULTIPLE * l2 // 4, device=sess.device, dtype=torch.float32)
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _, handle in passed:
                flush.sum()
                torch.cuda.synchronize(sess.device)
                handle.replay()
                torch.cuda.synchronize(sess.device)
        path = Path(keep) if keep else Path(tempfile.mkstemp(suffix=".json")[1])
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        if not keep:
            path.unlink()
        seqs = kineto.replay_sequences(trace)
        if len(seqs) != len(passed):
            raise kineto.TraceError(f"{len(seqs)} graph launches in the trace, {len(passed)} replayed")
        return {job: seq for (job, _), seq in zip(passed, seqs)}, {}
    except Exception as exc:
        return {}, {job: f"kineto: {_err(exc)}" for job, _ in passed}
    finally:
        torch.cuda.empty_cache()


def explain_ncu(sess, task: dict) -> dict:
    """The "explain_ncu" task (module docstring)."""

    shape, seed = task["shape"], int(task.get("seed", 0))
    fam, M = shape["family"], int(shape["M"])
    done, errors = [], {}
    for c in task["candidates"]:
        cand, state, reasons = _prepared(sess, c, shape, seed)
        if reasons:
            errors[c["job"]] = "; ".join(reasons)[:400]
            continue
        step(c["name"], "ncu")
        try:
            # the sweep's first timing input (never one of the check's inputs)
            x, _ = make_input(M, int(shape["K"]), seed + SWEEP.timing_seed_offset, sess.device,
                              dtype=shape["x_dtype"], salt=fresh_salt())
            for _ in range(WARMUP_CALLS):
                cand.run(state, fam, x)
            _sync(sess)
            _nvtx(sess, "push", f"{RANGE_PREFIX} {c['job']} {fam} M{M} {c['name']}")
            try:
                cand.run(state, fam, x)
                _sync(sess)
            finally:  # a range left open would hold every later call inside it
                _nvtx(sess, "pop")
            done.append(c["job"])
        except Exception as exc:
            errors[c["job"]] = f"profiled call raised {_err(exc)}"
            lost = sess.healthy()
            if lost is not None:
                raise Fatal("cuda_fault", f"{errors[c['job']]} (the CUDA context is unusable afterwards: {lost})",
                            c["name"], "ncu") from None
    return {"kind": "explain_ncu", "done": done, "errors": errors}


def _sync(sess) -> None:
    if sess.cuda:
        import torch

        torch.cuda.synchronize(sess.device)


def _nvtx(sess, op: str, text: str = "") -> None:
    if sess.cuda:  # NVTX ranges are what ncu filters on; on CPU (tests) there is nothing to mark
        import torch

        torch.cuda.nvtx.range_push(text) if op == "push" else torch.cuda.nvtx.range_pop()
