"""prepare() layouts on CPU tensors: packing (lossless, invertible, tile-contiguous), transposed weights,
mm_swapped's transposed-view output and its M % 8 fallback."""
import pytest

torch = pytest.importorskip("torch")

from kernels.launch.mm_orient import MM_BIAS0, MM_SWAPPED, MM_WT, SWAP_BIAS_MAX_M  # noqa: E402
from kernels.launch.packed import pack, prepare as packed_prepare, unpack  # noqa: E402


def _w(N, K, dtype=torch.bfloat16, seed=0):
    return torch.randn(N, K, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("BN,BK", [(32, 512), (64, 256), (32, 128)])
def test_pack_is_lossless_and_invertible(BN, BK):
    w = _w(128, 1024)
    wp = pack(w, BN, BK)
    assert wp.shape == (128 // BN, 1024 // BK, BN, BK) and wp.is_contiguous()
    assert torch.equal(unpack(wp), w)                                   # invertible, bit-exact
    assert torch.equal(wp.flatten().sort().values, w.flatten().sort().values)  # a pure permutation


def test_each_tile_is_contiguous_and_in_place():
    w = _w(96, 1536)
    BN, BK = 32, 512
    flat = pack(w, BN, BK).flatten()
    kt = 1536 // BK
    for n in range(96 // BN):
        for k in range(kt):
            start = (n * kt + k) * BN * BK
            assert torch.equal(flat[start:start + BN * BK].view(BN, BK), w[n * BN:(n + 1) * BN, k * BK:(k + 1) * BK])


def test_pack_rejects_ragged_shapes():
    with pytest.raises(ValueError, match="divide"):
        pack(_w(100, 1024), 32, 512)


def test_packed_prepare_keeps_bf16_values():
    w = _w(64, 1024)
    state = packed_prepare(w, {"BM": 16, "BN": 32, "BK": 512, "SPLIT": 2, "num_warps": 4, "num_stages": 3})
    assert state["wp"].dtype == torch.bfloat16 and torch.equal(unpack(state["wp"]), w)


def test_mm_wt_prepares_contiguous_transpose():
    w = _w(48, 64)
    state = MM_WT.prepare(w, {})
    assert state["wT"].shape == (64, 48) and state["wT"].is_contiguous() and torch.equal(state["wT"], w.t())
    x = _w(5, 64, seed=1)
    assert torch.allclose(MM_WT.run(state, x).double(), x.double() @ w.double().t(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_mm_bias0_adds_a_zero_bias_and_keeps_the_product(layout):
    w = _w(48, 64)
    state = MM_BIAS0.prepare(w, {"W": layout})
    assert state["bias"].shape == (48,) and state["bias"].dtype == torch.bfloat16 and not state["bias"].any()
    assert torch.equal(state["w_mat"], w.t()) and state["w_mat"].is_contiguous() == (layout == "kn")
    for M in (1, 5, 16):
        x = _w(M, 64, seed=M)
        # x @ w^T + 0 is x @ w^T: the same BF16 result as the baseline's F.linear on this CPU
        assert torch.equal(MM_BIAS0.run(state, x), torch.nn.functional.linear(x, w))
        assert state["last_path"] == layout


@pytest.mark.parametrize("M,path", [(8, "swapped"), (16, "swapped"), (256, "swapped"), (1, "fallback"),
                                    (17, "fallback"), (SWAP_BIAS_MAX_M + 8, "fallback")])
def test_mm_bias0_swapped_route_and_its_fallback(M, path):
    w, x = _w(40, 64), _w(M, 64, seed=3)
    state = MM_BIAS0.prepare(w, {"W": "swap"})
    y = MM_BIAS0.run(state, x)
    assert state["last_path"] == path and y.shape == (M, 40) and y.dtype == torch.bfloat16
    assert not state["bias_m"].any() and not state["bias"].any()
    if path == "swapped":
        assert y.stride() == (1, M)  # the [N, M] result seen through .T, as mm_swapped
    ref = x.double() @ w.double().t()
    assert float((y.double() - ref).norm() / ref.norm()) < 1e-2


@pytest.mark.parametrize("M,path", [(8, "swapped"), (16, "swapped"), (256, "swapped"),
                                    (1, "fallback"), (3, "fallback"), (17, "fallback"), (255, "fallback")])
def test_mm_swapped_paths_and_values(M, path):
    w, x = _w(40, 64), _w(M, 64, seed=2)
    state = MM_SWAPPED.prepare(w, {})
    y = MM_SWAPPED.run(state, x)
    assert state["last_path"] == path
    assert y.shape == (M, 40) and y.dtype == torch.bfloat16
    if path == "swapped":
        assert y.stride() == (1, M)  # the [N, M] result seen through .T: non-contiguous on purpose
    ref = x.double() @ w.double().t()
    assert float((y.double() - ref).norm() / ref.norm()) < 1e-2
