"""The cost of judging every timed call (a script, not a test; any machine): the official CPU sweep -- `python3 -m
profiler run --device cpu` over the official shapes of the tiny workload, the baseline and a correct control, the
wall-clock CPU timer, the sweep's own timing policy -- with the code before timed calls got a fresh input each and a
judge chosen after they ran, and with it now; the wall times and the samples taken, before and after, printed.

    python3 tests/benchmarks/bench_judge_cost.py [--before REF] [--repeats 2]

"Before" is a temporary git worktree at REF (default: the parent of the commit that added
profiler/check/timed.py's FreshFeed). Each side runs --repeats times, alternating; the fastest of each is compared.
What it adds on the CPU: per timed call, a fresh input made in the parent (profiler.worker.call_judge), sent to the
worker and the call's output sent back (base64 over the protocol pipe), the copy of the output into the store; per
judged call (a share p = 0.749 of them, profiler.check.timed.judged_share) the FP64 product and the rules'
reductions, in the parent. On a GPU the worker makes the inputs and judges each batch itself. A
shape the stopping rule ends on time takes as long as before with fewer samples in it, so both the wall time and the
samples per second of timing are printed. On the H200 the GPU-run issue measures it (target <= 1.3x the sweep).
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trust_cost import ROOT, _git, before_and_after  # noqa: E402  the before/after loop both benches run


def default_before() -> str:
    added = _git("log", "-S", "class FreshFeed", "--format=%H", "--", "profiler/check/timed.py").splitlines()
    if not added:
        raise SystemExit("bench_judge_cost: profiler/check/timed.py has no FreshFeed here; give --before REF")
    return added[-1] + "~1"


def sweep(tree: Path, side: str, work: Path, i: int) -> dict:
    out = work / f"{side}-{i}.json"
    control = next(p for p in (tree / "profiler/wrong/base.py", tree / "profiler/check/wrong.py") if p.exists())
    cmd = [sys.executable, "-m", "profiler", "run", "--device", "cpu", "--workload",
           str(ROOT / "tests/fixtures/workloads/tiny.json"), "--plan", "baseline", "--candidate",
           f"{control}:TorchLinear", "--trust-candidate", "--canary", "off", "--no-probes", "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench_judge_cost: the {side} sweep failed: {proc.stderr.strip()[-1500:]}")
    run = json.loads(out.read_text())
    samples = sum(r["n_samples"] for r in run["results"])
    timing_s = sum((info or {}).get("elapsed_s", 0.0) for info in run.get("shape_info", {}).values())
    return {"wall_s": wall, "samples": samples, "timing_s": timing_s, "shapes": len(run.get("shape_info", {})),
            "results": len(run["results"])}


def _describe(t: dict) -> str:
    return (f"{t['wall_s']:.1f} s wall, {t['timing_s']:.1f} s timing, {t['samples']} samples in {t['results']} "
            f"results over {t['shapes']} shapes ({t['samples'] / max(t['timing_s'], 1e-9):.0f} samples/s of timing)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="git ref of the tree before the change (default: see above)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    before = args.before or default_before()
    times = before_and_after(before, sweep, _describe, args.repeats)
    b = min(times["before"], key=lambda t: t["wall_s"])
    a = min(times["after"], key=lambda t: t["wall_s"])
    rate = (a["samples"] / max(a["timing_s"], 1e-9)) / (b["samples"] / max(b["timing_s"], 1e-9))
    print(f"\nbefore ({before[:12]}): {b['wall_s']:.1f} s wall   after: {a['wall_s']:.1f} s wall   ratio "
          f"{a['wall_s'] / b['wall_s']:.2f}x;  samples per second of timing after/before {rate:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
