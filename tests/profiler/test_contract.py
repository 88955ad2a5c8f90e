"""Contract rules on CPU: generation, reference, each check rule, the lifecycle on a correct candidate."""
import pytest

torch = pytest.importorskip("torch")

from profiler.check import contract as C  # noqa: E402
from profiler.check import inputs  # noqa: E402
from profiler import wrong  # noqa: E402

CONTRACT = C.default_contract()
BF16 = dict(load="test", family="qkv_gate", M=16, N=64, K=256, x_dtype="bfloat16", w_dtype="bfloat16",
            y_dtype="bfloat16", rel_l2_tol=0.01)
ROUTER = dict(load="test", family="router", M=16, N=32, K=512, x_dtype="bfloat16", w_dtype="float32",
              y_dtype="float32", rel_l2_tol=1e-4)


@pytest.mark.parametrize("M, expected", [(8, 1), (16, 2), (256, 32)])
def test_probe_layout_keeps_the_one_hot_rule_and_adds_kinds(M, expected):
    x, rows = C.make_input(M, 64, 0, "cpu", contract=CONTRACT, vary=True)
    kinds = list(rows.values())
    # the write-up's one-hot rows are unchanged (same rows as before), plus as many dominant and few-nonzero
    # rows and one zero row, all distinct
    assert sorted(r for r, k in rows.items() if k == "one_hot") == C.sparse_probe_rows(M, 0, CONTRACT)
    assert (kinds.count("one_hot"), kinds.count("dominant"), kinds.count("few"), kinds.count("zero")) == \
        (expected, expected, expected, 1)
    assert x.dtype == torch.bfloat16 and not bool((x == 0).all())


def _is_power_of_two(v: float) -> bool:
    return v != 0 and abs(v) == 2.0 ** round(float(torch.log2(torch.tensor(abs(v)))))


def test_each_probe_kind_has_its_shape_and_dominant_rows_hide_from_nonzero_counts():
    x, rows = C.make_input(64, 1024, 5, "cpu", contract=CONTRACT, vary=True)
    dense = [r for r in range(64) if r not in rows]
    for r, kind in rows.items():
        nz = torch.nonzero(x[r]).flatten()
        vals = x[r, nz].float()
        if kind == "zero":
            assert nz.numel() == 0
        elif kind == "one_hot":
            assert nz.numel() == 1 and _is_power_of_two(float(vals[0]))
        elif kind == "few":
            assert 2 <= nz.numel() <= 4 and all(_is_power_of_two(float(v)) for v in vals)
        else:  # dominant: as many nonzeros as a dense row, one power-of-two entry carrying ~all the energy
            assert nz.numel() == int(torch.count_nonzero(x[dense[0]])) == 1024
            peak = vals.abs().max()
            assert _is_power_of_two(float(peak))
            rest = (vals.abs().sum() - peak) / 1023
            assert float(peak / rest) > 500  # noise ~2^-10 of the entry, so the column dominates the output


def test_small_m_calls_cycle_through_probe_kinds():
    # the lifecycle's eager calls use seeds 1, 2, 3: at M=1 they see a dominant, a few-nonzero and a zero row
    assert [C.probe_rows(1, s, CONTRACT) for s in (1, 2, 3, 4)] == \
        [{0: "dominant"}, {0: "few"}, {0: "zero"}, {}]
    assert all(len(C.probe_rows(7, s, CONTRACT)) <= 1 for s in range(8))


def test_input_magnitude_varies_across_calls_and_timing_inputs_do_not():
    exps = [inputs.input_scale_exponent(s, CONTRACT) for s in range(1, 6)]
    assert min(exps) == -8 and max(exps) == 8
    for seed in (1, 2):
        x, rows = C.make_input(16, 64, seed, "cpu", contract=CONTRACT, vary=True)
        plain, plain_rows = C.make_input(16, 64, seed, "cpu", contract=CONTRACT)
        # the timed input has the very layout of the checked one (no kind of row exists only where it is checked)
        assert plain_rows == rows and plain_rows.pairs == rows.pairs and plain_rows.spikes == rows.spikes
        e = inputs.input_scale_exponent(seed, CONTRACT)
        assert e != 0 and torch.equal(x.float(), plain.float() * 2.0 ** e)


def test_outlier_weights_have_scaled_columns():
    plain = C.make_weight("o", 8, 256, 3, "cpu")
    out = C.make_weight("o", 8, 256, 3, "cpu", outliers=True)
    ratio = (out.float() / plain.float())[0]
    scaled = torch.nonzero(ratio != 1).flatten()
    assert scaled.numel() == 256 // CONTRACT["outlier_column_every"]
    assert torch.allclose(ratio[scaled], torch.tensor(float(CONTRACT["outlier_column_scale"])))


def test_zero_rows_must_be_exactly_zero():
    x, w, ref = _ref()
    y = ref.clone()
    y[4] = 0.0
    ref = ref.clone()
    ref[4] = 0.0
    assert C.check_output(y, ref, 0.01, sparse_rows={4: "zero"}, contract=CONTRACT).ok
    y[4, 7] = 1e-30  # far below every tolerance, still not zero
    c = C.check_output(y, ref, 0.01, sparse_rows={4: "zero"}, contract=CONTRACT)
    assert not c.ok and c.reasons == ["zero input row 4 gave a nonzero output row (max |y| 1.000e-30; must be "
                                      "exactly 0)"]


def test_default_inputs_carry_every_kind_of_row():
    """Callers that time (sweep, tuner, explain) get unscaled inputs with the checked calls' probe rows, dense
    spiky rows, plain dense rows (no spike) and pairs."""
    x, rows = C.make_input(16, 64, 3, "cpu", contract=CONTRACT)
    assert sorted(r for r, k in rows.items() if k == "one_hot") == C.sparse_probe_rows(16, 3, CONTRACT)
    assert set(rows.values()) == {"one_hot", "dominant", "few", "zero"} and rows.pairs and rows.spikes
    plain = set(range(16)) - set(rows) - set(rows.spikes)
    from profiler.check.inputs import spike_magnitude
    assert plain and all(float(x[r].float().abs().max()) < spike_magnitude(64) for r in plain)


def test_inputs_differ_by_seed_and_repeat_with_seed():
    a, _ = C.make_input(4, 32, 1, "cpu", contract=CONTRACT)
    b, _ = C.make_input(4, 32, 2, "cpu", contract=CONTRACT)
    a2, _ = C.make_input(4, 32, 1, "cpu", contract=CONTRACT)
    assert not torch.equal(a, b) and torch.equal(a, a2)


def test_weight_dtype_follows_family():
    assert C.make_weight("router", 8, 16, 0, "cpu").dtype == torch.float32
    assert C.make_weight("o", 8, 16, 0, "cpu").dtype == torch.bfloat16


def test_reference_is_fp64_rounded_to_output_dtype():
    x = torch.randn(3, 40).bfloat16()
    w = torch.randn(5, 40).bfloat16()
    ref = C.reference(x, w, "bfloat16")
    assert ref.dtype == torch.float64
    assert torch.equal(ref, ref.bfloat16().double())


def _ref(M=16, N=32, K=64, y="bfloat16"):
    x = torch.randn(M, K).bfloat16()
    w = (torch.randn(N, K) / 8).bfloat16()
    return x, w, C.reference(x, w, y)


def test_check_output_accepts_exact_and_rejects_each_rule():
    x, w, ref = _ref()
    ok = C.check_output(ref.bfloat16(), ref, 0.01, expect_shape=(16, 32), expect_dtype="bfloat16", contract=CONTRACT)
    assert ok.ok and ok.rel_l2 == 0.0
    # whole-output rel-L2
    noisy = (ref * 1.02).bfloat16()
    c = C.check_output(noisy, ref, 0.01, contract=CONTRACT)
    assert not c.ok and any("rel-L2" in r for r in c.reasons)
    # one bad row hidden inside a fine average: the row bound catches it
    x, w, ref256 = _ref(M=256)
    y = ref256.clone()
    y[3] *= 1.08  # 8% on one row of 256: rel-L2 ~0.5% < 1%, row 8% > 5 x 1%
    c = C.check_output(y, ref256, 0.01, contract=CONTRACT)
    assert not c.ok and c.rel_l2 < 0.01 and "row 3" in c.reasons[0], c.reasons
    # NaN / Inf
    y = ref.clone().bfloat16()
    y[2, 5] = float("inf")
    c = C.check_output(y, ref, 0.01, contract=CONTRACT)
    assert not c.ok and "non-finite" in c.reasons[0] and "[2]" in c.reasons[0]
    # dtype and shape
    assert "dtype" in C.check_output(ref.float(), ref, 0.01, expect_dtype="bfloat16", contract=CONTRACT).reasons[0]
    assert "transposed" in C.check_output(ref.T, ref, 0.01, expect_shape=(16, 32), contract=CONTRACT).reasons[0]
    assert "not a tensor" in C.check_output(None, ref, 0.01, contract=CONTRACT).reasons[0]


def test_sparse_probe_row_bound_is_tighter_than_row_bound():
    x, w, ref = _ref()
    y = ref.clone()
    y[8] *= 1.004  # 0.4% on one row: under 5% row bound and under rel-L2 1%, over the sparse 0.1%
    assert C.check_output(y, ref, 0.01, contract=CONTRACT).ok
    c = C.check_output(y, ref, 0.01, sparse_rows=[8], contract=CONTRACT)
    assert not c.ok and "sparse probe" in c.reasons[0] and c.sparse_rel == pytest.approx(0.004, rel=1e-3)
    c = C.check_output(y, ref, 0.01, sparse_rows={8: "dominant"}, contract=CONTRACT)
    assert not c.ok and "(row 8: dominant entry + noise;" in c.reasons[0]


def test_small_rows_use_mean_fraction_denominator():
    x, w, ref = _ref()
    ref = ref.clone()
    ref[0] = 1e-9  # a legitimately tiny row: its absolute error is judged against 0.1 x mean row norm
    y = ref.clone()
    y[0] += 1e-4
    c = C.check_output(y, ref, 0.01, contract=CONTRACT)
    assert c.ok, c.reasons
    # The same error judged against the row's own norm (mean fraction 0: only the tiny floor) is far over the
    # row bound, so the pass above is the mean-fraction rule's doing.
    c = C.check_output(y, ref, 0.01, contract=dict(CONTRACT, row_denominator_mean_fraction=0.0))
    assert not c.ok and "row 0" in c.reasons[0], c.reasons


@pytest.mark.parametrize("shape", [BF16, ROUTER, dict(ROUTER, M=1)])
def test_control_passes_lifecycle(shape):
    # One salt for both checks, as the shape task gives every candidate of a shape: the same inputs.
    c = C.check_candidate(wrong.TorchLinear(), shape, "cpu", contract=CONTRACT, baseline_rel_l2=None, salt=7)
    assert c.ok, c.reasons
    base = c.rel_l2
    c2 = C.check_candidate(wrong.TorchLinear(), shape, "cpu", contract=CONTRACT, baseline_rel_l2=base, salt=7)
    assert c2.vs_baseline == pytest.approx(1.0)
    if base > 0:  # the ratio's direction: this error / the baseline's (same control, a baseline twice as bad)
        c3 = C.check_candidate(wrong.TorchLinear(), shape, "cpu", contract=CONTRACT, baseline_rel_l2=2 * base,
                               salt=7)
        assert c3.vs_baseline == pytest.approx(0.5)
    d = c2.to_dict()
    assert set(d) == {"rel_l2", "max_row_rel", "sparse_rel", "vs_baseline", "pair_ratio", "element_ratio", "reasons"}


def test_prepare_and_run_exceptions_are_verdicts():
    class Boom(wrong.TorchLinear):
        def run(self, state, family, x):
            raise RuntimeError("kaput")

    class BadPrep(wrong.TorchLinear):
        def prepare(self, family, weight):
            raise KeyError("nope")

    c = C.check_candidate(Boom(), BF16, "cpu", contract=CONTRACT)
    assert not c.ok and c.reasons[0] == "eager call 1: run() raised RuntimeError: kaput"
    c = C.check_candidate(BadPrep(), BF16, "cpu", contract=CONTRACT)
    assert not c.ok and c.reasons[0].startswith("prepare() raised KeyError")


def test_error_vs_baseline_ratio_and_unusable_baselines():
    assert C.error_vs_baseline(0.004, 0.002) == pytest.approx(2.0)
    assert C.error_vs_baseline(0.0, 0.0) == 1.0 and C.error_vs_baseline(1e-3, 0.0) == float("inf")
    # No yardstick: a missing or non-finite error on either side gives None, never 1.0 or inf.
    for rel, base in ((None, 0.002), (0.002, None), (float("nan"), 0.002), (0.002, float("nan"))):
        assert C.error_vs_baseline(rel, base) is None


def test_lifecycle_reports_a_nan_error_after_good_calls():
    """A candidate right on call 1 and NaN on call 2: the reported (worst) rel_l2 must be NaN, not call 1's."""

    class NaNOnSecondCall(wrong.TorchLinear):
        def run(self, state, family, x):
            state["calls"] = state.get("calls", 0) + 1
            y = super().run(state, family, x)
            return y if state["calls"] == 1 else y * float("nan")

    c = C.check_candidate(NaNOnSecondCall(), BF16, "cpu", contract=CONTRACT, baseline_rel_l2=1e-3)
    assert not c.ok and "eager call 2" in c.reasons[0] and "non-finite" in c.reasons[0]
    assert c.rel_l2 != c.rel_l2 and c.vs_baseline is None


class _ReplayByRerun:
    """CPU stand-in for a captured CUDA graph: replay() re-runs the captured callable into the same output
    buffer. Enough to drive check_candidate's graph path (static input, copy-in, poison, replay) on CPU."""

    def __init__(self, fn):
        self.fn, self.output, self.keep = fn, fn(), None

    def replay(self):
        self.output.copy_(self.fn())


@pytest.fixture
def cpu_graphs(monkeypatch):
    from profiler.measure import timing

    monkeypatch.setattr(timing, "capture_graph", lambda fn, device: _ReplayByRerun(fn))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)


def test_graph_path_on_cpu_passes_the_control_and_names_stale_replays(cpu_graphs):
    c = C.check_candidate(wrong.TorchLinear(), BF16, "cpu", contract=CONTRACT, use_graph=True, keep_graph=True)
    assert c.ok, c.reasons
    assert isinstance(c.graph, _ReplayByRerun) and tuple(c.graph.output.shape) == (16, 64)
    # Eager calls cannot see a memo keyed on the input's address; the replays into one static input do.
    c = C.check_candidate(wrong.MemoByPointer(), BF16, "cpu", contract=CONTRACT, use_graph=True, keep_graph=True)
    assert not c.ok and c.graph is None
    assert c.reasons[0].startswith("graph replay 1: STALE output"), c.reasons


# --- capture failures are named by cause (the GPU test of the known-wrong set sees the real CUDA errors) --------
def _invalidated(first: str | None):
    """The exception torch raises at the end of an invalidated capture, chained to run()'s own error."""
    try:
        try:
            if first:
                raise RuntimeError(first)
        finally:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize("synced, cause", [(True, C.HOST_SYNC_CAUSE), (False, C.NOT_CAPTURABLE_CAUSE),
                                           (None, C.UNKNOWN_CAPTURE_CAUSE)])
def test_invalidated_capture_is_named_by_an_eager_sync_check(monkeypatch, synced, cause):
    monkeypatch.setattr(C, "syncs_with_host", lambda fn: synced)
    why = C.capture_failure(_invalidated("CUDA error: operation not permitted when stream is capturing"), lambda: 0)
    assert why.startswith(f"CUDA graph capture failed: {cause} [RuntimeError: CUDA error: operation failed due to")


def test_unjoined_stream_and_empty_graph_are_named():
    why = C.capture_failure(_invalidated("capture sequence contains a fork that was not joined to the primary "
                                         "stream"))
    assert C.OTHER_STREAM_CAUSE in why

    def empty_capture(fn):
        import warnings

        warnings.warn("The CUDA Graph is empty. This usually means that the graph was attempted to be captured on "
                      "wrong device or stream.")
        return "handle"

    assert C.capture_checked(lambda: None, empty_capture) == (None, f"CUDA graph capture: {C.EMPTY_GRAPH_CAUSE}")
    assert C.capture_checked(lambda: None, lambda fn: "handle") == ("handle", None)


def test_the_range_call_runs_where_the_input_dtype_has_room_for_it(monkeypatch):
    """BF16 and FP32 inputs get one call scaled by 2^RANGE_EXPONENT (a correct kernel passes it); FP16 inputs, whose
    range ends at 65504, get none."""
    seen = []
    control = wrong.TorchLinear()
    run = control.run

    def spy(state, family, x):
        seen.append(float(x.abs().max()))
        return run(state, family, x)

    monkeypatch.setattr(control, "run", spy)
    assert C.check_candidate(control, BF16, "cpu", contract=CONTRACT).ok
    assert max(seen) > 65504
    seen.clear()
    fp16 = dict(BF16, x_dtype="float16", w_dtype="float16", y_dtype="float16", rel_l2_tol=0.001)
    assert C.check_candidate(control, fp16, "cpu", contract=CONTRACT).ok, "an FP16 control passes"
    assert seen and max(seen) <= 65504


def test_the_poisoned_blocks_are_only_those_the_current_stream_can_be_given(monkeypatch):
    """poison_allocator allocates one block per free block the next allocation could land in: the default pool's
    free blocks of the current stream. A free block in a CUDA graph's private pool or on another stream is never
    handed out there; counting them allocated new memory instead (and cached it), per poisoning."""
    import types

    torch = pytest.importorskip("torch")
    mine, other = 0x1000, 0x2000
    segments = [
        {"device": 0, "segment_pool_id": (0, 0), "stream": mine,
         "blocks": [{"size": 4 << 20, "state": "inactive"}, {"size": 2 << 20, "state": "active_allocated"},
                    {"size": 1 << 20, "state": "inactive"}]},
        {"device": 0, "segment_pool_id": (1, 3), "stream": mine, "blocks": [{"size": 8 << 20, "state": "inactive"}]},
        {"device": 0, "segment_pool_id": (0, 0), "stream": other, "blocks": [{"size": 16 << 20, "state": "inactive"}]},
        {"device": 1, "segment_pool_id": (0, 0), "stream": mine, "blocks": [{"size": 32 << 20, "state": "inactive"}]},
        {"device": 0, "segment_pool_id": [0, 0], "stream": mine,
         "blocks": [{"size": 512 << 20, "state": "inactive"}, {"size": 3 << 20, "state": "inactive"}]},
    ]
    monkeypatch.setattr(torch.cuda, "memory_snapshot", lambda: segments)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda index=None: types.SimpleNamespace(cuda_stream=mine))
    assert C._free_block_sizes("cuda:0", C.POISON_BLOCK_MAX) == [4 << 20, 3 << 20, 1 << 20]
