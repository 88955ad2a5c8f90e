"""Every config of splitk_atomic_v2 / splitk_atomic_kn / streamk_small compiles for sm_90 (H200) on this CPU
machine without spills, with the pieces each knob promises in the PTX (TMA bulk copies, cp.async pipelining, the
single-launch atomics). Skips where triton's ptxas is missing."""
import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from kernels.methods_triton.dense import SPLITK_ATOMIC_KN_CONFIGS, SPLITK_ATOMIC_V2_CONFIGS, STREAMK_SMALL_CONFIGS
from tests.kernels.test_compile_sm90 import PTXAS, _check_single_launch, _compile, compile_streamk  # noqa: E402

pytestmark = pytest.mark.skipif(not __import__("os").path.exists(PTXAS), reason="triton's bundled ptxas not found")

SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "w_desc": "constexpr", "y_ptr": "*bf16", "ws_ptr": "*fp32",
       "cnt_ptr": "*i32", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_w": "i32", "stride_ym": "i32",
       "K": "constexpr", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "SPLIT": "constexpr",
       "W_KN": "constexpr", "W_LOAD": "constexpr"}
CASES = [(False, c) for c in SPLITK_ATOMIC_V2_CONFIGS] + [(True, c) for c in SPLITK_ATOMIC_KN_CONFIGS]


@pytest.mark.parametrize("w_kn,cfg", CASES, ids=str)
def test_splitk_atomic2_compiles(w_kn, cfg):
    from kernels.triton.splitk_atomic_v2 import splitk_atomic2_kernel

    sig = dict(SIG)
    consts = {k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT", "W_LOAD")}
    consts.update(W_KN=w_kn, w_desc=None)
    if cfg["W_LOAD"] in ("tma", "pack_tma"):
        block = f"[{cfg['BK']}, {cfg['BN']}]" if w_kn else f"[{cfg['BN']}, {cfg['BK']}]"
        sig["w_desc"] = f"tensordesc<bf16{block}>"
        del consts["w_desc"]
    for K in (8192, 4096, 1024):
        if K // cfg["BK"] < cfg["SPLIT"]:
            continue
        k, spills = _compile(splitk_atomic2_kernel, sig, {**consts, "K": K}, cfg["num_warps"], cfg["num_stages"])
        ptx = k.asm["ptx"]
        assert spills == 0
        _check_single_launch(k, cfg["SPLIT"])
        if cfg["W_LOAD"] in ("tma", "pack_tma"):
            assert "cp.async.bulk.tensor" in ptx
        elif (K // cfg["BK"]) // cfg["SPLIT"] > 1:
            assert "cp.async" in ptx                      # the weight stream is software-pipelined


def test_cache_modifier_is_no_knob_once_pipelined():
    """Why W_LOAD has no cache/eviction values: the pipelined weight load is the same cp.async.cg whatever
    tl.load is told (triton 3.6, sm_90). Compiled from a two-line probe kernel with each load option."""
    ptx = {}
    for option in ("", ".cg", "evict_first"):
        ptx[option] = _compile(_probe_kernel, {"w_ptr": "*bf16", "y_ptr": "*fp32", "OPTION": "constexpr"},
                               {"OPTION": option}, 4, 4)[0].asm["ptx"]
        assert "cp.async.cg.shared.global" in ptx[option]
    def strip(text):   # drop debug line info (.loc / .file), which names the source line of each branch
        return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith((".loc", ".file", "//")))
    assert strip(ptx[""]) == strip(ptx[".cg"]) == strip(ptx["evict_first"])


@triton.jit
def _probe_kernel(w_ptr, y_ptr, OPTION: tl.constexpr):
    r = tl.arange(0, 64)
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k in range(0, 16):
        p = w_ptr + r[:, None] * 1024 + k * 64 + r[None, :]
        if OPTION == "evict_first":
            w = tl.load(p, eviction_policy="evict_first")
        elif OPTION == ".cg":
            w = tl.load(p, cache_modifier=".cg")
        else:
            w = tl.load(p)
        acc = tl.dot(w, w, acc)
    tl.store(y_ptr + r[:, None] * 64 + r[None, :], acc)


@pytest.mark.parametrize("cfg", STREAMK_SMALL_CONFIGS, ids=str)
def test_streamk_small_compiles(cfg):
    k, spills = compile_streamk(cfg)
    assert spills == 0
    tma = cfg["TMA"]
    assert ("cp.async.bulk.tensor" if tma else "cp.async") in k.asm["ptx"]
