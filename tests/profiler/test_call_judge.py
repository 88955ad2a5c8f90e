"""profiler.worker.call_judge: the parent's judge of a CPU worker's timed calls -- the inputs it makes (new at every
call, every row kind, a token each), the outputs it judges (by its own draws, weight and FP64 product; a memo named),
and the counts it holds the worker's answer to (every input back, each with its own token, no candidate timed more
often than it was fed). Driven here as the parent's protocol loop drives it; through a real worker in
test_judge_reach.py and test_trust_sweep.py."""
import pytest

torch = pytest.importorskip("torch")

from profiler.check.inputs import default_contract, make_weight  # noqa: E402
from profiler.check.timed import MEMO_CAUSE, tensor_from_text, tensor_text  # noqa: E402
from profiler.worker.call_judge import CallJudge, wanted  # noqa: E402

SHAPE = {"family": "o", "M": 4, "N": 48, "K": 128, "x_dtype": "bfloat16", "w_dtype": "bfloat16",
         "y_dtype": "bfloat16", "rel_l2_tol": 0.01, "load": "verify 4"}
CALL = {"candidate": "cand", "graph": "cold timing graph 1 of 3"}


def _judge(shape=SHAPE, share=1.0, stand_in=False) -> CallJudge:
    judge = CallJudge({"kind": "shape", "shape": shape, "settings": {"seed": 3}}, default_contract(),
                      stand_in=stand_in)
    judge.share = share   # every output judged: the tests below need no luck
    return judge


def _weight(shape=SHAPE):
    return make_weight(shape["family"], shape["N"], shape["K"], 3, "cpu", dtype="bfloat16")


def _ask(judge, shape=SHAPE):
    reply = judge.input(CALL)
    assert reply["op"] == "input" and isinstance(reply["token"], str)
    return tensor_from_text(reply["x"], (shape["M"], shape["K"]), torch.bfloat16), reply["token"]


def _answer(judge, x, token, y=None, w=None):
    y = torch.nn.functional.linear(x, _weight() if w is None else w) if y is None else y
    judge.output(CALL | {"token": token, "y": tensor_text(y)})


def _result(n_samples, base_samples=0):
    """A reply with `cand` timed n_samples times and `base` (fed nothing here) base_samples times."""
    return {"results": [{"candidate": "cand", "n_samples": n_samples},
                        {"candidate": "base", "n_samples": base_samples}],
            "pairs": [{"baseline": "base", "candidate": "cand"}], "failures": [], "info": {}}


def test_the_parent_makes_a_new_input_for_every_call_with_every_row_kind_and_a_token_each():
    """At M = 1 the one row carries a spike or none, half each (a kernel exact only on rows with an outlier is
    lossy on timed calls); no two inputs or tokens repeat."""
    one = dict(SHAPE, M=1)
    judge = _judge(one)
    seen, tokens, plain = set(), set(), 0
    for _ in range(120):
        reply = judge.input(CALL)
        x = tensor_from_text(reply["x"], (1, one["K"]), torch.bfloat16)
        plain += int(x.float().abs().max() < 8.0)   # a spike is spike_magnitude(K) = 16 at K = 128
        seen.add(reply["x"])
        tokens.add(reply["token"])
    assert len(seen) == len(tokens) == 120
    assert 30 < plain < 90, plain


def test_a_right_output_passes_and_a_wrong_one_fails_its_candidate_alone_with_its_call_named():
    judge = _judge()
    for _ in range(5):
        _answer(judge, *_ask(judge))
    x, token = _ask(judge)
    w = _weight()
    half = torch.nn.functional.linear(x[:, : SHAPE["K"] // 2], w[:, : SHAPE["K"] // 2])
    _answer(judge, x, token, y=half)
    out = judge.apply(_result(6))
    assert [r["candidate"] for r in out["results"]] == ["base"] and out["pairs"] == []
    (f,) = out["failures"]
    assert (f["candidate"], f["kind"], f["phase"]) == ("cand", "incorrect", "time")
    assert f["reasons"][0].startswith("cold timing graph 1 of 3, during timing (batch 1), timed call 6 (judged at "
                                      "random after it ran, by the parent): rel-L2"), f["reasons"]
    assert out["info"]["judged"] == {"share": 1.0, "miss_fraction": 0.05, "calls": 0, "judged": 0,
                                     "by": "the parent", "p_catch": 0.0}   # no candidate right but `base`, fed none


def test_an_answer_to_an_earlier_input_is_named_a_memo():
    judge = _judge()
    x1, t1 = _ask(judge)
    _answer(judge, x1, t1)
    x2, t2 = _ask(judge)
    _answer(judge, x2, t2, y=torch.nn.functional.linear(x1, _weight()))
    (f,) = judge.apply(_result(2))["failures"]
    assert MEMO_CAUSE in f["reasons"][0], f["reasons"]


@pytest.mark.parametrize("tamper, words", [
    ("token", "is not of the input fed for this call"),
    ("extra", "an output came back for no input fed"),
    ("held", "the outputs of 1 came back: the others were held back"),
    ("timed", "3 timed calls recorded, 2 inputs fed by the parent"),
    ("bytes", "its output did not come back whole"),
])
def test_what_only_the_parent_can_count_is_forging_when_it_does_not_add_up(tamper, words):
    judge = _judge()
    x, token = _ask(judge)
    _answer(judge, x, "0" * 16 if tamper == "token" else token)
    if tamper == "extra":
        _answer(judge, x, token)
    x, token = _ask(judge)
    if tamper == "bytes":
        judge.output(CALL | {"token": token, "y": tensor_text(x)})     # the input's bytes: not an M x N output
    elif tamper != "held":
        _answer(judge, x, token)
    out = judge.apply(_result(3 if tamper == "timed" else 2))
    (f,) = out["failures"]
    assert f["candidate"] == "cand" and words in " ".join(f["reasons"]) and "in-process forging" in \
        " ".join(f["reasons"]), f["reasons"]


def test_an_honest_candidate_is_kept_with_the_parents_count_and_a_stand_in_timer_may_feed_nothing():
    judge = _judge(share=0.749)
    for _ in range(40):
        _answer(judge, *_ask(judge))
    out = judge.apply({"results": [{"candidate": "cand", "n_samples": 32}], "pairs": [], "failures": [], "info": {}})
    assert out["failures"] == [] and [r["candidate"] for r in out["results"]] == ["cand"]
    judged = out["info"]["judged"]
    assert judged["by"] == "the parent" and judged["calls"] == 40 and 10 <= judged["judged"] <= 40
    # a test's stand-in timer makes its samples up without running a call: nothing fed, nothing to judge
    quiet = _judge(stand_in=True).apply(_result(32, 32))
    assert quiet["failures"] == [] and len(quiet["results"]) == 2
    assert [f["candidate"] for f in _judge().apply(_result(32, 32))["failures"]] == ["cand", "base"]


def test_the_parent_judges_the_cpus_cold_shape_tasks_only():
    task = {"kind": "shape", "shape": SHAPE, "settings": {}}
    assert wanted(task, {"device": "cpu"}) and wanted(task, {"device": "cpu:0"})
    assert not wanted(task, {"device": "cuda"}) and not wanted(task, {})
    assert not wanted(task | {"settings": {"mode": "stream"}}, {"device": "cpu"})
    assert not wanted({"kind": "probes"}, {"device": "cpu"})


def test_a_message_the_parent_cannot_judge_fails_its_candidate_and_nothing_else(monkeypatch):
    """The worker's messages are never trusted to be well formed: an output the judge cannot read, or one whose
    judging raises, fails its candidate with the reason, and the parent goes on."""
    from profiler.worker import call_judge

    judge = _judge()
    x, token = _ask(judge)
    judge.output({"candidate": "cand", "graph": CALL["graph"], "token": token, "y": ["not", "text"]})
    (f,) = judge.apply(_result(1))["failures"]
    assert f["candidate"] == "cand" and "did not come back whole" in f["reasons"][0], f["reasons"]

    def broken(*args, **kw):
        raise RuntimeError("broken rule")

    monkeypatch.setattr(call_judge, "screen_outputs", broken)
    for batch in (1, 32):   # judged as the output arrives (a full batch), or at the answer
        judge = _judge()
        judge.batch = batch
        _answer(judge, *_ask(judge))
        (f,) = judge.apply(_result(1))["failures"]
        assert "the parent could not judge its output" in f["reasons"][0] and "broken rule" in f["reasons"][0], \
            f["reasons"]
