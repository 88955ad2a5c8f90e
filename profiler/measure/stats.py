"""Statistics for paired timings (numpy only: this module must import without torch or scipy).

Samples arrive as arrays of microseconds; a "pair" is the i-th sample of the baseline and the i-th sample
of a candidate, taken in the same round (adjacent in time, order alternating), so their ratio cancels
slow drifts (clocks, temperature) that unpaired medians would mix into the comparison.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from datasets import noise_model


def rse(x) -> float:
    """Relative standard error of the mean: std(x, ddof=1) / sqrt(n) / |mean(x)|; inf when n < 2."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2 or np.mean(x) == 0:
        return float("inf")
    return float(np.std(x, ddof=1) / np.sqrt(x.size) / abs(np.mean(x)))


def paired_ratios(base_us, cand_us) -> np.ndarray:
    """Per-pair speed-up base/cand (> 1 means the candidate is faster); pairs with a non-positive or
    non-finite time are dropped (a time at or below zero after overhead subtraction is not a speed)."""
    base = np.asarray(base_us, dtype=np.float64)
    cand = np.asarray(cand_us, dtype=np.float64)
    if base.shape != cand.shape:
        raise ValueError(f"paired samples differ in length: {base.shape} vs {cand.shape}")
    ok = np.isfinite(base) & np.isfinite(cand) & (base > 0) & (cand > 0)
    return base[ok] / cand[ok]


def bootstrap_ci(samples, stat: Callable = np.median, n: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of `stat` (default: median) over `samples`; (nan, nan) when empty.

    Vectorized: draws an [n, len] index matrix at once (fine for the few hundred samples a shape gets).
    """
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n, x.size))
    if stat is np.median:
        boots = np.median(x[idx], axis=1)
    elif stat is np.mean:
        boots = np.mean(x[idx], axis=1)
    else:
        boots = np.array([stat(x[i]) for i in idx])
    alpha = (1.0 - level) / 2.0
    return (float(np.quantile(boots, alpha)), float(np.quantile(boots, 1.0 - alpha)))


def summarize_samples(samples_us, seed: int = 0) -> dict:
    """median_us and its bootstrap 95% CI for one candidate at one shape."""
    x = np.asarray(samples_us, dtype=np.float64)
    lo, hi = bootstrap_ci(x, seed=seed)
    return {"median_us": float(np.median(x)) if x.size else float("nan"),
            "ci_low_us": lo, "ci_high_us": hi, "n_samples": int(x.size)}


def summarize_pairs(base_us, cand_us, seed: int = 0) -> dict:
    """Paired ratio statistics: median ratio, its bootstrap 95% CI, RSE of the ratios, n_pairs."""
    r = paired_ratios(base_us, cand_us)
    lo, hi = bootstrap_ci(r, seed=seed)
    return {"ratio_median": float(np.median(r)) if r.size else float("nan"),
            "ratio_ci_low": lo, "ratio_ci_high": hi, "rse": rse(r), "n_pairs": int(r.size),
            "ratios": [float(v) for v in r]}


def ci_too_wide(median: float, lo: float, hi: float, device: str | None = None, key: str | None = None) -> bool:
    """True when the CI half-width exceeds the noise band (datasets.noise_model: the within-run band on `device` at
    shape `key`, noise_model.shape_key(family, M)): an interval that wide cannot read SAME against the band, so the
    timing did not settle enough for a verdict. device None: the bands of every device with evidence; a device
    without evidence has no band to be wide against (False), and its verdicts read NO VERDICT anyway."""
    if not np.isfinite(median) or median <= 0 or not (np.isfinite(lo) and np.isfinite(hi)):
        return True
    band = noise_model.band(noise_model.WITHIN, noise_model.SHAPE, device, key)
    return band.known and (hi - lo) / 2.0 > band.frac * median
