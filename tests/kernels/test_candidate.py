"""The candidate protocol: plan specs, a user's module (good and bad), dispatch by M (CPU)."""
import re

import pytest

from kernels.candidate import CandidateError, MethodCandidate, ModuleCandidate, PlanCandidate, load_candidate
from kernels.method import PlanError
from kernels.plans import PLANS_DIR

torch = pytest.importorskip("torch")

GOOD = '''
import torch.nn.functional as F
NAME = "mine"
def prepare(weight):
    return {"w": weight}
def run(state, family, x):
    w = state["w"]
    return F.linear(x.to(w.dtype), w)
def describe(family, M):
    return f"F.linear {family} M={M}"
'''


def _ref(x, w):
    return x.double() @ w.double().t()


def _rel(y, ref):
    return float((y.double() - ref).norm() / ref.norm())


def test_load_candidate_specs(tmp_path):
    assert isinstance(load_candidate("baseline"), PlanCandidate)
    assert load_candidate(str(PLANS_DIR / "seed036.json")).name == "seed036"
    mod = tmp_path / "mine.py"
    mod.write_text(GOOD)
    cand = load_candidate(str(mod))
    assert isinstance(cand, ModuleCandidate) and cand.name == "mine"
    assert cand.describe("o", 3) == "F.linear o M=3"
    with pytest.raises(PlanError):
        load_candidate("no_such_plan")


def test_module_candidate_runs(tmp_path):
    mod = tmp_path / "mine.py"
    mod.write_text(GOOD)
    cand = ModuleCandidate(mod)
    w = torch.randn(32, 64).bfloat16()
    x = torch.randn(3, 64).bfloat16()
    y = cand.run(cand.prepare("o", w), "o", x)
    assert y.shape == (3, 32) and _rel(y, _ref(x, w)) < 1e-2


@pytest.mark.parametrize("text,needle", [
    ("def prepare(weight):\n    return weight\n", "['run']"),
    ("run = 3\n", "['prepare', 'run']"),
    ("def prepare(a, b, c):\n    pass\ndef run(state, family, x):\n    pass\n", "prepare(weight)"),
    ("def prepare(weight):\n    pass\ndef run(state):\n    pass\n", "run(state, family, x)"),
    ("raise RuntimeError('boom')\n", "importing the module failed: RuntimeError: boom"),
])
def test_bad_modules_are_named(tmp_path, text, needle):
    mod = tmp_path / "bad.py"
    mod.write_text(text)
    with pytest.raises(CandidateError) as info:
        ModuleCandidate(mod)
    assert "bad.py" in str(info.value) and needle in str(info.value)


def test_missing_module_file(tmp_path):
    with pytest.raises(CandidateError, match="no such module"):
        load_candidate(str(tmp_path / "absent.py"))


def test_baseline_plan_candidate_on_cpu_all_families():
    cand = load_candidate("baseline")
    for family, N, K, wdt in (("o", 64, 128, torch.bfloat16), ("router", 16, 256, torch.float32)):
        w = (torch.randn(N, K) * K ** -0.5).to(wdt)
        state = cand.prepare(family, w)
        for M in (1, 3, 8):
            x = torch.randn(M, K).bfloat16()
            y = cand.run(state, family, x)
            assert y.dtype == wdt and y.shape == (M, N)
            assert _rel(y, _ref(x, w)) < (1e-4 if family == "router" else 1e-2)
        assert cand.describe(family, 5) == "torch_linear"


def test_plan_candidate_dispatches_by_m_and_prepares_each_method_once():
    cand = load_candidate("seed036")
    w = (torch.randn(2304, 8192) * 8192 ** -0.5).bfloat16()
    state = cand.prepare("qkv_gate", w)
    assert sorted(m for m, _ in state["states"]) == ["gemv", "splitk", "torch_linear"]
    x = torch.randn(128, 8192).bfloat16()  # M=128 -> torch_linear (runs on CPU)
    y = cand.run(state, "qkv_gate", x)
    assert _rel(y, _ref(x, w)) < 1e-2
    assert cand.describe("qkv_gate", 1).startswith("gemv")


def test_method_candidate_validates_config():
    assert MethodCandidate("gemv").name == "gemv BN=1 num_warps=16 cache=.cg"
    with pytest.raises(PlanError):
        MethodCandidate("gemv", {"BN": 5, "num_warps": 4, "cache": ""})


def test_plan_candidate_dispatches_by_the_weights_n(monkeypatch):
    """unpooler: a fake method only at N=1024 (M 1..8), torch_linear for any other N. On CPU with small K."""
    import json

    from kernels import registry
    from kernels.method import BF16, Method
    from kernels.plans import DISPATCH_MAX_M, plan_from_dict

    calls = []

    class _Fake(Method):
        def prepare(self, weight, config):
            calls.append(("prepare", int(weight.shape[0])))
            return {"w": weight}

        def run(self, state, x):
            calls.append(("run", int(state["w"].shape[0]), int(x.shape[0])))
            return (x.float() @ state["w"].float().t()).to(state["w"].dtype)

    base = registry.METHODS["torch_linear"]
    fake = _Fake("fake_n", (BF16,), base.impl, "fake N=1024 method")
    monkeypatch.setitem(registry.METHODS, "fake_n", fake)
    data = json.loads((PLANS_DIR / "baseline.json").read_text())
    data["families"]["unpooler"] = [{"M": [1, DISPATCH_MAX_M], "method": "torch_linear", "config": {}},
                                    {"M": [1, 8], "N": 1024, "method": "fake_n", "config": {}}]
    cand = PlanCandidate(plan_from_dict(data, "n.json"))
    K = 64
    w1024 = (torch.randn(1024, K) * K ** -0.5).bfloat16()
    w8192 = (torch.randn(8192, K) * K ** -0.5).bfloat16()

    s1024 = cand.prepare("unpooler", w1024)
    assert s1024["N"] == 1024 and sorted(m for m, _ in s1024["states"]) == ["fake_n", "torch_linear"]
    s8192 = cand.prepare("unpooler", w8192)          # the N=1024-only method is not prepared for N=8192
    assert s8192["N"] == 8192 and sorted(m for m, _ in s8192["states"]) == ["torch_linear"]
    assert calls == [("prepare", 1024)]

    for M, w, st, fake_runs in ((8, w1024, s1024, True), (3, w1024, s1024, True), (9, w1024, s1024, False),
                                (8, w8192, s8192, False), (3, w8192, s8192, False)):
        calls.clear()
        x = torch.randn(M, K).bfloat16()
        y = cand.run(st, "unpooler", x)
        assert y.shape == (M, w.shape[0]) and _rel(y, _ref(x, w)) < 1e-2
        assert (calls == [("run", int(w.shape[0]), M)]) is fake_runs, (M, w.shape, calls)

    assert cand.describe("unpooler", 8, 1024) == "fake_n"
    assert cand.describe("unpooler", 8, 8192) == "torch_linear"
    assert cand.describe("unpooler", 8) == "fake_n"        # N=None: the workload's N at M=8 (1024)
    assert cand.describe("unpooler", 3) == "torch_linear"  # the workload's N at M=3 is 8192


OBJECT = '''
import torch.nn.functional as F
class Mine:
    name = "mine_obj"
    def prepare(self, family, weight):
        return {"w": weight}
    def run(self, state, family, x):
        return F.linear(x, state["w"])
NOT_A_CANDIDATE = 3
'''


def test_object_spec_loads_a_class_following_the_protocol(tmp_path):
    from kernels.candidate import ObjectCandidate

    mod = tmp_path / "objs.py"
    mod.write_text(OBJECT)
    cand = load_candidate(f"{mod}:Mine")
    assert isinstance(cand, ObjectCandidate) and cand.name == "mine_obj"
    w, x = torch.randn(8, 32).bfloat16(), torch.randn(2, 32).bfloat16()
    assert _rel(cand.run(cand.prepare("o", w), "o", x), _ref(x, w)) < 1e-2
    for attr, words in (("Absent", "no attribute 'Absent'"), ("NOT_A_CANDIDATE", r"must have callable\(s\)")):
        with pytest.raises(CandidateError, match=words):
            load_candidate(f"{mod}:{attr}")


def test_method_spec_round_trips_and_is_checked():
    from kernels.candidate import check_spec, method_spec

    spec = method_spec("gemv", {"BN": 1, "num_warps": 16, "cache": ".cg"})
    assert spec == 'method:gemv:{"BN": 1, "cache": ".cg", "num_warps": 16}'
    cand = load_candidate(spec)
    assert isinstance(cand, MethodCandidate) and cand.config == {"BN": 1, "num_warps": 16, "cache": ".cg"}
    assert load_candidate("method:gemv").name == MethodCandidate("gemv").name
    check_spec(spec)
    with pytest.raises(PlanError):
        check_spec('method:gemv:{"BN": 5, "num_warps": 4, "cache": ""}')
    with pytest.raises(CandidateError, match="must be a JSON object"):
        check_spec("method:gemv:[1]")


def test_check_spec_runs_no_candidate_code(tmp_path):
    from kernels.candidate import check_spec

    mod = tmp_path / "explodes.py"
    mod.write_text("raise SystemExit('imported!')\n"
                   "def prepare(weight): ...\ndef run(state, family, x): ...\n"
                   "class Anything:\n    def prepare(self, family, weight): ...\n"
                   "    def run(self, state, family, x): ...\n")
    check_spec(str(mod))            # follows the protocol: fine, and the module was not imported
    check_spec(f"{mod}:Anything")
    with pytest.raises(CandidateError, match="no such module file"):
        check_spec(str(tmp_path / "absent.py:X"))
    with pytest.raises(PlanError):
        check_spec("no_such_plan")


def test_module_with_spaces_in_its_name_loads(tmp_path):
    mod = tmp_path / "my kernels.py"
    mod.write_text(GOOD)
    assert load_candidate(str(mod)).name == "mine"


def test_method_candidate_never_runs_a_config_its_shape_check_rejects(monkeypatch):
    """router_gemv_fp32 with BK=1024 at K=1000 (the shape check says K % BK != 0) once ran under the interpreter and
    read past the weight rows. Now the launcher refuses it at prepare, and every run() asks the shape check first."""
    from kernels.launch import router as R

    cand = MethodCandidate("router_gemv_fp32", {"BN": 1, "BK": 1024, "num_warps": 4, "cache": ".cg"})
    w = torch.randn(256, 1000)
    with pytest.raises(ValueError, match=r"router_gemv_fp32: needs K % BK == 0 \(K=1000, BK=1024\)"):
        cand.prepare("router", w)
    launched = []
    monkeypatch.setattr(R, "_check_k_steps", lambda *a: None)       # a launcher that forgot its check
    monkeypatch.setattr(R.ROUTER_GEMV_FP32, "run", lambda state, x: launched.append(x))
    state = cand.prepare("router", w)
    with pytest.raises(PlanError, match=r"rejects router M=1 N=256 K=1000: router_gemv_fp32 needs K % BK == 0"):
        cand.run(state, "router", torch.randn(1, 1000).bfloat16())
    with pytest.raises(PlanError, match="M=1 only"):
        cand.run(state, "router", torch.randn(2, 1000).bfloat16())
    assert launched == []


def test_plan_candidate_checks_the_shape_check_of_the_entry_it_runs(monkeypatch):
    """Plans run shape checks at load only up to SHAPE_CHECK_MAX_M and at a range's top; run() checks the M it runs."""
    from kernels import registry
    from kernels.method import Method

    def shape_check(M, N, K, config):
        return None if M != 777 else "fake shape check rejects M=777"

    base = registry.METHODS["torch_linear"]
    monkeypatch.setitem(registry.METHODS, "torch_linear",
                        Method("torch_linear", base.dtypes, base.impl, base.description, shape_check=shape_check))
    cand = load_candidate("baseline")
    w = (torch.randn(16, 32) * 32 ** -0.5).bfloat16()
    state = cand.prepare("o", w)
    assert cand.run(state, "o", torch.randn(776, 32).bfloat16()).shape == (776, 16)
    with pytest.raises(PlanError, match="rejects o M=777 N=16 K=32: fake shape check rejects M=777"):
        cand.run(state, "o", torch.randn(777, 32).bfloat16())


@pytest.mark.parametrize("source, attr, words", [
    ("def prepare(weight): ...\n", None, "module must define callable(s) ['run'] (prepare(weight) -> state, run(state, family, x) -> y)"),
    ("def prepare(weight, extra): ...\ndef run(state, family, x): ...\n", None,
     "prepare must accept prepare(weight) -> state, has (weight, extra)"),
    ("def prepare(weight): ...\ndef run(x): ...\n", None, "run must accept run(state, family, x)"),
    ("class C:\n    def prepare(self, weight): ...\n    def run(self, state, family, x): ...\n", "C",
     "class C: prepare must accept prepare(self, family, weight)"),
    ("X = 1\n", "C", "no attribute 'C'"),
])
def test_check_spec_reads_the_protocol_from_the_source_without_importing(tmp_path, source, attr, words):
    """No import (so no torch, no GPU): a module that breaks the protocol is named before any worker starts."""
    from kernels.candidate import check_spec

    mod = tmp_path / "mine.py"
    mod.write_text("import no_such_module_anywhere\n" + source)
    with pytest.raises(CandidateError, match=re.escape(words)):
        check_spec(f"{mod}:{attr}" if attr else str(mod))


def test_check_spec_accepts_what_it_cannot_see(tmp_path):
    """Functions bound by an import or an assignment, and methods a subclass inherits, are left to the worker."""
    from kernels.candidate import check_spec

    mod = tmp_path / "indirect.py"
    mod.write_text("from elsewhere import prepare\nrun = make_run()\nclass Sub(Base):\n    pass\n"
                   "def flexible(*args): ...\n")
    check_spec(str(mod))
    check_spec(f"{mod}:Sub")
