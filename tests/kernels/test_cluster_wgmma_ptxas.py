"""Where a CUDA compiler is present (the H200 image; not CI): every compiled instance of kernels/cuda/cluster_wgmma.cu,
both kernels and the router's hi/lo instances, built for sm_90a with ptxas's report, and the report checked for what
silently costs time there -- wgmma.mma_async serialized by the compiler (ptxas C7518: a path on which the accumulators
could be touched while an MMA is in flight makes ptxas wait after every MMA of the kernel), warpgroup fences the
compiler injects between MMAs (C7519) and register spills."""
import re
import subprocess

import pytest

from kernels.cuda import build
from kernels.methods_cuda import (WGMMA_ATOMS, WGMMA_COMPILED, WGMMA_HILO_ATOMS, WGMMA_HILO_COMPILED,
                                  WGMMA_SMEM_BYTES, wgmma_smem_bytes)

pytestmark = pytest.mark.slow


def _ptxas_report(tmp_path) -> str:
    nvcc = build.find_nvcc()
    if not nvcc:
        pytest.skip("no CUDA compiler (nvcc) on this host")
    src = build.CUDA_DIR / "cluster_wgmma.cu"
    lines = [f'#include "{src}"']
    for mi, nwg, bt in WGMMA_COMPILED:
        lines.append(f"template cudaError_t projlab_cluster_wgmma::launch_ka<{mi}, {nwg}, {bt}>(const void*, "
                     "const void*, void*, int, int, int, int, int, int, int, cudaStream_t);")
        lines.append(f"template cudaError_t projlab_cluster_wgmma::launch_streamk_one<{mi}, {nwg}, {bt}>("
                     "const void*, const void*, void*, float*, int*, int, int, int, int, int, cudaStream_t);")
    # the router's hi/lo instances, through their dispatcher (it instantiates every (MI, NWG, BT) and atom count)
    lines.append("cudaError_t hilo_all(const void* x, const void* w, float* y) { return "
                 "projlab_cluster_wgmma::launch_hilo(x, w, y, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, nullptr); }")
    stub = tmp_path / "instances.cu"
    stub.write_text("\n".join(lines) + "\n")
    done = subprocess.run([nvcc, *build.CUDA_CFLAGS, "-Xptxas", "-v", "-c", str(stub), "-o", str(tmp_path / "o.o")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


def _cluster_instances() -> int:
    """One cluster kernel per (MI, NWG, BT) and K atoms per stage, KA = 4 only where two such stages fit."""
    return sum(1 for mi, nwg, bt in WGMMA_COMPILED for ka in WGMMA_ATOMS
               if wgmma_smem_bytes(mi, nwg, bt, 2, ka) <= WGMMA_SMEM_BYTES)


def test_no_instance_serializes_its_mmas_or_spills(tmp_path):
    report = _ptxas_report(tmp_path)
    kernels = re.findall(r"Compiling entry function '(\w+)'", report)
    assert sum("cluster_wgmma_kernel" in k for k in kernels) == _cluster_instances() + len(WGMMA_HILO_COMPILED) * len(
        WGMMA_HILO_ATOMS)
    assert sum("streamk_wgmma_kernel" in k for k in kernels) == len(WGMMA_COMPILED)
    assert "C7518" not in report, [ln for ln in report.splitlines() if "C7518" in ln][:2]
    # C7519: ptxas fences the accumulators itself inside a run of MMAs (a wgmma loop over a runtime trip count did)
    assert "C7519" not in report, [ln for ln in report.splitlines() if "C7519" in ln][:2]
    spills = [ln for ln in report.splitlines() if "spill" in ln and not re.search(r"\b0 bytes spill stores, 0 bytes spill loads", ln)]
    assert not spills, spills[:3]
