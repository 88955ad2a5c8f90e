"""Dense method records: names, config spaces, guards (torch-free)."""
import pytest

from kernels.methods_dense import DENSE_METHODS, PACKED_MAX_M, SPLITK_MAX_M
from kernels.registry import METHODS, get_method

DENSE_NAMES = {"torch_linear", "gemv", "splitk", "splitk_fused", "packed", "mm_wt", "mm_swapped"}


def test_names_registered():
    assert {m.name for m in DENSE_METHODS} == DENSE_NAMES
    assert DENSE_NAMES <= set(METHODS)


def test_baseline_serves_every_family_including_router():
    assert set(get_method("torch_linear").families) == {"qkv_gate", "o", "pooler", "unpooler", "router"}
    for name in DENSE_NAMES - {"torch_linear"}:
        assert "router" not in get_method(name).families


@pytest.mark.parametrize("method", sorted(DENSE_NAMES))
def test_every_config_valid_and_space_small(method):
    m = get_method(method)
    # Each config is one Triton compile per constexpr set in the tuning sweep (whole H200 tune: ~64 s with up
    # to 12 per method); 16 keeps it well under the sweep's 240 s budget.
    assert 1 <= len(m.configs) <= 16
    for cfg in m.configs:
        assert m.check_config(cfg) is None, cfg


def test_check_config_rejects_bad_keys_and_values():
    m = get_method("gemv")
    assert "missing" in m.check_config({"BN": 1, "num_warps": 16})
    assert "unknown" in m.check_config({"BN": 1, "num_warps": 16, "cache": ".cg", "x": 1})
    assert "BN=3" in m.check_config({"BN": 3, "num_warps": 16, "cache": ".cg"})


def test_gemv_guard_m1_only():
    m = get_method("gemv")
    assert m.supports("qkv_gate", 1, 2304, 8192) is None
    assert "M=1" in m.supports("qkv_gate", 2, 2304, 8192)
    assert "does not serve" in m.supports("router", 1, 256, 8192)


@pytest.mark.parametrize("method", ["splitk", "splitk_fused"])
def test_splitk_guard(method):
    m = get_method(method)
    for M in (1, 2, 17, SPLITK_MAX_M):
        assert m.supports("pooler", M, 4096, 8192) is None
    assert m.supports("pooler", SPLITK_MAX_M + 1, 4096, 8192)
    huge = {"BM": 32, "BN": 128, "BK": 512, "SPLIT": 1, "num_warps": 8, "num_stages": 4}
    assert "shared memory" in m.supports("pooler", 8, 4096, 8192, huge)


def test_packed_guard_divisibility_and_m():
    m = get_method("packed")
    assert m.supports("pooler", 16, 4096, 8192) is None
    assert m.supports("pooler", PACKED_MAX_M + 1, 4096, 8192)
    assert "N % BN" in m.supports("pooler", 16, 4100, 8192)
    assert "K % BK" in m.supports("pooler", 16, 4096, 8000)


def test_library_methods_admit_every_m():
    for name in ("torch_linear", "mm_wt", "mm_swapped"):
        m = get_method(name)
        for M in (1, 3, 17, 129, 255, 256):
            assert m.supports("o", M, 8192, 1024) is None


def test_swapped_alignment_rule():
    pytest.importorskip("torch")
    from kernels.launch.mm_orient import swapped_ok

    assert [M for M in range(1, 33) if swapped_ok(M)] == [8, 16, 24, 32]
