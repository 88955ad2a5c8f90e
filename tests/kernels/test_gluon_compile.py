"""Every config of skinny_ws (kernels/gluon/skinny_ws.py) compiles for sm_90a (H200) on this CPU machine at the
launcher's register cap, and the PTX is the design's: TMA tile loads into an mbarrier ring, the warpgroup MMA with
the tokens as its N dimension, a warp-specialized producer (setmaxnreg: the partitions' register budgets), the
single-launch reduction (vector FP32 atomics, an acq_rel counter, the exchange that re-zeroes the workspace) and
no spills. Skips where triton's ptxas is missing."""
import os
import re
import subprocess
import tempfile

import pytest

triton = pytest.importorskip("triton")
pytest.importorskip("triton.experimental.gluon")

from kernels.launch.gluon_skinny import maxnreg  # noqa: E402
from kernels.methods_gluon import (FIXUP_CONFIGS, HILO_FIXUP_CONFIGS, HILO_WS_CONFIGS, SKINNY_CONFIGS, SKINNY_MAX_M,
                                   fixup_smem_bytes, skinny_smem_bytes)

PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
pytestmark = pytest.mark.skipif(not os.path.exists(PTXAS), reason="triton's bundled ptxas not found")


def _desc_type(rows: int, cols: int) -> str:
    """The JIT's signature string of a host TensorDescriptor of [rows, cols] bf16 boxes (as run() builds them)."""
    import triton.experimental.gluon.language as gl

    layout = gl.NVMMASharedLayout.get_default_for([rows, cols], gl.bfloat16)
    return f"tensordesc<bf16[{rows}, {cols}],{layout!r}>"


def _compile(kernel, sig: dict, consts: dict, cfg: dict, regs: int | None):
    """(compiled kernel, ptxas -v stderr) of a Gluon kernel for sm_90a: int32 scalars, 16-byte aligned pointers."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(sig.values()) if t.startswith("*")}
    k = triton.compile(GluonASTSource(kernel, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg["num_warps"], "maxnreg": regs})
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(k.asm["ptx"])
    try:
        err = subprocess.run([PTXAS, "-arch=sm_90a", "-v", f.name, "-o", os.devnull], capture_output=True, text=True,
                             check=True).stderr
    finally:
        os.unlink(f.name)
    return k, err


def _signature(cfg: dict, hilo: bool, scalars: tuple, consts: tuple) -> dict:
    return {"w_desc": _desc_type(cfg["BN"], cfg["BK"]), "lo_desc": _desc_type(cfg["BN"], cfg["BK"]),
            "x_desc": _desc_type(cfg["BM"], cfg["BK"]), "y_ptr": "*fp32" if hilo else "*bf16", "ws_ptr": "*fp32",
            "cnt_ptr": "*i32", **{n: "i32" for n in scalars}, **{n: "constexpr" for n in consts}}


def compile_skinny(cfg: dict, N: int, K: int, hilo: bool = False):
    """skinny_ws_kernel for one config at one (N, K) (hilo: the router's hi/lo pair and an FP32 output)."""
    from kernels.gluon.skinny_ws import skinny_ws_kernel

    consts = {"N": N, "K": K, "MAX_M": SKINNY_MAX_M, "STAGES": cfg["STAGES"], "PACK": bool(cfg["PACK"]),
              "HILO": hilo, "num_warps": cfg["num_warps"]}
    sig = _signature(cfg, hilo, ("M", "stride_ym", "M_TILES"), tuple(consts))
    return _compile(skinny_ws_kernel, sig, consts, cfg, maxnreg(cfg, 2 if hilo else 1))


CASES = [(False, c, 2304) for c in SKINNY_CONFIGS] + [(True, c, 256) for c in HILO_WS_CONFIGS]


@pytest.mark.parametrize("hilo,cfg,N", CASES, ids=str)
def test_skinny_ws_compiles_to_tma_wgmma_warp_specialized(hilo, cfg, N):
    k, err = compile_skinny(cfg, N, 8192, hilo)
    ptx = k.asm["ptx"]
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", err)]
    assert max(spills or [0]) == 0, err
    # both tiles of a K step arrive by TMA and complete on the slot's mbarrier; the consumer waits on its parity
    tma_loads = ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes")
    assert tma_loads == (3 if hilo else 2) * cfg["BK"] // 64      # 128-byte swizzle: one box per 64 bf16 of K
    assert "mbarrier.arrive.expect_tx" in ptx and "mbarrier.try_wait.parity" in ptx
    assert "cp.async.ca" not in ptx and "cp.async.cg" not in ptx and "ld.global" not in ptx.split("atom")[0]
    # the warpgroup MMA: 64 weight rows by the token tile (split across two warpgroups at num_warps=8, BN=64)
    n = {int(v) for v in re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.bf16\.bf16", ptx)}
    groups = cfg["num_warps"] // 4
    assert n == {cfg["BM"] // (groups if cfg["BN"] < 64 * groups else 1)}, n
    assert "mma.sync" not in ptx
    # warp specialization: the partitions rebalance registers; the block is num_warps + 4 warps
    assert "setmaxnreg.dec.sync.aligned.u32" in ptx and "setmaxnreg.inc.sync.aligned.u32" in ptx
    assert f".reqntid {(cfg['num_warps'] + 4) * 32}" in ptx
    # the single-launch reduction
    assert "atom.global.gpu.relaxed.add.v4.f32" in ptx and "atom.global.gpu.relaxed.add.f32" not in ptx
    assert "atom.global.gpu.acq_rel.add" in ptx and "atom.global.gpu.relaxed.exch.b32" in ptx
    # the shape check's shared-memory figure is the compiler's (within the mbarriers' alignment)
    need = skinny_smem_bytes(cfg, 2 if hilo else 1)
    assert abs(k.metadata.shared - need) <= 128, (k.metadata.shared, need)


@pytest.mark.parametrize("N,K", [(4096, 8192), (8192, 1024), (1024, 4096)])
def test_skinny_ws_compiles_at_the_other_families(N, K):
    """The default config at pooler, o and the unpooler's N=1024 slice (the shape check admits them all)."""
    k, err = compile_skinny(SKINNY_CONFIGS[0], N, K)
    assert "wgmma.mma_async" in k.asm["ptx"] and "0 bytes spill stores" in err


def compile_fixup(cfg: dict, N: int, K: int, hilo: bool = False):
    """skinny_fixup_kernel for one config at one (N, K) (hilo: the router's hi/lo pair and an FP32 output)."""
    from kernels.gluon.skinny_ws import skinny_fixup_kernel
    from kernels.launch.gluon_skinny import fixup_maxnreg

    consts = {"N": N, "K": K, "STAGES": cfg["STAGES"], "PACK": bool(cfg["PACK"]), "HILO": hilo,
              "num_warps": cfg["num_warps"]}
    sig = _signature(cfg, hilo, ("M", "stride_ym", "M_TILES", "SPLIT"), tuple(consts))
    return _compile(skinny_fixup_kernel, sig, consts, cfg, fixup_maxnreg(cfg, 2 if hilo else 1))


@pytest.mark.parametrize("hilo,cfg,N", [(False, c, 2304) for c in FIXUP_CONFIGS] +
                         [(True, c, 256) for c in HILO_FIXUP_CONFIGS], ids=str)
def test_skinny_ws_fixup_compiles_without_data_atomics(hilo, cfg, N):
    """Every skinny_ws_fixup config: the same TMA ring and warp-specialized wgmma as skinny_ws, no spills, and a
    reduction without atomics on data: the partial and y by plain stores, the slots read through L2 (ld.global.cg),
    atomics only on the int32 counters (release arrive, acquire spin, acq_rel done count, relaxed resets); shared
    memory is the ring alone, as the shape check counts it."""
    k, err = compile_fixup(cfg, N, 8192, hilo)
    ptx = k.asm["ptx"]
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", err)]
    assert max(spills or [0]) == 0, err
    tma = ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes")
    assert tma == (3 if hilo else 2) * cfg["BK"] // 64   # one box per 64 bf16 of K per operand (H, L, x)
    assert "wgmma.mma_async" in ptx and "setmaxnreg.inc.sync.aligned.u32" in ptx
    assert "ld.global.cg" in ptx and "st.global" in ptx
    atoms = set(re.findall(r"atom\.global\.[\w.]+", ptx))
    assert atoms and all(a.endswith((".b32", ".s32", ".u32")) for a in atoms), atoms     # counters only
    assert "atom.global.gpu.release.add.u32" in atoms and "atom.global.gpu.acq_rel.add.u32" in atoms, atoms
    assert "ld.global.gpu.acquire.b32" in ptx          # the spin: an acquire load of the arrival count
    assert not re.search(r"\bred\.global", ptx)
    need = fixup_smem_bytes(cfg, 2 if hilo else 1)
    assert abs(k.metadata.shared - need) <= 128, (k.metadata.shared, need)
