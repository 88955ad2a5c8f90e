"""CPU: cluster_splitk's build helper (source hash, cache path, build/load/refuse decision and its message), its
compiled instantiations matching the registry's configs, its shape check, and the tile-packed weight layout the kernel
reads (every warp load 512 contiguous bytes in lane order; a lossless permutation)."""
import re
from pathlib import Path

import pytest

from kernels.cuda import build
from kernels.launch.cluster_splitk import EXTENSION
from kernels.method import BF16
from kernels.method import BF16_X_FP32_W
from kernels.methods_cuda import (CLUSTER_COMPILED, CLUSTER_HILO_COMPILED, CLUSTER_RING_COMPILED,
                                  CLUSTER_XS_COMPILED, cluster_nt)
from kernels.registry import get_method

CU = Path(build.CUDA_DIR) / "cluster_splitk.cu"


def test_source_hash_covers_source_flags_and_toolchain():
    src = EXTENSION.source_text()
    key = build.source_hash(src, EXTENSION.declarations, build.CUDA_CFLAGS, "torch 2.x cuda 13.0")
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    assert key == build.source_hash(src, EXTENSION.declarations, build.CUDA_CFLAGS, "torch 2.x cuda 13.0")
    assert key != build.source_hash(src + " ", EXTENSION.declarations, build.CUDA_CFLAGS, "torch 2.x cuda 13.0")
    assert key != build.source_hash(src, EXTENSION.declarations, ("-O2",), "torch 2.x cuda 13.0")
    assert key != build.source_hash(src, EXTENSION.declarations, build.CUDA_CFLAGS, "torch 2.x cuda 12.8")
    assert "-gencode=arch=compute_90a,code=sm_90a" in build.CUDA_CFLAGS


def test_cache_lives_in_ignored_artifacts_or_the_env_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("PROJLAB_CUDA_CACHE", raising=False)
    assert build.cache_root() == build.REPO_ROOT / "artifacts" / "cuda_build"
    monkeypatch.setenv("PROJLAB_CUDA_CACHE", str(tmp_path))
    lib = build.library_path(EXTENSION, "0123456789abcdef")
    assert lib == tmp_path / "projlab_cluster_splitk_0123456789abcdef" / "projlab_cluster_splitk_0123456789abcdef.so"


def test_build_decision_load_build_refuse(tmp_path):
    lib = tmp_path / "x" / "x.so"
    action, reason = build.plan_build(lib, None, "0123456789abcdef", "projlab_cluster_splitk")
    assert action == "refuse"
    assert "no CUDA compiler (nvcc)" in reason and "0123456789abcdef" in reason and "\n" not in reason
    assert build.plan_build(lib, "/usr/bin/nvcc", "k", "n") == ("build", "/usr/bin/nvcc")
    lib.parent.mkdir()
    lib.write_bytes(b"")
    assert build.plan_build(lib, None, "k", "n") == ("load", str(lib))   # a cached build needs no compiler


def test_load_without_compiler_or_cache_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PROJLAB_CUDA_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "find_nvcc", lambda: None)
    with pytest.raises(build.BuildError, match=r"^projlab_cluster_splitk: no CUDA compiler \(nvcc\)"):
        build.load_extension(EXTENSION)


def test_compiled_instantiations_match_the_registry():
    text = CU.read_text()
    cases = {tuple(int(v) for v in c) for c in re.findall(r"PROJLAB_CASE\((\d+), (\d+), (\d+), (\d+), (\d+)\)", text)}
    hilo = {tuple(int(v) for v in c)
            for c in re.findall(r"PROJLAB_HILO_CASE\((\d+), (\d+), (\d+), (\d+), (\d+)\)", text)}
    xs = {tuple(int(v) for v in c) for c in re.findall(r"PROJLAB_XS_CASE\((\d+), (\d+), (\d+), (\d+), (\d+)\)", text)}
    assert cases == set(CLUSTER_COMPILED) and hilo == set(CLUSTER_HILO_COMPILED) and xs == set(CLUSTER_XS_COMPILED)
    ring = {tuple(int(v) for v in c)
            for c in re.findall(r"PROJLAB_RING_CASE\((\d+), (\d+), (\d+), (\d+), (\d+)\)", text)}
    assert ring == set(CLUSTER_RING_COMPILED)
    a = get_method("cluster_splitk_async")
    assert {(c["RW"], c["KW"], c["NT"], c["R"]) for c in a.configs} == {c[:4] for c in CLUSTER_RING_COMPILED}
    assert a.supports(BF16, 8, 1024, 4096, {"RW": 1, "KW": 8, "NT": 1, "R": 1, "S": 8}) is None   # any step count
    x = get_method("cluster_splitk_xs")
    assert {(c["RW"], c["KW"], c["NT"], c["R"]) for c in x.configs} == {c[:4] for c in CLUSTER_XS_COMPILED}
    m = get_method("cluster_splitk")
    assert {(c["RW"], c["KW"], c["NT"], c["R"]) for c in m.configs} == {c[:4] for c in CLUSTER_COMPILED}
    r = get_method("router_hilo_cluster")
    assert {(c["RW"], c["KW"], c["NT"], c["R"]) for c in r.configs} == {c[:4] for c in CLUSTER_HILO_COMPILED}
    assert {c["S"] for c in m.configs} == {1, 2, 4, 8}


def test_shape_check():
    m = get_method("cluster_splitk")
    cfg = {"RW": 2, "KW": 4, "NT": 2, "R": 2, "S": 4}   # U = 2: K % (4 * 4 * 32 * 2) == 0; BN = 64
    assert m.supports(BF16, 16, 2304, 8192, cfg) is None
    assert "NT=4" in m.supports(BF16, 32, 2304, 8192, cfg)
    assert "1 <= M <= 64" in m.supports(BF16, 65, 2304, 8192, dict(cfg, NT=4))
    assert "K % 1024" in m.supports(BF16, 16, 2304, 1536, cfg)
    assert "N % 64" in m.supports(BF16, 16, 2300, 8192, cfg)
    assert "no compiled instance" in m.supports(BF16, 16, 2304, 8192, dict(cfg, R=1))
    assert [cluster_nt(M) for M in (1, 8, 9, 16, 17, 64)] == [1, 1, 2, 2, 4, 4]
    r = get_method("router_hilo_cluster")
    assert r.supports(BF16_X_FP32_W, 8, 256, 8192, {"RW": 1, "KW": 8, "NT": 1, "R": 1, "S": 8}) is None
    cfg = {"RW": 1, "KW": 8, "NT": 1, "R": 1, "S": 8}
    assert "computes x bfloat16, w float32" in r.supports(BF16, 8, 256, 8192, cfg)


def test_pack_is_the_kernels_lane_order_and_lossless():
    import torch

    from kernels.launch.cluster_splitk import pack, unpack

    N, K = 32, 64
    w = torch.arange(N * K, dtype=torch.float32).reshape(N, K)
    flat = pack(w)
    assert flat.shape == (N * K,)
    # block (group G, step s) = 512 values; lane l = 4 * g + t holds row 16G + 8h + g, K 32s + 8t .. + 8 at
    # h * 256 + 8 * l, exactly what the kernel's pointer (group * K/32 + step) * 64 uint4 + lane reads
    for G, s, h, g, t in ((0, 0, 0, 0, 0), (1, 1, 1, 7, 3), (0, 1, 1, 2, 1), (1, 0, 0, 5, 2)):
        base = (G * (K // 32) + s) * 512 + h * 256 + 8 * (4 * g + t)
        row, k = 16 * G + 8 * h + g, 32 * s + 8 * t
        assert flat[base:base + 8].tolist() == w[row, k:k + 8].tolist()
    assert torch.equal(unpack(flat, N, K)[0], w)
    lo = -w
    both = pack(w, lo)   # HILO: per block H's 512 values, then L's
    assert torch.equal(both[512:1024], pack(lo)[:512])
    hi2, lo2 = unpack(both, N, K, 2)
    assert torch.equal(hi2, w) and torch.equal(lo2, lo)
    with pytest.raises(ValueError, match="N % 16 == 0 and K % 32 == 0"):
        pack(torch.zeros(24, 64))
