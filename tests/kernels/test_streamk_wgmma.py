"""CPU: streamk_wgmma's configs and shape check (compiled instance, token tile, divisibility, CTAs per SM, stages,
shared memory per CTA and per SM) with their messages, the shared-memory formula against the kernel's, the refusals
before anything launches, and the kernel's work split and last-finisher sum replayed in numpy with the kernel's own
formulas (every unit in one run, every split tile's parts in distinct slots, the sum equal to the product)."""
from pathlib import Path

import numpy as np
import pytest

from kernels.cuda import build
from kernels.method import BF16
from kernels.methods_cuda import (SM_SMEM_BYTES, STREAMK_WGMMA_CONFIGS, WGMMA_COMPILED, WGMMA_SMEM_BYTES,
                                  streamk_wgmma_smem_bytes)
from kernels.registry import get_method

CU = Path(build.CUDA_DIR) / "cluster_wgmma.cu"
QKV = (2304, 8192)


def _cfg(**kw):
    return dict({"MI": 1, "NWG": 1, "BT": 16, "PER_SM": 1, "STAGES": 8}, **kw)


def _why(M, N, K, **kw):
    return get_method("streamk_wgmma").supports(BF16, M, N, K, _cfg(**kw))


def test_configs_cover_the_compiled_instances_at_the_deepest_ring_that_fits():
    cfgs = [tuple(c[k] for k in ("MI", "NWG", "BT", "PER_SM", "STAGES")) for c in STREAMK_WGMMA_CONFIGS]
    assert {c[:3] for c in cfgs if c[3] == 1} == set(WGMMA_COMPILED)
    assert {c[:3] for c in cfgs if c[3] == 2} == {(1, 1, 16), (1, 1, 32), (1, 1, 64)}
    assert {c for c in cfgs if c[4] > 8} == {(1, 2, 16, 1, 12), (1, 2, 32, 1, 11), (1, 2, 64, 1, 9),
                                              (1, 1, 16, 1, 22), (1, 1, 32, 1, 18), (1, 1, 64, 1, 14)}
    for mi, nwg, bt, per_sm, stages in cfgs:
        assert _why(bt, 64 * mi * nwg, 64, MI=mi, NWG=nwg, BT=bt, PER_SM=per_sm, STAGES=stages) is None
        deeper = _why(bt, 64 * mi * nwg, 64, MI=mi, NWG=nwg, BT=bt, PER_SM=per_sm, STAGES=stages + 1)
        assert stages == 8 or "bytes of shared memory" in deeper


def test_smem_formula_is_the_kernels():
    assert ("1024 /* alignment slack */ + BARRIER_BYTES + static_cast<size_t>(stages) * "
            "Shape<MI, NWG, BT>::STAGE_BYTES") in CU.read_text()
    assert streamk_wgmma_smem_bytes(1, 1, 16, 8) == 2048 + 8 * (64 + 16) * 128
    assert streamk_wgmma_smem_bytes(2, 2, 128, 4) == 2048 + 4 * (256 + 128) * 128


def test_shape_check_names_each_refusal():
    N, K = QKV
    assert _why(16, N, K) is None and _why(9, N, K) is None and _why(32, N, K) is None
    assert "no compiled instance MI=2 NWG=1 BT=16" in _why(16, N, K, MI=2)
    assert "BT=16 serves M from 9 to 32, not M=33" in _why(33, N, K)
    assert "N % BW == 0 and K % 64 == 0 (BW=128, N=2240, K=8192)" in _why(16, 2240, K, NWG=2)
    assert "N % BW == 0 and K % 64 == 0 (BW=64, N=2304, K=8160)" in _why(16, N, 8160)
    assert "1 or 2 CTAs per SM, not PER_SM=3" in _why(16, N, K, PER_SM=3)
    assert "2 <= STAGES <= 32 (STAGES=1)" in _why(16, N, K, STAGES=1)
    big = streamk_wgmma_smem_bytes(1, 1, 64, 8)
    assert 2 * (big + 1024) > SM_SMEM_BYTES and big <= WGMMA_SMEM_BYTES
    assert f"needs {big} bytes of shared memory per CTA at STAGES=8, 2 CTA(s) per SM" in _why(
        64, N, K, BT=64, PER_SM=2)
    assert "per CTA at STAGES=8, 1 CTA(s) per SM" in _why(128, N, K, NWG=2, BT=128)   # 264 KB per CTA


def test_prepare_and_run_refuse_before_anything_launches():
    torch = pytest.importorskip("torch")
    from kernels.launch.cluster_wgmma import prepare_streamk, run_streamk

    w = torch.zeros(2304, 8192, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"1 or 2 CTAs per SM, not PER_SM=4"):
        prepare_streamk(w, _cfg(PER_SM=4))
    with pytest.raises(ValueError, match=r"must be a bfloat16 \[N, K\]"):
        prepare_streamk(w.float(), _cfg())
    state = {"K": 64, "N": 64, "args": (1, 1, 16, 132, 8), "module": None, "ws": None, "counts": None}
    for M in (8, 33):
        with pytest.raises(ValueError, match=rf"config BT=16 serves M from 9 to 32, got M={M}"):
            run_streamk(state, torch.zeros(M, 64, dtype=torch.bfloat16))


def _replay_kernel(x, w, BW, BT, P, BK=64):
    """kernels/cuda/cluster_wgmma.cu streamk_wgmma_kernel's schedule in numpy, formula for formula: runs
    [p U / P, (p+1) U / P) of units (tile = u / kb_total, n fastest), segments cut at tile ends and run ends,
    partial segments stored in slot 2p (the run's first tile) or 2p + 1, the tile's counter compared with
    run_owner(last unit) - run_owner(first unit), the last finisher adding the other parts' slots."""
    M, K = x.shape
    N = w.shape[0]
    kb_total, tiles_n = K // BK, N // BW
    U = tiles_n * (-(-M // BT)) * kb_total
    xp = np.zeros((-(-M // BT) * BT, K))
    xp[:M] = x
    owner = lambda u: ((u + 1) * P - 1) // U
    slots, counts, y, written = {}, {}, np.full((M, N), np.nan), set()
    for p in range(P):
        u0, u1 = p * U // P, (p + 1) * U // P
        seg = u0
        for u in range(u0, u1):
            kb = u % kb_total
            if kb != kb_total - 1 and u != u1 - 1:
                continue
            tile = u // kb_total
            tn, t0 = tile % tiles_n, (tile // tiles_n) * BT
            k0, k1 = (seg % kb_total) * BK, (kb + 1) * BK
            acc = w[tn * BW:(tn + 1) * BW, k0:k1] @ xp[t0:t0 + BT, k0:k1].T
            whole = seg % kb_total == 0 and kb == kb_total - 1
            if not whole:
                slot = 2 * p + (0 if seg == u0 else 1)
                assert slot not in slots
                slots[slot] = acc
                first, last = owner(tile * kb_total), owner(tile * kb_total + kb_total - 1)
                counts[tile] = counts.get(tile, 0) + 1
                if counts[tile] - 1 != last - first:
                    seg = u + 1
                    continue
                for q in range(first, last + 1):
                    if q != p:
                        acc = acc + slots[2 * q + (0 if (q * U // P) // kb_total == tile else 1)]
            rows = slice(tn * BW, (tn + 1) * BW)
            assert tile not in written
            written.add(tile)
            t1 = min(t0 + BT, M)
            y[t0:t1, rows] = acc[:, :t1 - t0].T
            seg = u + 1
    assert len(written) == tiles_n * (-(-M // BT))
    return y


@pytest.mark.parametrize("M,N,K,BW,BT,P", [(16, 2304, 8192, 64, 16, 132), (13, 2304, 8192, 64, 16, 264),
                                          (128, 4096, 1024, 128, 128, 132), (200, 512, 640, 128, 128, 7),
                                          (5, 128, 128, 64, 16, 5), (3, 64, 64, 64, 16, 3)])
def test_schedule_and_last_finisher_sum_give_the_product(M, N, K, BW, BT, P):
    rng = np.random.default_rng(M + N + P)
    x, w = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    np.testing.assert_allclose(_replay_kernel(x, w, BW, BT, P), x @ w.T, rtol=1e-9, atol=1e-9)
