"""Schema of an explain run's additions (profiler/README.md, 'Explain run'): `kernels`, `calls`, `failures`.

Kept apart from runfile.py, which calls validate_explain() for every run: a run without these keys is unaffected.
Errors name the JSON path, e.g. `..._explain-baseline-best.json: kernels[4].duration_us: expected number, got 'x'`.
"""
from __future__ import annotations

SHAPE = [("load", "non-empty string", True), ("family", "non-empty string", True), ("M", "positive integer", True),
         ("N", "positive integer", True), ("K", "positive integer", True),
         ("candidate", "non-empty string", True)]
# One record per (shape, candidate, kernel), measured by Nsight Compute on one cold call.
KERNEL = SHAPE + [("kernel", "non-empty string", True), ("kernel_full", "non-empty string", True),
                  ("index", "integer", True), ("launches", "positive integer", True),
                  ("duration_us", "positive number", True), ("dram_read_bytes", "integer", True),
                  ("dram_write_bytes", "integer", True), ("l2_bytes", "integer", True),
                  ("sm_throughput_pct", "number", True), ("grid", "positive integer", True),
                  ("block", "positive integer", True), ("registers", "integer", True),
                  ("shared_bytes", "integer", True), ("dram_throughput_pct", "number", False),
                  ("waves", "number", False), ("warps_active_pct", "number", False),
                  ("method", "string", False)]
# One record per (shape, candidate) that got a correctness verdict.
CALL = SHAPE + [("correct", "boolean", True), ("method", "string", False), ("error", "object", False),
                ("kineto", "object", False), ("launches", "positive integer", False),
                ("ncu_us", "positive number", False)]
KINETO = [("launches", "positive integer", True), ("span_us", "number", True), ("busy_us", "number", True),
          ("gaps_us", "number", True), ("kernels", "list", True)]
KINETO_KERNEL = [("kernel", "non-empty string", True), ("kernel_full", "string", True), ("kind", "string", True),
                 ("start_us", "number", True), ("duration_us", "number", True)]
FAILURE = SHAPE + [("stage", "non-empty string", True), ("reasons", "list of strings", True)]
NON_NEGATIVE = ("index", "dram_read_bytes", "dram_write_bytes", "l2_bytes", "registers", "shared_bytes")


def validate_explain(run: dict, fail, check_record) -> None:
    """Check `kernels`, `calls` and `failures` where present; `fail(path, problem)` raises."""
    for name in ("kernels", "calls", "failures"):
        if name in run and not isinstance(run[name], list):
            fail(name, f"expected list, got {type(run[name]).__name__}")
    seen: dict[tuple, int] = {}
    for i, k in enumerate(run.get("kernels", [])):
        where = f"kernels[{i}]"
        check_record(k, KERNEL, where, fail, null_ok=True)
        for key in NON_NEGATIVE:
            if k[key] < 0:
                fail(f"{where}.{key}", f"expected a count >= 0, got {k[key]!r}")
        if k["index"] >= k["launches"]:
            fail(f"{where}.index", f"index {k['index']} is not below the call's launches ({k['launches']})")
        key = tuple(k[f] for f, _, _ in SHAPE) + (k["index"],)
        if key in seen:
            fail(where, f"duplicate kernel index {k['index']} of {k['candidate']!r} at {k['load']}/{k['family']} "
                 f"M={k['M']} (first at kernels[{seen[key]}])")
        seen[key] = i
    for i, c in enumerate(run.get("calls", [])):
        check_record(c, CALL, f"calls[{i}]", fail, null_ok=True)
        if c.get("kineto") is not None:
            check_record(c["kineto"], KINETO, f"calls[{i}].kineto", fail)
            for j, k in enumerate(c["kineto"]["kernels"]):
                check_record(k, KINETO_KERNEL, f"calls[{i}].kineto.kernels[{j}]", fail)
    for i, f in enumerate(run.get("failures", [])):
        if isinstance(f, dict) and "stage" in f:  # sweep failures carry no stage; only explain's are checked
            check_record(f, FAILURE, f"failures[{i}]", fail)
