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
    x_dtype, y_dtype, tol = shape["x_dtype"], shape["y_dtype"], float(shape["rel_l2_tol"])
    is_cuda = torch.device(device).type == "cuda"
    use_graph = is_cuda if use_graph is None else use_graph
    y_bytes = M * N * torch.empty((), dtype=as_dtype(y_dtype)).element_size()
    w = weight if weight is not None else make_weight(family, N, K, seed, device, dtype=shape.get("w_dtype"))
    w_before = w.clone()
    kw = dict(expect_shape=(M, N), expect_dtype=y_dtype, contract=contract)
    if state is None:
        try:
            state = candidate.prepare(family, w)
        except Exception as exc:  # a candidate's bug is a verdict, not a harness crash
            return Check(False, [f"prepare raised {_err(exc)}"])
    checks, reasons, prev_ref = [], [], None
    for i in range(n_calls):
        x, rows = make_input(M, K, seed + 1 + i, device, dtype=x_dtype, contract=contract)
        x_before = x.clone()
        ref = reference(x_before, w_before, y_dtype)
        poison_allocator(device, y_bytes)
        try:
            y = candidate.run(state, family, x)
            _sync(device)
        except Exception as exc:
            reasons.append(f"eager call {i + 1}: run raised {_err(exc)}")
            break
        c = check_output(y, ref, tol, sparse_rows=rows, where=f"eager call {i + 1} (fresh input)", **kw)
        checks.append(c)
        reasons += _stale_hint(c, y, prev_ref, tol, kw, f"eager call {i + 1}") + c.reasons
        prev_ref = ref
        if not torch.equal(x, x_before):
            reasons.append(f"eager call {i + 1}: input x was modified in place")
        if reasons:
            break
    handle = None
    if use_graph and not reasons:
        handle = _graph_checks(candidate, state, family, M, K, w_before, seed, device, tol, x_dtype, y_dtype,
                               kw, checks, reasons)
    if not torch.equal(w, w_before):
        reasons.append("weight tensor was modified by prepare/run")
    out = _combine(checks, reasons)
    out.vs_baseline = error_vs_baseline(out.rel_l2, baseline_rel_l2)
    if keep_graph and out.ok:
        out.graph = handle
    return out


def error_vs_baseline(rel_l2: float | None, baseline_rel_l2: float | None) -> float | None:
    """This candidate's rel-L2 / the baseline's; None when either is unknown or non-finite (a NaN baseline
    error is no yardstick); a zero baseline error gives 1.0 for an exact candidate, else inf."""
    if rel_l2 is None or baseline_rel_l2 is None or not math.isfinite(rel_l2) or not math.isfinite(baseline_rel_l2):
        return None
    if baseline_rel_l2 > 0:
        return rel_l2 / baseline_rel_l2
    return 1.0 if rel_l2 == 0 else float("inf")


def _graph_checks(candidate, state, family, M, K, w_ref, seed, device, tol, x_dtype, y_dtype, kw,
                  checks, reasons):
    """Capture run() on a static input; replay with new inputs copied in (B, C, C). Returns the handle."""
    torch = _torch()
    from profiler.timing import capture_graph

    x_static, _ = make_input(M, K, seed + 100, device, dtype=x_dtype, contract=kw["contract"])
    try:
        handle = capture_graph(lambda: candidate.run(state, family, x_static), device)
    except Exception as exc:
        reasons.append(f"CUDA graph capture failed: {_err(exc)}")
        return None
    handle.keep = x_static  # the graph reads this memory on every replay (timing reuses the graph)
    y_static = handle.output
    prev_ref = reference(x_static, w_ref, y_dtype)  # the capture-time input's answer
    if not isinstance(y_static, torch.Tensor):
        reasons.append(f"graph: run returned {type(y_static).__name__}, not a tensor")
        return None
    for j, s in enumerate((seed + 101, seed + 102, seed + 102)):
        x_new, rows = make_input(M, K, s, device, dtype=x_dtype, contract=kw["contract"])
        x_static.copy_(x_new)
        ref = reference(x_new, w_ref, y_dtype)
        # Poison the output before replays 2 and 3 (partly unwritten outputs show as NaN). Not before the
        # first: a graph that captured no work then still holds the capture-time answer -> named STALE.
        if j > 0 and y_static.is_floating_point():
            y_static.fill_(float("nan"))
        try:
            handle.replay()
            torch.cuda.synchronize(device)
        except Exception as exc:
            reasons.append(f"graph replay {j + 1} raised {_err(exc)}")
            return None
        what = "repeat replay, same input" if j == 2 else "replay with a new input"
        c = check_output(y_static, ref, tol, sparse_rows=rows, where=f"graph {what} ({j + 1})", **kw)
        checks.append(c)
        reasons += _stale_hint(c, y_static, prev_ref, tol, kw, f"graph replay {j + 1}") + c.reasons
        prev_ref = ref
        if not torch.equal(x_static, x_new):
            reasons.append(f"graph replay {j + 1}: input x was modified in place")
        if reasons:
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
