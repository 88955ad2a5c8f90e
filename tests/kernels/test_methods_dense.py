"""Dense method records (kernels/methods_triton/dense.py, and PyTorch's in kernels/methods_library.py): names, config
spaces, shape checks (torch-free)."""
import pytest

from datasets import load_workload
from kernels.method import BF16, BF16_X_FP32_W as FP32_W
from kernels.methods_library import LIBRARY_METHODS
from kernels.methods_triton.dense import (DENSE_METHODS, PACKED_MAX_M, SPLITK_ATOMIC_MAX_M, SPLITK_MAX_M,
                                          STREAMK_MAX_M)
from kernels.registry import METHODS, get_method

MUSE = load_workload()
# the dense methods with a fixed config table: the Triton ones and PyTorch's (the baseline and the mm orientations);
# cublaslt's configs are the library's list at each shape (tests/kernels/test_cublaslt.py)
DENSE_NAMES = {m.name for m in DENSE_METHODS} | {m.name for m in LIBRARY_METHODS if m.name != "cublaslt"}
# The workload's dense shapes: (family, N, K) at the scored M (the unpooler's M=1 and M=8 are N=1024).
DENSE_SHAPES = (("qkv_gate", 2304, 8192), ("o", 8192, 1024), ("pooler", 4096, 8192), ("unpooler", 8192, 4096),
                ("unpooler", 1024, 4096))


def test_every_method_is_registered_under_its_name_and_its_impl_resolves():
    """The registry is the one name → method table, and every record's impl string names an object with the
    prepare/run pair (a typo in "module:attr" would otherwise only show when a plan first dispatched it)."""
    from kernels.method import _load_impl

    for m in METHODS.values():
        assert get_method(m.name) is m
        impl = _load_impl(m.impl)
        assert callable(getattr(impl, "prepare", None)) and callable(getattr(impl, "run", None)), m.impl
    assert DENSE_NAMES <= set(METHODS) and "torch_linear" in DENSE_NAMES


def test_baseline_serves_every_dtype_signature_the_dense_methods_bf16_only():
    """Methods serve dtype signatures, not family names: the library serves every signature whose output has the
    weight's dtype (router included), and no other; the Triton/cuBLAS dense methods compute BF16 x, w and y only,
    and say so when asked for FP32 weights."""
    base = get_method("torch_linear")
    assert base.serves(FP32_W) and base.serves(BF16) and base.serves(("float16",) * 3)
    assert base.serves(("float32", "bfloat16", "bfloat16")) and len(base.dtypes) == 9
    assert "not x bfloat16, w bfloat16, y float32" in base.dtype_reason(("bfloat16", "bfloat16", "float32"))
    for name in DENSE_NAMES - {"torch_linear"}:
        m = get_method(name)
        assert m.dtypes == (BF16,) and not m.serves(FP32_W) and not m.serves(MUSE.family("router"))
        assert m.serves(MUSE.family("qkv_gate"))
        assert "float32" in m.supports(FP32_W, 1, 256, 8192)


@pytest.mark.parametrize("method", sorted(DENSE_NAMES))
def test_every_config_valid(method):
    m = get_method(method)
    assert m.configs
    for cfg in m.configs:
        assert m.check_config(cfg) is None, cfg


def test_check_config_rejects_bad_keys_and_values():
    m = get_method("gemv")
    assert "missing" in m.check_config({"BN": 1, "num_warps": 16})
    assert "unknown" in m.check_config({"BN": 1, "num_warps": 16, "cache": ".cg", "x": 1})
    assert "BN=3" in m.check_config({"BN": 3, "num_warps": 16, "cache": ".cg"})


def test_gemv_shape_check_m1_only():
    m = get_method("gemv")
    assert m.supports(BF16, 1, 2304, 8192) is None
    assert "M=1" in m.supports(BF16, 2, 2304, 8192)
    assert "not x bfloat16, w float32, y float32" in m.supports(FP32_W, 1, 256, 8192)


@pytest.mark.parametrize("method", ["splitk", "splitk_fused"])
def test_splitk_shape_check(method):
    m = get_method(method)
    for M in (1, 2, 17, SPLITK_MAX_M):
        assert m.supports(BF16, M, 4096, 8192) is None
    assert m.supports(BF16, SPLITK_MAX_M + 1, 4096, 8192)
    huge = {"BM": 32, "BN": 128, "BK": 512, "SPLIT": 1, "num_warps": 8, "num_stages": 4}
    assert "shared memory" in m.supports(BF16, 8, 4096, 8192, huge)


def test_packed_shape_check_divisibility_and_m():
    m = get_method("packed")
    assert m.supports(BF16, 16, 4096, 8192) is None
    assert m.supports(BF16, PACKED_MAX_M + 1, 4096, 8192)
    assert "N % BN" in m.supports(BF16, 16, 4100, 8192)
    assert "K % BK" in m.supports(BF16, 16, 4096, 8000)


def test_library_methods_admit_every_m():
    for name in ("torch_linear", "mm_wt", "mm_swapped", "mm_bias0"):
        m = get_method(name)
        for M in (1, 3, 17, 129, 255, 256):
            for config in m.configs:
                assert m.supports(BF16, M, 8192, 1024, config) is None


def test_swapped_alignment_rule():
    pytest.importorskip("torch")
    from kernels.launch.mm_orient import swapped_ok

    assert [M for M in range(1, 33) if swapped_ok(M)] == [8, 16, 24, 32]


def test_splitk_atomic_shape_check_names_what_the_kernel_leaves_unmasked():
    m = get_method("splitk_atomic")
    cfg = {"BM": 16, "BN": 64, "BK": 128, "SPLIT": 8, "num_warps": 4, "num_stages": 4}
    for M in (1, 2, 16, 17, SPLITK_ATOMIC_MAX_M):
        assert m.supports(BF16, M, 2304, 8192, cfg) is None
    assert "workspace" in m.supports(BF16, SPLITK_ATOMIC_MAX_M + 1, 2304, 8192, cfg)
    assert "K % 1024 == 0" in m.supports(BF16, 8, 2304, 8000, cfg)        # BK * SPLIT must tile K
    assert "N % BN == 0" in m.supports(BF16, 8, 2300, 8192, cfg)          # no N mask either
    assert m.supports(BF16, 8, 8192, 1024, cfg) is None                           # 8 slices of 128 = 1024
    assert m.supports(BF16, 8, 8192, 1024, {**cfg, "SPLIT": 16}) is not None      # 16 x 128 > 1024
    big = {"BM": 128, "BN": 128, "BK": 256, "SPLIT": 1, "num_warps": 8, "num_stages": 4}
    assert "shared memory" in m.supports(BF16, 8, 8192, 1024, big)


def test_streamk_shape_check():
    m = get_method("streamk")
    for fam, N, K in DENSE_SHAPES:
        for M in (1, 128, 255, 256, STREAMK_MAX_M):
            assert m.supports(MUSE.family(fam), M, N, K) is None, (fam, N, M)
    assert "workspace" in m.supports(BF16, STREAMK_MAX_M + 1, 8192, 1024)
    assert "K % 128 == 0" in m.supports(BF16, 128, 8192, 1000)     # the default config: BK=128


@pytest.mark.parametrize("method", ["splitk_atomic", "streamk"])
def test_new_methods_have_a_config_for_every_dense_family(method):
    """The tuner can only pick a method at a shape some config admits: each scored small/large M is reachable."""
    m = get_method(method)
    scored = (1, 8, 16, 32) if method == "splitk_atomic" else (128, 256)
    for fam, N, K in DENSE_SHAPES:
        for M in scored:
            assert any(m.supports(MUSE.family(fam), M, N, K, c) is None for c in m.configs), (fam, N, M)


@pytest.mark.parametrize("method", ["splitk_atomic_v2", "splitk_atomic_kn"])
def test_splitk_atomic2_shape_check(method):
    """Small M only (workspace rows); whole BN tiles and BK steps; SPLIT need not divide the K steps but every
    slice needs one."""
    from kernels.methods_triton.dense import SPLITK_ATOMIC2_MAX_M

    m = get_method(method)
    cfg = {"BM": 16, "BN": 64, "BK": 64, "SPLIT": 11, "num_warps": 4, "num_stages": 4, "W_LOAD": "cg"}
    for M in (1, 8, 17, SPLITK_ATOMIC2_MAX_M):
        assert m.supports(BF16, M, 2304, 8192, cfg) is None      # 128 steps in 11 slices of 11-12
    assert "workspace" in m.supports(BF16, SPLITK_ATOMIC2_MAX_M + 1, 2304, 8192, cfg)
    assert "N % BN == 0" in m.supports(BF16, 8, 2300, 8192, cfg)
    assert "K % 64 == 0" in m.supports(BF16, 8, 2304, 8100, cfg)
    assert "K / BK >= SPLIT" in m.supports(BF16, 8, 8192, 512, cfg)      # 8 steps < 11 slices
    assert "shared memory" in m.supports(BF16, 8, 8192, 1024, {**cfg, "BM": 32, "BN": 128, "BK": 512, "SPLIT": 2,
                                                              "num_stages": 6})


def test_streamk_small_shape_check():
    from kernels.methods_triton.dense import SPLITK_ATOMIC2_MAX_M

    m = get_method("streamk_small")
    for fam, N, K in DENSE_SHAPES:
        assert m.supports(BF16, 8, N, K) is None, (fam, N)
    assert m.supports(BF16, SPLITK_ATOMIC2_MAX_M + 1, 2304, 8192)


@pytest.mark.parametrize("method", ["splitk_atomic_v2", "splitk_atomic_kn", "streamk_small"])
def test_small_m_methods_reach_every_dense_family(method):
    m = get_method(method)
    for fam, N, K in DENSE_SHAPES:
        for M in (1, 8, 16, 32):
            assert any(m.supports(MUSE.family(fam), M, N, K, c) is None for c in m.configs), (fam, N, M)


@pytest.mark.parametrize("method", ["splitk_atomic_v2", "splitk_atomic_kn", "streamk_small"])
def test_plan_accepts_every_config_of_the_new_methods(tmp_path, method):
    """A plan entry holds method + a config with exactly the method's keys: each config loads in a plan
    (best.json with the qkv_gate entry that covers M=8 swapped), and best.json itself still loads unchanged."""
    import json

    from kernels.plans import PLANS_DIR, load_plan

    best = json.loads((PLANS_DIR / "best.json").read_text())
    entry = next(e for e in best["families"]["qkv_gate"] if e["M"][0] <= 8 <= e["M"][1] and "N" not in e)
    shipped = (entry["method"], entry["config"])
    for config in get_method(method).configs:
        entry.update(method=method, config=dict(config))
        path = tmp_path / "p.json"
        path.write_text(json.dumps(best))
        assert load_plan(path).select("qkv_gate", 8, 2304) == (method, config)
    assert load_plan("best").select("qkv_gate", 8, 2304) == shipped
