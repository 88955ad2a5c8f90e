"""The correctness contract's lifecycle harness: drive one candidate through prepare, calls and graph replays, and
judge every output with the rules of profiler.check.rules.

    check_candidate(candidate, shape, device, *, seed=0, contract=None, weight=None, state=None,
                    baseline_rel_l2=None, use_graph=None, keep_graph=False, n_calls=3, outliers=True,
                    guard=None, salt=None) -> Check

Lifecycle (seed write-up "What a useful correctness check has to catch", "Fresh graph replay is a correctness
test too"): outputs poisoned before calls; several calls on fresh inputs (probe rows, magnitudes 2^-8 ... 2^8:
scratch and counters must be reset); input and weights never modified; on CUDA the captured graph is replayed with
new inputs copied into its static input and must give the new answers (stale output), and a capture that fails
or holds no GPU work is named by its cause; a second weight draw with outlier columns is prepared and checked;
every step is guarded (profiler.check.guards: a changed global setting or a replaced harness function fails the
candidate and is restored); a candidate's sys.exit() is a verdict, not an exit. A step that leaves the CUDA
context unusable (a sticky fault) raises CudaFault: nothing else can be checked in that process (the worker
reports it and a fresh one takes over).

The rules (make_input, make_weight, reference, check_output, ...) are re-exported here for existing callers.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from profiler.check.inputs import (RANGE_DTYPES, RANGE_EXPONENT, as_dtype, default_contract,  # noqa: F401
                                   fresh_salt, make_input, make_weight, partner_input, probe_rows, sparse_probe_rows)
from profiler.check.rules import (Check, WeightReference, check_output, error_vs_baseline,  # noqa: F401
                                  input_reference, pair_reference, pair_rule, reference)

# One byte pattern that is NaN in every float dtype we check (bf16 0xFFFF, fp16 0xFFFF, fp32 0xFFFFFFFF).
POISON_BYTE = 0xFF
OUTLIER_SEED_OFFSET = 1          # the second weight draw: seed + 1, outlier columns
OUTLIER_CALLS = 2                # eager calls on the outlier weights
RANGE_SEED_OFFSET = 300          # the range call's input: seed + 300 (inputs.RANGE_EXPONENT)
PAIR_SEED_TRIES = 8              # seeds tried for a partner-call input with a dense row (M=1: 1 seed in 4 has one)

# Capture errors, by what run() did (CUDA runtime messages; torch re-raises the end-of-capture error, so the
# first cause is often only in the exception's __context__).
_HOST_SYNC = ("operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported",
              "operation failed due to a previous error during capture", "cudaErrorStreamCaptureInvalidated",
              "during CUDA graph capture")
_OTHER_STREAM = ("capture sequence contains a fork that was not joined", "cudaErrorStreamCaptureUnjoined",
                 "would make the legacy stream depend on a capturing blocking stream",
                 "cudaErrorStreamCaptureImplicit", "cudaErrorStreamCaptureIsolation")
HOST_SYNC_CAUSE = "run() synchronised with the host during capture (.item(), .cpu(), printing a tensor)"
OTHER_STREAM_CAUSE = "run() launched work on another stream that was not joined back to the capturing stream"
NOT_CAPTURABLE_CAUSE = ("run() made a call a CUDA graph cannot capture, and an eager call shows no host sync (work "
                        "queued on another stream? a library handle or allocation set up during capture?)")
UNKNOWN_CAPTURE_CAUSE = ("run() made a call a CUDA graph cannot capture (a host sync such as .item(), .cpu() or "
                         "printing a tensor, or work queued on another stream)")
WEIGHT_MODIFIED = "weight tensor was modified"
EMPTY_GRAPH_CAUSE = "the captured graph holds no GPU work (did run() launch on another stream?)"


def _torch():
    import torch

    return torch


def poison_allocator(device, max_bytes: int) -> None:
    """Make the CUDA caching allocator hand out NaN-filled memory, so an output a kernel allocates with
    torch.empty and leaves (partly) unwritten shows up as NaN instead of stale or zero bytes.

    Why this works: empty_cache() returns every wholly free segment to the driver. What stays cached is free space
    inside segments other tensors still use -- after a few candidates in one process, that is where a small output
    lands (best fit), and it held whatever the last tensor there held: a known-wrong candidate's unwritten columns
    read as finite garbage (1e38) instead of NaN on the H200 after other candidates had run in the same process.
    So every free block of those segments (from torch.cuda.memory_snapshot(), up to POISON_BLOCK_MAX bytes) is
    allocated at its exact size, and so are the small pool's 2 MB segment in full (1 MB blocks, the largest
    small-pool size) and one large block; all are filled with 0xFF (NaN in every float dtype) and freed. The free
    cached blocks are now poisoned, and the next allocations are carved out of them. Limit: a temporary the
    candidate frees inside its own call can be reused for its output (best fit), which then holds finite garbage;
    the numeric rules still reject that. No-op on CPU (malloc cannot be poisoned from here).
    """
    torch = _torch()
    if torch.device(device).type != "cuda":
        return
    torch.cuda.empty_cache()
    one_mb = 1 << 20
    large = max(64 * one_mb, 4 * int(max_bytes))
    sizes = _free_block_sizes(device, max(large, POISON_BLOCK_MAX)) + [one_mb] * 4 + [large]
    blocks = [torch.empty(n, dtype=torch.uint8, device=device) for n in sizes]
    for b in blocks:
        b.fill_(POISON_BYTE)
    del blocks  # freed back to the cache, still holding 0xFF; the fills are stream-ordered before reuse


POISON_BLOCK_MAX = 256 << 20   # free blocks poisoned up to this size: an output of the largest shape fits many times


def _free_block_sizes(device, limit: int) -> list[int]:
    """The sizes of the caching allocator's free ('inactive') blocks on `device` up to `limit` bytes that the next
    allocation on the current stream can be carved out of, largest first (so each allocation takes its own block);
    [] where this torch cannot say.

    Only the default pool's segments of the current stream count: a free block in a CUDA graph's private pool, or
    in a segment of another stream, is never handed to this stream's next allocation, so an allocation of its size
    comes from new driver memory instead. Measured on the H200 with 300 captured graphs alive: 305 free blocks
    (0.62 GiB) counted before, 1 now; reserved memory after one poisoning 2.30 GiB before, 1.72 GiB now."""
    torch = _torch()
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    try:
        segments = torch.cuda.memory_snapshot()
        stream = torch.cuda.current_stream(index).cuda_stream
    except Exception:
        return []
    sizes = [int(block["size"]) for seg in segments
             if seg.get("device") == index and tuple(seg.get("segment_pool_id", (0, 0))) == (0, 0)
             and seg.get("stream", stream) == stream
             for block in seg.get("blocks", ()) if block.get("state") == "inactive" and 0 < block["size"] <= limit]
    return sorted(sizes, reverse=True)


def _combine(checks: list[Check], reasons: list[str], pair_ratios: tuple = ()) -> Check:
    def worst(vals):
        vals = [v for v in vals if v is not None]
        if any(v != v for v in vals):  # NaN (a non-finite output) is the worst; max() would drop it by order
            return float("nan")
        return max(vals) if vals else None

    return Check(not reasons, reasons, rel_l2=worst(c.rel_l2 for c in checks),
                 max_row_rel=worst(c.max_row_rel for c in checks), sparse_rel=worst(c.sparse_rel for c in checks),
                 pair_ratio=worst([c.pair_ratio for c in checks] + list(pair_ratios)),
                 element_ratio=worst(c.element_ratio for c in checks))


class CudaFault(RuntimeError):
    """A candidate's step left the CUDA context unusable (a sticky error: illegal address, device-side assert,
    ...): nothing else can run in this process. `reason` names the step and the error."""

    def __init__(self, reason: str, context_error: str):
        super().__init__(f"{reason} (the CUDA context is unusable afterwards: {context_error})")
        self.reason, self.context_error = reason, context_error


def cuda_context_error(device) -> str | None:
    """None when the CUDA context still runs a tiny kernel correctly (or the device is not CUDA); else the error."""
    torch = _torch()
    if torch.device(device).type != "cuda":
        return None
    try:
        torch.cuda.synchronize(device)
        probe = torch.ones(1, device=device)
        probe.add_(1.0)
        if float(probe.item()) != 2.0:
            return "a tiny kernel returned a wrong value"
    except Exception as exc:
        return _err(exc)
    return None


def _sync(device) -> None:
    torch = _torch()
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _chain_text(exc: BaseException) -> str:
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " | ".join(parts)


def syncs_with_host(fn: Callable[[], Any]) -> bool | None:
    """Call fn once eagerly with torch's CUDA sync debug mode set to "error": True when it synchronises with the
    host (.item(), .cpu(), a D2H copy, an explicit synchronize), False when it runs without, None when this torch
    cannot tell (no CUDA, or fn failed for another reason)."""
    torch = _torch()
    try:
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
    except Exception:
        return None
    try:
        fn()
        return False
    except RuntimeError as exc:
        return True if "synchroniz" in str(exc) else None  # torch: "called a synchronizing CUDA operation"
    except Exception:
        return None
    finally:
        torch.cuda.set_sync_debug_mode(previous)


def capture_failure(exc: BaseException, fn: Callable[[], Any] | None = None) -> str:
    """One reason for a failed capture. The CUDA error after an invalidated capture ("operation failed due to a
    previous error during capture") does not say what run() did, so run() is called once more eagerly with the sync
    debug mode on: a host sync shows there; work on another stream does not."""
    text = _chain_text(exc)
    raw = f" [{_err(exc)}]"
    if any(s in text for s in _OTHER_STREAM):
        return f"CUDA graph capture failed: {OTHER_STREAM_CAUSE}{raw}"
    if any(s in text for s in _HOST_SYNC):
        synced = syncs_with_host(fn) if fn is not None else None
        cause = {True: HOST_SYNC_CAUSE, False: NOT_CAPTURABLE_CAUSE}.get(synced, UNKNOWN_CAPTURE_CAUSE)
        return f"CUDA graph capture failed: {cause}{raw}"
    return f"CUDA graph capture failed: {_err(exc)}"


def _current_stream():
    """The current CUDA stream where CUDA is in use here, else None."""
    torch = _torch()
    try:
        return torch.cuda.current_stream() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    except Exception:
        return None


def capture_checked(fn: Callable[[], Any], capture: Callable[[Callable[[], Any]], Any]):
    """capture(fn) -> (handle, None) or (None, reason): a capture error named by its cause, or a graph torch
    reports empty (run() queued no work on the capturing stream). A failed capture can leave torch's capture
    stream current; it is set back here (the harness's own state, not the candidate's doing)."""
    stream = _current_stream()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            handle = capture(fn)
        except Exception as exc:
            if stream is not None:
                _torch().cuda.set_stream(stream)
            return None, capture_failure(exc, fn)
    if any("CUDA Graph is empty" in str(w.message) for w in seen):
        return None, f"CUDA graph capture: {EMPTY_GRAPH_CAUSE}"
    return handle, None


@dataclass
class _Lifecycle:
    """What every call of one check_candidate run is judged with; `checks` and `reasons` accumulate."""

    candidate: Any
    state: Any
    family: str
    M: int
    K: int
    w_ref: Any           # WeightReference of a clone taken before prepare(): the reference never sees a mutation
    seed: int
    device: Any
    tol: float
    x_dtype: str
    y_dtype: str
    kw: dict             # check_output's expect_shape, expect_dtype, contract
    guard: Any           # profiler.check.guards.Guard: global settings and harness functions, checked after each step
    salt: int = 0        # mixed into every input's values (inputs.make_input): drawn when the check starts
    checks: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    pair_ratios: list = field(default_factory=list)  # cross-call pair rule results
    inputs: list = field(default_factory=list, repr=False)

    def step(self, what: str, fn: Callable[[], Any]) -> tuple[Any, bool]:
        """Run one candidate step (prepare, a run() call, a capture) and sync: -> (value, ok). An exception,
        sys.exit() or a changed global setting / harness function becomes a reason (and is restored)."""
        value, ok = None, False
        try:
            value = fn()
            _sync(self.device)
            ok = True
        except SystemExit as exc:
            self.reasons.append(f"{what} called sys.exit({exc.code!r})")
        except Exception as exc:  # a candidate's bug is a verdict, not a harness crash
            self.reasons.append(f"{what} raised {_err(exc)}")
            lost = cuda_context_error(self.device)
            if lost is not None:
                raise CudaFault(self.reasons[-1], lost) from exc
        changed = self.guard.check(what)
        self.reasons += changed
        return value, ok and not changed

    def keep(self, x):
        """Every input stays allocated until the check ends, so no later input (the graph's static one included)
        can reuse an earlier one's address: a candidate that memoizes on the address would otherwise return an
        older call's answer, which the stale hint (it compares with the previous answer only) could not name."""
        self.inputs.append(x)
        return x

    def new_input(self, seed: int, w_ref=None):
        """(x, InputReference of x) for one call."""
        x, layout = make_input(self.M, self.K, seed, self.device, dtype=self.x_dtype, contract=self.kw["contract"],
                               vary=True, salt=self.salt)
        return self.keep(x), input_reference(x, self.w_ref if w_ref is None else w_ref, self.y_dtype, layout)

    def pair_input(self, seed: int, w_ref=None):
        """new_input at the first seed from `seed` whose input has a dense row (for a partner call)."""
        for s in range(seed, seed + PAIR_SEED_TRIES):
            x, iref = self.new_input(s, w_ref)
            if iref.layout.spikes:
                return x, iref
        return None, None

    def judge(self, y, iref, prev_ref, x, x_sent, label: str, context: str) -> bool:
        """Check one call: output vs its reference (a failure that matches the previous input's answer is
        named STALE first), and the input x still equal to what was sent. True when the call passed."""
        torch = _torch()
        c = check_output(y, iref, self.tol, where=f"{label} ({context})", **self.kw)
        self.checks.append(c)
        found = _stale_hint(c, y, prev_ref, self.tol, self.kw, label) + c.reasons
        if not torch.equal(x, x_sent):
            found.append(f"{label}: input x was modified in place")
        self.reasons += found
        return not found

    def judge_partner(self, y_a, y_b, x_a, x_b, iref_a, iref_b, w_ref, label: str) -> bool:
        """The pair rule across two calls: x_b = partner_input(x_a)."""
        _, pairs = partner_input(x_a, iref_a.layout)
        pref = pair_reference(x_a, w_ref, self.y_dtype, pairs, x_b=x_b, exact_a=iref_a.exact, exact_b=iref_b.exact)
        ratio, found = pair_rule(y_a, y_b, pref, f"{label}: ")
        self.pair_ratios.append(ratio)
        self.reasons += found
        return not found


def check_candidate(candidate, shape: Mapping, device, *, seed: int = 0, contract: Mapping | None = None,
                    weight=None, state=None, baseline_rel_l2: float | None = None, use_graph: bool | None = None,
                    keep_graph: bool = False, n_calls: int = 3, outliers: bool = True, guard=None,
                    pristine=None, salt: int | None = None, range_call: bool = True) -> Check:
    """Full lifecycle check of `candidate` (prepare(family, w) / run(state, family, x)) at one shape.

    shape: mapping with family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol (a workload row).
    Eager: `n_calls` calls, each on a fresh input, allocator poisoned first; input must be unchanged.
    CUDA (use_graph default True there): capture run() on a static input, then three replays with inputs
    copied into it (B, C, C): each must match its own reference (stale output, scratch/counter reset).
    Where the inputs have no room for a pair of dense rows (M=1), the eager calls and the replays are followed by
    a partner couple: an input with a dense row, then the same with its spike negated (pair rule, profiler.check.rules).
    outliers: prepare again on a second weight draw with outlier columns and check two eager calls.
    Weights must be unchanged at the end. `baseline_rel_l2` (the baseline's rel_l2 from the same seed) gives
    vs_baseline = this rel_l2 / baseline's. keep_graph=True returns the captured GraphHandle in Check.graph
    (the sweep times that very graph). `guard`: a profiler.check.guards.Guard (default: a snapshot taken now).
    `state` given: prepare() already ran (under the caller's guard); only the outlier draw is prepared here.
    range_call: after the eager calls, one on an input scaled past FP16's range (inputs.RANGE_EXPONENT).
    `pristine`: the weights as the harness holds them, when `weight` is the candidate's own copy that prepare()
    already ran on (the sweep's case): the references and the "unchanged" rule are taken from it, so a change
    made inside that earlier prepare() is caught too. `salt`: mixed into every input's values (inputs.make_input);
    None draws a fresh one (inputs.fresh_salt), so no candidate can compute this check's inputs ahead; 0: the inputs
    follow the seed alone.
    """
    from profiler.check.guards import Guard

    torch = _torch()
    contract = contract if contract is not None else default_contract()
    family, M, N, K = shape["family"], int(shape["M"]), int(shape["N"]), int(shape["K"])
    use_graph = torch.device(device).type == "cuda" if use_graph is None else use_graph
    w = weight if weight is not None else make_weight(family, N, K, seed, device, dtype=shape.get("w_dtype"))
    # After the weight: its allocation initialises CUDA, which sets CUDA_MODULE_LOADING (torch's own change).
    guard = guard if guard is not None else Guard()
    w_before = pristine if pristine is not None else w.clone()
    life = _Lifecycle(candidate, state, family, M, K, WeightReference(w_before), seed, device,
                      float(shape["rel_l2_tol"]), shape["x_dtype"], shape["y_dtype"],
                      dict(expect_shape=(M, N), expect_dtype=shape["y_dtype"], contract=contract), guard,
                      fresh_salt() if salt is None else int(salt))
    if state is None:
        life.state, ok = life.step("prepare()", lambda: candidate.prepare(family, w))
        if not ok:
            return _combine(life.checks, life.reasons)
    y_bytes = M * N * torch.empty((), dtype=as_dtype(shape["y_dtype"])).element_size()
    _eager_checks(life, n_calls, y_bytes)
    if range_call and not life.reasons:
        _range_call(life, y_bytes)
    handle = _graph_checks(life) if use_graph and not life.reasons else None
    if outliers and not life.reasons:
        _outlier_checks(life, shape, y_bytes)
    if not torch.equal(w, w_before):
        life.reasons.append(f"{WEIGHT_MODIFIED} by prepare/run")
    out = _combine(life.checks, life.reasons, tuple(life.pair_ratios))
    out.vs_baseline = error_vs_baseline(out.rel_l2, baseline_rel_l2)
    if keep_graph and out.ok:
        out.graph = handle
    return out


def _eager_checks(life: _Lifecycle, n_calls: int, y_bytes: int, state=None, w_ref=None, seed0: int = 1,
                  label: str = "eager call") -> None:
    """`n_calls` eager calls, each on a fresh input with the allocator poisoned first; stops at the first failure.
    Then, where none of them had a pair of dense rows, a partner couple of calls (pair rule across calls)."""
    state = life.state if state is None else state
    w_ref = life.w_ref if w_ref is None else w_ref

    def call(x, where: str):
        poison_allocator(life.device, y_bytes)
        y, ok = life.step(f"{where}: run()", lambda: life.candidate.run(state, life.family, x))
        return y, ok

    prev_ref, paired = None, False
    for i in range(n_calls):
        x, iref = life.new_input(life.seed + seed0 + i, w_ref)
        paired = paired or iref.pairs is not None
        x_sent = x.clone()
        where = f"{label} {i + 1}"
        y, ok = call(x, where)
        if not ok or not life.judge(y, iref, prev_ref, x, x_sent, where, "fresh input"):
            return
        prev_ref = iref.ref
    if not paired:
        _partner_couple(life, call, w_ref, life.seed + seed0 + n_calls, f"{label} {n_calls + 1}")


def _range_call(life: _Lifecycle, y_bytes: int) -> None:
    """One eager call on an input scaled by 2^RANGE_EXPONENT (exact), past FP16's largest value: BF16 and FP32
    inputs only (inputs.RANGE_DTYPES)."""
    if str(life.x_dtype) not in RANGE_DTYPES:
        return
    x, layout = make_input(life.M, life.K, life.seed + RANGE_SEED_OFFSET, life.device, dtype=life.x_dtype,
                           contract=life.kw["contract"], salt=life.salt)
    x = life.keep(x * 2.0 ** RANGE_EXPONENT)
    iref = input_reference(x, life.w_ref, life.y_dtype, layout)
    x_sent = x.clone()
    poison_allocator(life.device, y_bytes)
    y, ok = life.step("range call: run()", lambda: life.candidate.run(life.state, life.family, x))
    if ok:
        life.judge(y, iref, None, x, x_sent, "range call", f"input scaled by 2^{RANGE_EXPONENT}, past FP16's range")


def _partner_couple(life: _Lifecycle, call: Callable, w_ref, seed: int, label: str) -> None:
    """Two calls through call(x, where) -> (y, ok): an input with a dense row, then its partner_input; each judged
    on its own, then the pair rule across the two outputs."""
    torch = _torch()
    x_a, iref_a = life.pair_input(seed, w_ref)
    if x_a is None:
        return
    x_b = life.keep(partner_input(x_a, iref_a.layout)[0])
    iref_b = input_reference(x_b, w_ref, life.y_dtype, iref_a.layout)
    outputs = []
    for x, iref, part in ((x_a, iref_a, "a"), (x_b, iref_b, "b: the same input, spikes negated")):
        where = f"{label}{part if part == 'a' else ' ' + part}"
        x_sent = x.clone()
        y, ok = call(x, where)
        if not ok or not life.judge(y, iref, None, x, x_sent, where, "partner call"):
            return
        outputs.append(y.detach().clone() if isinstance(y, torch.Tensor) else y)
    life.judge_partner(outputs[0], outputs[1], x_a, x_b, iref_a, iref_b, w_ref, f"{label} (partner calls)")


def _outlier_checks(life: _Lifecycle, shape: Mapping, y_bytes: int) -> None:
    """Prepare on a second weight draw with outlier columns and check OUTLIER_CALLS eager calls on it."""
    torch = _torch()
    N = int(shape["N"])
    w2 = make_weight(life.family, N, life.K, life.seed + OUTLIER_SEED_OFFSET, life.device,
                     dtype=shape.get("w_dtype"), outliers=True, contract=life.kw["contract"])
    w2_before = w2.clone()
    state2, ok = life.step("prepare() on the outlier-column weights",
                           lambda: life.candidate.prepare(life.family, w2))
    if ok:
        _eager_checks(life, OUTLIER_CALLS, y_bytes, state=state2, w_ref=WeightReference(w2_before), seed0=200,
                      label="outlier-weights call")
    if not torch.equal(w2, w2_before):
        life.reasons.append(f"{WEIGHT_MODIFIED} by prepare/run (outlier-column weights)")


def _graph_checks(life: _Lifecycle):
    """Capture run() on a static input; replay with new inputs copied in (B, C, C), then (where those had no
    pair of dense rows) a partner couple of replays. Returns the handle, or None after the first failure (its
    reason is in life.reasons)."""
    torch = _torch()
    from profiler.measure import timing

    x_static, static_ref = life.new_input(life.seed + 100)
    prev_ref = static_ref.ref  # the capture-time input's answer
    before = len(life.reasons)
    captured, ok = life.step("capture: run()", lambda: capture_checked(
        lambda: life.candidate.run(life.state, life.family, x_static),
        lambda fn: timing.capture_graph(fn, life.device)))
    handle, why = captured if captured is not None else (None, None)
    if why:  # the cause first; a guard reason from the same step (e.g. a failed capture left its stream current)
        life.reasons.insert(before, why)
    if not ok or why:
        return None
    handle.keep = x_static  # the graph reads this memory on every replay (timing reuses the graph)
    y_static = handle.output
    if not isinstance(y_static, torch.Tensor):
        life.reasons.append(f"graph: run returned {type(y_static).__name__}, not a tensor")
        return None

    def replay(x_new, where: str, poison: bool = True):
        x_static.copy_(x_new)
        # Poison the output first (partly unwritten outputs show as NaN); not before the first replay: a graph
        # that captured no work then still holds the capture-time answer -> named STALE.
        if poison and y_static.is_floating_point():
            y_static.fill_(float("nan"))
        try:
            handle.replay()
            torch.cuda.synchronize(life.device)
        except Exception as exc:
            life.reasons.append(f"{where} raised {_err(exc)}")
            lost = cuda_context_error(life.device)
            if lost is not None:
                raise CudaFault(life.reasons[-1], lost) from exc
            return None, False
        return y_static, True

    paired = False
    for j, s in enumerate((life.seed + 101, life.seed + 102, life.seed + 102)):
        x_new, iref = life.new_input(s)
        paired = paired or iref.pairs is not None
        y, ok = replay(x_new, f"graph replay {j + 1}", poison=j > 0)
        if not ok:
            return None
        context = "repeat, same input" if j == 2 else "new input"
        if not life.judge(y, iref, prev_ref, x_static, x_new, f"graph replay {j + 1}", context):
            return None
        prev_ref = iref.ref
    if not paired:
        before = len(life.reasons)
        _partner_couple(life, lambda x, where: replay(x, where), life.w_ref, life.seed + 103, "graph replay 4")
        if len(life.reasons) > before:
            return None
    return handle


def _stale_hint(c: Check, y, prev_ref, tol, kw, where: str) -> list[str]:
    """When a check fails but the output matches the PREVIOUS input's answer, say so plainly."""
    if c.ok or prev_ref is None or c.rel_l2 is None or c.rel_l2 != c.rel_l2:
        return []
    again = check_output(y, prev_ref, tol, **kw)
    if again.ok:
        return [f"{where}: STALE output - it equals the previous input's answer (output cached, or the "
                f"graph did not follow the new input)"]
    return []
