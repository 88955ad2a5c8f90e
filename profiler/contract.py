"""The correctness contract: generate inputs, compute the FP64 reference, check -> (ok, reasons).

Rules (issue 3; seed write-up "The actual error rule", "Sparse probe rows", "What a useful correctness check
has to catch", "Fresh graph replay is a correctness test too"; numbers from datasets/workload.json "contract"):
- reference = FP64 product, converted to the output dtype, compared in FP64;
- whole-output rel-L2 <= the family's rel_l2_tol (1% BF16 families, 0.01% router);
- every row <= row_bound_factor x tol, row denominator max(row ref norm, 0.1 x mean row norm, floor);
- sparse probe rows (one nonzero power-of-two entry, ~1 row in 8, >= 1 when M >= 8) <= 0.1%;
- exact shape and dtype; NaN/Inf rejected;
- lifecycle (check_candidate): outputs poisoned before calls, several calls on fresh inputs (scratch and
  counters must be reset), input and weights never modified, and on CUDA the captured graph is replayed with
  new inputs copied into its static input and must produce the new answers (stale output).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

# One byte pattern that is NaN in every float dtype we check (bf16 0xFFFF, fp16 0xFFFF, fp32 0xFFFFFFFF).
POISON_BYTE = 0xFF


@dataclass
class Check:
    """Outcome of a correctness check. Errors are the worst seen over all checked calls."""

    ok: bool
    reasons: list[str] = field(default_factory=list)
    rel_l2: float | None = None
    max_row_rel: float | None = None
    sparse_rel: float | None = None
    vs_baseline: float | None = None
    graph: Any = field(default=None, repr=False, compare=False)  # GraphHandle kept for timing (CUDA only)

    def to_dict(self) -> dict:
        """The run file's `error` record."""
        return {"rel_l2": self.rel_l2, "max_row_rel": self.max_row_rel, "sparse_rel": self.sparse_rel,
                "vs_baseline": self.vs_baseline, "reasons": list(self.reasons)}


def _torch():
    import torch

    return torch


def as_dtype(dtype):
    """'bfloat16' -> torch.bfloat16; torch dtypes pass through."""
    torch = _torch()
    return dtype if isinstance(dtype, torch.dtype) else getattr(torch, str(dtype))


def default_contract() -> dict:
    """The workload's contract numbers (datasets/workload.json "contract")."""
    from datasets import load_workload

    return dict(load_workload().contract)


def _family_w_dtype(family: str) -> str:
    from datasets import load_workload

    return load_workload().families[family]["w_dtype"]


def _generator(seed: int, device):
    torch = _torch()
    return torch.Generator(device=torch.device(device)).manual_seed(int(seed))


def make_weight(family: str, N: int, K: int, seed: int, device, dtype=None):
    """Random weight [N, K] in the family's w_dtype (or `dtype`), scaled 1/sqrt(K) so outputs are O(1)."""
    torch = _torch()
    dtype = as_dtype(dtype if dtype is not None else _family_w_dtype(family))
    g = _generator(seed, device)
    w = torch.randn(N, K, generator=g, device=device, dtype=torch.float32) * (K ** -0.5)
    return w.to(dtype)


def sparse_probe_rows(M: int, seed: int, contract: Mapping) -> list[int]:
    """Rows that get one nonzero power-of-two entry: ~1 in `sparse_probe_every_rows`, >= 1 when M >= min_M."""
    import numpy as np

    if M < int(contract["sparse_probe_min_M"]):
        return []
    count = max(1, M // int(contract["sparse_probe_every_rows"]))
    rng = np.random.default_rng(seed)
    return sorted(int(r) for r in rng.choice(M, size=count, replace=False))


def make_input(M: int, K: int, seed: int, device, sparse: bool = True, dtype="bfloat16",
               contract: Mapping | None = None):
    """Random input x [M, K] (never zeros) plus the sparse probe rows -> (x, sparse_rows).

    A sparse row is all zeros except one entry +-2^e: its output row is exactly that scaled weight column,
    so a lossy weight representation cannot hide behind cancellation over K products (seed write-up).
    """
    import numpy as np

    torch = _torch()
    contract = contract if contract is not None else default_contract()
    g = _generator(seed, device)
    x = torch.randn(M, K, generator=g, device=device, dtype=torch.float32).to(as_dtype(dtype))
    rows = sparse_probe_rows(M, seed, contract) if sparse else []
    rng = np.random.default_rng(seed + 7919)  # a different stream from the row choice
    for r in rows:
        x[r].zero_()
        x[r, int(rng.integers(K))] = float(rng.choice([-1.0, 1.0]) * 2.0 ** int(rng.integers(-3, 4)))
    return x, rows


def reference(x, w, y_dtype):
    """FP64 product x @ w^T, converted to the output dtype, returned as FP64 for the comparison."""
    return (x.double() @ w.double().T).to(as_dtype(y_dtype)).double()


def check_output(y, ref, rel_l2_tol: float, *, sparse_rows: Sequence[int] = (), expect_shape=None,
                 expect_dtype=None, contract: Mapping | None = None, where: str = "") -> Check:
    """Compare one output with its reference under the contract; reasons say which rule failed and where."""
    torch = _torch()
    contract = contract if contract is not None else default_contract()
    pre = f"{where}: " if where else ""
    if not isinstance(y, torch.Tensor):
        return Check(False, [f"{pre}returned {type(y).__name__}, not a tensor"])
    expect_shape = tuple(expect_shape) if expect_shape is not None else tuple(ref.shape)
    if tuple(y.shape) != expect_shape:
        hint = " (transposed output?)" if tuple(y.shape) == expect_shape[::-1] else ""
        return Check(False, [f"{pre}output shape {tuple(y.shape)} != expected {expect_shape}{hint}"])
    reasons = []
    if expect_dtype is not None and y.dtype != as_dtype(expect_dtype):
        reasons.append(f"{pre}output dtype {str(y.dtype).removeprefix('torch.')} != expected "
                       f"{str(as_dtype(expect_dtype)).removeprefix('torch.')}")
    yd = y.detach().to(device=ref.device, dtype=torch.float64)
    finite = torch.isfinite(yd)
    if not bool(finite.all()):
        bad_rows = torch.nonzero(~finite.all(dim=1)).flatten().tolist()
        n_bad = int((~finite).sum())
        reasons.append(f"{pre}{n_bad} non-finite values (NaN/Inf) in rows {bad_rows[:8]}"
                       f"{'...' if len(bad_rows) > 8 else ''} (NaN row, or output left unwritten/poisoned)")
        return Check(False, reasons, rel_l2=float("nan"))
    err = yd - ref
    ref_norm = float(torch.linalg.vector_norm(ref))
    floor = float(contract["row_denominator_floor"])
    rel_l2 = float(torch.linalg.vector_norm(err)) / max(ref_norm, floor)
    row_ref = torch.linalg.vector_norm(ref, dim=1)
    row_err = torch.linalg.vector_norm(err, dim=1)
    mean_row = float(row_ref.mean()) if row_ref.numel() else 0.0
    denom = torch.clamp(row_ref, min=max(float(contract["row_denominator_mean_fraction"]) * mean_row, floor))
    row_rel = row_err / denom
    max_row_rel = float(row_rel.max()) if row_rel.numel() else 0.0
    sparse_rel = None
    if len(sparse_rows):
        idx = torch.as_tensor(list(sparse_rows), device=ref.device)
        sparse_rel = float((row_err[idx] / torch.clamp(row_ref[idx], min=floor)).max())
    if rel_l2 > rel_l2_tol:
        reasons.append(f"{pre}rel-L2 error {rel_l2:.3e} > tolerance {rel_l2_tol:.1e}")
    row_bound = float(contract["row_bound_factor"]) * rel_l2_tol
    if max_row_rel > row_bound:
        worst = int(row_rel.argmax())
        reasons.append(f"{pre}row {worst} error {max_row_rel:.3e} > row bound {row_bound:.1e} "
                       f"({contract['row_bound_factor']}x tolerance)")
    sparse_tol = float(contract["sparse_probe_rel_tol"])
    if sparse_rel is not None and sparse_rel > sparse_tol:
        reasons.append(f"{pre}sparse probe row error {sparse_rel:.3e} > {sparse_tol:.1e} "
                       f"(one-hot input rows expose the weight representation)")
    return Check(not reasons, reasons, rel_l2=rel_l2, max_row_rel=max_row_rel, sparse_rel=sparse_rel)


def poison_allocator(device, max_bytes: int) -> None:
    """Make the CUDA caching allocator hand out NaN-filled memory, so an output a kernel allocates with
    torch.empty and leaves (partly) unwritten shows up as NaN instead of stale or zero bytes.

    Why this works: empty_cache() returns every free cached block to the driver; we then allocate the small
    pool's 2 MB segment in full (two 1 MB blocks, the largest small-pool size) and one large block, fill
    them with 0xFF (NaN in every float dtype) and free them. The only free cached blocks are now poisoned, and
    the next allocations are carved out of them. Limit: a temporary the candidate frees inside its own call
    can be reused for its output (best fit), which then holds finite garbage; the numeric rules still reject
    that. No-op on CPU (malloc cannot be poisoned from here).
    """
    torch = _torch()
    if torch.device(device).type != "cuda":
        return
    torch.cuda.empty_cache()
    one_mb = 1 << 20
    large = max(64 * one_mb, 4 * int(max_bytes))
    blocks = [torch.empty(n, dtype=torch.uint8, device=device) for n in (one_mb, one_mb, one_mb, one_mb, large)]
    for b in blocks:
        b.fill_(POISON_BYTE)
    del blocks  # freed back to the cache, still holding 0xFF; the fills are stream-ordered before reuse


def _combine(checks: list[Check], reasons: list[str]) -> Check:
    def worst(attr):
        vals = [getattr(c, attr) for c in checks if getattr(c, attr) is not None]
        if any(v != v for v in vals):  # NaN (a non-finite output) is the worst; max() would drop it by order
            return float("nan")
        return max(vals) if vals else None

    return Check(not reasons, reasons, rel_l2=worst("rel_l2"), max_row_rel=worst("max_row_rel"),
                 sparse_rel=worst("sparse_rel"))


def _sync(device) -> None:
    torch = _torch()
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


@dataclass
class _Lifecycle:
    """What every call of one check_candidate run is judged with; `checks` and `reasons` accumulate."""

    candidate: Any
    state: Any
    family: str
    M: int
    K: int
    w_ref: Any           # a clone of the weight taken before prepare(): the reference never sees a mutation
    seed: int
    device: Any
    tol: float
    x_dtype: str
    y_dtype: str
    kw: dict             # check_output's expect_shape, expect_dtype, contract
    checks: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    inputs: list = field(default_factory=list, repr=False)

    def new_input(self, seed: int):
        """(x, sparse_rows, FP64 reference of x) for one call. Every input stays allocated until the check
        ends, so no later input (the graph's static one included) can reuse an earlier one's address: a
        candidate that memoizes on the address would otherwise return an older call's answer, which the
        stale hint (it compares with the previous answer only) could not name."""
        x, rows = make_input(self.M, self.K, seed, self.device, dtype=self.x_dtype, contract=self.kw["contract"])
        self.inputs.append(x)
        return x, rows, reference(x, self.w_ref, self.y_dtype)

    def judge(self, y, ref, rows, prev_ref, x, x_sent, label: str, context: str) -> bool:
        """Check one call: output vs its reference (a failure that matches the previous input's answer is
        named STALE first), and the input x still equal to what was sent. True when the call passed."""
        torch = _torch()
        c = check_output(y, ref, self.tol, sparse_rows=rows, where=f"{label} ({context})", **self.kw)
        self.checks.append(c)
        found = _stale_hint(c, y, prev_ref, self.tol, self.kw, label) + c.reasons
        if not torch.equal(x, x_sent):
            found.append(f"{label}: input x was modified in place")
        self.reasons += found
        return not found


def check_candidate(candidate, shape: Mapping, device, *, seed: int = 0, contract: Mapping | None = None,
                    weight=None, state=None, baseline_rel_l2: float | None = None, use_graph: bool | None = None,
                    keep_graph: bool = False, n_calls: int = 3) -> Check:
    """Full lifecycle check of `candidate` (prepare(family, w) / run(state, family, x)) at one shape.

    shape: mapping with family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol (a workload row).
    Eager: `n_calls` calls, each on a fresh input, allocator poisoned first; input must be unchanged.
    CUDA (use_graph default True there): capture run() on a static input, then three replays with inputs
    copied into it (B, C, C): each must match its own reference (stale output, scratch/counter reset).
    Weights must be unchanged at the end. `baseline_rel_l2` (the baseline's rel_l2 from the same seed) gives
    vs_baseline = this rel_l2 / baseline's. keep_graph=True returns the captured GraphHandle in Check.graph
    (the sweep times that very graph).
    """
    torch = _torch()
    contract = contract if contract is not None else default_contract()
    family, M, N, K = shape["family"], int(shape["M"]), int(shape["N"]), int(shape["K"])
    use_graph = torch.device(device).type == "cuda" if use_graph is None else use_graph
    w = weight if weight is not None else make_weight(family, N, K, seed, device, dtype=shape.get("w_dtype"))
    w_before = w.clone()
    if state is None:
        try:
            state = candidate.prepare(family, w)
        except Exception as exc:  # a candidate's bug is a verdict, not a harness crash
            return Check(False, [f"prepare raised {_err(exc)}"])
    life = _Lifecycle(candidate, state, family, M, K, w_before, seed, device, float(shape["rel_l2_tol"]),
                      shape["x_dtype"], shape["y_dtype"],
                      dict(expect_shape=(M, N), expect_dtype=shape["y_dtype"], contract=contract))
    _eager_checks(life, n_calls, y_bytes=M * N * torch.empty((), dtype=as_dtype(shape["y_dtype"])).element_size())
    handle = _graph_checks(life) if use_graph and not life.reasons else None
    if not torch.equal(w, w_before):
        life.reasons.append("weight tensor was modified by prepare/run")
    out = _combine(life.checks, life.reasons)
    out.vs_baseline = error_vs_baseline(out.rel_l2, baseline_rel_l2)
    if keep_graph and out.ok:
        out.graph = handle
    return out


def _eager_checks(life: _Lifecycle, n_calls: int, y_bytes: int) -> None:
    """`n_calls` eager calls, each on a fresh input with the allocator poisoned first; stops at the first failure."""
    prev_ref = None
    for i in range(n_calls):
        x, rows, ref = life.new_input(life.seed + 1 + i)
        x_sent = x.clone()
        poison_allocator(life.device, y_bytes)
        try:
            y = life.candidate.run(life.state, life.family, x)
            _sync(life.device)
        except Exception as exc:
            life.reasons.append(f"eager call {i + 1}: run raised {_err(exc)}")
            return
        if not life.judge(y, ref, rows, prev_ref, x, x_sent, f"eager call {i + 1}", "fresh input"):
            return
        prev_ref = ref


def error_vs_baseline(rel_l2: float | None, baseline_rel_l2: float | None) -> float | None:
    """This candidate's rel-L2 / the baseline's; None when either is unknown or non-finite (a NaN baseline
    error is no yardstick); a zero baseline error gives 1.0 for an exact candidate, else inf."""
    if rel_l2 is None or baseline_rel_l2 is None or not math.isfinite(rel_l2) or not math.isfinite(baseline_rel_l2):
        return None
    if baseline_rel_l2 > 0:
        return rel_l2 / baseline_rel_l2
    return 1.0 if rel_l2 == 0 else float("inf")


def _graph_checks(life: _Lifecycle):
    """Capture run() on a static input; replay with new inputs copied in (B, C, C). Returns the handle, or
    None after the first failure (its reason is in life.reasons)."""
    torch = _torch()
    from profiler.timing import capture_graph

    x_static, _, prev_ref = life.new_input(life.seed + 100)  # prev_ref: the capture-time input's answer
    try:
        handle = capture_graph(lambda: life.candidate.run(life.state, life.family, x_static), life.device)
    except Exception as exc:
        life.reasons.append(f"CUDA graph capture failed: {_err(exc)}")
        return None
    handle.keep = x_static  # the graph reads this memory on every replay (timing reuses the graph)
    y_static = handle.output
    if not isinstance(y_static, torch.Tensor):
        life.reasons.append(f"graph: run returned {type(y_static).__name__}, not a tensor")
        return None
    for j, s in enumerate((life.seed + 101, life.seed + 102, life.seed + 102)):
        x_new, rows, ref = life.new_input(s)
        x_static.copy_(x_new)
        # Poison the output before replays 2 and 3 (partly unwritten outputs show as NaN). Not before the
        # first: a graph that captured no work then still holds the capture-time answer -> named STALE.
        if j > 0 and y_static.is_floating_point():
            y_static.fill_(float("nan"))
        try:
            handle.replay()
            torch.cuda.synchronize(life.device)
        except Exception as exc:
            life.reasons.append(f"graph replay {j + 1} raised {_err(exc)}")
            return None
        context = "repeat, same input" if j == 2 else "new input"
        if not life.judge(y_static, ref, rows, prev_ref, x_static, x_new, f"graph replay {j + 1}", context):
            return None
        prev_ref = ref
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
