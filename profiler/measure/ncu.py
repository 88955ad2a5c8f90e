"""Nsight Compute (ncu): find it, build the profiling and export commands, parse its raw CSV into kernel records.

Torch-free: the parser runs anywhere (tests parse CSV captured on the H200, tests/fixtures/ncu/).

The CSV is ncu's machine-readable "raw" page (`--csv --page raw --print-units base`), never its human text:
- a header row, then a units row ("byte", "ns", "%", ... or empty), then one row per profiled kernel;
- numbers carry thousands separators ("38,027,264") that are removed before conversion;
- printed at run time, ncu's own "==PROF==" / "==WARNING==" lines share stdout with the CSV: skipped;
- the NVTX column (`--nvtx`) holds the enclosing push/pop range, e.g.
  `1037  "<default domain>:projlab 3 qkv_gate M16 baseline:none:none:none:none:none:none" `.
Calls are told apart by that range: profiler.worker.explain_task pushes "projlab <job> ..." around exactly one call,
and the parent keeps the job table, so a kernel is attributed by the job number, never by parsing names.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NCU_ENV = "PROJLAB_NCU"
NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")
RANGE_PREFIX = "projlab"
# ncu's push/pop filter form: `regex:<expr>/` ("/" ends a push/pop range expression).
NVTX_INCLUDE = f"regex:^{RANGE_PREFIX} /"

# metric → (record field, kind). Counts and sizes are integers; times and percentages floats.
METRICS = {
    "gpu__time_duration.sum": ("duration_ns", float),
    "dram__bytes_read.sum": ("dram_read_bytes", int),
    "dram__bytes_write.sum": ("dram_write_bytes", int),
    "lts__t_bytes.sum": ("l2_bytes", int),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("sm_throughput_pct", float),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("dram_throughput_pct", float),
    "launch__grid_size": ("grid", int),
    "launch__block_size": ("block", int),
    "launch__registers_per_thread": ("registers", int),
    "launch__shared_mem_per_block_static": ("shared_static_bytes", int),
    "launch__shared_mem_per_block_dynamic": ("shared_dynamic_bytes", int),
    "launch__waves_per_multiprocessor": ("waves", float),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("warps_active_pct", float),
}
# Units the fields above assume (`--print-units base`); any other unit is refused, never rescaled silently.
EXPECTED_UNITS = {"gpu__time_duration.sum": "ns", "dram__bytes_read.sum": "byte", "dram__bytes_write.sum": "byte",
                  "lts__t_bytes.sum": "byte", "launch__shared_mem_per_block_static": "byte/block",
                  "launch__shared_mem_per_block_dynamic": "byte/block"}
KERNEL_COLUMN = "Kernel Name"
NVTX_COLUMN_PREFIX = "thread Domain:Push/Pop_Range"
RANGE_RE = re.compile(r'"<default domain>:(' + RANGE_PREFIX + r' [^"]*)"')
NVTX_TAIL_FIELDS = 6  # ":PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg" after the range name ("none" each)


class NcuError(RuntimeError):
    """ncu is missing, failed, or printed something the parser does not accept; the message says what."""


# --- finding and running ncu ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class NcuTool:
    path: str
    version: str


def ncu_search_places() -> list[str]:
    """Where find_ncu looks, in order (shown to the user when ncu is missing)."""
    env = os.environ.get(NCU_ENV)
    return [f"${NCU_ENV} ({env or 'unset'})", "PATH", *NCU_CANDIDATES]


def find_ncu() -> str | None:
    """$PROJLAB_NCU, then `ncu` on PATH, then the CUDA toolkit's bin, then the newest standalone install."""
    env = os.environ.get(NCU_ENV)
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in NCU_CANDIDATES:
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def parse_version(text: str) -> str | None:
    """'Version 2025.3.1.0 (build ...)' in `ncu --version` output → '2025.3.1.0'."""
    match = re.search(r"Version\s+([0-9][0-9.]*)", text)
    return match.group(1) if match else None


def ncu_tool() -> NcuTool:
    """The ncu to use and its version; NcuError (one line, naming where it looked) when there is none."""
    path = find_ncu()
    if path is None:
        raise NcuError(f"needs Nsight Compute (ncu); looked in {', '.join(ncu_search_places())}")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NcuError(f"{path} --version failed: {type(exc).__name__}: {exc}") from None
    version = parse_version(out.stdout + out.stderr)
    if out.returncode != 0 or version is None:
        raise NcuError(f"{path} --version exited {out.returncode} without a version: {out.stderr.strip()[:200]}")
    return NcuTool(path, version)


def profile_command(ncu: str, report_path, target: list[str]) -> list[str]:
    """ncu profiling `target` (a command) into `report_path` (.ncu-rep): only kernels inside "projlab ..." NVTX
    ranges, clocks left as they are (as in timing), caches flushed before every kernel (a cold call)."""
    return [ncu, "--nvtx", "--nvtx-include", NVTX_INCLUDE, "--clock-control", "none", "--cache-control", "all",
            "--metrics", ",".join(METRICS), "--target-processes", "all", "--export", str(report_path),
            "--force-overwrite", *target]


def export_command(ncu: str, report_path) -> list[str]:
    """Print a saved report as the raw CSV page in base units (bytes, ns); a report profiled with --nvtx keeps
    its NVTX range column (seen with ncu 2025.3 on the H200)."""
    return [ncu, "--import", str(report_path), "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(METRICS)]


# --- parsing ----------------------------------------------------------------------------------------------------
def _number(text: str, kind, where: str):
    cleaned = text.replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise NcuError(f"{where}: expected a number, got {text!r}") from None
    if kind is int:
        if value != int(value):
            raise NcuError(f"{where}: expected an integer, got {text!r}")
        return int(value)
    return value


def range_name(cell: str) -> str | None:
    """The projlab NVTX range in one NVTX cell, or None (kernel outside any projlab range)."""
    match = RANGE_RE.search(cell or "")
    if not match:
        return None
    parts = match.group(1).rsplit(":", NVTX_TAIL_FIELDS)
    return parts[0].strip()


def job_of(name: str | None) -> int | None:
    """'projlab 12 router M16 best' → 12 (the job number explain_task put there)."""
    if not name:
        return None
    tokens = name.split()
    if len(tokens) >= 2 and tokens[0] == RANGE_PREFIX and tokens[1].isdigit():
        return int(tokens[1])
    return None


def _csv_rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if start is None:
        raise NcuError("no CSV header (a row starting with \"ID\") in ncu's output")
    return rows[start:]


def parse_raw_csv(text: str, source: str = "ncu csv") -> list[dict]:
    """ncu raw-page CSV → one dict per profiled kernel, in profiling order:
    id, kernel_full, range (the projlab NVTX range or None), job (its number or None), grid_dims, block_dims,
    and every field of METRICS (duration_ns, dram_read_bytes, ...). NcuError names the row and column."""
    rows = _csv_rows(text)
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    missing = [m for m in METRICS if m not in col] + [c for c in ("ID", KERNEL_COLUMN) if c not in col]
    if missing:
        raise NcuError(f"{source}: columns missing from ncu's CSV: {missing}")
    nvtx = next((i for name, i in col.items() if name.startswith(NVTX_COLUMN_PREFIX)), None)
    if body and not body[0][col["ID"]]:  # the units row: its ID cell is empty
        units, body = body[0], body[1:]
        for metric, unit in EXPECTED_UNITS.items():
            if units[col[metric]] not in ("", unit):
                raise NcuError(f"{source}: {metric} is in {units[col[metric]]!r}, expected {unit!r} "
                               f"(print with --print-units base)")
    out = []
    for n, row in enumerate(body):
        if len(row) != len(header):
            raise NcuError(f"{source}: row {n + 1} has {len(row)} cells, the header {len(header)}")
        rec = {"id": _number(row[col["ID"]], int, f"{source}: row {n + 1}: ID"),
               "kernel_full": row[col[KERNEL_COLUMN]],
               "grid_dims": row[col["Grid Size"]] if "Grid Size" in col else None,
               "block_dims": row[col["Block Size"]] if "Block Size" in col else None}
        for metric, (field, kind) in METRICS.items():
            rec[field] = _number(row[col[metric]], kind, f"{source}: row {n + 1}: {metric}")
        rec["range"] = range_name(row[nvtx]) if nvtx is not None else None
        rec["job"] = job_of(rec["range"])
        out.append(rec)
    return out


def short_name(full: str) -> str:
    """A kernel's display name: no return type, template arguments or parameter list.
    'void cublasLt::splitKreduce_kernel<32, 16, ...>(cublasLt::cublasSplitKParams<T6>, ...)' →
    'cublasLt::splitKreduce_kernel'; plain names ('gemv_kernel', 'nvjet_sm90_...') stay as they are."""
    text = full.strip()
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "<(":
            if depth == 0:
                cut = i
                break
            depth += 1
    head = text[:cut].strip()
    if " " in head:  # a return type ("void") or qualifiers before the name
        head = head.rsplit(" ", 1)[-1]
    return head or text


def kernel_records(parsed: list[dict]) -> dict[int, list[dict]]:
    """Parsed rows grouped by job number, each in launch order with the run-file kernel fields:
    kernel, kernel_full, index, launches, duration_us, dram/L2 bytes, throughputs, grid, block, registers,
    shared_bytes (static + dynamic), waves, warps_active_pct, ncu_id. Rows outside a projlab range are dropped."""
    by_job: dict[int, list[dict]] = {}
    for rec in sorted(parsed, key=lambda r: r["id"]):
        if rec["job"] is None:
            continue
        by_job.setdefault(rec["job"], []).append(rec)
    out = {}
    for job, recs in by_job.items():
        out[job] = [{
            "kernel": short_name(r["kernel_full"]), "kernel_full": r["kernel_full"], "index": i,
            "launches": len(recs), "duration_us": r["duration_ns"] / 1000.0,
            "dram_read_bytes": r["dram_read_bytes"], "dram_write_bytes": r["dram_write_bytes"],
            "l2_bytes": r["l2_bytes"], "sm_throughput_pct": r["sm_throughput_pct"],
            "dram_throughput_pct": r["dram_throughput_pct"], "grid": r["grid"], "block": r["block"],
            "grid_dims": r["grid_dims"], "block_dims": r["block_dims"], "registers": r["registers"],
            "shared_bytes": r["shared_static_bytes"] + r["shared_dynamic_bytes"], "waves": r["waves"],
            "warps_active_pct": r["warps_active_pct"], "ncu_id": r["id"]} for i, r in enumerate(recs)]
    return out


def export_csv(ncu: str, report_path: Path, timeout_s: float = 300) -> str:
    """The saved report as raw CSV text (export_command); NcuError when ncu fails."""
    try:
        out = subprocess.run(export_command(ncu, report_path), capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NcuError(f"ncu --import {report_path.name} failed: {type(exc).__name__}: {exc}") from None
    if out.returncode != 0:
        raise NcuError(f"ncu --import {report_path.name} exited {out.returncode}: {out.stderr.strip()[:300]}")
    return out.stdout
