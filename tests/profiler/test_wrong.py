"""Every known-wrong candidate is rejected with a clear reason (CPU; GPU adds graph replays)."""
import pytest

torch = pytest.importorskip("torch")

from profiler import contract as C  # noqa: E402
from profiler import wrong  # noqa: E402

CONTRACT = C.default_contract()
BF16 = dict(load="test", family="qkv_gate", M=16, N=64, K=256, x_dtype="bfloat16", w_dtype="bfloat16",
            y_dtype="bfloat16", rel_l2_tol=0.01)
ROUTER = dict(load="test", family="router", M=16, N=32, K=512, x_dtype="bfloat16", w_dtype="float32",
              y_dtype="float32", rel_l2_tol=1e-4)


def _shapes_for(cls):
    # RouterBF16Weights is only wrong for FP32 weights; everything else must fail on both kinds.
    return [ROUTER, dict(ROUTER, M=1)] if cls is wrong.RouterBF16Weights else [BF16, dict(BF16, M=1), ROUTER]


def _rejected(cls, shape, device) -> str:
    """Check one known-wrong candidate; it must fail with its expected reason. Returns the joined reasons."""
    c = C.check_candidate(cls(), shape, device, contract=CONTRACT)
    assert not c.ok, f"{cls.name} passed the contract on {device}"
    text = " | ".join(c.reasons)
    if cls.expect:
        assert cls.expect in text, text
    assert all(len(r) > 10 for r in c.reasons)
    return text


CASES = [(cls, shape) for cls in wrong.CPU_WRONG for shape in _shapes_for(cls)]


@pytest.mark.parametrize("cls, shape", CASES, ids=[f"{c.name}-{s['family']}-M{s['M']}" for c, s in CASES])
def test_wrong_candidate_rejected_on_cpu(cls, shape):
    _rejected(cls, shape, "cpu")


def test_stale_output_is_named_stale():
    c = C.check_candidate(wrong.StaleOutput(), BF16, "cpu", contract=CONTRACT)
    assert c.reasons[0].startswith("eager call 2: STALE output")


def test_memo_by_pointer_needs_a_graph_to_fail():
    """Documents why the GPU path exists: eager calls with fresh inputs cannot see this bug."""
    assert C.check_candidate(wrong.MemoByPointer(), BF16, "cpu", contract=CONTRACT).ok


GPU_CASES = [(cls, shape) for cls in wrong.ALL_WRONG for shape in _shapes_for(cls)]


@pytest.mark.gpu
@pytest.mark.parametrize("cls, shape", GPU_CASES, ids=[f"{c.name}-{s['family']}-M{s['M']}" for c, s in GPU_CASES])
def test_wrong_candidate_rejected_on_gpu(cls, shape):
    text = _rejected(cls, shape, "cuda")
    if cls is wrong.UninitializedOutput and shape["family"] != "router":
        # The poisoned allocator turns unwritten columns into NaN. Not for the router: there the candidate's
        # own freed x.float() temporary is the best-fit block for its output (seen on the H200), so the
        # unwritten part holds finite garbage and the row/rel-L2 rules reject it instead.
        assert "non-finite" in text, text


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [BF16, ROUTER, dict(BF16, M=1)])
def test_control_passes_on_gpu_with_graph(shape):
    c = C.check_candidate(wrong.TorchLinear(), shape, "cuda", contract=CONTRACT, keep_graph=True)
    assert c.ok, c.reasons
    assert c.graph is not None and tuple(c.graph.output.shape) == (shape["M"], shape["N"])
