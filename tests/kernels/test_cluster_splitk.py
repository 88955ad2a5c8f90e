"""CPU: cluster_splitk's build helper (source hash, cache path, build/load/refuse decision and its message), its
compiled instantiations matching the registry's configs, and its guard."""
import re
from pathlib import Path

import pytest

from kernels.cuda import build
from kernels.launch.cluster_splitk import EXTENSION
from kernels.method import BF16
from kernels.methods_library import CLUSTER_COMPILED, CLUSTER_UNROLL, cluster_nt
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
    cases = {tuple(int(v) for v in c) for c in re.findall(r"PROJLAB_CASE\((\d+), (\d+), (\d+)\)", text)
             if "#define" not in c}
    assert cases == set(CLUSTER_COMPILED)
    assert f"constexpr int UNROLL = {CLUSTER_UNROLL};" in text
    m = get_method("cluster_splitk")
    assert {(c["RW"], c["KW"], c["NT"]) for c in m.configs} == set(CLUSTER_COMPILED)


def test_guard():
    m = get_method("cluster_splitk")
    cfg = {"RW": 4, "KW": 2, "NT": 2, "S": 4}
    assert m.supports(BF16, 16, 2304, 8192, cfg) is None
    assert "NT=4" in m.supports(BF16, 32, 2304, 8192, cfg)
    assert "1 <= M <= 64" in m.supports(BF16, 65, 2304, 8192, dict(cfg, NT=4))
    assert "K % 1024" in m.supports(BF16, 16, 2304, 1536, cfg)
    assert "N % 64" in m.supports(BF16, 16, 2300, 8192, cfg)
    assert [cluster_nt(M) for M in (1, 8, 9, 16, 17, 64)] == [1, 1, 2, 2, 4, 4]
