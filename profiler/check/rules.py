"""The correctness contract's rules: generate inputs and weights, compute the FP64 reference, check one output.

    make_weight(family, N, K, seed, device, dtype=None, outliers=False) -> w [N, K]
    make_input(M, K, seed, device, sparse=True, dtype="bfloat16", contract=None, vary=False) -> (x, probe_rows)
    reference(x, w, y_dtype) -> FP64 tensor
    check_output(y, ref, rel_l2_tol, *, sparse_rows=..., expect_shape, expect_dtype, contract, where) -> Check

Rules (seed write-up "The actual error rule", "Sparse probe rows", "What a useful correctness check has to
catch"; every number is in the workload's "contract" block, e.g. datasets/workloads/muse_bf16_proj.json, passed
in by the harness from the task's workload):
- reference = FP64 product, converted to the output dtype, compared in FP64;
- whole-output rel-L2 <= the family's rel_l2_tol (1% BF16 families, 0.01% router);
- every row <= row_bound_factor x tol, row denominator max(row ref norm, 0.1 x mean row norm, floor);
- probe rows <= sparse_probe_rel_tol (0.1%), judged against the FP64 reference of that very row. Kinds:
  one_hot  all zeros but one +-2^e entry: the output row is exactly that scaled weight column
           (~1 row in 8 when M >= 8: the write-up's rule);
  dominant one +-2^e entry plus dense noise (sigma = probe_noise_rel x the entry): every entry is nonzero, so
           counting nonzeros cannot single the row out, and the dominant column's weights still carry ~99% of
           the output, so a lossy weight format shows in full while skipping the noise shows too;
  few      2-4 +-2^e entries at random columns;
  zero     an all-zero row: its output row must be exactly zero;
  below sparse_probe_min_M the single probe row (if any) of a call cycles through dominant, few, zero, none
  with the seed, so the lifecycle's calls at M=1 see each kind;
- input magnitude varies across calls: x is scaled by 2^e, e from input_scale_exponents (2^-8 ... 2^8) by
  seed (exact in BF16); relative errors of a correct kernel do not depend on it;
- a second weight draw (outliers=True) has outlier columns (1 in outlier_column_every, x outlier_column_scale),
  which turns a per-row scaled low-precision weight format into a visible rel-L2 error even at M=1;
- exact shape and dtype; NaN/Inf rejected.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

PROBE_KINDS = {"one_hot": "one-hot", "dominant": "dominant entry + noise", "few": "2-4 nonzeros",
               "zero": "zero row"}
SMALL_M_CYCLE = (None, "dominant", "few", "zero")  # by seed % 4 below sparse_probe_min_M (lifecycle seeds 1, 2, 3)
POWER_EXPONENTS = (-3, 4)  # probe entries are +-2^e, e in [-3, 4): exact in every dtype we check


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


def default_contract(workload=None) -> dict:
    """The contract numbers of `workload` (its "contract" block); None: the default workload's
    (datasets/workloads/muse_bf16_proj.json). The harness passes the task's workload's contract explicitly."""
    if workload is None:
        from datasets import load_workload

        workload = load_workload()
    return dict(workload.contract)


def _family_w_dtype(family: str) -> str:
    """A default-workload family's weight dtype: only for callers that name a muse family and no dtype (tests);
    the harness always passes the shape's w_dtype."""
    from datasets import load_workload

    return load_workload().families[family]["w_dtype"]


def _generator(seed: int, device):
    torch = _torch()
    return torch.Generator(device=torch.device(device)).manual_seed(int(seed))


def make_weight(family: str, N: int, K: int, seed: int, device, dtype=None, outliers: bool = False,
                contract: Mapping | None = None):
    """Random weight [N, K] in the family's w_dtype (or `dtype`), scaled 1/sqrt(K) so outputs are O(1).
    outliers=True: 1 column in `outlier_column_every` (at random) is multiplied by `outlier_column_scale`."""
    import numpy as np

    torch = _torch()
    dtype = as_dtype(dtype if dtype is not None else _family_w_dtype(family))
    g = _generator(seed, device)
    w = torch.randn(N, K, generator=g, device=device, dtype=torch.float32) * (K ** -0.5)
    if outliers:
        contract = contract if contract is not None else default_contract()
        count = max(1, K // int(contract["outlier_column_every"]))
        cols = np.random.default_rng(seed + 15_485_863).choice(K, size=count, replace=False)
        w[:, torch.as_tensor(np.sort(cols), device=w.device)] *= float(contract["outlier_column_scale"])
    return w.to(dtype)


def sparse_probe_rows(M: int, seed: int, contract: Mapping) -> list[int]:
    """The one-hot rows: ~1 in `sparse_probe_every_rows`, >= 1 when M >= min_M (the write-up's rule)."""
    import numpy as np

    if M < int(contract["sparse_probe_min_M"]):
        return []
    count = max(1, M // int(contract["sparse_probe_every_rows"]))
    rng = np.random.default_rng(seed)
    return sorted(int(r) for r in rng.choice(M, size=count, replace=False))


def probe_rows(M: int, seed: int, contract: Mapping) -> dict[int, str]:
    """{row: kind} of one call's input (module docstring). At M >= min_M: the one-hot rows of
    sparse_probe_rows, as many dominant and as many few-nonzero rows, and one zero row, all distinct."""
    import numpy as np

    one_hot = sparse_probe_rows(M, seed, contract)
    if not one_hot:
        kind = SMALL_M_CYCLE[seed % len(SMALL_M_CYCLE)]
        return {int(np.random.default_rng(seed).integers(M)): kind} if kind else {}
    layout = {r: "one_hot" for r in one_hot}
    count = len(one_hot)
    rest = np.random.default_rng(seed + 104_729).permutation([r for r in range(M) if r not in layout])
    for r, kind in zip(rest, ["dominant"] * count + ["few"] * count + ["zero"]):
        layout[int(r)] = kind
    return dict(sorted(layout.items()))


def input_scale_exponent(seed: int, contract: Mapping) -> int:
    """The call's input magnitude 2^e, e from contract["input_scale_exponents"] by seed."""
    exps = contract["input_scale_exponents"]
    return int(exps[seed % len(exps)])


def _fill_probe_row(x, r: int, kind: str, rng, contract: Mapping) -> None:
    """Overwrite row r of x (float32, before the cast) with one probe row of `kind`."""
    torch = _torch()
    K = x.shape[1]

    def power() -> float:
        return float(rng.choice([-1.0, 1.0]) * 2.0 ** int(rng.integers(*POWER_EXPONENTS)))

    if kind == "dominant":
        d = power()
        noise = torch.as_tensor(rng.standard_normal(K), dtype=torch.float32, device=x.device)
        x[r] = noise * (abs(d) * float(contract["probe_noise_rel"]))
        x[r, int(rng.integers(K))] = d
        return
    x[r].zero_()
    if kind == "one_hot":
        x[r, int(rng.integers(K))] = power()
    elif kind == "few":
        n = int(rng.integers(2, 5))
        for c in rng.choice(K, size=min(n, K), replace=False):
            x[r, int(c)] = power()


def make_input(M: int, K: int, seed: int, device, sparse: bool = True, dtype="bfloat16",
               contract: Mapping | None = None, vary: bool = False):
    """Random input x [M, K] (never all zeros) plus its probe rows -> (x, {row: kind}).

    vary=True (the lifecycle contract's checked calls): the probe rows of probe_rows() and the call's magnitude
    2^e. vary=False (timing inputs, and callers from before these rows): unscaled, one-hot rows only (when
    sparse), the input every timed graph has used since the first runs. sparse=False: no probe rows at all.
    """
    import numpy as np

    torch = _torch()
    contract = contract if contract is not None else default_contract()
    g = _generator(seed, device)
    x = torch.randn(M, K, generator=g, device=device, dtype=torch.float32)
    if not sparse:
        layout = {}
    elif vary:
        layout = probe_rows(M, seed, contract)
    else:
        layout = {r: "one_hot" for r in sparse_probe_rows(M, seed, contract)}
    rng = np.random.default_rng(seed + 7919)  # a different stream from the row choice
    for r, kind in layout.items():
        _fill_probe_row(x, r, kind, rng, contract)
    if vary:
        x *= 2.0 ** input_scale_exponent(seed, contract)  # a power of two: exact, before the cast
    return x.to(as_dtype(dtype)), layout


def reference(x, w, y_dtype):
    """FP64 product x @ w^T, converted to the output dtype, returned as FP64 for the comparison."""
    return (x.double() @ w.double().T).to(as_dtype(y_dtype)).double()


def _kinds(sparse_rows) -> dict[int, str]:
    """{row: kind} from make_input's layout, or from a plain list of rows (all one-hot)."""
    if isinstance(sparse_rows, Mapping):
        return {int(r): str(k) for r, k in sparse_rows.items()}
    return {int(r): "one_hot" for r in sparse_rows}


def check_output(y, ref, rel_l2_tol: float, *, sparse_rows: Sequence[int] | Mapping = (), expect_shape=None,
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
    if rel_l2 > rel_l2_tol:
        reasons.append(f"{pre}rel-L2 error {rel_l2:.3e} > tolerance {rel_l2_tol:.1e}")
    row_bound = float(contract["row_bound_factor"]) * rel_l2_tol
    if max_row_rel > row_bound:
        worst = int(row_rel.argmax())
        reasons.append(f"{pre}row {worst} error {max_row_rel:.3e} > row bound {row_bound:.1e} "
                       f"({contract['row_bound_factor']}x tolerance)")
    kinds = _kinds(sparse_rows)
    sparse_rel = _probe_rule(yd, row_err, row_ref, kinds, floor, contract, pre, reasons)
    return Check(not reasons, reasons, rel_l2=rel_l2, max_row_rel=max_row_rel, sparse_rel=sparse_rel)


def _probe_rule(yd, row_err, row_ref, kinds: dict[int, str], floor: float, contract: Mapping, pre: str,
                reasons: list[str]) -> float | None:
    """Probe rows: zero rows exactly zero; the others within sparse_probe_rel_tol of their own reference row.
    Appends reasons; returns the worst probe-row error (None without probe rows)."""
    torch = _torch()
    for r in (r for r, k in kinds.items() if k == "zero"):
        peak = float(yd[r].abs().max()) if yd.shape[1] else 0.0
        if peak != 0.0:
            reasons.append(f"{pre}zero input row {r} gave a nonzero output row (max |y| {peak:.3e}; must be "
                           f"exactly 0)")
    probes = [r for r, k in kinds.items() if k != "zero"]
    if not probes:
        return None
    idx = torch.as_tensor(probes, device=row_err.device)
    rel = row_err[idx] / torch.clamp(row_ref[idx], min=floor)
    worst = int(rel.argmax())
    sparse_rel = float(rel[worst])
    tol = float(contract["sparse_probe_rel_tol"])
    if sparse_rel > tol:
        row = probes[worst]
        reasons.append(f"{pre}sparse probe row error {sparse_rel:.3e} > {tol:.1e} (row {row}: "
                       f"{PROBE_KINDS.get(kinds[row], kinds[row])}; probe rows expose the weight representation)")
    return sparse_rel


def error_vs_baseline(rel_l2: float | None, baseline_rel_l2: float | None) -> float | None:
    """This candidate's rel-L2 / the baseline's; None when either is unknown or non-finite (a NaN baseline
    error is no yardstick); a zero baseline error gives 1.0 for an exact candidate, else inf."""
    if rel_l2 is None or baseline_rel_l2 is None or not math.isfinite(rel_l2) or not math.isfinite(baseline_rel_l2):
        return None
    if baseline_rel_l2 > 0:
        return rel_l2 / baseline_rel_l2
    return 1.0 if rel_l2 == 0 else float("inf")
