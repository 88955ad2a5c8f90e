"""Floors: a memory floor from a measured probe curve, a compute floor from a peak rate, and SOL.

ProbeCurve maps bytes → µs from read-probe measurements:
- Several designs or repeats at the same size: the fastest is kept (a floor wants the best observed way).
- Monotone: a transfer can never need *less* time than a smaller one, so after sorting by bytes each point is
  lowered to the fastest time seen at any size ≥ it (running minimum from large to small). Lowering, not raising,
  keeps every point a real measurement or below one, so the curve stays a lower bound; a running max would
  overstate the floor whenever a larger probe happened to run faster.
- Inside the measured range: linear interpolation of log(µs) against log(bytes) (monotone because the points are).
- Below the smallest probe: the smallest point's time scaled by the bytes ratio. Real small reads carry fixed
  latency, so this is a lower bound, not a prediction.
- Above the largest probe: bytes ÷ the largest probe's bandwidth (the best sustained rate measured).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

US_PER_S = 1e6


class ProbeCurve:
    def __init__(self, bytes, us):
        nbytes = np.asarray(bytes, dtype=float).ravel()
        times_us = np.asarray(us, dtype=float).ravel()
        if nbytes.size == 0 or nbytes.size != times_us.size:
            raise ValueError("ProbeCurve needs one or more (bytes, us) points of equal length")
        if not (np.all(np.isfinite(nbytes)) and np.all(np.isfinite(times_us))
                and np.all(nbytes > 0) and np.all(times_us > 0)):
            raise ValueError("probe bytes and us must be positive finite numbers")
        fastest = pd.Series(times_us).groupby(nbytes).min()  # sorted by bytes, one point per size
        self.measured = pd.DataFrame({"bytes": fastest.index.to_numpy(), "us": fastest.to_numpy()})
        suffix_min = np.minimum.accumulate(fastest.to_numpy()[::-1])[::-1]
        self.bytes = fastest.index.to_numpy()
        self.us_points = suffix_min
        self._log_b = np.log(self.bytes)
        self._log_us = np.log(self.us_points)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, bytes_col: str = "bytes", us_col: str = "us") -> "ProbeCurve":
        return cls(frame[bytes_col], frame[us_col])

    @property
    def bytes_min(self) -> float:
        return float(self.bytes[0])

    @property
    def bytes_max(self) -> float:
        return float(self.bytes[-1])

    @property
    def tbps_max_point(self) -> float:
        """Bandwidth of the largest probe (TB/s, decimal), the rate used above the measured range."""
        return float(self.bytes[-1] / self.us_points[-1] * US_PER_S / 1e12)

    def us(self, nbytes):
        """Memory floor in µs for `nbytes` (scalar or array), using the rules in the module docstring."""
        b = np.asarray(nbytes, dtype=float)
        if np.any(b <= 0):
            raise ValueError("bytes must be positive")
        inside = np.exp(np.interp(np.log(b), self._log_b, self._log_us))
        below = self.us_points[0] * b / self.bytes[0]
        above = self.us_points[-1] * b / self.bytes[-1]
        out = np.where(b < self.bytes[0], below, np.where(b > self.bytes[-1], above, inside))
        return float(out) if out.ndim == 0 else out

    def points(self) -> pd.DataFrame:
        """Measured fastest point per size and the monotone value used (they differ where a point was lowered)."""
        return self.measured.assign(us_monotone=self.us_points)


def memory_floor_us(curve: ProbeCurve, nbytes):
    return curve.us(nbytes)


def compute_floor_us(flops, peak_tflops: float):
    """Optimistic compute time F / P (µs) at a peak rate in TFLOP/s."""
    if peak_tflops <= 0:
        raise ValueError("peak_tflops must be positive")
    return flops / (peak_tflops * 1e12) * US_PER_S


def bandwidth_floor_us(nbytes, tbps: float):
    """Optimistic movement time B / Q (µs) at a bandwidth in decimal TB/s."""
    if tbps <= 0:
        raise ValueError("tbps must be positive")
    return nbytes / (tbps * 1e12) * US_PER_S


def floor_us(memory_us, compute_us):
    """Overlap model: movement and compute can overlap, so the floor is the larger of the two, not their sum.

    A NaN side (no probes, or no peak rate known) is ignored: fmax returns the other side.
    """
    out = np.fmax(memory_us, compute_us)
    return float(out) if np.ndim(out) == 0 else out


def bound(memory_us, compute_us):
    """Which floor applies: 'memory', 'compute' (ties count as memory) or 'unknown' when neither is known."""
    mem = np.asarray(memory_us, dtype=float)
    comp = np.asarray(compute_us, dtype=float)
    out = np.where(np.isnan(mem) & np.isnan(comp), "unknown",
                   np.where(np.isnan(mem) | (comp > mem), "compute", "memory"))
    return str(out) if out.ndim == 0 else out


def sol(floor, measured_us):
    """Speed-of-light fraction: floor ÷ measured time (1.0 = at the floor; > 1 means under the floor)."""
    return floor / measured_us
