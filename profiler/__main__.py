"""python -m profiler run|probe|summarize|tune — see `python -m profiler <cmd> --help`."""
from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from pathlib import Path


def _cuda_or_exit(cmd: str) -> None:
    """Exit 2 with one line (no traceback) where torch or CUDA is missing."""
    try:
        import torch
    except Exception as exc:
        print(f"profiler {cmd}: needs torch with CUDA; importing torch failed ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        raise SystemExit(2)
    if not torch.cuda.is_available():
        print(f"profiler {cmd}: needs a CUDA GPU, and torch.cuda.is_available() is False on this machine "
              f"(torch {torch.__version__}); run it on the H200", file=sys.stderr)
        raise SystemExit(2)


class _Progress:
    """tqdm bar when tqdm is importable, else one plain line per 10%."""

    def __init__(self):
        try:
            from tqdm import tqdm
        except Exception:
            tqdm = None
        self._tqdm, self._bars, self._last = tqdm, {}, {}

    def __call__(self, stage: str, i: int, n: int) -> None:
        if self._tqdm is not None:
            bar = self._bars.get(stage)
            if bar is None:
                bar = self._bars[stage] = self._tqdm(total=n, desc=stage, unit="", file=sys.stderr)
            bar.update(i - bar.n)
            if i >= n:
                bar.close()
            return
        step = max(1, n // 10)
        if i == n or i % step == 0:
            print(f"{stage}: {i}/{n}", file=sys.stderr, flush=True)


def _default_out(gpu: str, label: str) -> Path:
    from datasets import RUNS_DIR
    from profiler.runfile import run_filename

    return Path(RUNS_DIR) / run_filename(dt.date.today(), gpu, label)


def _load_candidates(specs: list[str]):
    from kernels.candidate import load_candidate

    out = []
    for spec in specs:
        try:
            out.append(load_candidate(spec))
        except Exception as exc:  # PlanError / CandidateError name the file and the problem
            print(f"profiler run: cannot load candidate {spec!r}: {exc}", file=sys.stderr)
            raise SystemExit(1)
    return out


def cmd_run(args, argv) -> int:
    specs = list(args.plan or []) + list(args.candidate or [])
    if not specs:
        print("profiler run: give at least one --plan (the first is the baseline of every pair)", file=sys.stderr)
        return 1
    _cuda_or_exit("run")
    import torch

    from profiler.sweep import SweepSettings, run_sweep, select_shapes

    candidates = _load_candidates(specs)
    shapes = select_shapes(args.shapes)
    label = args.label or "-vs-".join(Path(s).stem for s in specs)[:80]
    out = Path(args.out) if args.out else _default_out(torch.cuda.get_device_name(), label)
    if out.exists():
        print(f"profiler run: {out} exists; runs are never overwritten (pick --out or --label)", file=sys.stderr)
        return 1
    settings = SweepSettings(mode=args.mode, shapes=args.shapes, max_seconds_per_shape=args.max_seconds_per_shape,
                             seed=args.seed, probes=not args.no_probes,
                             command="python -m profiler " + " ".join(shlex.quote(a) for a in argv))
    t0 = time.perf_counter()
    try:
        run = run_sweep(candidates, shapes, out, label=label, settings=settings, progress=_Progress(),
                        log=lambda m: print(m, file=sys.stderr))
    except KeyboardInterrupt:
        print(f"profiler run: interrupted; partial run in {out}", file=sys.stderr)
        return 130
    print(format_run(run))
    print(f"\nwrote {out}  (status {run.get('status', 'complete')})")
    print(f"wall time: {time.perf_counter() - t0:.1f} s total, {run['environment'].get('sweep_seconds')} s for "
          f"{len(shapes)} shapes x {len(candidates)} candidates (correctness + timing)")
    print(f"overall score: python -m dashboard summarize {out}")
    return 0


def cmd_probe(args, argv) -> int:
    _cuda_or_exit("probe")
    import torch

    from profiler.sweep import SweepSettings, run_sweep, select_shapes

    label = args.label or "probes"
    out = Path(args.out) if args.out else _default_out(torch.cuda.get_device_name(), label)
    if out.exists():
        print(f"profiler probe: {out} exists; runs are never overwritten", file=sys.stderr)
        return 1
    settings = SweepSettings(shapes=args.shapes, command="python -m profiler " + " ".join(argv))
    # Probes only: the shapes give the byte counts to probe, no candidate is run.
    shapes = select_shapes(args.shapes)
    run = run_sweep([], shapes, out, label=label, settings=settings, progress=_Progress(),
                    log=lambda m: print(m, file=sys.stderr), measure_shapes=False)
    print(format_probes(run))
    print(f"\nwrote {out}")
    return 0


def cmd_summarize(args, argv) -> int:
    from profiler.runfile import RunFileError, load_run

    try:
        run = load_run(args.run)
    except RunFileError as exc:
        print(f"profiler summarize: {exc}", file=sys.stderr)
        return 1
    print(format_run(run))
    if run.get("probes"):
        print()
        print(format_probes(run))
    return 0


def _fmt(v, spec=".2f", none="-"):
    return none if v is None else format(v, spec)


def format_run(run: dict) -> str:
    """Per-shape table: median us per candidate, paired ratio [95% CI] vs the first candidate, correct, flags.
    No overall score here: that is the dashboard's job (`python -m dashboard summarize`)."""
    names = list(run["environment"].get("settings", {}).get("candidates") or
                 dict.fromkeys(r["candidate"] for r in run["results"]))
    by_shape: dict[tuple, dict] = {}
    for r in run["results"]:
        key = (r["load"], r["family"], r["M"], r["N"], r["K"])
        by_shape.setdefault(key, {})[r["candidate"]] = r
    pairs = {(p["load"], p["family"], p["M"], p["N"], p["K"], p["candidate"]): p for p in run["pairs"]}
    env = run["environment"]
    lines = [f"run {run['label']} ({run['status']}) on {env.get('gpu')}  mode {env.get('settings', {}).get('mode')}  "
             f"replay overhead {_fmt(env.get('replay_overhead_us'))} us subtracted"]
    head = f"{'shape':<24}{'M':>5}" + "".join(f"{n[:18]:>20}" for n in names)
    head += "".join(f"{'ratio ' + n[:14]:>30}" for n in names[1:]) + "  ok    flags"
    lines += [head, "-" * len(head)]
    for key, recs in by_shape.items():
        row = f"{key[0] + '/' + key[1]:<24}{key[2]:>5}"
        row += "".join(f"{_fmt(recs[n]['median_us'], '.2f') if n in recs else '-':>20}" for n in names)
        for n in names[1:]:
            p = pairs.get(key + (n,))
            cell = (f"{p['ratio_median']:.4f} [{_fmt(p.get('ratio_ci_low'), '.4f')},"
                    f"{_fmt(p.get('ratio_ci_high'), '.4f')}]") if p else "-"
            row += f"{cell:>30}"
        ok = all(r["correct"] for r in recs.values())
        flags = sorted({f"{r['candidate']}:{f}" for r in recs.values() for f in r.get("flags", [])})
        lines.append(row + f"  {'yes' if ok else 'NO':<5} {' '.join(flags)}")
    for f in run.get("failures", []):
        how = f" ({f['kind']}, {f.get('phase', '?')})" if "kind" in f else ""
        lines.append(f"FAILED {f['load']}/{f['family']} M={f['M']} {f['candidate']}{how}: "
                     f"{'; '.join(f['reasons'])[:300]}")
    bad = [r for r in run["results"] if not r["correct"]]
    for r in bad:
        lines.append(f"INCORRECT {r['load']}/{r['family']} M={r['M']} {r['candidate']}: "
                     f"{'; '.join(r.get('error', {}).get('reasons', []))[:200]}")
    return "\n".join(lines)


def format_probes(run: dict) -> str:
    lines = [f"{'bytes':>12} {'us':>9} {'TB/s':>6}  {'design':<18} for"]
    for p in sorted(run.get("probes", []), key=lambda p: p["bytes"]):
        lines.append(f"{p['bytes']:>12} {p['us']:>9.2f} {_fmt(p.get('tbps')):>6}  {p.get('design', ''):<18} "
                     f"{p.get('for_shape', '')[:60]}")
    if run.get("compute_peak_tflops"):
        lines.append(f"compute probe: {run['compute_peak_tflops']:.0f} TFLOP/s bf16 "
                     f"({run['compute_probe']['M']}^3 in {run['compute_probe']['us']:.0f} us)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m profiler", description="check, time and probe projection kernels")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="correctness + paired timing of plans/candidates over a shape set")
    r.add_argument("--plan", action="append", help="plan name or .json path (repeatable; first = baseline)")
    r.add_argument("--candidate", action="append", help="a user's module .py with prepare(weight), run(state, family, x)")
    r.add_argument("--shapes", choices=("official", "nearby", "all"), default="official")
    r.add_argument("--mode", choices=("cold", "stream"), default="cold")
    r.add_argument("--out", help="run file (default datasets/runs/<date>_<gpu>_<label>.json; never overwritten)")
    r.add_argument("--label", help="run label (default: the plan names joined by -vs-)")
    r.add_argument("--max-seconds-per-shape", type=float, default=2.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--no-probes", action="store_true", help="skip the HBM/compute probes (no below_floor flag)")
    pr = sub.add_parser("probe", help="HBM read probes + compute probe only, into a run file")
    pr.add_argument("--shapes", choices=("official", "nearby", "all"), default="official")
    pr.add_argument("--out")
    pr.add_argument("--label")
    s = sub.add_parser("summarize", help="print a run file's per-shape table")
    s.add_argument("run")
    sub.add_parser("tune", help="tune a plan (profiler.tune)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "tune":  # everything after `tune` belongs to profiler.tune
        from profiler.tune import main as tune_main

        return int(tune_main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    return {"run": cmd_run, "probe": cmd_probe, "summarize": cmd_summarize}[args.cmd](args, argv)


if __name__ == "__main__":
    raise SystemExit(main())
