"""Router prepare() layouts and the router / gemv_wide Method records (CPU, no kernels run)."""
import pytest

from datasets import load_workload
from kernels.method import BF16, BF16_X_FP32_W as FP32_W
from kernels.registry import METHODS

ROUTER_NAMES = ("router_gemv_fp32", "router_hilo_splitk", "router_hilo_atomic", "router_hilo_atomic_pdl",
                "router_hilo_packed_mm", "router_hilo_fused", "router_hilo_swap", "router_hilo_flag")
RN, RK = 256, 8192


def test_router_methods_registered_and_configs_valid():
    for name in (*ROUTER_NAMES, "gemv_wide"):
        m = METHODS[name]
        assert m.configs, name
        for cfg in m.configs:
            assert m.check_config(cfg) is None, (name, cfg)
    assert all(METHODS[n].dtypes == (FP32_W,) for n in ROUTER_NAMES)   # BF16 x, FP32 w and y (muse's router)
    assert METHODS["gemv_wide"].dtypes == (BF16,)
    muse = load_workload()
    assert all(METHODS[n].serves(muse.family("router")) for n in ROUTER_NAMES)
    assert METHODS["gemv_wide"].serves(muse.family("o")) and not METHODS["gemv_wide"].serves(muse.family("router"))


@pytest.mark.parametrize("M", [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 128, 129, 255, 256])
def test_hilo_shape_checks_admit_every_router_m(M):
    for name in ROUTER_NAMES[1:]:
        m = METHODS[name]
        for cfg in m.configs:
            assert m.supports(FP32_W, M, RN, RK, cfg) is None, (name, cfg, M)


def test_m1_only_shape_checks():
    g, w = METHODS["router_gemv_fp32"], METHODS["gemv_wide"]
    for cfg in g.configs:
        assert g.supports(FP32_W, 1, RN, RK, cfg) is None
        assert "M=1" in g.supports(FP32_W, 2, RN, RK, cfg)
    for cfg in w.configs:
        K = max(1024, cfg["BK"])       # the short-row configs serve o (K=1024), the long-row ones K >= their BK
        assert w.supports(BF16, 1, 8192, K, cfg) is None
        assert w.supports(BF16, 8, 8192, K, cfg) is not None
    assert sum(w.supports(BF16, 1, 8192, 1024, c) is None for c in w.configs) >= 8
    assert "not x bfloat16, w float32, y float32" in w.supports(FP32_W, 1, RN, RK, w.configs[0])


def test_tile_shape_check_rejects_bad_split_and_smem():
    m = METHODS["router_hilo_atomic"]
    bad_split = dict(m.configs[0], SPLIT=64, BK=256)          # 64*256 = 16384 does not divide 8192
    assert "K %" in m.supports(FP32_W, 8, RN, RK, bad_split)
    big = dict(m.configs[0], BM=128, BN=128, BK=256, SPLIT=1, num_stages=5)
    assert "shared memory" in m.supports(FP32_W, 8, RN, RK, big)


def _w32(N=64, K=512, seed=0):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N, K, generator=g) * K ** -0.5
    w[0, :8] = torch.tensor([1.00390625, -3.0e-3, 1e-30, 0.0, 65504.0, -1.0, 2.0 ** -20, 7.0])
    return w


def test_hilo_split_recombines():
    torch = pytest.importorskip("torch")
    from kernels.launch.router import split_hilo

    w = _w32()
    hi, lo = split_hilo(w)
    assert hi.dtype == lo.dtype == torch.bfloat16 and hi.shape == lo.shape == w.shape
    recon = hi.double() + lo.double()
    rel = ((recon - w.double()).abs() / w.double().abs().clamp_min(1e-300))
    normal = w.abs() > 1e-30                     # skip values in BF16's subnormal range
    assert float(rel[normal].max()) <= 2.0 ** -16
    assert float(recon[0, 0]) == 1.00390625      # the write-up's tie example: H = 1.0, L = 2^-8 exactly
    assert float(hi[0, 0]) == 1.0
    # Whole-matrix error is far inside the router's 1e-4 rel-L2 tolerance.
    assert float((recon - w.double()).norm() / w.double().norm()) < 1e-5


def test_hilo_split_rejects_non_fp32():
    torch = pytest.importorskip("torch")
    from kernels.launch.router import split_hilo

    with pytest.raises(ValueError, match="float32"):
        split_hilo(_w32().to(torch.bfloat16))


def test_interleave_is_lossless_permutation():
    torch = pytest.importorskip("torch")
    from kernels.launch.router import interleave_rows, split_hilo, stack_rows

    hi, lo = split_hilo(_w32())
    w2 = interleave_rows(hi, lo)
    assert w2.shape == (2 * hi.shape[0], hi.shape[1]) and w2.is_contiguous()
    assert torch.equal(w2[0::2], hi) and torch.equal(w2[1::2], lo)
    st = stack_rows(hi, lo)
    n = hi.shape[0]
    perm = torch.arange(2 * n).view(2, n).t().reshape(-1)        # stacked row index of each interleaved row
    assert torch.equal(st[perm], w2)
    # Bits are moved, never changed.
    assert torch.equal(w2.view(torch.int16).sort(dim=0).values.sum(), st.view(torch.int16).sort(dim=0).values.sum())


def test_prepare_states_never_see_activations():
    torch = pytest.importorskip("torch")
    from kernels.launch import router as R
    from kernels.launch import splitk_swap as S

    w = _w32(K=RK)     # the default configs' K steps tile the router's K
    preps = {"router_gemv_fp32": R.prepare_gemv_fp32, "router_hilo_splitk": R.prepare_hilo_splitk,
             "router_hilo_atomic": R.prepare_hilo_atomic, "router_hilo_packed_mm": R.prepare_hilo_packed_mm,
             "router_hilo_fused": R.prepare_hilo_fused, "router_hilo_swap": S.prepare_hilo,
             "router_hilo_flag": R.prepare_hilo_flag}
    for name, prep in preps.items():
        state = prep(w, dict(METHODS[name].configs[0]))
        assert state["N"] == w.shape[0] and state["K"] == w.shape[1]
    st = S.prepare_hilo(w, dict(METHODS["router_hilo_swap"].configs[0]))
    hi, lo = R.split_hilo(w)
    assert torch.equal(st["w"], hi) and torch.equal(st["lo"], lo) and st["ws"].shape == (w.shape[0], 256)
    st = R.prepare_hilo_packed_mm(w, {})
    hi, lo = R.split_hilo(w)
    assert st["w2t"].shape == (w.shape[1], 2 * w.shape[0])
    assert (st["w2t"].t()[: w.shape[0]] == hi).all() and (st["w2t"].t()[w.shape[0]:] == lo).all()


def test_gemv_shape_checks_name_the_offending_values():
    wide, fp32 = METHODS["gemv_wide"], METHODS["router_gemv_fp32"]
    spill = wide.supports(BF16, 1, 8192, 1024, {"BN": 32, "BK": 1024, "num_warps": 4, "cache": ""})
    assert "would spill" in spill and "BN=32" in spill and "num_warps=4" in spill
    assert "K=16384" in wide.supports(BF16, 1, 8192, 16384, wide.configs[0])
    rows = wide.supports(BF16, 1, 8192, 8192, {"BN": 32, "BK": 512, "num_warps": 8, "cache": ".cg"})
    assert "BN*K = 262144" in rows and "BN=32" in rows
    assert "BK=1024" in wide.supports(BF16, 1, 8192, 1000, wide.configs[0])
    assert "would spill" in fp32.supports(FP32_W, 1, RN, RK, {"BN": 4, "BK": 8192, "num_warps": 4, "cache": ""})


def test_hilo_flag_state_and_shape_check():
    torch = pytest.importorskip("torch")
    from kernels.launch import router as R
    from kernels.methods_triton.router import HILO_FLAG_MAX_M

    m = METHODS["router_hilo_flag"]
    cfg = next(c for c in m.configs if c["W_LOAD"] == "cp")
    w = _w32(K=RK)
    st = R.prepare_hilo_flag(w, dict(cfg))
    hi, lo = R.split_hilo(w)
    assert torch.equal(st["w2"], R.interleave_rows(hi, lo)) and st["w_desc"] is None
    # one zeroed token count per output tile of the largest M served, each on its own 128-byte line
    assert st["flags"].dtype == torch.int32 and not st["flags"].any() and R.FLAG_STRIDE * 4 == 128
    assert st["flags"].numel() == -(-HILO_FLAG_MAX_M // cfg["BM"]) * (w.shape[0] // cfg["BN"]) * R.FLAG_STRIDE
    assert m.supports(FP32_W, HILO_FLAG_MAX_M, RN, RK, cfg) is None
    assert "token counts" in m.supports(FP32_W, HILO_FLAG_MAX_M + 1, RN, RK, cfg)
    assert "N=200" in m.supports(FP32_W, 8, 200, RK, cfg)
    assert "K / BK >= SPLIT" in m.supports(FP32_W, 8, RN, 1024, cfg)      # 8 K steps < SPLIT=32 slices


def test_hilo_fused_shape_check_bounds_and_reasons():
    from kernels.methods_triton.router import HILO_FUSED_MAX_M

    m = METHODS["router_hilo_fused"]
    cfg = m.configs[0]
    assert m.supports(FP32_W, HILO_FUSED_MAX_M, RN, RK, cfg) is None
    assert "workspace" in m.supports(FP32_W, HILO_FUSED_MAX_M + 1, RN, RK, cfg)
    assert "N % BN" in m.supports(FP32_W, 8, 250, RK, cfg)
    assert "K % (BK*SPLIT)" in m.supports(FP32_W, 8, RN, 8000, cfg)


def test_hilo_swap_shape_check_bounds_and_reasons():
    from kernels.methods_triton.dense import SPLITK_SWAP_MAX_M

    m = METHODS["router_hilo_swap"]
    cfg = m.configs[0]
    assert m.supports(FP32_W, SPLITK_SWAP_MAX_M, RN, RK, cfg) is None
    assert "router_hilo_swap serves 1 <= M <= 256" in m.supports(FP32_W, SPLITK_SWAP_MAX_M + 1, RN, RK, cfg)
    assert "N % BN" in m.supports(FP32_W, 8, 250, RK, cfg)
    assert "K / BK >= SPLIT" in m.supports(FP32_W, 8, RN, 1024, cfg)        # 16 steps < 33 slices
    assert "shared memory" in m.supports(FP32_W, 8, RN, RK, dict(cfg, BM=256, BN=128, BK=256, SPLIT=8,
                                                                         num_stages=4))
