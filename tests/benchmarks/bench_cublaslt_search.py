"""cuBLASLt beyond its heuristic (a script, not a test; GPU hosts): how much faster the library's best configuration
is than the best one its heuristic lists, per shape and orientation.

    python3 tests/benchmarks/bench_cublaslt_search.py [--shapes 128x2304x8192,256x4096x8192] [--out search.json]
    python3 tests/benchmarks/bench_cublaslt_search.py --show datasets/cublaslt_search/<file>.json   # its summary

Space: every configuration of the heuristic's algorithms that cuBLASLt accepts one attribute away
(kernels/launch/cublaslt.py `Problem.neighbours`: split-K count and reduction scheme, cluster shape, tile, stages,
custom option, swizzle), walked as a coordinate descent from the heuristic's four fastest configs, two passes
each, a move kept when it is faster and its rel-L2 error against an FP32 product stays below 5e-3.

Timing: the lab's cold timer (profiler.measure.timing.ColdTimer: CUDA graphs, read-based L2 flush, replay overhead
subtracted). Search steps take 8 paired rounds beside the orientation's fastest heuristic config; the fastest of
thousands of short samples is biased low, so the finals re-measure, with fresh samples and measure_shape's
stopping rule (paired rounds until every ratio's RSE <= 0.5% or 3 s), torch_linear, the fastest heuristic
config of every orientation and the five fastest found. The table prints the finals: medians, and each found
config's paired ratio over the fastest heuristic config. Figures for deciding whether the space is worth a tuner's
time, not a run file.
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_SHAPES = "16x2304x8192,32x2304x8192,128x2304x8192,256x2304x8192,32x4096x8192,128x4096x8192,256x4096x8192," \
                 "256x8192x1024,128x8192x4096,256x8192x4096"
ERR_MAX = 5e-3
STARTS, PASSES, SEARCH_ROUNDS, FINALISTS = 4, 2, 8, 5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="MxNxK,... (y[M,N] = x[M,K] @ w[N,K]^T, BF16)")
    ap.add_argument("--out", default="", help="write every timed config and the finals as JSON here")
    ap.add_argument("--show", metavar="FILE", help="print the per-shape summary of a written search file (no GPU)")
    args = ap.parse_args()
    if args.show:
        return show(args.show)

    import numpy as np
    import torch
    from kernels.launch import cublaslt as lt
    from profiler.measure.timing import ColdTimer, measure_shape

    if lt.unavailable_reason():
        print(lt.unavailable_reason())
        return 1
    timer = ColdTimer()
    import os

    report = {"cublaslt_version": lt.library_version(), "gpu": torch.cuda.get_device_name(),
              "commit": os.environ.get("PROJLAB_GIT_SHA", ""), "shapes": []}
    rows = []
    for spec in args.shapes.split(","):
        M, N, K = (int(v) for v in spec.split("x"))
        t0 = time.time()
        gen = torch.Generator(device="cuda").manual_seed(M * 7 + N)
        w = (torch.randn(N, K, device="cuda", generator=gen) / K ** 0.5).to(torch.bfloat16)
        x = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
        ref = x.float() @ w.float().t()

        def call(orient, algo, ws_bytes, wT=w.t().contiguous(), ws=torch.empty(lt.WORKSPACE_BYTES, dtype=torch.uint8,
                                                                              device="cuda")):
            problem = lt.Problem(orient, M, N, K)

            def fn():
                if orient == "swap":
                    yT = torch.empty((N, M), dtype=torch.bfloat16, device="cuda")
                    problem.launch(x.data_ptr(), w.data_ptr(), yT.data_ptr(), algo, ws.data_ptr(), ws_bytes,
                                   torch.cuda.current_stream().cuda_stream)
                    return yT.t()
                y = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
                problem.launch((wT if orient == "kn" else w).data_ptr(), x.data_ptr(), y.data_ptr(), algo,
                               ws.data_ptr(), ws_bytes, torch.cuda.current_stream().cuda_stream)
                return y
            return fn

        def error(fn):
            y = fn().float()
            return float((y - ref).norm() / ref.norm())

        shape = {"M": M, "N": N, "K": K, "orients": {}}
        finals = [("torch_linear", {}, lambda: torch.nn.functional.linear(x, w))]
        found = []
        for orient in lt.ORIENTS:
            problem = lt.Problem(orient, M, N, K)
            try:
                offered = problem.heuristic()
            except RuntimeError as exc:
                print(f"M={M} N={N} K={K} {orient}: left out ({exc})")
                continue
            timed, checked = {}, 0

            def key(ident):
                return tuple(ident[k] for k in lt.IDENTITY_KEYS)

            heur = []
            for algo, ws_bytes in offered:
                ident = lt.identity(algo)
                heur.append((ident, call(orient, algo, ws_bytes)))
            if not heur:
                continue
            graphs = [timer.capture(fn) for _, fn in heur]
            med = np.median(timer.sample(graphs, SEARCH_ROUNDS * 2), axis=0)
            order = np.argsort(med)
            ref_ident, ref_fn = heur[order[0]]
            ref_graph = graphs[order[0]]
            for i in order:
                timed[key(heur[i][0])] = float(med[i])

            def time_ident(ident):
                nonlocal checked
                k = key(ident)
                if k in timed:
                    return timed[k]
                checked += 1
                built = problem.build(ident)
                if built is None:
                    timed[k] = None
                    return None
                fn = call(orient, *built)
                if error(fn) > ERR_MAX:
                    timed[k] = None
                    return None
                s = timer.sample([ref_graph, timer.capture(fn)], SEARCH_ROUNDS)
                timed[k] = float(np.median(s[:, 1]))
                found.append((timed[k], orient, ident, fn))
                return timed[k]

            for i in order[:STARTS]:
                cur = dict(heur[i][0])
                cur_us = timed[key(cur)]
                for _ in range(PASSES):
                    space = lt.capabilities(cur["algo_id"])
                    for ident in lt.variants(cur, space):
                        us = time_ident(ident)
                        if us is not None and us < cur_us:
                            cur, cur_us = ident, us
            finals.append((f"heuristic {orient}", ref_ident, ref_fn))
            n_ok = sum(v is not None for v in timed.values())
            shape["orients"][orient] = {"offered": len(heur), "checked": checked, "timed": n_ok,
                                        "heuristic_best": ref_ident}
        found.sort(key=lambda r: r[0])
        for us, orient, ident, fn in found[:FINALISTS]:
            finals.append((f"found {orient}", ident, fn))
        res = measure_shape([fn for _, _, fn in finals], timer, min_pairs=64, rse_target=0.005, max_seconds=3.0)
        s = res.samples_us
        meds = np.median(s, axis=0)
        heur_cols = [j for j, (name, _, _) in enumerate(finals) if name.startswith("heuristic")]
        best_h = min(heur_cols, key=lambda j: meds[j])
        shape["finals"] = []
        for j, (name, ident, _) in enumerate(finals):
            ratio = float(np.median(s[:, best_h] / s[:, j]))
            shape["finals"].append({"name": name, "config": ident, "median_us": float(meds[j]),
                                    "ratio_vs_best_heuristic": ratio, "err": error(finals[j][2])})
            rows.append((f"{M}x{N}x{K}", name, float(meds[j]), ratio, ident))
        shape["rounds"], shape["stopped_by"], shape["seconds"] = int(len(s)), res.stopped_by, time.time() - t0
        report["shapes"].append(shape)
        print(f"M={M} N={N} K={K}: " + ", ".join(f"{o} {v['offered']} offered / {v['timed']} accepted and timed"
                                                  for o, v in shape["orients"].items())
              + f"; finals {len(s)} paired rounds ({res.stopped_by}), {shape['seconds']:.0f} s", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"\n{'shape':>14} {'candidate':<16} {'us':>7} {'vs best heuristic':>18}  config")
    for shp, name, us, ratio, ident in rows:
        cfg = " ".join(f"{k}={ident[k]}" for k in ("tile_id", "split_k", "reduction", "custom", "cluster_shape_id",
                                                   "stages_id", "swizzle") if k in ident)
        print(f"{shp:>14} {name:<16} {us:7.2f} {ratio:18.3f}  {cfg}")
    return 0


IDENT_KEYS = ("tile_id", "split_k", "reduction", "custom", "cluster_shape_id")


def show(path) -> int:
    """Per shape of a search file: torch_linear, the fastest heuristic config, the fastest found one (medians of the
    finals, measured) and the found one's paired ratio over the heuristic's (derived), with its identity."""
    try:
        report = json.loads(Path(path).read_text())
        shapes = report["shapes"]
        print(f"{path}: cuBLASLt {report['cublaslt_version']} on {report['gpu']} (finals: cold, paired, measured)")
        print(f"{'M':>5} {'N':>5} {'K':>5} {'torch_linear':>12} {'heuristic':>16} {'found':>16} {'found/heur':>10}"
              f"  {'configs timed':>13}  found identity")
        for shape in shapes:
            finals = shape["finals"]
            base = next(f for f in finals if f["name"] == "torch_linear")
            heur = min((f for f in finals if f["name"].startswith("heuristic")), key=lambda f: f["median_us"])
            found = min((f for f in finals if f["name"].startswith("found")), key=lambda f: f["median_us"])
            timed = sum(o["timed"] for o in shape["orients"].values())
            ident = " ".join(f"{k.split('_')[0]} {found['config'][k]}" for k in IDENT_KEYS)
            print(f"{shape['M']:>5} {shape['N']:>5} {shape['K']:>5} {base['median_us']:>12.2f} "
                  f"{heur['name'].split()[1]:>5} {heur['median_us']:>10.2f} {found['name'].split()[1]:>5} "
                  f"{found['median_us']:>10.2f} {found['ratio_vs_best_heuristic']:>10.3f}  {timed:>13}  {ident}")
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
        print(f"error: {path}: not a search file this script wrote ({type(exc).__name__}: {exc})")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
