"""CPU: cluster_wgmma's compiled instances matching the registry, its shape check (compiled instance, token tile, tile
and cluster divisibility, multicast slice, cluster size, stages, shared memory) and its messages, the shared-memory
formula against the kernel's, the configs it ships, the refusal on a host without nvcc, and the tile-packed weight
layout (one contiguous block per weight box; a lossless permutation)."""
import re
from pathlib import Path

import pytest

from kernels.cuda import build
from kernels.launch.cluster_wgmma import EXTENSION, pack, unpack
from kernels.method import BF16, BF16_X_FP32_W
from kernels.methods_cuda import (ROUTER_WGMMA_CONFIGS, WGMMA_ATOMS, WGMMA_COMPILED, WGMMA_CONFIGS, WGMMA_FILL_CK,
                                  WGMMA_FILL_INSTANCES, WGMMA_HILO_ATOMS, WGMMA_HILO_COMPILED, WGMMA_SMEM_BYTES,
                                  wgmma_max_stages, wgmma_smem_bytes)
from kernels.registry import get_method

CU = Path(build.CUDA_DIR) / "cluster_wgmma.cu"
QKV = (2304, 8192)


def _cfg(**kw):
    base = {"MI": 1, "NWG": 2, "BT": 128, "CN": 2, "CK": 4, "STAGES": 7, "KA": 1}
    return dict(base, **kw)


def _why(M, N, K, **kw):
    return get_method("cluster_wgmma").supports(BF16, M, N, K, _cfg(**kw))


def _cases(macro: str) -> list[tuple[int, ...]]:
    block = CU.read_text().split(f"#define {macro}(X)", 1)[1].split("\n\n", 1)[0]
    return [tuple(int(v) for v in c) for c in re.findall(r"X\((\d+), (\d+), (\d+)\)", block)]


def test_compiled_instances_match_the_registry():
    cases = _cases("PROJLAB_WGMMA_CASES")
    assert sorted(cases) == sorted(WGMMA_COMPILED) and len(set(cases)) == len(cases)
    assert {(c["MI"], c["NWG"], c["BT"]) for c in WGMMA_CONFIGS} == set(WGMMA_COMPILED)
    hilo = _cases("PROJLAB_WGMMA_HILO_CASES")
    assert sorted(hilo) == sorted(WGMMA_HILO_COMPILED) and len(set(hilo)) == len(hilo)
    assert {(c["MI"], c["NWG"], c["BT"]) for c in ROUTER_WGMMA_CONFIGS} == set(WGMMA_HILO_COMPILED)
    # the hilo dispatchers instantiate exactly the atoms the registry offers
    text = CU.read_text().split("#define PROJLAB_WGMMA_HILO_CASES(X)", 1)[1]
    launch = text.split("inline cudaError_t launch_hilo", 1)[1].split("PROJLAB_WGMMA_HILO_CASES(PROJLAB_CASE)", 1)[0]
    assert sorted(int(k) for k in re.findall(r"if \(ka == (\d)\) return launch_one", launch)) == list(WGMMA_HILO_ATOMS)


def _two_per_sm(c) -> bool:
    """A config whose ring is the deepest that lets two CTAs share an SM (the fill configs)."""
    half = WGMMA_SMEM_BYTES // 2 - 1024
    smem = wgmma_smem_bytes(c["MI"], c["NWG"], c["BT"], c["STAGES"], c["KA"])
    return (smem <= half and c["STAGES"] == wgmma_max_stages(c["MI"], c["NWG"], c["BT"], KA=c["KA"], per_sm=2)
            and (c["MI"], c["NWG"], c["BT"]) in WGMMA_FILL_INSTANCES and c["KA"] > 1 and c["CK"] in WGMMA_FILL_CK)


def test_every_shipped_config_fits_and_the_stage_count_is_the_most_that_fits():
    deep = wide = fill = 0
    for c in WGMMA_CONFIGS:
        ka = c["KA"]
        assert wgmma_smem_bytes(c["MI"], c["NWG"], c["BT"], c["STAGES"], ka) <= WGMMA_SMEM_BYTES, c
        if _two_per_sm(c) and c["STAGES"] != wgmma_max_stages(c["MI"], c["NWG"], c["BT"], KA=ka):
            fill += 1
            assert c["CN"] == 1 and wgmma_smem_bytes(c["MI"], c["NWG"], c["BT"], c["STAGES"] + 1, ka) \
                > WGMMA_SMEM_BYTES // 2 - 1024, c
            continue
        # the most that fit capped at 8, or (unicast token tiles of at most 64, one atom a stage) the most that fit
        capped = wgmma_max_stages(c["MI"], c["NWG"], c["BT"], KA=ka)
        assert c["STAGES"] == capped or (c["STAGES"] == wgmma_max_stages(c["MI"], c["NWG"], c["BT"], cap=32) > 8
                                         and c["CN"] == 1 and c["BT"] <= 64 and ka == 1), c
        deep += c["STAGES"] > 8
        wide += ka > 1
        more = c["STAGES"] + 1
        assert c["STAGES"] == 8 or wgmma_smem_bytes(c["MI"], c["NWG"], c["BT"], more, ka) > WGMMA_SMEM_BYTES, c
        assert c["BT"] % (8 * c["CN"]) == 0 and c["CN"] * c["CK"] <= 16
        assert ka == 1 or c["CN"] == 1, c                  # wide stages: unicast only
    assert deep == 6 * 5                                   # six instances with BT <= 64, five K splits each
    assert {"MI": 1, "NWG": 1, "BT": 16, "CN": 1, "CK": 3, "STAGES": 22, "KA": 1} in WGMMA_CONFIGS  # 22 x 10 KB
    # two atoms a stage at every instance, four where two 4-atom stages fit (BT * BW small enough), 6 K splits each
    assert wide == (11 + 7) * 6
    assert {"MI": 1, "NWG": 1, "BT": 16, "CN": 1, "CK": 4, "STAGES": 8, "KA": 2} in WGMMA_CONFIGS   # 8 x 20 KB
    assert {"MI": 1, "NWG": 1, "BT": 16, "CN": 1, "CK": 4, "STAGES": 5, "KA": 4} in WGMMA_CONFIGS   # 5 x 40 KB
    # two CTAs per SM: BT 16 and 32 with 2 and 4 atoms a stage, BT 64 with 2 (two 4-atom stages of 64 KB do not fit
    # beside a second CTA), K split 4, 6 and 8 ways
    assert fill == 5 * len(WGMMA_FILL_CK)
    assert {"MI": 1, "NWG": 1, "BT": 16, "CN": 1, "CK": 8, "STAGES": 5, "KA": 2} in WGMMA_CONFIGS   # 5 x 20 KB


def test_smem_formula_is_the_kernels():
    # kernels/cuda/cluster_wgmma.cu: 1024 alignment slack + 1024 barrier bytes + max(ring, BW x (BT+4) FP32 partial)
    kernel_formula = "1024 /* alignment slack */ + BARRIER_BYTES + (ring > S::PART_BYTES ? ring : S::PART_BYTES)"
    assert kernel_formula in CU.read_text()
    assert "const size_t ring = static_cast<size_t>(stages) * ka * S::STAGE_BYTES;" in CU.read_text()
    # the launcher dispatches exactly the atom counts the registry offers to a kernel instance each (any other is
    # refused), and compiles KA = 4 where two such stages fit the registry's shared-memory limit
    text = CU.read_text()
    dispatch = text.split("cudaError_t launch_ka(", 1)[1].split("\n}\n", 1)[0]
    pattern = r"if \(ka == (\d+)\) return launch_one<MI, NWG, BT, \1, false>"
    assert sorted(int(v) for v in re.findall(pattern, dispatch)) == \
        sorted(WGMMA_ATOMS)
    assert dispatch.rstrip().endswith("return cudaErrorInvalidValue;")
    assert f"constexpr size_t SM90_SMEM_PER_BLOCK_OPTIN = {WGMMA_SMEM_BYTES // 1024} * 1024;" in text
    assert "smem_bytes<MI, NWG, BT>(2, 4) <= SM90_SMEM_PER_BLOCK_OPTIN" in text
    assert wgmma_smem_bytes(1, 2, 128, 7) == 2048 + 7 * (128 + 128) * 128          # the ring is larger
    assert wgmma_smem_bytes(1, 2, 128, 3, 2) == 2048 + 3 * 2 * (128 + 128) * 128   # three stages of two atoms
    assert wgmma_smem_bytes(2, 2, 128, 2) == 2048 + 256 * 132 * 4                  # the partial tile is larger


def test_shape_check_admits_the_design_point_and_names_each_refusal():
    N, K = QKV
    assert _why(128, N, K) is None
    assert _why(100, N, K) is None                                   # a partial token tile (zero-filled by TMA)
    assert "no compiled instance MI=2 NWG=1 BT=128" in _why(128, N, K, MI=2, NWG=1)
    assert "BT=32 serves M from 17 to 64, not M=128" in _why(128, N, K, BT=32, CN=1, STAGES=8)
    assert _why(65, N, K) is None and _why(256, N, K) is None                                # BT=128's edges
    assert "BT=128 serves M from 65 to 256, not M=64" in _why(64, N, K)
    assert "BT=128 serves M from 65 to 256, not M=257" in _why(257, N, K)
    assert "N % (BW * CN) == 0 (BW=128, CN=4, N=2304)" in _why(128, N, K, CN=4, CK=2)      # 18 tiles, 4 per cluster
    assert _why(128, N, K, MI=2, CN=1, CK=4, STAGES=4) is None                               # 9 tiles of 256 rows
    assert "N % (BW * CN) == 0 (BW=256, CN=2, N=2304)" in _why(128, N, K, MI=2, CN=2, CK=4, STAGES=4)
    assert "K % (64 * KA) == 0 and K / (64 * KA) >= CK" in _why(128, N, 8160)
    assert "(K=8160, KA=1, CK=4)" in _why(128, N, 8160)
    assert "(K=8128, KA=2, CK=1)" in _why(128, N, 8128, CN=1, CK=1, STAGES=3, KA=2)
    assert "(K=256, KA=4, CK=2)" in _why(128, N, 256, CN=1, CK=2, STAGES=2, KA=4)      # one stage of 4 atoms, 2 ranks
    assert _why(128, N, 512, NWG=1, CN=1, CK=2, STAGES=2, KA=4) is None
    assert "holds 1, 2, 4 K atoms per ring stage, not KA=3" in _why(128, N, K, KA=3)
    assert "BT / CN token rows per CTA, a multiple of 8 (BT=32, CN=6)" in _why(32, 4608, K, BT=32, CN=6, CK=1,
                                                                               STAGES=8)
    assert "at most 16 CTAs (CN * CK = 18)" in _why(128, N, K, CN=2, CK=9)
    assert "2 <= STAGES <= 32 (STAGES=1)" in _why(128, N, K, STAGES=1)
    assert f"264192 bytes of shared memory at STAGES=8 KA=1 (the limit is {WGMMA_SMEM_BYTES})" in _why(128, N, K, STAGES=8)
    assert "264192 bytes of shared memory at STAGES=4 KA=2" in _why(128, N, K, CN=1, STAGES=4, KA=2)


def test_shape_check_admits_configs_at_the_official_mid_m_shapes_only():
    from datasets import load_workload

    m = get_method("cluster_wgmma")
    for r in load_workload().shapes.itertuples(index=False):
        if r.family == "router":
            assert m.supports(r._asdict(), int(r.M), int(r.N), int(r.K), m.configs[0]) is not None   # FP32 weights
            continue
        n = sum(m.supports(r._asdict(), int(r.M), int(r.N), int(r.K), c) is None for c in m.configs)
        assert (n > 0) == (int(r.M) >= 16), (r.family, r.M, n)


def test_load_without_compiler_or_cache_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PROJLAB_CUDA_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "find_nvcc", lambda: None)
    with pytest.raises(build.BuildError, match=r"^projlab_cluster_wgmma: no CUDA compiler \(nvcc\)") as exc:
        build.load_extension(EXTENSION)
    assert "\n" not in str(exc.value)


def test_pack_makes_each_weight_box_one_block_and_unpack_inverts_it():
    torch = pytest.importorskip("torch")
    w = torch.arange(256 * 256, dtype=torch.float32).reshape(256, 256)
    p = pack(w, 128)
    assert tuple(p.shape) == (2, 4, 128, 64) and p.is_contiguous()
    assert torch.equal(p[1, 2], w[128:256, 128:192])          # weight tile 1, K block 2: rows 128-255, K 128-191
    assert torch.equal(unpack(p, 256, 256), w)


def test_prepare_refuses_what_the_shape_check_refuses_before_anything_launches():
    torch = pytest.importorskip("torch")
    from kernels.launch.cluster_wgmma import prepare

    w = torch.zeros(2304, 8192, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"multicasts BT / CN token rows per CTA, a multiple of 8 \(BT=128, CN=3\)"):
        prepare(w, _cfg(CN=3, CK=2))
    with pytest.raises(ValueError, match=r"must be a bfloat16 \[N, K\]"):
        prepare(w.float(), _cfg())


def test_run_refuses_a_token_count_outside_the_configs_tile_range():
    torch = pytest.importorskip("torch")
    from kernels.launch.cluster_wgmma import KEYS, run

    state = {"K": 64, "N": 128, "args": tuple(_cfg()[k] for k in KEYS), "module": None}   # BT=128: M 65..256
    for M in (64, 257):
        with pytest.raises(ValueError, match=rf"config BT=128 serves M from 65 to 256, got M={M}"):
            run(state, torch.zeros(M, 64, dtype=torch.bfloat16))


# ------------------------------------------------------------------------------------------ router_hilo_wgmma

ROUTER = (256, 8192)


def _rwhy(M, N, K, **kw):
    cfg = dict({"MI": 1, "NWG": 2, "BT": 128, "CN": 1, "CK": 14, "STAGES": 6, "KA": 1}, **kw)
    return get_method("router_hilo_wgmma").supports(BF16_X_FP32_W, M, N, K, cfg)


def test_router_shape_check_counts_the_hilo_weight_rows_and_names_each_refusal():
    N, K = ROUTER
    assert _rwhy(256, N, K) is None and _rwhy(65, N, K) is None
    assert "router_hilo_wgmma has no compiled instance MI=1 NWG=2 BT=256" in _rwhy(256, N, K, BT=256)
    assert "router_hilo_wgmma holds 1, 2 K atoms per ring stage, not KA=4" in _rwhy(256, N, K, KA=4)
    assert "BT=128 serves M from 65 to 256, not M=300" in _rwhy(300, N, K)
    # 2N = 512 hi/lo rows: four tiles of 128, two multicast pairs; N = 96 gives 192 rows, not whole tiles of 128
    assert _rwhy(256, N, K, CN=2, CK=8) is None
    assert "needs 2N % (BW * CN) == 0 (BW=128, CN=1, 2N=192)" in _rwhy(256, 96, K)
    assert _rwhy(256, 96, K, NWG=1) is None                                   # three tiles of 64 rows
    assert "at most 16 CTAs (CN * CK = 28)" in _rwhy(256, N, K, CN=2, CK=14)
    assert "(K=832, KA=1, CK=14)" in _rwhy(256, N, 832)                      # 13 atoms for 14 ranks


def test_router_configs_fit_and_serve_the_routers_mid_m_shapes_only():
    from datasets import load_workload

    for c in ROUTER_WGMMA_CONFIGS:
        assert wgmma_smem_bytes(c["MI"], c["NWG"], c["BT"], c["STAGES"], c["KA"]) <= WGMMA_SMEM_BYTES, c
        assert c["STAGES"] == wgmma_max_stages(c["MI"], c["NWG"], c["BT"], KA=c["KA"]), c
        assert c["KA"] == 1 or (64 * c["MI"] * c["NWG"] + c["BT"]) * 128 < 16384, c
    m = get_method("router_hilo_wgmma")
    for r in load_workload().shapes.itertuples(index=False):
        n = sum(m.supports(r._asdict(), int(r.M), int(r.N), int(r.K), c) is None for c in m.configs)
        # FP32 weights only; token tiles of 32-256 serve 17 <= M <= 512
        assert (n > 0) == (r.family == "router" and 17 <= int(r.M) <= 512), (r.family, r.M, n)


def test_router_prepare_refuses_bf16_weights_and_refused_configs_before_anything_launches():
    torch = pytest.importorskip("torch")
    from kernels.launch.cluster_wgmma import prepare_router

    w = torch.zeros(256, 8192, dtype=torch.float32)
    cfg = {"MI": 1, "NWG": 2, "BT": 128, "CN": 1, "CK": 14, "STAGES": 6, "KA": 1}
    with pytest.raises(ValueError, match=r"router_hilo_wgmma: weight must be a float32 \[N, K\]"):
        prepare_router(w.bfloat16(), cfg)
    with pytest.raises(ValueError, match=r"router_hilo_wgmma has no compiled instance MI=2 NWG=2 BT=128"):
        prepare_router(w, dict(cfg, MI=2))


def test_router_weight_rows_are_hi_lo_pairs_in_the_packed_layout():
    torch = pytest.importorskip("torch")
    from kernels.launch.router import interleave_rows, split_hilo

    g = torch.Generator().manual_seed(3)
    w = torch.randn(128, 256, generator=g)
    hi, lo = split_hilo(w)
    rows = unpack(pack(interleave_rows(hi, lo), 64), 256, 256)
    assert torch.equal(rows[0::2], hi) and torch.equal(rows[1::2], lo)
    # each row pair reproduces its FP32 weight row far inside the router's 1e-4 tolerance
    err = (rows[0::2].float() + rows[1::2].float() - w).norm() / w.norm()
    assert 0 < err < 2 ** -15
