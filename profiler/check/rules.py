"""The correctness contract's rules: generate inputs and weights, compute the FP64 reference, check one output.

    make_weight(family, N, K, seed, device, dtype=None, outliers=False) -> w [N, K]
    make_input(M, K, seed, device, sparse=True, dtype="bfloat16", contract=None, vary=False, salt=0) -> (x, layout)
    fresh_salt() -> int                                # a salt no candidate can know before its inputs exist
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
- every other row is a DENSE row of one kind: Gaussian entries plus one spike +-S at a random column, S =
  spike_magnitude(K) (pair rule below). Each of the kinds above can be recognised from the row alone, so a kernel
  could be exact only on them; the dense rows cannot be told apart from each other by any statistic of the row;
- PLAIN dense rows: of the dense rows in no pair, half (chosen by the salted stream) carry no spike -- Gaussian
  entries only, the rows real activations mostly are. So every kind of row a real input has (plain rows, rows
  with an activation outlier, sparse rows) is in the checked calls and, drawn afresh per call, in every timed call
  (profiler.check.timed.FreshFeed); a kernel exact on rows with an outlier and lossy on the others fails the
  element rule (profiler/wrong/, LossyWithoutOutlier);
- PAIRED dense rows (pair rule; its numbers -- PAIR_EVERY_ROWS, PAIR_LAMBDA, the spike -- are derived below, not
  tunable contract numbers, so they live here): rows a and b of one input are equal except at a's spike column c,
  where b holds -x_a[c]; so y(a) - y(b) must equal (x_a - x_b) W^T = 2 x_a[c] W[:, c] -- one column of the
  weights, scaled by 2S, read through two rows that look like every other dense row. Where an input has no room
  for a pair (M=1), the partner is the same input with every spike flipped (partner_input), run as the next call;
- the inputs the sweep TIMES are built by the same function with the same layout (vary=False only drops the
  magnitude scaling), so no kind of row exists only in checked calls -- except below sparse_probe_min_M, where a
  probe row could be a timed input's only row: there timed inputs are dense rows (the timed graph's dense row is
  still judged, with its partner), so a kernel that skips zero entries is never timed on a 2-nonzero input;
- the input VALUES are salted: the harness draws a fresh salt (fresh_salt: the secrets module) per shape task and
  per check, and mixes it into the seed of every value (Gaussian entries, spikes, probe entries); the layout (which
  row is which kind, which rows pair) still follows the seed alone, so the lifecycle's calls at M=1 still cycle
  through the probe kinds. Why: the seeds and their offsets are documented and make_input is importable, so a
  candidate could regenerate every input the contract and the timer would draw and return answers computed ahead
  -- exact everywhere it is judged and timed at the cost of a table lookup (profiler/wrong/,
  PrecomputedAnswers). salt=0 keeps the inputs a function of the seed (tests, and a sweep given input_salt);
- input magnitude varies across calls: x is scaled by 2^e, e from input_scale_exponents (2^-8 ... 2^8) by
  seed (exact in BF16); relative errors of a correct kernel do not depend on it;
- one RANGE call (BF16 and FP32 inputs) scales an input by 2^RANGE_EXPONENT, past FP16's largest value: a kernel
  that narrows its input to FP16 anywhere (as fast as BF16 on the tensor cores) is exact at every scale the
  contract's exponents draw and gives inf there (profiler/wrong/, Fp16Inputs);
- a second weight draw (outliers=True) has outlier columns (1 in outlier_column_every, x outlier_column_scale),
  which turns a per-row scaled low-precision weight format into a visible rel-L2 error even at M=1;
- a plain torch.Tensor (no subclass, whose __torch_function__ could report other numbers than the kernel wrote)
  on the input's device, of exact shape and dtype; any strides (the library's swapped product returns y^T's
  transposed view, kernels/launch/mm_orient.py); NaN/Inf rejected.

The pair rule's bound (pair_reference). Let r_a, r_b be the exact products x_a W^T, x_b W^T and y_a, y_b the
kernel's outputs. A kernel that reads the weights as given and accumulates in FP32 makes two errors per output:
  (1) the accumulation error; for a dot product of length K in FP32 (unit roundoff u_acc = 2^-24) it is, with
      probability >= 1 - 2 exp(-lambda^2 / 2) per entry, at most lambda sqrt(K) u_acc sum_k |x_k| |w_nk|
      (Higham and Mary, "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 2019);
      lambda = PAIR_LAMBDA = 8 makes that 1 - 3e-14 per entry. A reduction tree (split-K, tensor-core blocks) only
      shortens the chains, so the bound holds for it too;
  (2) the rounding of the result to the output dtype: |y - r| <= u_y |r| (round to nearest; u_y = 2^-8 BF16,
      2^-11 FP16, 2^-24 FP32). The rule allows 2 u_y, so a kernel that rounds by truncation (error < 1 ulp
      <= 2 u_y |r|) passes too and a round-to-nearest kernel passes with a factor 2 of margin.
  Hence, entry by entry,  |(y_a - y_b) - (r_a - r_b)| <= 2 u_y (|r_a| + |r_b|) + lambda sqrt(K) u_acc
  ((|x_a| + |x_b|) |W|^T).  The pair rule fails a call when any entry of any pair exceeds this bound; the worst
  ratio error/bound is the check's `pair_ratio` (<= 0.5 for round-to-nearest kernels, measured in the tests at
  every official family's N and K).
Why it catches lossy weights (int8 with a scale per 128 columns: entry error up to ~1.1% of the group's sigma):
  a kernel that reads W' = W + E on both rows returns 2S E[:, c] + rounding for the difference; with S ~ sqrt(K)
  (spike_magnitude) the output entries are dominated by r_d + -S W_nc, and every entry whose weight W_nc is
  smaller than its own quantisation error / 2 u_y exceeds the bound (a quarter to a third of a pair's entries in
  the tests).
  A kernel exact on the spiky row and lossy on the other cannot choose: the two rows are of one kind. What a kernel
  could still do is compare rows with each other (find two rows equal but for one entry); the known-wrong set has
  no such kernel and the rule does not claim to catch one.
For FP32 outputs (router) term (2) is ~2^-24 and term (1) dominates: the hi/lo scheme's weight residual (~2^-17
  relative) stays below it by two orders of magnitude; the router's 1e-4 tolerance is its weight rule.

The element rule (input_reference's `bound`, check_output's `element_ratio`): the same two terms, applied to EVERY
output entry of every judged call, not to the difference of two rows. With r = x W^T exact (FP64: every product of
two BF16/FP16/FP32 numbers is exact in FP64 and the K-term sum rounds at 2^-53, far below both terms), a kernel that
reads x and W as given, accumulates in FP32 (any order: sequential, blocked, split-K partials added in FP32, tensor
-core trees) and rounds once to the output dtype returns y = round_y(a) with |a - r| <= B_acc =
lambda sqrt(K) u_acc (|x| |W|^T) (term (1), per entry with probability >= 1 - 3e-14) and |y - a| <= 2 u_y |a|
(term (2) with the truncation allowance). Hence, entry by entry,
      |y - r| <= E := 2 u_y |r| + (1 + 2 u_y) B_acc + s_y,
(s_y: the output dtype's subnormal spacing, 2^-24 for FP16 -- below its smallest normal the rounding error is
absolute, not relative),
and the rule fails a call when any entry's |y - r| / E (`element_ratio`) exceeds 1. No correct kernel fails it:
that is the derivation (measured in tests/profiler/test_element_rule.py on CPU: F.linear and the hi/lo router
scheme, any accumulation order and split-K, stay well inside). The hi/lo router (FP32 weights as BF16 hi + lo,
FP32 accumulation) leaves a residual |w - hi - lo| <= 2^-18 |w| per weight, so its extra error is at most
2^-18 (|x| |W|^T), below B_acc whenever lambda sqrt(K) 2^-24 >= 2^-18, i.e. K >= 64.
Why it catches lossy weights wherever a row or column could be recognised: a weight format W' = W + D adds
e = x D^T to every entry, independent of |r|. For int8 with one scale per row (or per 128 columns) D is uniform in
+-step/2 with step = max|w|/127, so e has a standard deviation of ~sqrt(K) sigma_x step / sqrt(12), about 0.6 % of
a typical |r| (sqrt(K) sigma_x sigma_w) for Gaussian weights -- while E allows 2 u_y |r| = 0.78 % of |r| (BF16)
plus a B_acc under 0.1 % of it at the official K. Every entry whose |r| is below ~e / (2 u_y) fails: a third or
more of the entries of any dense row, and an output has many. Treating some rows or columns exactly (a probe row,
an outlier column computed in full precision as LLM.int8() does) does not help: the remaining columns' D still
lands in every entry of every dense row, and dense rows are all of one kind. So a lossy weight or input format is
no longer judged by the 1 % rel-L2 alone: it fails the call. The rel-L2, row and probe rules stay (they name what
is wrong more plainly); `less_accurate` (error > 4 x the baseline's) remains a flag for what lies between.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

# The tables here are read-only (MappingProxyType): a candidate cannot widen a bound by editing one in place
# (profiler.check.guards holds the module's bindings; a table's content needs this).
PROBE_KINDS = MappingProxyType({"one_hot": "one-hot", "dominant": "dominant entry + noise", "few": "2-4 nonzeros",
                                "zero": "zero row"})
SMALL_M_CYCLE = (None, "dominant", "few", "zero")  # by seed % 4 below sparse_probe_min_M (lifecycle seeds 1, 2, 3)
POWER_EXPONENTS = (-3, 4)  # probe entries are +-2^e, e in [-3, 4): exact in every dtype we check
PAIR_EVERY_ROWS = 8        # one pair of dense rows per 8 rows (at least one where two dense rows exist)
PAIR_LAMBDA = 8.0          # the probabilistic accumulation bound's lambda (module docstring): 1 - 3e-14 per entry
FP32_UNIT_ROUNDOFF = 2.0 ** -24   # the accumulation precision every kernel of these families must keep
# FP16's largest finite value is 65504 < 2^16; dense entries are N(0, 1) and spikes and probe entries at least 2^-3,
# so 2^17 lifts most entries of an input past it, and BF16 and FP32 (8 exponent bits) hold 2^17 x any of them
# exactly. FP16 inputs have no room for it: they get no range call.
RANGE_EXPONENT = 17
RANGE_DTYPES = ("bfloat16", "float32")
UNIT_ROUNDOFF = MappingProxyType({"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11, "float32": 2.0 ** -24,
                                  "float64": 2.0 ** -53})


class Layout(dict):
    """make_input's row layout: {row: probe kind} (what the probe rules judge), plus
    spikes {dense row: its spike column} and pairs [(a, b)] of dense rows equal but for a's spike, negated in b."""

    def __init__(self, kinds=(), spikes=None, pairs=()):
        super().__init__(kinds)
        self.spikes: dict[int, int] = dict(spikes or {})
        self.pairs: list[tuple[int, int]] = list(pairs)


@dataclass
class Check:
    """Outcome of a correctness check. Errors are the worst seen over all checked calls."""

    ok: bool
    reasons: list[str] = field(default_factory=list)
    rel_l2: float | None = None
    max_row_rel: float | None = None
    sparse_rel: float | None = None
    vs_baseline: float | None = None
    pair_ratio: float | None = None  # worst |pair error| / its bound (pair rule; > 1 fails)
    element_ratio: float | None = None  # worst |y - exact| / its bound over the entries (element rule; > 1 fails)
    graph: Any = field(default=None, repr=False, compare=False)  # GraphHandle kept for timing (CUDA only)

    def to_dict(self) -> dict:
        """The run file's `error` record."""
        return {"rel_l2": self.rel_l2, "max_row_rel": self.max_row_rel, "sparse_rel": self.sparse_rel,
                "vs_baseline": self.vs_baseline, "pair_ratio": self.pair_ratio, "element_ratio": self.element_ratio,
                "reasons": list(self.reasons)}


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


def fresh_salt() -> int:
    """A salt for make_input drawn from the operating system's entropy (never 0, which means unsalted)."""
    return secrets.randbits(62) + 1


def _salted(seed: int, salt: int) -> int:
    """The seed of a value stream: `seed` itself unsalted, else a 63-bit mix of both (numpy's SeedSequence)."""
    if not salt:
        return int(seed)
    import numpy as np

    return int(np.random.SeedSequence([int(seed), int(salt)]).generate_state(1, np.uint64)[0] >> np.uint64(1))


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


def spike_magnitude(K: int) -> float:
    """S = 2^ceil(log2(sqrt(K))): the dense rows' spike, a power of two (exact in every dtype we check) about
    sqrt(K) times the rows' Gaussian entries, so the spike's column carries about as much of each output as the
    K Gaussian entries together (pair rule, module docstring)."""
    return float(2.0 ** math.ceil(math.log2(math.sqrt(max(1, int(K))))))


def _pairs(dense: list[int], M: int, rng) -> list[tuple[int, int]]:
    """Pairs (a, b) of distinct dense rows: one per PAIR_EVERY_ROWS rows, at least one where two exist."""
    count = min(len(dense) // 2, max(1, M // PAIR_EVERY_ROWS))
    if count == 0:
        return []
    chosen = [int(r) for r in rng.permutation(dense)[: 2 * count]]
    return [(chosen[2 * i], chosen[2 * i + 1]) for i in range(count)]


def make_input(M: int, K: int, seed: int, device, sparse: bool = True, dtype="bfloat16",
               contract: Mapping | None = None, vary: bool = False, salt: int = 0):
    """Random input x [M, K] (never all zeros) plus its layout -> (x, Layout {row: probe kind}, .spikes, .pairs).

    sparse=True (every checked and every timed input): the probe rows of probe_rows(), every other row dense
    with one spike +-S (spike_magnitude), and pairs of dense rows (module docstring). vary=True (the lifecycle
    contract's checked calls): the whole input scaled by 2^e (input_scale_exponent; exact). vary=False (timing
    inputs): the same layout, unscaled -- except below sparse_probe_min_M, where a timed input has dense rows only
    (a lone probe row would let a zero-skipping kernel be timed on almost no work). sparse=False: plain Gaussian
    rows, no layout (callers that only need bytes to move). salt: mixed into the seed of every value, not of the
    layout (module docstring); 0: the inputs are a function of the seed.
    """
    import numpy as np

    torch = _torch()
    contract = contract if contract is not None else default_contract()
    g = _generator(_salted(seed, salt), device)
    x = torch.randn(M, K, generator=g, device=device, dtype=torch.float32)
    if not sparse:
        return x.to(as_dtype(dtype)), Layout()
    # A timed input below sparse_probe_min_M carries dense rows only: there a probe row can be the input's only
    # row, and a kernel that skips zero entries would be timed on a 2-nonzero input (the checked calls still see
    # every kind; the timed graph's dense row is judged with its partner).
    small = M < int(contract["sparse_probe_min_M"])
    kinds = probe_rows(M, seed, contract) if vary or not small else {}
    rng = np.random.default_rng(_salted(seed + 7919, salt))  # a different stream from the row choice
    for r, kind in kinds.items():
        _fill_probe_row(x, r, kind, rng, contract)
    dense = [r for r in range(M) if r not in kinds]
    spike = spike_magnitude(K)
    cols = rng.integers(K, size=len(dense))
    signs = rng.choice([-1.0, 1.0], size=len(dense))
    pairs = _pairs(dense, M, np.random.default_rng(seed + 3571))
    # PLAIN rows: of the dense rows in no pair, half (chosen by the salted stream) carry no spike at all -- the rows
    # real activations mostly are; a kernel exact only where a row has an outlier is then lossy on judged rows.
    paired = {r for p in pairs for r in p}
    unpaired = [r for r in dense if r not in paired]
    plain = set(int(r) for r in rng.permutation(unpaired)[:len(unpaired) // 2]) if len(unpaired) >= 2 else set()
    keep = [i for i, r in enumerate(dense) if r not in plain]
    spikes = {dense[i]: int(cols[i]) for i in keep}
    if keep:  # one indexed write per step (an input is built on the device: no launch per row)
        rows = torch.as_tensor([dense[i] for i in keep], device=x.device)
        x[rows, torch.as_tensor(cols[keep], device=x.device)] = torch.as_tensor(signs[keep] * spike, dtype=x.dtype,
                                                                                device=x.device)
    if pairs:
        ia = torch.as_tensor([a for a, _ in pairs], device=x.device)
        ib = torch.as_tensor([b for _, b in pairs], device=x.device)
        ca = torch.as_tensor([spikes[a] for a, _ in pairs], device=x.device)
        x[ib] = x[ia]
        x[ib, ca] = -x[ia, ca]
        spikes.update({b: spikes[a] for a, b in pairs})
    if vary:
        x *= 2.0 ** input_scale_exponent(seed, contract)  # a power of two: exact, before the cast
    return x.to(as_dtype(dtype)), Layout(kinds, spikes, pairs)


def partner_input(x, layout: Layout):
    """The same input with every dense row's spike negated (exact): run as the call after x where x has no room
    for a pair of its own (M=1), its dense rows pair with x's -> (x', pairs [(row in x, row in x')])."""
    partner = x.clone()
    for r, c in layout.spikes.items():
        partner[r, c] = -partner[r, c]
    return partner, [(r, r) for r in sorted(layout.spikes)]


def reference(x, w, y_dtype):
    """FP64 product x @ w^T, converted to the output dtype, returned as FP64 for the comparison."""
    return (x.double() @ w.double().T).to(as_dtype(y_dtype)).double()


class WeightReference:
    """One weight in FP64 (and its magnitudes), made once and shared by the reference of every input on it."""

    def __init__(self, w):
        self.w64 = w.detach().double()
        self.abs_w64 = self.w64.abs()
        self.K = int(w.shape[1])

    def exact(self, x):
        """x @ W^T in FP64 (x's entries are exact in FP64; so is every product; the sum rounds at 2^-53)."""
        return x.detach().double() @ self.w64.T


@dataclass
class PairReference:
    """What the pair rule compares: y_a[rows_a] - y_b[rows_b] against `delta` entry by entry within `bound`
    (both FP64 [pairs, N]). cross=True: rows_b index the partner call's output (partner_input)."""

    rows_a: list
    rows_b: list
    delta: Any
    bound: Any
    cross: bool = False


def pair_reference(x_a, wref: WeightReference, y_dtype, pairs, x_b=None, exact_a=None,
                   exact_b=None) -> PairReference | None:
    """The pair rule's expected differences and bounds (module docstring) for `pairs` [(row of x_a, row of x_b)];
    x_b None: both rows in x_a. exact_a/exact_b: x_a/x_b @ W^T in FP64 when the caller has it already."""
    torch = _torch()
    if not pairs:
        return None
    cross = x_b is not None
    x_b = x_a if x_b is None else x_b
    ra = [int(a) for a, _ in pairs]
    rb = [int(b) for _, b in pairs]
    ia = torch.as_tensor(ra, device=x_a.device)
    ib = torch.as_tensor(rb, device=x_b.device)
    xa, xb = x_a.detach()[ia].double(), x_b.detach()[ib].double()
    ea = exact_a[ia] if exact_a is not None else xa @ wref.w64.T
    if exact_b is not None:
        eb = exact_b[ib]
    elif not cross and exact_a is not None:
        eb = exact_a[ib]
    else:
        eb = xb @ wref.w64.T
    delta = (xa - xb) @ wref.w64.T  # only the spike column differs: exact
    u_y = UNIT_ROUNDOFF[str(as_dtype(y_dtype)).removeprefix("torch.")]
    accumulate = PAIR_LAMBDA * math.sqrt(wref.K) * FP32_UNIT_ROUNDOFF * ((xa.abs() + xb.abs()) @ wref.abs_w64.T)
    bound = 2.0 * u_y * (ea.abs() + eb.abs()) + accumulate
    return PairReference(ra, rb, delta, bound, cross)


@dataclass
class InputReference:
    """Everything one input is judged with, computed once (the FP64 product is the expensive part): the rounded
    reference, the probe layout and the in-input pairs' reference."""

    ref: Any
    layout: Layout
    pairs: PairReference | None
    exact: Any = field(default=None, repr=False)  # x @ W^T in FP64: for a partner call's pair reference
    bound: Any = field(default=None, repr=False)  # the element rule's bound E per entry (module docstring)


def input_reference(x, wref: WeightReference, y_dtype, layout: Layout | Mapping | None = None) -> InputReference:
    """The InputReference of x (layout from make_input)."""
    layout = layout if isinstance(layout, Layout) else Layout(layout or {})
    exact = wref.exact(x)
    ref = exact.to(as_dtype(y_dtype)).double()
    return InputReference(ref, layout, pair_reference(x, wref, y_dtype, layout.pairs, exact_a=exact), exact,
                          element_bound(x, wref, y_dtype, exact))


def element_bound(x, wref: WeightReference, y_dtype, exact):
    """The element rule's bound per output entry: 2 u_y |r| + (1 + 2 u_y) lambda sqrt(K) u_acc (|x| |W|^T)."""
    torch = _torch()
    u_y = UNIT_ROUNDOFF[str(as_dtype(y_dtype)).removeprefix("torch.")]
    accumulate = PAIR_LAMBDA * math.sqrt(wref.K) * FP32_UNIT_ROUNDOFF * (x.detach().double().abs() @ wref.abs_w64.T)
    subnormal = float(torch.finfo(as_dtype(y_dtype)).smallest_normal) * 2.0 * u_y   # the output's subnormal spacing
    return 2.0 * u_y * exact.abs() + (1.0 + 2.0 * u_y) * accumulate + subnormal


def element_rule(yd, iref: InputReference, pre: str = "") -> tuple[float | None, list[str]]:
    """(worst |y - exact| / bound over the entries, reasons) -- the element rule (module docstring)."""
    torch = _torch()
    if iref.exact is None or iref.bound is None:
        return None, []
    ratio = (yd - iref.exact).abs() / iref.bound.clamp(min=torch.finfo(torch.float64).tiny)
    if ratio.numel() == 0:
        return 0.0, []
    flat = int(ratio.argmax())
    worst = float(ratio.reshape(-1)[flat])
    if worst <= 1.0:
        return worst, []
    r, c = divmod(flat, ratio.shape[1])
    over = int((ratio > 1.0).sum())
    return worst, [f"{pre}element rule: output ({r}, {c}) is {float(yd[r, c]):.6e}, the exact product "
                   f"{float(iref.exact[r, c]):.6e} +- {float(iref.bound[r, c]):.2e} (what output rounding and FP32 "
                   f"accumulation allow); {over} of {ratio.numel()} entries over: lossy arithmetic (the weights or "
                   f"inputs not read as given, or a narrower accumulation), whichever rows look exact"]


def pair_rule(y_a, y_b, pref: PairReference, pre: str = "") -> tuple[float, list[str]]:
    """(worst error / bound over the pairs, reasons): y_a[rows_a] - y_b[rows_b] vs pref.delta within pref.bound."""
    torch = _torch()
    ya = y_a.detach().to(device=pref.delta.device, dtype=torch.float64)
    yb = ya if y_b is None else y_b.detach().to(device=pref.delta.device, dtype=torch.float64)
    ia = torch.as_tensor(pref.rows_a, device=ya.device)
    ib = torch.as_tensor(pref.rows_b, device=yb.device)
    err = ((ya[ia] - yb[ib]) - pref.delta).abs()
    ratio = err / pref.bound.clamp(min=torch.finfo(torch.float64).tiny)
    flat = int(ratio.argmax())
    p, n = divmod(flat, ratio.shape[1])
    worst = float(ratio.reshape(-1)[flat])
    reasons = []
    if not worst <= 1.0:
        over = int((ratio > 1.0).sum())
        rows = (f"row {pref.rows_a[p]} and the partner call's row {pref.rows_b[p]}" if pref.cross else
                f"rows {pref.rows_a[p]} and {pref.rows_b[p]}")
        reasons.append(f"{pre}paired-row probe ({rows}: equal but for one spike entry, negated): their outputs "
                       f"differ by {float((ya[ia] - yb[ib])[p, n]):.5e} at column {n}, expected "
                       f"{float(pref.delta[p, n]):.5e} +- {float(pref.bound[p, n]):.2e} (output rounding and FP32 "
                       f"accumulation); {over} of {ratio.numel()} entries over the bound: the weights are not "
                       f"read as given, or rows are treated differently by how they look")
    return worst, reasons


def _kinds(sparse_rows) -> dict[int, str]:
    """{row: kind} from make_input's layout, or from a plain list of rows (all one-hot)."""
    if isinstance(sparse_rows, Mapping):
        return {int(r): str(k) for r, k in sparse_rows.items()}
    return {int(r): "one_hot" for r in sparse_rows}


def check_output(y, ref, rel_l2_tol: float, *, sparse_rows: Sequence[int] | Mapping = (), expect_shape=None,
                 expect_dtype=None, contract: Mapping | None = None, where: str = "",
                 pairs: PairReference | None = None) -> Check:
    """Compare one output with its reference under the contract; reasons say which rule failed and where.
    `ref`: the FP64 reference tensor, or an InputReference (its layout and in-input pairs are then used too).
    `pairs`: an in-input PairReference (pair rule) when `ref` is a plain tensor."""
    torch = _torch()
    contract = contract if contract is not None else default_contract()
    pre = f"{where}: " if where else ""
    iref = ref if isinstance(ref, InputReference) else None
    if isinstance(ref, InputReference):
        sparse_rows = sparse_rows or dict(ref.layout)
        pairs = pairs if pairs is not None else ref.pairs
        ref = ref.ref
    if not isinstance(y, torch.Tensor):
        return Check(False, [f"{pre}returned {type(y).__name__}, not a tensor"])
    if type(y) is not torch.Tensor:
        return Check(False, [f"{pre}returned a {type(y).__name__}, a torch.Tensor subclass: its conversions can report "
                             f"numbers other than the ones the kernel wrote (__torch_function__); return a plain "
                             f"tensor"])
    if y.device != ref.device:
        return Check(False, [f"{pre}output on {y.device}, not on the input's device {ref.device}"])
    expect_shape = tuple(expect_shape) if expect_shape is not None else tuple(ref.shape)
    if tuple(y.shape) != expect_shape:
        hint = " (transposed output?)" if tuple(y.shape) == expect_shape[::-1] else ""
        return Check(False, [f"{pre}output shape {tuple(y.shape)} != expected {expect_shape}{hint}"])
    reasons = []
    if expect_dtype is not None and y.dtype != as_dtype(expect_dtype):
        reasons.append(f"{pre}output dtype {str(y.dtype).removeprefix('torch.')} != expected "
                       f"{str(as_dtype(expect_dtype)).removeprefix('torch.')}")
    try:
        yd = y.detach().to(device=ref.device, dtype=torch.float64)
    except Exception as exc:   # storage that cannot be read (a meta tensor, a freed or broken allocation)
        return Check(False, reasons + [f"{pre}output cannot be read ({type(exc).__name__}: "
                                       f"{str(exc).splitlines()[0][:200] if str(exc) else ''})"])
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
    pair_ratio = None
    if pairs is not None and not pairs.cross:
        pair_ratio, found = pair_rule(yd, None, pairs, pre)
        reasons += found
    element_ratio, found = element_rule(yd, iref, pre) if iref is not None else (None, [])
    reasons += found
    return Check(not reasons, reasons, rel_l2=rel_l2, max_row_rel=max_row_rel, sparse_rel=sparse_rel,
                 pair_ratio=pair_ratio, element_ratio=element_ratio)


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


def screen_outputs(ys, xs, wref: WeightReference, y_dtype, layout: Layout, rel_l2_tol: float,
                   contract: Mapping) -> list[bool]:
    """check_output's verdict for a batch of calls at once: ys [n, M, N] (the calls' outputs, of the expected shape
    and dtype) against xs [n, M, K] (their inputs), all with one probe layout and in-input pairs -> [passes] per
    call. The same rules and bounds as check_output (finite, rel-L2, row bound, zero and probe rows, the pair rule,
    the element rule), computed for every call together with one host read; tests/profiler/test_timed_check.py
    holds it to check_output's verdict on right and wrong outputs. The harness gets a failing call's reasons from
    check_output."""
    torch = _torch()
    n = int(ys.shape[0])
    if n == 0:
        return []
    x64 = xs.detach().double()
    exact = x64 @ wref.w64.T
    ref = exact.to(as_dtype(y_dtype)).double()
    yd = ys.detach().double()
    finite = torch.isfinite(yd).flatten(1).all(dim=1)
    yd = torch.where(torch.isfinite(yd), yd, torch.zeros((), dtype=yd.dtype, device=yd.device))
    err = yd - ref
    floor = float(contract["row_denominator_floor"])
    ok = finite.clone()
    ref_norm = torch.linalg.vector_norm(ref.flatten(1), dim=1)
    rel_l2 = torch.linalg.vector_norm(err.flatten(1), dim=1) / ref_norm.clamp(min=floor)
    ok &= rel_l2 <= rel_l2_tol
    row_ref = torch.linalg.vector_norm(ref, dim=2)
    row_err = torch.linalg.vector_norm(err, dim=2)
    mean_row = row_ref.mean(dim=1, keepdim=True)
    denom = torch.maximum(row_ref, torch.clamp(float(contract["row_denominator_mean_fraction"]) * mean_row, min=floor))
    ok &= (row_err / denom).amax(dim=1) <= float(contract["row_bound_factor"]) * rel_l2_tol
    kinds = dict(layout)
    zero = [r for r, k in kinds.items() if k == "zero"]
    if zero:
        ok &= (yd[:, zero] == 0).flatten(1).all(dim=1)
    probes = [r for r, k in kinds.items() if k != "zero"]
    if probes:
        rel = row_err[:, probes] / row_ref[:, probes].clamp(min=floor)
        ok &= rel.amax(dim=1) <= float(contract["sparse_probe_rel_tol"])
    u_y = UNIT_ROUNDOFF[str(as_dtype(y_dtype)).removeprefix("torch.")]
    accumulate = PAIR_LAMBDA * math.sqrt(wref.K) * FP32_UNIT_ROUNDOFF * (x64.abs() @ wref.abs_w64.T)
    pairs = list(layout.pairs)
    if pairs:
        ia, ib = [a for a, _ in pairs], [b for _, b in pairs]
        delta = (x64[:, ia] - x64[:, ib]) @ wref.w64.T
        acc = PAIR_LAMBDA * math.sqrt(wref.K) * FP32_UNIT_ROUNDOFF * (
            (x64[:, ia].abs() + x64[:, ib].abs()) @ wref.abs_w64.T)
        bound = 2.0 * u_y * (exact[:, ia].abs() + exact[:, ib].abs()) + acc
        perr = ((yd[:, ia] - yd[:, ib]) - delta).abs()
        ok &= (perr / bound.clamp(min=torch.finfo(torch.float64).tiny) <= 1.0).flatten(1).all(dim=1)
    subnormal = float(torch.finfo(as_dtype(y_dtype)).smallest_normal) * 2.0 * u_y
    bound = 2.0 * u_y * exact.abs() + (1.0 + 2.0 * u_y) * accumulate + subnormal
    ok &= ((yd - exact).abs() / bound.clamp(min=torch.finfo(torch.float64).tiny) <= 1.0).flatten(1).all(dim=1)
    return [bool(v) for v in ok.tolist()]
