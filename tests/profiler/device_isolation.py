"""Device check of the worker isolation (not a pytest file): one small sweep on a CUDA GPU of the baseline and the
known-wrong candidates that only a GPU can show (a sticky fault at one shape, a GPU hang, capture and stream
bugs, TF32, lossy weights, a segfault), then a table. Writes the run file to $OUT (never into datasets/runs).

    OUT=DIR python3 tests/profiler/device_isolation.py [--shape-timeout-s 8]
"""
import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from profiler.commands.sweep import SweepSettings, run_sweep, select_shapes, shape_key  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

SHAPES = ("decode 1/qkv_gate", "decode 16/o", "verify 16/router")
CLASSES = (wrong.FaultAtOneShape, wrong.TF32Flipper, wrong.Hang, wrong.SideStream, wrong.HostSync,
           wrong.OneHotInt8, wrong.Segfault, wrong.TimerPatcher)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shape-timeout-s", type=float, default=8.0)
    args = p.parse_args()
    out = Path(os.environ.get("OUT", "/tmp")) / "isolation.json"
    shapes = [s for s in select_shapes("official") if shape_key(s) in SHAPES]
    specs = ["baseline"] + [wrong.spec(c) for c in CLASSES] + ["baseline"]
    t0 = time.perf_counter()
    run_sweep(specs, shapes, out, label="isolation", log=lambda m: print(m, file=sys.stderr, flush=True),
              settings=SweepSettings(probes=False, timing=replace(SWEEP, max_seconds=0.5), shape_timeout_s=args.shape_timeout_s))
    run = load_run(out)
    print(f"\nsweep {time.perf_counter() - t0:.1f} s, status {run['status']}, "
          f"{len(run['environment']['workers'])} workers: {[w['ended'][:60] for w in run['environment']['workers']]}")
    print(f"{'shape':<20} {'candidate':<20} {'outcome':<12} detail")
    rows = [(f"{r['load']}/{r['family']}", r["candidate"], "timed",
             f"{r['median_us']:.2f} us rel_l2 {r['error']['rel_l2']:.2e} flags {r['flags']} "
             f"l2 {run['shape_info'][r['load'] + '/' + r['family']].get('persisting_l2_reset')}")
            for r in run["results"]]
    rows += [(f"{f['load']}/{f['family']}", f["candidate"], f"{f['kind']}/{f['phase']}", "; ".join(f["reasons"])[:230])
             for f in run["failures"]]
    for row in sorted(rows, key=lambda r: (r[0], r[1])):
        print(f"{row[0]:<20} {row[1]:<20} {row[2]:<12} {row[3]}")
    for p in run["pairs"]:
        print(f"pair {p['load']}/{p['family']} {p['candidate']} vs {p['baseline']}: {p['ratio_median']:.4f} "
              f"[{p['ratio_ci_low']}, {p['ratio_ci_high']}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
