"""Probe curve rules, floors and SOL; the seed's pooler bounds."""
import math

import numpy as np
import pytest

from datasets import load_seed_probes
from dashboard.model import metrics, roofline


def test_seed_pooler_bounds():
    w_bytes = metrics.weight_bytes(4096, 8192)
    # Seed: 64 MiB at 4.8 TB/s → 13.98 µs; 2·16·4096·8192 FLOPs at 989 TFLOP/s → 1.09 µs; M=256 → 17.37 µs.
    assert round(roofline.bandwidth_floor_us(w_bytes, 4.8), 2) == 13.98
    assert round(roofline.compute_floor_us(metrics.flops(16, 4096, 8192), 989.0), 2) == 1.09
    assert round(roofline.compute_floor_us(metrics.flops(256, 4096, 8192), 989.0), 2) == 17.37


def test_curve_hits_measured_points_and_interpolates_in_log_log():
    probes = load_seed_probes()
    curve = roofline.ProbeCurve.from_frame(probes)
    for b, us in zip(probes.bytes, probes.us):
        assert curve.us(b) == pytest.approx(us)
    # Log-log linear: the geometric-mean size maps to the geometric-mean time.
    assert curve.tbps_max_point == pytest.approx(67108864 / 16.65e-6 / 1e12)  # ≈ 4.03 TB/s at 67 MB
    mid = math.sqrt(16777216 * 37748736)
    assert curve.us(mid) == pytest.approx(math.sqrt(5.79 * 10.43))


def test_curve_outside_the_measured_range():
    curve = roofline.ProbeCurve([1000, 4000], [2.0, 4.0])
    assert curve.us(500) == pytest.approx(1.0)     # below: smallest point scaled by the bytes ratio
    assert curve.us(8000) == pytest.approx(8.0)    # above: bytes ÷ largest point's bandwidth (1000 B/µs)
    assert curve.tbps_max_point == pytest.approx(4000 / 4.0 / 1e6)
    assert np.allclose(curve.us(np.array([500, 1000, 8000])), [1.0, 2.0, 8.0])


def test_curve_keeps_the_fastest_and_is_monotone():
    # Two designs at 2000 B (3.0 and 2.5 µs) and an anomalous fast big probe (4000 B in 2.2 µs).
    curve = roofline.ProbeCurve([1000, 2000, 2000, 4000], [2.4, 3.0, 2.5, 2.2])
    pts = curve.points()
    assert list(pts.bytes) == [1000, 2000, 4000]
    assert list(pts.us) == [2.4, 2.5, 2.2]               # fastest per size
    assert list(pts.us_monotone) == [2.2, 2.2, 2.2]      # lowered to the fastest larger transfer
    grid = np.geomspace(100, 10_000, 50)
    assert np.all(np.diff(curve.us(grid)) >= 0)


def test_curve_rejects_bad_points():
    with pytest.raises(ValueError):
        roofline.ProbeCurve([], [])
    with pytest.raises(ValueError):
        roofline.ProbeCurve([1000], [0.0])
    with pytest.raises(ValueError):
        roofline.ProbeCurve([1000], [1.0]).us(0)


def test_floor_bound_and_sol():
    assert roofline.floor_us(13.98, 1.09) == 13.98
    assert roofline.bound(13.98, 1.09) == "memory"
    assert roofline.bound(13.98, 17.37) == "compute"
    assert roofline.floor_us(float("nan"), 1.09) == 1.09        # unknown memory floor → compute floor
    assert roofline.bound(float("nan"), float("nan")) == "unknown"
    assert roofline.sol(10.0, 12.5) == pytest.approx(0.8)
    with pytest.raises(ValueError):
        roofline.compute_floor_us(1.0, 0.0)
