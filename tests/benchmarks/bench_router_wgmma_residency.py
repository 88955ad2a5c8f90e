"""Diagnostic (GPU host with nvcc or a cached build; not a test, not a run file): for every router_hilo_wgmma config
at the router's official M of 32 and up, the grid it launches, its cluster size, how many of its clusters the GPU
holds at once (cudaOccupancyMaxActiveClusters) and so how many waves the grid takes, beside that config's median
from a config-survey run file (`python -m profiler survey`). Prints one table.

    python3 tests/benchmarks/bench_router_wgmma_residency.py datasets/runs/<date>_nvidia-h200_screen-router-wgmma-*.json
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("screen", help="a config-survey run file (python -m profiler survey) that timed router_hilo_wgmma")
    args = ap.parse_args(argv)

    import torch

    from datasets.jsonfile import read_json
    from kernels.launch.cluster_wgmma import router_resident_clusters
    from kernels.method import BF16_X_FP32_W
    from kernels.registry import get_method

    run = read_json(args.screen)
    timed = {(int(r["M"]), r["method"]): float(r["median_us"]) for r in run["results"]
             if r["family"] == "router" and r["method"].startswith("router_hilo_wgmma")}
    m = get_method("router_hilo_wgmma")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    w = torch.randn(256, 8192, device="cuda")
    print(f"{'M':>4} {'config':<44} {'CTAs':>5} {'cluster':>7} {'resident':>8} {'waves':>5} {'us':>7}")
    for M in (32, 128, 200, 256):
        for cfg in m.configs:
            if m.supports(BF16_X_FP32_W, M, 256, 8192, cfg):
                continue
            state = m.prepare(w, cfg)
            bw = 64 * cfg["MI"] * cfg["NWG"]
            ctas = (512 // bw) * cfg["CK"] * math.ceil(M / cfg["BT"])
            size = cfg["CN"] * cfg["CK"]
            resident = router_resident_clusters(state, M)
            waves = math.ceil(ctas / size / resident) if resident > 0 else float("nan")
            label = " ".join(f"{k}={v}" for k, v in cfg.items())
            us = timed.get((M, f"router_hilo_wgmma {label}"), float("nan"))
            print(f"{M:>4} {label:<44} {ctas:>5} {size:>7} {resident:>8} {waves:>5} {us:>7.2f}")
    print(f"{sms} SMs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
