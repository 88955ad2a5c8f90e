"""Dense-method screening bench (not a timed test): every dense method x config at each official shape.

    python -m profiler.bench_dense --out DIR [--shapes official|nearby] [--rounds 30] [--budget-s 150]

Per shape: prepares every admitted (method, config), checks one fresh-input call against the FP64 product
(rel-L2 <= the family's tolerance; failures are reported, never timed), captures each call in a CUDA graph
and times all graphs together with profiler.timing.ColdTimer (read-based L2 flush before every replay,
replay overhead subtracted, alternating order). Prints per shape the baseline (torch_linear) median, the
best method/config and the seed036 plan's pick; writes every row to DIR/bench_dense.jsonl.

These are screening numbers (few rounds, no CI): use `python -m profiler run` for paired measurements.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _rows(shapes: str):
    from datasets import load_workload

    wl = load_workload()
    df = wl.shapes if shapes == "official" else wl.nearby
    return [r._asdict() for r in df.itertuples(index=False)]


def _candidates(family: str, M: int, N: int, K: int):
    from kernels.registry import METHODS

    for method in METHODS.values():
        if family not in method.families or method.name.startswith("router_") or method.name == "gemv_wide":
            continue
        for config in method.configs:
            if method.supports(family, M, N, K, config) is None:
                yield method, dict(config)


def bench_shape(row: dict, timer, rounds: int, device, log) -> list[dict]:
    import numpy as np
    import torch

    from kernels.plans import format_config
    from profiler.contract import make_input, make_weight, reference
    from profiler.timing import capture_graph

    family, M, N, K = row["family"], int(row["M"]), int(row["N"]), int(row["K"])
    tol = float(row["rel_l2_tol"])
    w = make_weight(family, N, K, seed=1, device=device, dtype=row["w_dtype"])
    x, _ = make_input(M, K, seed=2, device=device, sparse=False)
    ref = reference(x, w, row["y_dtype"])
    results, graphs, keep = [], [], []
    for method, config in _candidates(family, M, N, K):
        label = format_config(method.name, config)
        rec = {"load": row["load"], "family": family, "M": M, "N": N, "K": K, "method": method.name,
               "config": config, "label": label}
        try:
            state = method.prepare(w, family, config)
            y = method.run(state, x)
            torch.cuda.synchronize()
            err = float((y.double() - ref).norm() / ref.norm())
            rec["rel_l2"] = err
            if tuple(y.shape) != (M, N) or not err <= tol:
                rec["error"] = f"wrong output: shape {tuple(y.shape)} rel_l2 {err:.3e}"
            else:
                graphs.append(capture_graph(lambda m=method, s=state: m.run(s, x), device))
                keep.append(state)
                rec["_g"] = len(graphs) - 1
        except Exception as exc:  # a failing config is a result, not a crash of the bench
            rec["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        results.append(rec)
    if graphs:
        samples = timer.sample(graphs, rounds)
        for rec in results:
            if "_g" in rec:
                col = samples[:, rec.pop("_g")]
                rec.update(median_us=float(np.median(col)), p10_us=float(np.percentile(col, 10)),
                           p90_us=float(np.percentile(col, 90)), n=int(col.size))
    for rec in results:
        rec.pop("_g", None)
        log.write(json.dumps(rec) + "\n")
    log.flush()
    del graphs, keep
    torch.cuda.empty_cache()
    return results


def summarize(row: dict, results: list[dict], plan) -> str:
    timed = [r for r in results if "median_us" in r]
    base = next((r for r in timed if r["method"] == "torch_linear"), None)
    if not timed or base is None:
        return f"{row['load']:>9} {row['family']:<9} M={row['M']:<4} (no timings)"
    best = min(timed, key=lambda r: r["median_us"])
    per_method = {}
    for r in timed:
        if r["method"] not in per_method or r["median_us"] < per_method[r["method"]]["median_us"]:
            per_method[r["method"]] = r
    pick = None
    try:
        method, config = plan.select(row["family"], int(row["M"]))
        pick = next((r for r in timed if r["method"] == method and r["config"] == config), None)
    except Exception:
        pass
    b = base["median_us"]
    head = (f"{row['load']:>9} {row['family']:<9} M={row['M']:<4} torch_linear {b:7.2f} us | best {best['median_us']:7.2f} "
            f"x{b / best['median_us']:.3f} {best['label']}")
    if pick is not None:
        head += f" | seed036 {pick['median_us']:.2f} x{b / pick['median_us']:.3f}"
    methods = "  ".join(f"{m}={r['median_us']:.2f}" for m, r in sorted(per_method.items(), key=lambda kv: kv[1]["median_us"]))
    errors = [f"{r['label']}: {r['error']}" for r in results if "error" in r]
    tail = f"\n{'':>10} per-method best: {methods}"
    if errors:
        tail += "\n" + "\n".join(f"{'':>10} FAILED {e}" for e in errors)
    return head + tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="folder for bench_dense.jsonl")
    ap.add_argument("--shapes", default="official", choices=["official", "nearby"])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=150.0, help="stop starting new shapes after this long")
    ap.add_argument("--families", default="qkv_gate,o,pooler,unpooler,router")
    args = ap.parse_args(argv)

    import torch

    from kernels.plans import load_plan
    from profiler.timing import ColdTimer

    device = torch.device("cuda")
    t0 = time.time()
    timer = ColdTimer(device)
    plan = load_plan("seed036")
    print(f"# {torch.cuda.get_device_name(device)} torch {torch.__version__}; replay overhead "
          f"{timer.overhead_us:.2f} us (subtracted); flush {timer.flush_bytes / 1e6:.0f} MB read; rounds {args.rounds}",
          flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    families = set(args.families.split(","))
    lines = []
    with open(out / "bench_dense.jsonl", "a") as log:
        for row in _rows(args.shapes):
            if row["family"] not in families:
                continue
            if time.time() - t0 > args.budget_s:
                print(f"# budget {args.budget_s:.0f} s spent: stopped before {row['load']}/{row['family']}", flush=True)
                break
            ts = time.time()
            res = bench_shape(row, timer, args.rounds, device, log)
            line = summarize(row, res, plan)
            lines.append(line)
            print(line + f"   [{time.time() - ts:.1f} s]", flush=True)
    (out / "bench_dense_summary.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
