"""The pair rule (profiler.check.rules): dense rows all of one kind, pairs of them equal but for one negated spike, and
the bound a correct kernel stays under with margin while lossy weights do not -- at every official family's N, K."""
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from datasets import load_workload  # noqa: E402
from profiler.check import inputs  # noqa: E402
from profiler.check import rules as R  # noqa: E402
from profiler import wrong  # noqa: E402

CONTRACT = inputs.default_contract()
FAMILIES = {name: fam for name, fam in load_workload().families.items()}
# The margin a round-to-nearest kernel must keep under the bound (the rule allows 2 u_y; such a kernel uses <= 1).
CORRECT_MAX_RATIO = 0.6


def _setup(family: str, M: int, seed: int = 1):
    fam = FAMILIES[family]
    N, K = int(fam["N"]), int(fam["K"])
    w = inputs.make_weight(family, N, K, 0, "cpu", dtype=fam["w_dtype"])
    x, layout = inputs.make_input(M, K, seed, "cpu", dtype=fam["x_dtype"], contract=CONTRACT, vary=True)
    return fam, w, R.WeightReference(w), x, layout


def _baseline(x, w):
    return F.linear(x.float(), w) if w.dtype == torch.float32 else F.linear(x, w)


def _hilo(x, w):
    """The write-up's router scheme: W = hi + lo, both BF16, FP32 accumulation."""
    hi = w.to(torch.bfloat16)
    lo = (w - hi.float()).to(torch.bfloat16)
    return F.linear(x.float(), hi.float()) + F.linear(x.float(), lo.float())


def test_dense_rows_are_one_kind_and_pairs_differ_only_in_the_negated_spike():
    x, layout = inputs.make_input(64, 1024, 3, "cpu", contract=CONTRACT)
    S = inputs.spike_magnitude(1024)
    assert S == 32.0 and layout.pairs and len(layout.pairs) == 64 // inputs.PAIR_EVERY_ROWS
    dense = sorted(layout.spikes)
    plain = [r for r in range(64) if r not in layout and r not in layout.spikes]
    assert set(dense).isdisjoint(layout) and len(dense) + len(plain) + len(layout) == 64 and plain
    for r in dense:  # every spiky dense row: Gaussian entries and exactly one entry of magnitude S, at its column
        big = torch.nonzero(x[r].float().abs() >= S).flatten().tolist()
        assert big == [layout.spikes[r]], (r, big)
    for r in plain:  # a plain row: Gaussian entries only (the rows real activations mostly are)
        assert float(x[r].float().abs().max()) < S / 4, r
    assert not ({r for p in layout.pairs for r in p} & set(plain))   # pairs are of spiky rows
    for a, b in layout.pairs:
        c = layout.spikes[a]
        diff = torch.nonzero(x[a] != x[b]).flatten().tolist()
        assert diff == [c] and float(x[a, c]) == -float(x[b, c])
        # the two rows have the same entries up to one sign: no statistic of a row tells a from b or from the rest
        assert torch.equal(x[a].float().abs().sort().values, x[b].float().abs().sort().values)
    paired = {r for p in layout.pairs for r in p}
    unpaired = [r for r in dense if r not in paired]
    share = [float(x[r].float().abs().max() ** 2 / x[r].float().pow(2).sum()) for r in dense]
    # the spike's share of the row's energy is the same for paired and unpaired dense rows (~50 % at K=1024)
    assert max(share) - min(share) < 0.1 and unpaired


def test_partner_input_negates_every_spike_exactly():
    x, layout = inputs.make_input(1, 512, 4, "cpu", contract=CONTRACT)   # seed 4 at M=1: one dense row
    assert layout.spikes and not layout.pairs
    x2, pairs = inputs.partner_input(x, layout)
    assert pairs == [(0, 0)]
    c = layout.spikes[0]
    assert torch.nonzero(x2[0] != x[0]).flatten().tolist() == [c] and float(x2[0, c]) == -float(x[0, c])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_baseline_passes_with_margin_and_int8_weights_fail_at_every_official_family(family):
    fam, w, wref, x, layout = _setup(family, 16)
    iref = R.input_reference(x, wref, fam["y_dtype"], layout)
    tol = float(fam["rel_l2_tol"])
    base = R.check_output(_baseline(x, w), iref, tol, contract=CONTRACT)
    assert base.ok and base.pair_ratio < CORRECT_MAX_RATIO, (base.reasons, base.pair_ratio)
    if w.dtype == torch.float32:   # the router: the hi/lo scheme stays far inside the bound
        hilo = R.check_output(_hilo(x, w), iref, tol, contract=CONTRACT)
        assert hilo.ok and hilo.pair_ratio < 0.05, (hilo.reasons, hilo.pair_ratio)
        return
    lossy = R.check_output(F.linear(x, wrong._int8_groups(w)), iref, tol, contract=CONTRACT)
    # int8 with a scale per 128 columns: inside the 1 % tolerance on the whole output, far over the pair bound
    assert lossy.rel_l2 < tol and not lossy.ok and lossy.pair_ratio > 3
    assert any("paired-row probe" in r for r in lossy.reasons), lossy.reasons


@pytest.mark.parametrize("family", ["o", "router"])
def test_partner_calls_at_m1_pass_the_baseline_and_fail_int8(family):
    fam, w, wref, x, layout = _setup(family, 1, seed=4)
    x2, pairs = inputs.partner_input(x, layout)
    pref = R.pair_reference(x, wref, fam["y_dtype"], pairs, x_b=x2)
    ratio, reasons = R.pair_rule(_baseline(x, w), _baseline(x2, w), pref)
    assert not reasons and ratio < CORRECT_MAX_RATIO
    if family == "o":
        lossy = wrong._int8_groups(w)
        ratio, reasons = R.pair_rule(F.linear(x, lossy), F.linear(x2, lossy), pref)
        assert ratio > 3 and "partner call's row 0" in reasons[0]


def test_probe_stats_int8_passes_every_rule_but_the_pair_rule():
    """The lossy kernel exact on rows that look like probes is exact on every probe row and inside the dense
    tolerance: only the pair rule rejects it, on the same output."""
    fam, w, wref, x, layout = _setup("o", 64)
    cand = wrong.ProbeStatsInt8()
    y = cand.run(cand.prepare("o", w), "o", x)
    iref = R.input_reference(x, wref, fam["y_dtype"], layout)
    without_pairs = R.check_output(y, iref.ref, 0.01, sparse_rows=dict(layout), contract=CONTRACT)
    assert without_pairs.ok, without_pairs.reasons
    with_pairs = R.check_output(y, iref, 0.01, contract=CONTRACT)
    assert not with_pairs.ok and with_pairs.reasons[0].startswith("paired-row probe"), with_pairs.reasons


def test_the_bound_is_what_the_docstring_derives():
    """bound = 2 u_y (|r_a| + |r_b|) + lambda sqrt(K) u_acc (|x_a| + |x_b|) |W|^T, entry by entry."""
    x = torch.tensor([[1.0, 2.0, -3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]).bfloat16()
    w = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0]]).bfloat16()
    pref = R.pair_reference(x, R.WeightReference(w), "bfloat16", [(0, 1)])
    xa, xb, wd = x[0].double(), x[1].double(), w.double()
    ra, rb = wd @ xa, wd @ xb
    expect = 2 * 2.0 ** -8 * (ra.abs() + rb.abs()) + 8 * 2.0 * 2.0 ** -24 * (wd.abs() @ (xa.abs() + xb.abs()))
    assert torch.allclose(pref.bound[0], expect, rtol=1e-12) and torch.equal(pref.delta[0], wd @ (xa - xb))
    y = (x.double() @ wd.T).bfloat16()
    assert R.pair_rule(y, None, pref)[1] == []
    y[0, 0] += 0.25  # far beyond BF16 rounding of an output of magnitude ~6
    worst, reasons = R.pair_rule(y, None, pref)
    assert worst > 1 and "column 0" in reasons[0]


def test_timed_inputs_below_the_probe_rows_minimum_are_dense_and_checked_ones_cycle():
    """At M=1 a probe row would be a timed input's only row (a 2-nonzero input times a zero-skipping kernel on
    almost no work): timed inputs there are dense, each with its spike; the checked calls still cycle the kinds."""
    for seed in range(300, 308):
        x, layout = inputs.make_input(1, 512, seed, "cpu", contract=CONTRACT)
        assert dict(layout) == {} and list(layout.spikes) == [0] and int(torch.count_nonzero(x)) == 512
    kinds = {k for s in range(1, 5)
             for k in inputs.make_input(1, 512, s, "cpu", contract=CONTRACT, vary=True)[1].values()}
    assert kinds == {"dominant", "few", "zero"}
