"""The correctness contract's inputs: generate the weights and inputs every check and every timed call reads.

    make_weight(family, N, K, seed, device, dtype=None, outliers=False) -> w [N, K]
    make_input(M, K, seed, device, sparse=True, dtype="bfloat16", contract=None, vary=False, salt=0) -> (x, layout)
    fresh_salt() -> int                                # a salt no candidate can know before its inputs exist

Rules for the inputs (seed write-up "Sparse probe rows", "What a useful correctness check has to catch"; every
number is in the workload's "contract" block, e.g. datasets/workloads/muse_bf16_proj.json, passed in by the harness
from the task's workload; the rules that judge the outputs are in profiler.check.rules):
- probe rows (judged by the probe rule, profiler.check.rules). Kinds:
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
  spike_magnitude(K) (pair rule: profiler.check.rules). Each of the kinds above can be recognised from the row alone, so a kernel
  could be exact only on them; the dense rows cannot be told apart from each other by any statistic of the row;
- PLAIN dense rows: of the dense rows in no pair, half (chosen by the salted stream) carry no spike -- Gaussian
  entries only, the rows real activations mostly are. So every kind of row a real input has (plain rows, rows
  with an activation outlier, sparse rows) is in the checked calls and, drawn afresh per call, in every timed call
  (profiler.check.timed.FreshFeed); a kernel exact on rows with an outlier and lossy on the others fails the
  element rule (profiler/wrong/, LossyWithoutOutlier);
- PAIRED dense rows (pair rule; its numbers -- PAIR_EVERY_ROWS and the spike here, PAIR_LAMBDA in
  profiler.check.rules -- are derived there, not tunable contract numbers, so they live in code): rows a and b of one input are equal except at a's spike column c,
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
"""
from __future__ import annotations

import math
import secrets
from types import MappingProxyType
from typing import Mapping

# The tables here are read-only (MappingProxyType, tuples): a candidate cannot change a probe kind in place
# (profiler.check.guards holds the module's bindings; a table's content needs this).
PROBE_KINDS = MappingProxyType({"one_hot": "one-hot", "dominant": "dominant entry + noise", "few": "2-4 nonzeros",
                                "zero": "zero row"})
SMALL_M_CYCLE = (None, "dominant", "few", "zero")  # by seed % 4 below sparse_probe_min_M (lifecycle seeds 1, 2, 3)
POWER_EXPONENTS = (-3, 4)  # probe entries are +-2^e, e in [-3, 4): exact in every dtype we check
PAIR_EVERY_ROWS = 8        # one pair of dense rows per 8 rows (at least one where two dense rows exist)
# FP16's largest finite value is 65504 < 2^16; dense entries are N(0, 1) and spikes and probe entries at least 2^-3,
# so 2^17 lifts most entries of an input past it, and BF16 and FP32 (8 exponent bits) hold 2^17 x any of them
# exactly. FP16 inputs have no room for it: they get no range call.
RANGE_EXPONENT = 17
RANGE_DTYPES = ("bfloat16", "float32")


class Layout(dict):
    """make_input's row layout: {row: probe kind} (what the probe rules judge), plus
    spikes {dense row: its spike column} and pairs [(a, b)] of dense rows equal but for a's spike, negated in b."""

    def __init__(self, kinds=(), spikes=None, pairs=()):
        super().__init__(kinds)
        self.spikes: dict[int, int] = dict(spikes or {})
        self.pairs: list[tuple[int, int]] = list(pairs)


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


def timed_call_input(M: int, K: int, seed: int, salt: int, dtype, contract: Mapping | None = None):
    """The input of one timed call -> (x, Layout): make_input's timing layout (vary=False) from `seed` and `salt`,
    then every dense row in no pair carries a spike or none, half each, drawn afresh for this call -- as the worker's
    own feed draws them (profiler.check.timed.FreshFeed), so a kernel exact only on rows with an outlier is lossy on
    timed calls at every M, M = 1 included (where make_input alone spikes its one row)."""
    import numpy as np

    contract = contract if contract is not None else default_contract()
    x, layout = make_input(M, K, seed, "cpu", dtype="float32", contract=contract, salt=salt)
    rng = np.random.default_rng(_salted(seed + 104729, salt))
    paired = {r for p in layout.pairs for r in p}
    spikes = dict(layout.spikes)
    spike = spike_magnitude(K)
    for r in [r for r in range(M) if r not in layout and r not in paired]:
        if rng.random() < 0.5:
            if r not in spikes:
                spikes[r] = int(rng.integers(K))
                x[r, spikes[r]] = float(rng.choice([-1.0, 1.0])) * spike
        elif r in spikes:
            x[r, spikes.pop(r)] = float(rng.standard_normal())
    return x.to(as_dtype(dtype)), Layout(dict(layout), spikes, layout.pairs)


def partner_input(x, layout: Layout):
    """The same input with every dense row's spike negated (exact): run as the call after x where x has no room
    for a pair of its own (M=1), its dense rows pair with x's -> (x', pairs [(row in x, row in x')])."""
    partner = x.clone()
    for r, c in layout.spikes.items():
        partner[r, c] = -partner[r, c]
    return partner, [(r, r) for r in sorted(layout.spikes)]
