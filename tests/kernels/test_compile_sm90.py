"""Every dense Triton config compiles for sm_90 (H200) on this CPU machine and ptxas reports no spills.

Uses triton's bundled ptxas; the divisibility hints mirror what the JIT specializes at run time (16-byte
aligned pointers, sizes and strides that are multiples of 16), so the pipelined (cp.async) code is what is
checked. Skips where triton's ptxas is missing.
"""
import os
import re
import subprocess
import tempfile

import pytest

triton = pytest.importorskip("triton")

from datasets.hardware import SMEM_PER_BLOCK_BYTES  # noqa: E402
from kernels.methods_triton.dense import (GEMV_CONFIGS, PACKED_CONFIGS, SPLITK_ATOMIC_CONFIGS,  # noqa: E402
                                          SPLITK_CONFIGS, STREAMK_CONFIGS)
from kernels.methods_triton.gemv import GEMV_WIDE_CONFIGS  # noqa: E402
from kernels.methods_triton.router import (FMA_FLAG_CONFIGS, HILO_ATOMIC_CONFIGS, HILO_FLAG_CONFIGS,  # noqa: E402
                                           HILO_FUSED_CONFIGS)

PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
pytestmark = pytest.mark.skipif(not os.path.exists(PTXAS), reason="triton's bundled ptxas not found")


def _compile(fn, sig, consts, num_warps, num_stages=3):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    unaligned = {"M", "stride_on", "stride_yn"}
    attrs = {(i,): [["tt.divisibility", 16]] for i, (n, t) in enumerate(sig.items())
             if t.startswith("*") or (t == "i32" and n not in unaligned)}
    k = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": num_warps, "num_stages": num_stages})
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(k.asm["ptx"])
    try:
        out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", f.name, "-o", os.devnull],
                             capture_output=True, text=True, check=True).stderr
    finally:
        os.unlink(f.name)
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", out)]
    k.ptxas_registers = max([int(r) for r in re.findall(r"Used (\d+) registers", out)] or [0])
    return k, max(spills or [0])


def _tile_sig(names_types, cfg):
    meta = {k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT")}
    return {**names_types, **{k: "constexpr" for k in meta}}, meta


@pytest.mark.parametrize("cfg", GEMV_CONFIGS, ids=str)
def test_gemv_compiles(cfg):
    from kernels.launch.gemv import block_k
    from kernels.triton.gemv import gemv_kernel

    for K in (8192, 4096, 1024):
        sig = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "N": "i32", "K": "i32", "stride_wn": "i32",
               "BN": "constexpr", "BK": "constexpr", "CACHE": "constexpr"}
        _, spills = _compile(gemv_kernel, sig, {"BN": cfg["BN"], "BK": block_k(K, cfg["BN"], cfg["num_warps"]),
                                                "CACHE": cfg["cache"]}, cfg["num_warps"])
        assert spills == 0


@pytest.mark.parametrize("cfg", GEMV_WIDE_CONFIGS, ids=str)
def test_gemv_wide_compiles_without_spills(cfg):
    from kernels.method import BF16
    from kernels.registry import METHODS
    from kernels.triton.gemv_wide import gemv_wide_kernel

    sig = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "stride_wn": "i32",
           "K": "constexpr", "BN": "constexpr", "BK": "constexpr", "CACHE": "constexpr"}
    Ks = [K for K in (1024, 4096, 8192) if METHODS["gemv_wide"].supports(BF16, 1, 8192, K, cfg) is None]
    assert Ks
    for K in Ks:
        k, spills = _compile(gemv_wide_kernel, sig, {"K": K, "BN": cfg["BN"], "BK": cfg["BK"], "CACHE": cfg["cache"]},
                             cfg["num_warps"])
        assert spills == 0, K
        assert "ld.global" in k.asm["ptx"] and "cp.async" not in k.asm["ptx"]   # direct loads, no pipeline


@pytest.mark.parametrize("cfg", SPLITK_CONFIGS, ids=str)
def test_splitk_and_fused_compile_pipelined(cfg):
    from kernels.triton.splitk import splitk_fused_kernel, splitk_partial_kernel

    out_t = "*fp32" if cfg["SPLIT"] > 1 else "*bf16"
    sig, meta = _tile_sig({"x_ptr": "*bf16", "w_ptr": "*bf16", "out_ptr": out_t, "M": "i32", "N": "i32", "K": "i32",
                           "stride_xm": "i32", "stride_wn": "i32", "stride_os": "i32", "stride_om": "i32",
                           "stride_on": "i32"}, cfg)
    k, spills = _compile(splitk_partial_kernel, sig, meta, cfg["num_warps"], cfg["num_stages"])
    assert spills == 0 and "cp.async" in k.asm["ptx"]
    sig, meta = _tile_sig({"x_ptr": "*bf16", "w_ptr": "*bf16", "p_ptr": "*fp32", "y_ptr": "*bf16", "cnt_ptr": "*i32",
                           "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32",
                           "stride_ps": "i32", "stride_pm": "i32", "stride_ym": "i32", "stride_yn": "i32"}, cfg)
    k, spills = _compile(splitk_fused_kernel, sig, meta, cfg["num_warps"], cfg["num_stages"])
    assert spills == 0
    if cfg["SPLIT"] > 1:
        assert "atom.global.gpu.acq_rel.add" in k.asm["ptx"] and "bar.sync" in k.asm["ptx"]


@pytest.mark.parametrize("cfg", PACKED_CONFIGS, ids=str)
def test_packed_compiles_pipelined(cfg):
    from kernels.triton.packed import packed_kernel

    out_t = "*fp32" if cfg["SPLIT"] > 1 else "*bf16"
    sig, meta = _tile_sig({"x_ptr": "*bf16", "wp_ptr": "*bf16", "out_ptr": out_t, "M": "i32", "N": "i32", "K": "i32",
                           "stride_xm": "i32", "stride_os": "i32", "stride_om": "i32", "stride_on": "i32"}, cfg)
    k, spills = _compile(packed_kernel, sig, meta, cfg["num_warps"], cfg["num_stages"])
    assert spills == 0 and "cp.async" in k.asm["ptx"]


SPLITK_ATOMIC_SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "ws_ptr": "*fp32", "cnt_ptr": "*i32",
                     "M": "i32", "N": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32",
                     "K": "constexpr", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                     "SPLIT": "constexpr", "HILO": "constexpr"}


def _check_single_launch(k, split):
    """One launch: the reduction is the atomic workspace, taken out and zeroed by the last arriver."""
    ptx = k.asm["ptx"]
    if split > 1:
        assert "atom.global.gpu.acq_rel.add" in ptx          # the arrival counter (release/acquire)
        assert "atom.global.gpu.relaxed.exch.b32" in ptx     # the last arriver's take-and-zero
        assert re.search(r"atom\.global\.gpu\.relaxed\.add(\.v[24])?\.f32", ptx)   # FP32 partials added
    else:
        assert "atom.global" not in ptx


@pytest.mark.parametrize("cfg", SPLITK_ATOMIC_CONFIGS, ids=str)
def test_splitk_atomic_compiles_pipelined_without_spills(cfg):
    from kernels.triton.splitk_atomic import splitk_atomic_kernel

    for K in sorted({K for K in (8192, 4096, 1024) if K % (cfg["BK"] * cfg["SPLIT"]) == 0}):
        consts = {"K": K, **{k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT")}, "HILO": False}
        k, spills = _compile(splitk_atomic_kernel, SPLITK_ATOMIC_SIG, consts, cfg["num_warps"], cfg["num_stages"])
        assert spills == 0
        # a slice of several K steps is software-pipelined (cp.async); a single step has no loop to pipeline
        assert ("cp.async" in k.asm["ptx"]) == (K // cfg["SPLIT"] > cfg["BK"]), K
        _check_single_launch(k, cfg["SPLIT"])


@pytest.mark.parametrize("cfg", HILO_FUSED_CONFIGS, ids=str)
def test_router_hilo_fused_compiles_without_spills(cfg):
    from kernels.triton.splitk_atomic import splitk_atomic_kernel

    sig = {**SPLITK_ATOMIC_SIG, "y_ptr": "*fp32"}
    consts = {"K": 8192, **{k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT")}, "HILO": True}
    k, spills = _compile(splitk_atomic_kernel, sig, consts, cfg["num_warps"], cfg["num_stages"])
    assert spills == 0 and "cp.async" in k.asm["ptx"]
    _check_single_launch(k, cfg["SPLIT"])


@pytest.mark.parametrize("cfg", HILO_ATOMIC_CONFIGS, ids=str)
def test_router_hilo_atomic_compiles_without_spills(cfg):
    """router_hilo_atomic / _pdl (one kernel): no spills, the shared-memory pipeline fits the SM, the PDL build
    waits on the zero-fill grid before its relaxed FP32 adds."""
    from kernels.triton.router import router_hilo_atomic_kernel

    sig = {"x_ptr": "*bf16", "w2_ptr": "*bf16", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32",
           "stride_wn": "i32", "stride_ym": "i32",
           **{k: "constexpr" for k in ("K", "BM", "BN", "BK", "SPLIT", "USE_PDL")}}
    for pdl in (False, True):
        consts = {"K": 8192, "USE_PDL": pdl, **{k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT")}}
        k, spills = _compile(router_hilo_atomic_kernel, sig, consts, cfg["num_warps"], cfg["num_stages"])
        ptx = k.asm["ptx"]
        assert spills == 0
        assert k.metadata.shared <= SMEM_PER_BLOCK_BYTES                # the H200's shared memory per block
        assert ("griddepcontrol.wait" in ptx) == pdl
        assert re.search(r"\.global\.gpu\.relaxed\.add(\.v[24])?\.f32", ptx)
        if 8192 // cfg["SPLIT"] > cfg["BK"]:
            assert "cp.async.cg" in ptx                            # a slice of several K steps is pipelined


@pytest.mark.parametrize("cfg", HILO_FLAG_CONFIGS, ids=str)
def test_router_hilo_flag_compiles_pipelined_without_spills(cfg):
    from kernels.triton.router import router_hilo_flag_kernel

    tma = cfg["W_LOAD"] in ("tma", "pack_tma")
    sig = {"x_ptr": "*bf16", "w2_ptr": "*bf16",
           "w_desc": f"tensordesc<bf16[{2 * cfg['BN']}, {cfg['BK']}]>" if tma else "constexpr",
           "y_ptr": "*fp32", "flag_ptr": "*i32", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_wn": "i32",
           "stride_ym": "i32",
           **{k: "constexpr" for k in ("K", "BM", "BN", "BK", "SPLIT", "W_LOAD", "SWAP", "FLAG_STRIDE")}}
    consts = {"K": 8192, "FLAG_STRIDE": 32, **{k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT", "W_LOAD", "SWAP")},
              **({} if tma else {"w_desc": None})}
    k, spills = _compile(router_hilo_flag_kernel, sig, consts, cfg["num_warps"], cfg["num_stages"])
    ptx = k.asm["ptx"]
    assert spills == 0
    assert ("cp.async.bulk.tensor" in ptx) == tma                  # TMA copies exactly when asked for
    assert "cp.async.cg" in ptx                                    # the K loop is software-pipelined
    # the zeroing program's release, the adders' acq_rel token and acquire wait (an atomic add of 0 with acquire
    # becomes an acquire load), their relaxed FP32 adds
    for op in ("atom.global.gpu.release.add.u32", "atom.global.gpu.acq_rel.add.u32", "ld.global.gpu.acquire.b32"):
        assert op in ptx, op
    assert re.search(r"\.global\.gpu\.relaxed\.add(\.v[24])?\.f32", ptx)


@pytest.mark.parametrize("cfg", FMA_FLAG_CONFIGS, ids=str)
def test_router_fma_flag_compiles_without_spills(cfg):
    """Direct FP32 FMAs (no tensor-core MMA), the FP32 weight streamed with evict_first, the K loop pipelined
    through shared memory exactly when num_stages > 1, router_hilo_flag's token protocol, and registers that let
    the block launch (65536 per SM over 32 * num_warps threads)."""
    from kernels.triton.router import router_fma_flag_kernel

    sig = {"x_ptr": "*bf16", "w_ptr": "*fp32", "y_ptr": "*fp32", "flag_ptr": "*i32", "M": "i32", "N": "i32",
           "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32",
           **{k: "constexpr" for k in ("K", "MT", "BN", "BK", "SPLIT", "STAGES", "FLAG_STRIDE")}}
    consts = {"K": 8192, "FLAG_STRIDE": 32, "STAGES": cfg["num_stages"],
              **{k: cfg[k] for k in ("MT", "BN", "BK", "SPLIT")}}
    k, spills = _compile(router_fma_flag_kernel, sig, consts, cfg["num_warps"], cfg["num_stages"])
    ptx = k.asm["ptx"]
    print(f"router_fma_flag {cfg}: {k.ptxas_registers} registers, {spills} bytes spilled, "
          f"{k.metadata.shared} bytes shared")
    assert spills == 0
    assert k.ptxas_registers * 32 * cfg["num_warps"] <= 65536
    assert k.metadata.shared <= SMEM_PER_BLOCK_BYTES
    assert "fma.rn.f32" in ptx and "mma" not in ptx and "wgmma" not in ptx
    assert ("cp.async.cg" in ptx or "cp.async.ca" in ptx) == (cfg["num_stages"] > 1)
    if cfg["num_stages"] == 1:
        assert "ld.global.L1::evict_first" in ptx
    for op in ("atom.global.gpu.release.add.u32", "atom.global.gpu.acq_rel.add.u32", "ld.global.gpu.acquire.b32"):
        assert op in ptx, op
    assert re.search(r"\.global\.gpu\.relaxed\.add(\.v[24])?\.f32", ptx)


def compile_streamk(cfg, K=8192):
    """(compiled kernel, spill bytes) of kernels/triton/streamk.py at one config (TMA descriptors or pointers)."""
    from kernels.triton.streamk import streamk_kernel

    tma = cfg["TMA"]
    desc = (lambda rows: f"tensordesc<bf16[{rows}, {cfg['BK']}]>") if tma else (lambda rows: "constexpr")
    sig = {"x_ptr": "*bf16", "w_ptr": "*bf16", "x_desc": desc(cfg["BM"]), "w_desc": desc(cfg["BN"]),
           "y_ptr": "*bf16", "ws_ptr": "*fp32", "cnt_ptr": "*i32", "M": "i32", "N": "i32", "stride_xm": "i32",
           "stride_wn": "i32", "stride_ym": "i32", "K": "constexpr", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr", "TMA": "constexpr"}
    consts = {"K": K, **{k: cfg[k] for k in ("BM", "BN", "BK")}, "TMA": tma,
              **({} if tma else {"x_desc": None, "w_desc": None})}
    return _compile(streamk_kernel, sig, consts, cfg["num_warps"], cfg["num_stages"])


@pytest.mark.parametrize("cfg", STREAMK_CONFIGS, ids=str)
def test_streamk_compiles_to_wgmma_without_spills(cfg):
    tma = cfg["TMA"]
    k, spills = compile_streamk(cfg)
    ptx = k.asm["ptx"]
    assert spills == 0 and "wgmma.mma_async" in ptx                # Hopper tensor-core path, not mma.sync
    assert ("cp.async.bulk.tensor" in ptx) == bool(tma)            # TMA copies exactly when asked for
    assert "atom.global.gpu.acq_rel.add" in ptx and "atom.global.gpu.relaxed.exch.b32" in ptx
