"""skinny_ws's record, shape check and launcher logic on the CPU: what it refuses (and says why), the grid the
launcher builds, the register cap it asks for, the K-step runs the kernel cuts (whole tiles under split-K, the
write-up's 42/43/43 at SPLIT=3), and a clear refusal without a Hopper GPU."""
import pytest

from kernels.launch.gluon_skinny import blocks_per_sm, check_tiling, maxnreg, programs
from kernels.method import BF16, SMEM_BYTES
from kernels.methods_gluon import SKINNY_CONFIGS, SKINNY_MAX_M, skinny_smem_bytes
from kernels.registry import get_method

QKV = (2304, 8192)


def _cfg(**over):
    return dict(SKINNY_CONFIGS[0], **over)


def test_registered_with_its_configs_and_bf16_only():
    m = get_method("skinny_ws")
    assert m.configs == SKINNY_CONFIGS and m.dtypes == (BF16,)
    assert SKINNY_CONFIGS[0] == {"BM": 16, "BN": 64, "BK": 64, "SPLIT": 3, "STAGES": 8, "STREAMK": 0, "PACK": 0,
                                 "num_warps": 4}            # the write-up's 039 pick at 9..16 tokens
    assert "computes x bfloat16" in m.supports(("bfloat16", "float32", "float32"), 16, 256, 8192)


@pytest.mark.parametrize("cfg", SKINNY_CONFIGS, ids=str)
def test_every_config_serves_every_scored_qkv_m(cfg):
    m = get_method("skinny_ws")
    for M in (1, 8, 16, 32, 128, 256):
        assert m.supports(BF16, M, *QKV, cfg) is None


@pytest.mark.parametrize("M,N,K,over,needle", [
    (0, *QKV, {}, "1 <= M <= 256"),
    (SKINNY_MAX_M + 1, *QKV, {}, "1 <= M <= 256"),
    (16, 2304 + 32, 8192, {}, "N % BN == 0"),
    (16, 2304, 8192 + 32, {}, "K % BK == 0"),
    (16, 2304, 128, {"SPLIT": 3}, "K / BK >= SPLIT"),
    (16, *QKV, {"STREAMK": 1, "SPLIT": 3}, "SPLIT must be 1"),
    (16, *QKV, {"STAGES": 20, "BM": 128}, "exceed"),
])
def test_shape_check_refuses_with_the_reason(M, N, K, over, needle):
    reason = get_method("skinny_ws").supports(BF16, M, N, K, _cfg(**over))
    assert reason is not None and needle in reason, reason


def test_smem_figure_counts_ring_scratch_and_barriers():
    cfg = _cfg(STAGES=20)
    assert skinny_smem_bytes(cfg) == 20 * (64 + 16) * 64 * 2 + 64 * 16 * 4 + 16 * 20 + 64
    assert skinny_smem_bytes(cfg) <= SMEM_BYTES


def test_grid_split_k_and_stream_k():
    # split-K: token tiles x weight tiles x SPLIT; stream-K: STREAMK programs per SM, never more than K steps
    assert programs(_cfg(), *QKV, 16, 132) == 36 * 3
    assert programs(_cfg(BM=16), *QKV, 17, 132) == 2 * 36 * 3
    assert programs(_cfg(SPLIT=1, STREAMK=2), *QKV, 16, 132) == 264
    assert programs(_cfg(SPLIT=1, STREAMK=3, BK=64), 64, 128, 1, 132) == 2     # one tile of two K steps


def test_register_cap_matches_blocks_per_sm():
    # 8 stages of 10 KB: two blocks per SM by shared memory -> 128 registers for 8 warps (4 + the producer's 4)
    assert blocks_per_sm(_cfg()) == 2 and maxnreg(_cfg()) == 128
    assert blocks_per_sm(_cfg(STAGES=6)) == 3 and maxnreg(_cfg(STAGES=6)) == 80
    # one block per SM: no cap; a 128 x 128 accumulator never gets a cap it cannot fit
    assert maxnreg(_cfg(STAGES=20)) is None
    assert maxnreg(_cfg(BM=128, BN=128, num_warps=8, STAGES=2, BK=64)) in (None, 168)


def _runs(P, total):
    """The kernel's _run: [pid * total // P, (pid + 1) * total // P)."""
    return [(p * total // P, (p + 1) * total // P) for p in range(P)]


@pytest.mark.parametrize("tiles,steps,split", [(36, 128, 3), (72, 128, 3), (18, 64, 7), (36, 16, 11)])
def test_split_k_runs_stay_inside_one_tile(tiles, steps, split):
    runs = _runs(tiles * split, tiles * steps)
    for lo, hi in runs:
        assert lo // steps == (hi - 1) // steps                 # no run crosses a tile boundary
    lengths = sorted({hi - lo for lo, hi in runs})
    assert lengths in ([steps // split], [steps // split, steps // split + 1])
    if (steps, split) == (128, 3):
        assert [hi - lo for lo, hi in runs[:3]] == [42, 43, 43]  # the write-up's integer boundaries


def test_stream_k_runs_cover_every_step_once():
    runs = _runs(132, 36 * 128)
    assert runs[0][0] == 0 and runs[-1][1] == 36 * 128
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:]))
    assert {hi - lo for lo, hi in runs} == {34, 35}


def test_check_tiling_names_the_rule():
    with pytest.raises(ValueError, match="skinny_ws: needs N % BN == 0"):
        check_tiling(100, 8192, _cfg(), "skinny_ws")
    with pytest.raises(ValueError, match="BM to divide 256"):
        check_tiling(2304, 8192, _cfg(BM=48), "skinny_ws")


def test_prepare_without_a_hopper_gpu_says_so():
    torch = pytest.importorskip("torch")
    from kernels.launch.gluon_skinny import prepare

    with pytest.raises(ValueError, match="needs an sm_90 .Hopper. GPU"):
        prepare(torch.zeros(2304, 8192, dtype=torch.bfloat16), _cfg())


def test_fixup_registered_and_its_shape_check_keeps_the_grid_to_one_wave(monkeypatch):
    """skinny_ws_fixup's runs of a tile wait for each other, so its shape check refuses a grid larger than the SMs of
    the device this process runs on (kernels.device_limits, read from the device: here a stand-in H200's 132) and
    says so, and admits the shapes it was sized for; with no device to ask it leaves the grid to the launcher. Its
    shared-memory figure is the ring and barriers only."""
    from datasets import devices
    from kernels import device_limits
    from kernels.methods_gluon import FIXUP_CONFIGS, fixup_programs, fixup_smem_bytes

    h200 = devices.limits(devices.lookup("NVIDIA H200"))
    monkeypatch.setattr(device_limits, "current", lambda: h200)

    m = get_method("skinny_ws_fixup")
    assert m.configs == FIXUP_CONFIGS and m.dtypes == (BF16,)
    default = FIXUP_CONFIGS[0]
    assert fixup_programs(128, 2304, default) == 18 * 7 and m.supports(BF16, 128, *QKV, default) is None
    reason = m.supports(BF16, 129, *QKV, default)          # two token tiles: 252 programs
    assert reason is not None and "252 programs" in reason and "one wave of 132 SMs" in reason, reason
    assert "K / BK >= SPLIT" in m.supports(BF16, 16, 2304, 256, dict(default, SPLIT=7))
    assert "1 <= M <= 256" in m.supports(BF16, 257, *QKV, default)
    monkeypatch.setattr(device_limits, "current", lambda: devices.Limits())   # no device: the launcher decides
    assert m.supports(BF16, 129, *QKV, default) is None
    assert fixup_smem_bytes(default) == 6 * (128 + 128) * 64 * 2 + 16 * 6 + 64


def test_fixup_prepare_without_a_hopper_gpu_says_so():
    torch = pytest.importorskip("torch")
    from kernels.launch.gluon_skinny import prepare_fixup

    w = torch.zeros(2304, 8192, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="needs an sm_90 .Hopper. GPU"):
        prepare_fixup(w, get_method("skinny_ws_fixup").configs[0])
