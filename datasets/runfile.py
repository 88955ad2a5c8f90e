"""The run-file schema (profiler/README.md, "Run file", schema_version 1): validate, load, and write atomically.

Torch-free on purpose: the dashboard and the app read run files on machines without CUDA.
Errors name the file and the JSON path of the bad field, e.g.
    2026-11-30_nvidia-h200_a.json: results[3].median_us: expected number, got 'abc'
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import tempfile
from pathlib import Path

# A shape's sizes have the workload file's sanity limits: an M, N or K beyond them is no workload's projection.
from datasets.workload_spec import MAX_DIM, MAX_M

SCHEMA_VERSION = 1
STATUSES = ("complete", "partial")
# The canary (profiler.commands.canary) put this on the paired baseline's result where it ran at another speed than
# in a worker that never loaded a candidate; the score gate refuses such a shape (dashboard.model.scoring).
DISTURBED_FLAG = "baseline_disturbed"
MAX_US_PER_CALL = 1e6  # one projection call taking more than 1 s is not a measurement of it: rejected
# A time under 10 ns is no measurement either: CUDA event timing resolves about 0.5 us, and the smallest time in the
# committed runs is 0.16 us (a gap between two kernels). 5e-324 (a denormal) passed "> 0" and then overflowed ratios.
MIN_US_PER_CALL = 0.01
# 45x the results of the largest committed run (a tune log, 2,221): validation and every reader stay linear and quick.
MAX_RESULTS = 100_000
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # the label becomes part of the file name
SHAPE_FIELDS = ("load", "family", "M", "N", "K")


class RunFileError(ValueError):
    """A run file (or run dict) breaks the schema; the message names the file and the field's JSON path."""


class WriteError(RunFileError):
    """A file could not be written (a full disk, a read-only or missing folder); one line naming the path and the
    system's reason, and, for a run in progress, where what was measured went instead."""


def _write_problem(path: Path, exc: OSError) -> str:
    return f"cannot write {path}: {exc.strerror or exc}"


def check_writable(path) -> None:
    """WriteError unless a new file can be created in `path`'s folder (or, where it does not exist yet, in its
    nearest existing parent): checked by creating and removing a temp file, since permission bits say nothing on
    a read-only mount and nothing at all to root."""
    path = Path(path)
    folder = next((p for p in path.parents if p.exists()), Path("."))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".projlab-write-check.", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise WriteError(_write_problem(path, exc)) from None


# --- type checks: each returns a problem string or None ------------------------------------------------------
def _is_number(v) -> bool:
    """A finite int or float (not a bool); an int too large for a float (10**400) is not a usable number."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_time(v) -> bool:
    return _is_number(v) and MIN_US_PER_CALL <= v <= MAX_US_PER_CALL


def _all_in(values, lo: float, hi: float, lo_open: bool = False) -> bool:
    """Every value a finite number (_is_number) in [lo, hi] ((lo, hi] with lo_open). A run file holds millions of
    samples: where all of them are floats (what JSON numbers written from floats read back as) one pass sums them --
    a finite sum means no NaN or infinity among them -- and min/max check the range; anything else (an int, a bool,
    a string, an overflow) takes the value-by-value path, which decides the same."""
    if values and set(map(type, values)) == {float}:
        if math.isfinite(sum(values)):   # a NaN or an infinity makes the sum one; so may an overflow (then: below)
            low = min(values)
            return (low > lo if lo_open else low >= lo) and max(values) <= hi
    return all(_is_number(x) and (x > lo if lo_open else x >= lo) and x <= hi for x in values)


def _all_times(values) -> bool:
    return _all_in(values, MIN_US_PER_CALL, MAX_US_PER_CALL)


_KINDS = {
    "number": _is_number,
    "time": _is_time,
    "time or null": lambda v: v is None or _is_time(v),
    "list of times": lambda v: isinstance(v, list) and _all_times(v),
    "non-empty list of times": lambda v: isinstance(v, list) and len(v) > 0 and _all_times(v),
    "positive number or null": lambda v: v is None or (_is_number(v) and v > 0),
    "positive number": lambda v: _is_number(v) and v > 0,
    "integer": _is_int,
    "non-negative integer": lambda v: _is_int(v) and v >= 0,
    "non-negative number or null": lambda v: v is None or (_is_number(v) and v >= 0),
    "positive integer": lambda v: _is_int(v) and v > 0,
    "M": lambda v: _is_int(v) and 0 < v <= MAX_M,
    "N or K": lambda v: _is_int(v) and 0 < v <= MAX_DIM,
    "list of positive numbers": lambda v: isinstance(v, list) and _all_in(v, 0.0, math.inf, lo_open=True),
    "list of strings or null": lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "object of times": lambda v: isinstance(v, dict) and _all_times(list(v.values())),
    "string": lambda v: isinstance(v, str),
    "non-empty string": lambda v: isinstance(v, str) and v != "",
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "number or null": lambda v: v is None or _is_number(v),
    "object or null": lambda v: v is None or isinstance(v, dict),
    "list of numbers": lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    "list of strings": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "pair of numbers": lambda v: isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v),
}

# (key, kind, required) per record type. Extra keys are allowed so the profiler can add detail.
TOP = [("schema_version", "integer", True), ("status", "string", True), ("label", "non-empty string", True),
       ("created_utc", "non-empty string", True), ("environment", "object", True), ("results", "list", True),
       ("pairs", "list", True), ("telemetry", "list", False), ("probes", "list", False),
       ("compute_peak_tflops", "positive number or null", False), ("compute_probe", "object or null", False),
       ("failures", "list", False), ("canary", "object", False)]
ENVIRONMENT = [("gpu", "string", False), ("sm_count", "positive integer", False), ("l2_bytes", "positive integer", False),
               ("clocks", "object", False), ("throttle_reasons", "list of strings", False),
               ("replay_overhead_us", "number", False), ("replay_overhead_ci_us", "pair of numbers", False),
               ("settings", "object", False), ("git_dirty", "boolean", False), ("workers", "list", False)]
SHAPE = [("load", "non-empty string", True), ("family", "non-empty string", True), ("M", "M", True),
         ("N", "N or K", True), ("K", "N or K", True)]
# The contract's verdict numbers (profiler.check.rules.Check.to_dict): errors and ratios are >= 0; a NaN or an
# infinite one is written as null.
ERROR = [("rel_l2", "non-negative number or null", False), ("max_row_rel", "non-negative number or null", False),
         ("sparse_rel", "non-negative number or null", False), ("vs_baseline", "non-negative number or null", False),
         ("pair_ratio", "non-negative number or null", False), ("element_ratio", "non-negative number or null", False),
         ("reasons", "list of strings", False)]
RESULT = SHAPE + [("candidate", "non-empty string", True), ("median_us", "time", True),
                  ("correct", "boolean", True), ("method", "string", False), ("ci_low_us", "time or null", False),
                  ("ci_high_us", "time or null", False), ("samples_us", "non-empty list of times", False),
                  ("n_samples", "non-negative integer", False), ("error", "object or null", False),
                  ("flags", "list of strings", False), ("throttled_samples", "non-negative integer", False),
                  ("eager_us", "time or null", False), ("floor_us", "time or null", False),
                  ("bytes", "positive integer", False)]
PAIR = SHAPE + [("baseline", "non-empty string", True), ("candidate", "non-empty string", True),
                ("ratio_median", "positive number", True), ("ratio_ci_low", "positive number or null", False),
                ("ratio_ci_high", "positive number or null", False), ("rse", "non-negative number or null", False),
                ("n_pairs", "non-negative integer", False), ("ratios", "list of positive numbers", False)]
PROBE = [("bytes", "positive integer", True), ("us", "time", True), ("tbps", "number or null", False),
         ("ci_low_us", "time or null", False), ("ci_high_us", "time or null", False),
         ("design", "string", False), ("kind", "string", False), ("for_shape", "string", False),
         ("designs_us", "object of times", False)]
# NVML readings (profiler.measure.telemetry): null where NVML could not read one.
TELEMETRY = [("t_s", "number", True), ("sm_mhz", "number or null", False), ("mem_mhz", "number or null", False),
             ("power_w", "number or null", False), ("temp_c", "number or null", False),
             ("throttle", "list of strings or null", False)]
CLOCKS = [(key, "number or null", False) for key in ("sm_max_mhz", "mem_max_mhz", "sm_mhz_start", "sm_mhz_end",
                                                      "mem_mhz_start", "mem_mhz_end")]
SETTINGS = [("candidates", "list of strings or null", False)]
# A (low, value, high) triple of one record that must be in order where all are given: a confidence interval and
# the estimate it is an interval of is not checked (a bootstrap interval need not hold its point estimate).
CI_FIELDS = {"results": ("ci_low_us", "ci_high_us"), "pairs": ("ratio_ci_low", "ratio_ci_high"),
             "probes": ("ci_low_us", "ci_high_us")}
COMPUTE_PROBE = [("M", "positive integer", True), ("N", "positive integer", True), ("K", "positive integer", True),
                 ("us", "time", True)]
FAILURE = SHAPE + [("candidate", "non-empty string", True), ("reasons", "list of strings", True),
                   ("kind", "string", False), ("phase", "string", False), ("error", "object or null", False)]
WORKER = [("index", "integer", True), ("ended", "string", False)]


def _check_record(record, fields, where: str, fail, null_ok: bool = False) -> None:
    """Check required keys and types; with null_ok an optional key may also be null (value unknown)."""
    if not isinstance(record, dict):
        fail(where, f"expected object, got {type(record).__name__}")
    for key, kind, required in fields:
        path = f"{where}.{key}" if where else key
        if key not in record:
            if required:
                fail(path, "missing")
            continue
        if null_ok and not required and record[key] is None:
            continue
        if not _KINDS[kind](record[key]):
            fail(path, f"expected {_expected(kind, record[key])}, got {_excerpt(record[key])}")


def _excerpt(value, limit: int = 80) -> str:
    """A wrong value as an error shows it: its repr, cut at `limit` characters with its type and size (a whole
    misplaced results list would otherwise be a message of 100,000 characters)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = (f", {len(value):,} item{'s' if len(value) != 1 else ''}" if isinstance(value, (list, dict)) else
            f", {len(text):,} characters")
    return f"{text[:limit]}… ({type(value).__name__}{size})"


def _expected(kind: str, value) -> str:
    """What the field must be, naming the basic type first ("expected number, got 'abc'"), the range second."""
    if kind.startswith("time") or kind.endswith("list of times"):
        many = kind.endswith("list of times")
        if many and isinstance(value, list) and not value:
            return "a non-empty list of times (a timed result has samples)"
        if many and not (isinstance(value, list) and all(_is_number(x) for x in value)):
            return "list of numbers"
        if not many and not _is_number(value):
            return "number" + (" or null" if kind.endswith("null") else "")
        what = "times" if many else "a time"
        return (f"{what} in us with {MIN_US_PER_CALL:g} <= t <= {MAX_US_PER_CALL:.0e} (at least 10 ns, at most 1 s "
                f"per call)")
    if kind in ("M", "N or K"):
        limit = MAX_M if kind == "M" else MAX_DIM
        return "integer" if not _is_int(value) else "positive integer" if value <= 0 else \
            f"an integer at most {limit:,} (the workload files' limit)"
    if kind == "object of times":
        return f"object of times in us with {MIN_US_PER_CALL:g} <= t <= {MAX_US_PER_CALL:.0e}"
    base = kind.removeprefix("positive ").removeprefix("non-negative ")
    return base if base in _KINDS and not _KINDS[base](value) else kind


def validate_run(run, source: str = "<run>") -> None:
    """Raise RunFileError naming `source` and the JSON path of the first field that breaks the schema."""
    def fail(path: str, problem: str):
        raise RunFileError(f"{source}: {path}: {problem}")

    _check_record(run, TOP, "", fail)
    if run["schema_version"] != SCHEMA_VERSION:
        fail("schema_version", f"expected {SCHEMA_VERSION}, got {_excerpt(run['schema_version'])} (this projlab "
                               f"reads run files of schema_version {SCHEMA_VERSION} only)")
    if run["status"] not in STATUSES:
        fail("status", f"expected one of {STATUSES}, got {_excerpt(run['status'])}")
    if not LABEL_RE.match(run["label"]):
        fail("label", f"expected letters, digits, '.', '_' or '-', got {_excerpt(run['label'])}")
    # Environment facts can be unknown on a given machine (no NVML, no git): null is allowed there.
    _check_record(run["environment"], ENVIRONMENT, "environment", fail, null_ok=True)
    for key, fields in (("clocks", CLOCKS), ("settings", SETTINGS)):
        if isinstance(run["environment"].get(key), dict):
            _check_record(run["environment"][key], fields, f"environment.{key}", fail, null_ok=True)
    if run.get("compute_probe") is not None:
        _check_record(run["compute_probe"], COMPUTE_PROBE, "compute_probe", fail)
    for name, fields in (("probes", PROBE), ("telemetry", TELEMETRY)):
        for i, record in enumerate(run.get(name, [])):
            _check_record(record, fields, f"{name}[{i}]", fail)
    for name in ("results", "pairs", "failures"):
        if isinstance(run.get(name), list) and len(run[name]) > MAX_RESULTS:
            fail(name, f"{len(run[name]):,} records is over the limit {MAX_RESULTS:,}")
    _check_results(run["results"], fail)
    _check_pairs(run["pairs"], run["results"], fail)
    for i, record in enumerate(run.get("failures", [])):
        _check_record(record, FAILURE, f"failures[{i}]", fail)
        if record.get("error") is not None:
            _check_record(record["error"], ERROR, f"failures[{i}].error", fail, null_ok=True)
    for name, (low, high) in CI_FIELDS.items():
        for i, record in enumerate(run.get(name, [])):
            if record.get(low) is not None and record.get(high) is not None and record[low] > record[high]:
                fail(f"{name}[{i}].{low}", f"the interval's low end {record[low]!r} is above its high end "
                                           f"{high} {record[high]!r}")
    for i, record in enumerate(run["environment"].get("workers") or []):
        _check_record(record, WORKER, f"environment.workers[{i}]", fail)
    from datasets.runfile_explain import validate_explain  # explain runs: kernels, calls, failures

    validate_explain(run, fail, _check_record)
    from datasets.runfile_step import validate_step  # step runs: the decode step's points

    validate_step(run, fail, _check_record)
    _check_workload(run, source, fail)


def _check_workload(run: dict, source: str, fail) -> None:
    """The embedded workload (top-level "workload", datasets.workload.RUN_KEY) is a valid workload and holds every
    family the run's results, pairs and failures name. A run written before runs embedded one has none: readers
    take the default workload (datasets.workload.workload_of_run)."""
    from datasets.errors import DatasetError
    from datasets.workload import RUN_KEY, workload_from_dict

    if RUN_KEY not in run:
        return
    try:
        workload = workload_from_dict(run[RUN_KEY], Path(source).name, RUN_KEY)
    except DatasetError as exc:
        raise RunFileError(str(exc)) from None
    for name in ("results", "pairs", "failures"):
        for i, record in enumerate(run.get(name) or []):
            if record["family"] not in workload.families:
                fail(f"{name}[{i}].family", f"{record['family']!r} is not a family of the run's workload "
                                            f"{workload.name} ({', '.join(workload.family_order)})")


def _check_results(results: list, fail) -> None:
    """Each result well-formed; no candidate twice at a shape; no (load, family, M, candidate) at two N (one
    shape has one N: a second N means two different shapes under one name, which a score would mix up)."""
    seen: dict[tuple, int] = {}
    at_n: dict[tuple, tuple[int, int]] = {}
    for i, record in enumerate(results):
        _check_record(record, RESULT, f"results[{i}]", fail)
        _check_verdict(record, f"results[{i}]", fail)
        key = tuple(record[f] for f in SHAPE_FIELDS) + (record["candidate"],)
        where = f"{record['load']}/{record['family']} M={record['M']}"
        if key in seen:
            fail(f"results[{i}]", f"duplicate result for candidate {record['candidate']!r} at {where} "
                 f"(first at results[{seen[key]}])")
        seen[key] = i
        lfm = (record["load"], record["family"], record["M"], record["candidate"])
        if lfm in at_n and at_n[lfm][0] != record["N"]:
            fail(f"results[{i}].N", f"candidate {record['candidate']!r} at {where} has N={record['N']} here and "
                 f"N={at_n[lfm][0]} at results[{at_n[lfm][1]}]")
        at_n.setdefault(lfm, (record["N"], i))


def _check_verdict(record: dict, where: str, fail) -> None:
    """The result's `error` record is well-formed and agrees with `correct`: the contract passes a call only when it
    found no reason against it and its pair ratio is within 1 (profiler.check.rules), so a result marked correct
    that carries reasons or a pair ratio over 1 contradicts itself."""
    error = record.get("error")
    if error is None:
        return
    _check_record(error, ERROR, f"{where}.error", fail, null_ok=True)
    if record["correct"] and error.get("reasons"):
        fail(f"{where}.correct", f"true, but error.reasons holds {len(error['reasons'])} reason(s) against it: "
                                 f"{_excerpt(error['reasons'][0])}")
    if record["correct"] and error.get("pair_ratio") is not None and error["pair_ratio"] > 1:
        fail(f"{where}.correct", f"true, but error.pair_ratio is {error['pair_ratio']!r} (over 1 fails the pair rule)")


def _check_pairs(pairs: list, results: list, fail) -> None:
    have = {tuple(r[f] for f in SHAPE_FIELDS) + (r["candidate"],) for r in results}
    seen: dict[tuple, int] = {}
    for i, record in enumerate(pairs):
        _check_record(record, PAIR, f"pairs[{i}]", fail)
        shape = tuple(record[f] for f in SHAPE_FIELDS)
        for role in ("baseline", "candidate"):
            if shape + (record[role],) not in have:
                fail(f"pairs[{i}].{role}", f"no result for {record[role]!r} at {record['load']}/{record['family']} "
                     f"M={record['M']} N={record['N']} K={record['K']}{_nearest(results, record, record[role])}")
        key = shape + (record["baseline"], record["candidate"])
        if key in seen:
            fail(f"pairs[{i}]", f"duplicate pair {record['baseline']!r} vs {record['candidate']!r} at "
                 f"{record['load']}/{record['family']} M={record['M']} (first at pairs[{seen[key]}])")
        seen[key] = i


def _nearest(results: list, pair: dict, name: str) -> str:
    """'; results[3] has it at M=1 N=999 K=128': the result of `name` at the pair's load and family whose sizes
    differ (what to fix), or ''."""
    for i, r in enumerate(results):
        if (r["load"], r["family"], r["candidate"]) == (pair["load"], pair["family"], name):
            return f"; results[{i}] has it at M={r['M']} N={r['N']} K={r['K']}"
    return ""


def load_run(path) -> dict:
    """Read and validate one run file; any problem is a RunFileError naming the file and the field."""
    from datasets.jsonfile import JsonInputError, read_json

    path = Path(path)
    try:
        run = read_json(path)
    except JsonInputError as exc:
        raise RunFileError(str(exc)) from None
    validate_run(run, source=path.name)
    return run


def _dumps(run: dict, source: str) -> str:
    try:
        return json.dumps(run, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise RunFileError(f"{source}: cannot serialize: {exc}") from None


def write_run_atomic(run: dict, path, overwrite: bool = False) -> Path:
    """Validate `run` and write it to `path` so a reader only ever sees a whole file.

    The JSON goes to a temp file in the same directory (same filesystem), then: with overwrite, os.replace;
    without, os.link, which fails if `path` exists — so two writers can never clobber a run (runs are never
    overwritten). Where hard links are unsupported it falls back to an existence check and os.replace.
    """
    path = Path(path)
    validate_run(run, source=path.name)
    text = _dumps(run, path.name)
    if not overwrite and path.exists():
        raise RunFileError(f"{path.name}: refusing to overwrite an existing run file (runs are never overwritten; "
                           f"pick a new label)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(_write_problem(path, exc)) from None
    return write_text_atomic(path, text, overwrite=overwrite)


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc/self/status): os.umask can only
    be read by setting it, which would race with a server's other threads."""
    try:
        found = re.search(r"^Umask:\s*([0-7]+)", Path("/proc/self/status").read_text(), re.MULTILINE)
    except OSError:
        found = None
    if found:
        return int(found.group(1), 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str, overwrite: bool = True) -> Path:
    """Write `text` to a temp file next to `path`, fsync, then move it into place: a reader (or a crash
    mid-write) only ever sees the old file or the whole new one; the temp file is removed if anything fails.
    The file gets the mode any new file gets (0o666 less the umask), not the owner-only mode of the temp file:
    run files and reports are for sharing. overwrite=False links instead of renaming, so an existing `path` is
    never replaced (RunFileError)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_no_clobber(tmp, path)
    except OSError as exc:   # a full disk, a read-only folder: one line (WriteError), never a traceback
        raise WriteError(_write_problem(path, exc)) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _link_no_clobber(tmp: str, path: Path) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise RunFileError(f"{path.name}: refusing to overwrite an existing run file") from None
    except OSError:  # filesystem without hard links
        if path.exists():
            raise RunFileError(f"{path.name}: refusing to overwrite an existing run file") from None
        os.replace(tmp, path)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run(label: str, environment: dict, created_utc: str | None = None, workload=None) -> dict:
    """An empty, valid run (status 'partial' until finished) for the profiler to fill. `workload` (a
    datasets.workload.Workload): embedded under "workload" (datasets.workload.RUN_KEY), as every run the profiler
    writes does."""
    run = {"schema_version": SCHEMA_VERSION, "status": "partial", "label": label,
           "created_utc": created_utc or utc_now(), "environment": dict(environment), "telemetry": [],
           "probes": [], "compute_peak_tflops": None, "compute_probe": None, "results": [], "pairs": []}
    if workload is not None:
        from datasets.workload import RUN_KEY

        run[RUN_KEY] = workload.to_dict()
    validate_run(run, source=f"new run {label!r}")
    return run


def safe_label(text: str, default: str = "run") -> str:
    """A label from any text (a file name, a user's --label): runs of other characters -> '-', no '..', no leading
    or trailing '.', '_' or '-', at most 80 characters ("my kernels" -> "my-kernels", "../../x" -> "x")."""
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", str(text))
    label = re.sub(r"\.{2,}", ".", label).strip("-._")[:80].strip("-._")
    return label if LABEL_RE.match(label) else default


def slug(text: str) -> str:
    """Lower-case, runs of other characters → '-' ("NVIDIA H200" → "nvidia-h200")."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def run_filename(date, gpu: str, label: str) -> str:
    """'<YYYY-MM-DD>_<gpu-slug>_<label>.json'; `date` is a date/datetime or an ISO 'YYYY-MM-DD...' string."""
    if isinstance(date, (dt.date, dt.datetime)):
        day = date.strftime("%Y-%m-%d")
    else:
        day = str(date)[:10]
        try:
            dt.date.fromisoformat(day)
        except ValueError:
            raise RunFileError(f"run_filename: expected a YYYY-MM-DD date, got {date!r}") from None
    if not LABEL_RE.match(label):
        raise RunFileError(f"run_filename: label {label!r} must use letters, digits, '.', '_' or '-'")
    return f"{day}_{slug(gpu)}_{label}.json"


class RunWriter:
    """Incremental writer for one in-progress run: flush after each shape, finalize at the end.

    The first flush creates the file and refuses an existing one; later flushes atomically replace it, so an
    interrupted run leaves a valid 'partial' file holding every shape finished so far.
    """

    def __init__(self, path):
        self.path = Path(path)
        if self.path.exists():
            raise RunFileError(f"{self.path.name}: refusing to overwrite an existing run file")
        self._created = False
        self.finalized = False

    def _write(self, run: dict, status: str) -> Path:
        if self.finalized:
            raise RunFileError(f"{self.path.name}: run already finalized")
        try:
            write_run_atomic({**run, "status": status}, self.path, overwrite=self._created)
        except WriteError as exc:
            raise WriteError(f"{exc}; {self._rescue(run)}") from None
        self._created = True
        return self.path

    def _rescue(self, run: dict) -> str:
        """Where what was measured went when the run file could not be written: the same name in the system's temp
        folder (a fresh name per attempt, so nothing there is overwritten), always as a 'partial' run."""
        folder = Path(tempfile.gettempdir())
        stem = self.path.name.removesuffix(".json")
        for attempt in range(100):
            fallback = folder / (f"{stem}.json" if attempt == 0 else f"{stem}-{attempt}.json")
            try:
                write_run_atomic({**run, "status": "partial"}, fallback)
                return f"what was measured so far is in {fallback} (status partial)"
            except WriteError as exc:
                return f"and it could not be kept elsewhere either ({exc})"
            except RunFileError:   # that name exists: try the next
                continue
        return f"and it could not be kept elsewhere either (100 files named {stem}* in {folder})"

    def flush(self, run: dict) -> Path:
        """Write `run` with status 'partial'."""
        return self._write(run, "partial")

    def finalize(self, run: dict) -> Path:
        """Write `run` with status 'complete'; no more writes afterwards."""
        path = self._write(run, "complete")
        self.finalized = True
        return path
