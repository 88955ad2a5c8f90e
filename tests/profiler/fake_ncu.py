"""A stand-in for Nsight Compute on CPU (tests): `fake_ncu.py --version`, `fake_ncu.py <profile options> --export REP
--force-overwrite CMD...` and `fake_ncu.py --import REP --csv ...`, the three forms profiler.measure.ncu builds.

Profiling runs CMD (the projlab worker) with the same stdin/stdout, as ncu does, and tells it where to note its NVTX
ranges ($FAKE_NCU_RANGES: fake_device.install_fake_nvtx makes the worker append each pushed range there, since a
CPU has no NVTX). The "report" it writes is the H200's real raw CSV (tests/fixtures/ncu) cut to the rows of the
jobs whose ranges were pushed; the import prints it back. PROJLAB_UNDER_FAKE_NCU=1 is set for CMD (a test
candidate can crash only under the profiler). Nothing it returns is a measurement of this machine.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
           / "2026-12-01_nvidia-h200_explain-baseline-best_ncu-0.csv")
JOB = re.compile(r'"<default domain>:projlab (\d+) ')


def main(args: list[str]) -> int:
    if "--version" in args:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build fake)")
        return 0
    if "--import" in args:
        sys.stdout.write(Path(args[args.index("--import") + 1]).read_text())
        return 0
    report = Path(args[args.index("--export") + 1])
    target = args[args.index("--force-overwrite") + 1:]
    ranges = report.with_suffix(".ranges")
    code = subprocess.call(target, env=dict(os.environ, FAKE_NCU_RANGES=str(ranges), PROJLAB_UNDER_FAKE_NCU="1"))
    jobs = {int(line.split()[1]) for line in ranges.read_text().splitlines()} if ranges.exists() else set()
    lines = FIXTURE.read_text().splitlines(keepends=True)
    rows = [line for line in lines[2:] if (m := JOB.search(line)) and int(m.group(1)) in jobs]
    report.write_text("".join(lines[:2] + rows))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
