"""The tuning sweep on the GPU: try every registered method x config per scored (family, M), write the `best` plan.

    python -m profiler tune --shapes official [--families router o ...] [--methods ...]
                            [--out-plan kernels/plans/best.json] [--out-run datasets/runs/<date>_<gpu>_tune.json]
                            [--budget-s 900] [--compile-workers 16]
    python -m profiler tune --extend-plan kernels/plans/best.json    # no GPU: add the library fallback only

The selection rules (candidates, funnel, neighbour and significance rules, ranges per N, the library fallback
above the tuned range) are profiler/tune_rules.py, torch-free and tested on CPU. This module is the GPU side:
`GpuMeasure`, the one "check + time these candidates at this shape" step the rules call, and the CLI that writes
the plan and the tune run file (schema v1: results of every timed candidate, baseline-vs-winner pairs,
failures, and the decisions under "tune"; never overwritten).

Timing is profiler.timing.measure_shape -- the same sampler as `python -m profiler run` and the screening
bench: CUDA graphs, read-based L2 flush, replay overhead subtracted, paired alternating rounds, warm-up by time,
batches below 75% of the max SM clock dropped, RSE stopping rule per stage (tune_rules.SCREEN / FINAL).
Compiles: before the first point, every candidate's Triton kernels are compiled in parallel processes
(kernels.warm), so the sweep itself only loads them from Triton's cache.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from profiler.tune_rules import FINALISTS, MIN_WIN, NOISE_TOL, SCREEN, FINAL, Records, candidates, make_plan
from profiler.tune_rules import scored_points, tune_point

DEFAULT_BUDGET_S = 900.0   # soft: points left when it runs out keep the base plan's entries
MIN_CLOCK_FRACTION = 0.75  # batches whose SM clock read below this fraction of the max are dropped (as in run)


class GpuMeasure:
    """measure(shape, cands, timing) -> {"timed", "rejected", "info"} on one GPU (see profiler.tune_rules).

    Keeps the weights and prepared states of one family (per N) between calls; a new family frees the last."""

    def __init__(self, methods: dict, device, seed: int = 0, timer=None, telemetry=None):
        from profiler.timing import ColdTimer

        self.methods, self.device, self.seed = methods, device, seed
        self.timer = timer if timer is not None else ColdTimer(device)
        self.telemetry = telemetry
        self._weights: dict = {}
        self._states: dict = {}

    def weight(self, shape: dict):
        from profiler.contract import make_weight

        key = (shape["family"], int(shape["N"]), int(shape["K"]))
        if key not in self._weights:
            self._weights = {k: v for k, v in self._weights.items() if k[0] == key[0]}
            self._states = {k: v for k, v in self._states.items() if k[0] == key[0]}
            self._weights[key] = make_weight(key[0], key[1], key[2], self.seed, self.device,
                                             dtype=shape["w_dtype"])
        return self._weights[key]

    def state(self, shape: dict, name: str, config: dict):
        key = (shape["family"], int(shape["N"]), name, json.dumps(config, sort_keys=True))
        if key not in self._states:
            self._states[key] = self.methods[name].prepare(self.weight(shape), shape["family"], config)
        return self._states[key]

    def check(self, shape: dict, name: str, config: dict, x, rows) -> list[str]:
        """One call on a fresh input with sparse probe rows vs the FP64 reference; [] when it passes."""
        from profiler.contract import check_output, reference

        M, N = int(shape["M"]), int(shape["N"])
        try:
            self.methods[name].check_supports(shape["family"], M, N, int(shape["K"]), config)
            y = self.methods[name].run(self.state(shape, name, config), x)
            ref = reference(x, self.weight(shape), shape["y_dtype"])
            c = check_output(y, ref, float(shape["rel_l2_tol"]), sparse_rows=rows, expect_shape=(M, N),
                             expect_dtype=shape["y_dtype"], where=f"{shape['family']} M={M}")
            return [] if c.ok else list(c.reasons)
        except Exception as exc:  # a candidate's bug is a verdict, not a sweep crash
            return [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]]

    def __call__(self, shape: dict, cands: list, timing: dict) -> dict:
        from kernels.method import format_config
        from profiler.contract import make_input

        x, rows = make_input(int(shape["M"]), int(shape["K"]), self.seed + int(shape["M"]), self.device,
                             dtype=shape["x_dtype"])
        rejected, live = {}, []
        for name, config in cands:
            reasons = self.check(shape, name, config, x, rows)
            if reasons:
                rejected[format_config(name, config)] = reasons
            else:
                live.append((name, config))
        timed, capture_failed, info = self.time(shape, live, timing) if live else ([], {}, {})
        return {"timed": timed, "rejected": {**rejected, **capture_failed}, "info": info}

    def time(self, shape: dict, live: list, timing: dict) -> tuple[list, dict, dict]:
        """Paired cold samples of the checked candidates (measure_shape) -> (timed rows, capture failures, info)."""
        from kernels.method import format_config
        from profiler.timing import measure_shape

        graphs, timed_cands, failed = [], [], {}
        for name, config in live:
            try:
                graphs.append(self._instances(shape, name, config, int(timing.get("instances", 2))))
                timed_cands.append((name, config))
            except Exception as exc:
                failed[format_config(name, config)] = [
                    f"capture failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]]
        if not graphs:
            return [], failed, {}
        kw = {k: timing[k] for k in ("min_pairs", "rse_target", "max_seconds", "warmup_seconds", "batch_rounds")}
        ms = measure_shape(graphs, self.timer, **kw, **self._clock_gate())
        timed = [{"method": n, "config": c, "samples_us": ms.samples_us[:, i].tolist()}
                 for i, (n, c) in enumerate(timed_cands)]
        info = {"stopped_by": ms.stopped_by, "elapsed_s": round(ms.elapsed_s, 3), "dropped_rounds": ms.dropped_rounds,
                "clocks_mhz": [c for c in ms.clocks_mhz if c is not None]}
        return timed, failed, info

    def _instances(self, shape: dict, name: str, config: dict, n: int) -> list:
        """n graph captures of one candidate, each with its own input (and output) buffers."""
        from profiler.contract import make_input

        st, run = self.state(shape, name, config), self.methods[name].run
        out = []
        for k in range(n):
            xk, _ = make_input(int(shape["M"]), int(shape["K"]), self.seed + 300 + k, self.device,
                               dtype=shape["x_dtype"])
            h = self.timer.capture(lambda run=run, st=st, xk=xk: run(st, xk))
            h.keep = xk
            out.append(h)
        return out

    def _clock_gate(self) -> dict:
        t = self.telemetry
        if t is None or not t.available:
            return {}
        top = t.max_sm_mhz()
        return {"clock": t.sm_mhz, "min_clock_mhz": MIN_CLOCK_FRACTION * top if top else None}


# ------------------------------------------------------------------------------------------ compiles

def warm_jobs(methods: dict, points, only=None) -> list[dict]:
    """Every candidate at every point, as kernels.warm jobs."""
    jobs = []
    for pt in points:
        for name, config in candidates(methods, pt.family, pt.M, pt.N, pt.K, only):
            jobs.append({"method": name, "config": config, "family": pt.family, "M": pt.M, "N": pt.N,
                         "K": pt.K, "w_dtype": pt.spec["w_dtype"]})
    return jobs


def precompile(methods: dict, points, only, workers: int, extra_jobs=(), log=print) -> dict:
    """Compile every candidate (and extra_jobs) in `workers` processes first (kernels.warm). Returns
    {(method, config json, family): reason} for those that raised there: the sweep leaves them out at that
    family (a kernel that faults would take the sweep's CUDA context down with it)."""
    from kernels.warm import job_key, unique_jobs, warm

    if workers <= 0:
        return {}
    t0 = time.perf_counter()
    jobs = warm_jobs(methods, points, only) + list(extra_jobs)
    errors = warm(jobs, workers)
    skip = {job_key(job): f"failed when compiled and run once in a worker: {msg}" for job, msg in errors if job}
    log(f"compiled {len(unique_jobs(jobs))} distinct (method, config, shape class) jobs in {workers} processes "
        f"in {time.perf_counter() - t0:.1f} s; {len(errors)} raised there (left out of the sweep):")
    for _, msg in errors:
        log(f"   {msg}")
    return skip


# ------------------------------------------------------------------------------------------ plan + run files

def committed_run_path(run_path) -> str:
    """Where the tune run lives in the repo: its own path when written inside the checkout, else
    datasets/runs/<name> (a device host writes to $OUT; its run files are committed there under the same name)."""
    root = Path(__file__).resolve().parents[1]
    path = Path(run_path).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return f"datasets/runs/{path.name}"


def default_run_path(gpu: str) -> Path:
    from datasets import RUNS_DIR
    from profiler.runfile import run_filename, utc_now

    return Path(RUNS_DIR) / run_filename(utc_now(), gpu, "tune")


def write_plan(plan: dict, path, workload) -> None:
    """Validate, then write atomically (a temp file renamed over the old plan)."""
    from kernels.plans import plan_from_dict

    plan_from_dict(plan, str(path), workload)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(plan, indent=1) + "\n")
    os.replace(tmp, path)


def extend_plan(path) -> int:
    """--extend-plan: rewrite a plan file with the library fallback (kernels.plans.with_library_fallback)."""
    from datasets import load_workload
    from datasets.jsonfile import JsonInputError, read_json
    from kernels.method import PlanError
    from kernels.plans import with_library_fallback

    try:
        plan = with_library_fallback(read_json(path))
        write_plan(plan, path, load_workload())
    except (JsonInputError, PlanError, KeyError, TypeError, AttributeError, OSError) as exc:
        print(f"profiler tune --extend-plan: {path}: {exc}", file=sys.stderr)
        return 1
    print(f"plan -> {path} (every family dispatches 1..{_max_m()}; added entries are torch_linear, not measured)")
    return 0


def _max_m() -> int:
    from kernels.plans import DISPATCH_MAX_M

    return DISPATCH_MAX_M


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m profiler tune", description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default="official", choices=["official"], help="which shapes to tune (scored)")
    p.add_argument("--families", nargs="+", default=None, help="restrict to these families")
    p.add_argument("--methods", nargs="+", default=None, help="restrict to these methods (baseline always in)")
    p.add_argument("--out-plan", default="kernels/plans/best.json")
    p.add_argument("--out-run", default=None, help="default datasets/runs/<date>_<gpu>_tune.json")
    p.add_argument("--base-plan", default="baseline", help="entries for families not tuned")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                   help="soft wall-clock budget; points left when it runs out keep the base plan's entries")
    p.add_argument("--finalists", type=int, default=FINALISTS)
    p.add_argument("--compile-workers", type=int, default=min(16, os.cpu_count() or 1),
                   help="processes that compile the candidates' Triton kernels first (0: compile in the sweep)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--extend-plan", default=None, metavar="PLAN",
                   help="only rewrite PLAN with the library fallback above its ranges (no GPU, nothing measured)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.extend_plan:
        return extend_plan(args.extend_plan)
    import torch

    if not torch.cuda.is_available():
        print("profiler tune: needs a CUDA GPU (torch.cuda.is_available() is False); run it on the H200",
              file=sys.stderr)
        return 2
    return _tune(args, argv)


def _tune(args, argv) -> int:
    import torch

    from datasets import load_workload
    from kernels.plans import load_plan
    from kernels.registry import METHODS
    from profiler.runfile import RunWriter, new_run
    from profiler.telemetry import Telemetry, environment
    from profiler.timing import ColdTimer

    t0 = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = False   # the FP32 router baseline must not run TF32
    workload = load_workload()
    device = torch.device(args.device)
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    telem = Telemetry(device.index, getattr(torch.cuda.get_device_properties(device), "pci_bus_id", None))
    env = environment(device, telem)
    gpu = env.get("gpu") or "unknown-gpu"
    run_path = Path(args.out_run) if args.out_run else default_run_path(gpu)
    writer = RunWriter(run_path)                      # refuses an existing run file before any work
    points = scored_points(workload, args.families)
    skip = precompile(METHODS, points, args.methods, args.compile_workers)
    timer = ColdTimer(device)
    env.update(replay_overhead_us=timer.overhead_us, replay_overhead_ci_us=list(timer.overhead_ci_us),
               settings={"mode": "cold", "tool": "tune", "shapes": args.shapes, "families": args.families,
                         "methods": args.methods, "flush_bytes": timer.flush_bytes, "seed": args.seed,
                         "screen": SCREEN, "final": FINAL, "finalists": args.finalists, "noise_tol": NOISE_TOL,
                         "min_win": MIN_WIN, "budget_s": args.budget_s, "min_clock_fraction": MIN_CLOCK_FRACTION,
                         "command": "python -m profiler tune " + " ".join(argv or sys.argv[1:])})
    run = new_run("tune", env)
    measure = GpuMeasure(METHODS, device, args.seed, timer, telem)
    records = Records()
    decisions, skipped = [], []
    for pt in points:
        if time.perf_counter() - t0 > args.budget_s:
            skipped.append(f"{pt.family} M={pt.M}")
            continue
        t_pt = time.perf_counter()
        decisions.append(tune_point(pt, METHODS, measure, n_finalists=args.finalists, only=args.methods,
                                    records=records, skip=skip))
        print(f"   [{time.perf_counter() - t_pt:.1f} s for this point, {time.perf_counter() - t0:.1f} s total]",
              flush=True)
        run.update(results=records.results, pairs=records.pairs, failures=records.failures,
                   tune=[d.to_dict() for d in decisions])
        run["telemetry"].append(telem.sample())
        writer.flush(run)
    base = load_plan(args.base_plan).to_dict()
    skipped_fams = {s.split()[0] for s in skipped}
    decisions = [d for d in decisions if d.family not in skipped_fams]   # a half-tuned family keeps the base
    notes = (f"Tuned by profiler/tune.py on {gpu}, {len(decisions)} scored points; families "
             f"{sorted({d.family for d in decisions})} tuned, others from plan {args.base_plan!r}. Rule: funnel "
             f"(screen every admitted config, {args.finalists} finalists + baseline), measure_shape timing (screen "
             f"RSE {SCREEN['rse_target']:.0%}, finals and neighbours RSE {FINAL['rse_target']:.1%}), neighbour check "
             f"M+-1 (same-N neighbours decide; winner vs runner-up and vs baseline) with {NOISE_TOL:.0%} tolerance, "
             f"baseline unless the win's CI low > {1 + MIN_WIN:.2f}, ranges split at midpoints between scored M, per "
             f"N (entries with \"N\" for points off the family's N), torch_linear above the largest tuned M."
             + (f" Budget ran out: {skipped} not tuned." if skipped else ""))
    plan = make_plan(decisions, METHODS, workload, base, gpu, committed_run_path(run_path), notes)
    write_plan(plan, args.out_plan, workload)
    run["tune"] = [d.to_dict() for d in decisions]
    run["tune_plan"] = plan
    (writer.flush if skipped else writer.finalize)(run)
    print(f"\nplan -> {args.out_plan}\nrun  -> {run_path} ({'partial' if skipped else 'complete'})")
    print(f"tune elapsed {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
