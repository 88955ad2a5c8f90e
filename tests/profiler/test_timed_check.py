"""Every timed graph is a checked graph (profiler.check.timed), on CPU with a stand-in graph whose replay re-runs
the captured call into the same output buffer."""
import pytest

torch = pytest.importorskip("torch")

from profiler.check import inputs  # noqa: E402
from profiler.check import rules as R  # noqa: E402
from profiler.check import timed as T  # noqa: E402
from profiler import wrong  # noqa: E402

CONTRACT = inputs.default_contract()
SHAPE = dict(load="test", family="o", M=16, N=64, K=256, x_dtype="bfloat16", w_dtype="bfloat16",
             y_dtype="bfloat16", rel_l2_tol=0.01)


class RerunGraph:
    """replay() re-runs fn into the captured output; counts replays."""

    def __init__(self, fn):
        self.fn, self.output, self.replays = fn, fn(), 0

    def replay(self):
        self.replays += 1
        self.output.copy_(self.fn())


def _setup(M=16, n=3):
    shape = dict(SHAPE, M=M)
    w = inputs.make_weight("o", shape["N"], shape["K"], 0, "cpu")
    tins = T.timed_inputs(shape, w, [300 + k for k in range(n)], "cpu", CONTRACT)
    return shape, w, tins, T.GraphJudge(shape, CONTRACT)


def _graph(cand, state, tin):
    x = tin.x.clone()
    return RerunGraph(lambda: cand.run(state, "o", x)), x


def test_timing_inputs_carry_the_checked_layout_and_references_are_shared():
    shape, w, tins, _ = _setup()
    for k, tin in enumerate(tins):
        x, layout = inputs.make_input(16, 256, 300 + k, "cpu", contract=CONTRACT)
        assert torch.equal(tin.x, x) and dict(tin.ref.layout) == dict(layout) and tin.ref.pairs is not None
        assert torch.equal(tin.ref.ref, R.reference(x, w, "bfloat16"))
        assert tin.partner is None  # M=16: pairs inside the input


def test_a_correct_graph_passes_before_and_after_timing():
    shape, w, tins, judge = _setup()
    cand = wrong.TorchLinear()
    state = cand.prepare("o", w)
    for k, tin in enumerate(tins):
        g, x = _graph(cand, state, tin)
        assert judge.graph(g, x, tin, f"cold timing graph {k + 1} of 3", "before timing") == []
        for _ in range(5):
            g.replay()
        assert judge.graph(g, x, tin, f"cold timing graph {k + 1} of 3", "after timing", replay=False) == []


def test_a_wrong_later_instance_is_named_by_graph_and_moment():
    """The lifecycle saw only instance 1; instance 2 was captured later and computes half of K."""
    shape, w, tins, judge = _setup()
    good = wrong.TorchLinear()
    state = good.prepare("o", w)

    class HalfK(wrong.TorchLinear):
        def run(self, state, family, x):
            return wrong._linear(x[:, :128].contiguous(), state["w"][:, :128].contiguous())

    graphs = [_graph(good, state, tins[0]), _graph(HalfK(), state, tins[1])]
    assert judge.graph(*graphs[0], tins[0], "cold timing graph 1 of 3", "before timing") == []
    reasons = judge.graph(*graphs[1], tins[1], "cold timing graph 2 of 3", "before timing")
    assert reasons and reasons[0].startswith("cold timing graph 2 of 3, before timing: rel-L2 error"), reasons


def test_a_graph_that_degrades_after_replays_fails_after_timing_only():
    shape, w, tins, judge = _setup()

    class Degrades(wrong.DegradesAfterReplays):
        AFTER = 20

    cand = Degrades()
    state = cand.prepare("o", w)
    g, x = _graph(cand, state, tins[0])
    assert judge.graph(g, x, tins[0], "cold timing graph 1 of 3", "before timing") == []
    for _ in range(40):  # timing
        g.replay()
    reasons = judge.graph(g, x, tins[0], "cold timing graph 1 of 3", "after timing (its last timed replay)",
                          replay=False)
    assert reasons and reasons[0].startswith("cold timing graph 1 of 3, after timing (its last timed replay): ")


def test_at_m1_the_graph_is_replayed_on_the_partner_input_and_left_as_it_came():
    shape, w, tins, judge = _setup(M=1, n=4)
    with_partner = [t for t in tins if t.partner is not None]
    assert with_partner, "some M=1 timing input must have a dense row"
    tin = with_partner[0]
    good = wrong.TorchLinear()
    g, x = _graph(good, good.prepare("o", w), tin)
    assert judge.graph(g, x, tin, "cold timing graph 1 of 3", "before timing") == []
    assert torch.equal(x, tin.x) and torch.equal(g.output.double(), tin.ref.ref) and g.replays == 3
    # a memo learns the static buffer from the capture and the first replay: the partner replay reads its old answer
    memo = wrong.MemoAcrossReplays()
    g, x = _graph(memo, memo.prepare("o", w), tin)
    reasons = judge.graph(g, x, tin, "cold timing graph 1 of 3", "before timing")
    assert reasons and reasons[0].startswith("cold timing graph 1 of 3, before timing (partner input): "), reasons
    assert torch.equal(x, tin.x)
    # lossy weights exact on every recognisable row: the element rule on the graph's own replay
    lossy = wrong.ProbeStatsInt8()
    g, x = _graph(lossy, lossy.prepare("o", w), tin)
    reasons = judge.graph(g, x, tin, "cold timing graph 1 of 3", "before timing")
    assert reasons and reasons[0].startswith("cold timing graph 1 of 3, before timing: element rule: "), reasons


def test_a_modified_static_input_is_named():
    shape, w, tins, judge = _setup()
    good = wrong.TorchLinear()
    g, x = _graph(good, good.prepare("o", w), tins[0])
    x.mul_(2)
    assert judge.graph(g, x, tins[0], "cold timing graph 1 of 3", "after timing", replay=False) == [
        "cold timing graph 1 of 3, after timing: its static input x was modified in place"]


def test_stream_outputs_are_each_judged_and_partner_couples_paired():
    shape, w, tins, judge = _setup(M=1, n=4)
    order = T.rotation(tins)
    xs = T.rotation_inputs(tins)
    assert len(xs) == len(order) > len(tins)
    good = wrong.TorchLinear()
    state = good.prepare("o", w)
    outs = [good.run(state, "o", x) for x in xs] * 2  # two repetitions of the rotation
    assert judge.outputs(outs, tins, "stream-mode graph", "after timing") == []
    lossy = wrong.ProbeStatsInt8()
    ls = lossy.prepare("o", w)
    outs = [lossy.run(ls, "o", x) for x in xs]
    reasons = judge.outputs(outs, tins, "stream-mode graph", "before timing")
    assert reasons and reasons[0].startswith("stream-mode graph, call 1 of ") and "element rule" in reasons[0], reasons
    # a partner call that returns the answer of the call before it (the couple's first input): named at that call
    stale = [good.run(state, "o", x) for x in xs]
    k = next(i for i, (_, partner) in enumerate(order) if partner)
    stale[k] = stale[k - 1]
    reasons = judge.outputs(stale, tins, "stream-mode graph", "before timing")
    assert reasons and reasons[0].startswith(f"stream-mode graph, call {k + 1} of "), reasons
