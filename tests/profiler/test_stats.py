import numpy as np
import pytest

from profiler.measure import stats


def test_paired_ratios_drop_bad_pairs():
    r = stats.paired_ratios([10, 10, 10, 10], [5, 0, np.nan, 10])
    assert list(r) == [2.0, 1.0]


def test_paired_ratios_length_mismatch():
    with pytest.raises(ValueError):
        stats.paired_ratios([1, 2], [1])


def test_rse():
    assert stats.rse([1.0]) == float("inf")
    x = np.full(100, 2.0)
    assert stats.rse(x) == 0.0
    rng = np.random.default_rng(0)
    y = rng.normal(10, 1, 10000)
    assert stats.rse(y) == pytest.approx(1 / 100 / 10, rel=0.05)


def test_bootstrap_ci_contains_median_and_narrows():
    rng = np.random.default_rng(1)
    small, big = rng.normal(5, 1, 20), rng.normal(5, 1, 2000)
    lo, hi = stats.bootstrap_ci(small)
    assert lo <= np.median(small) <= hi
    lo2, hi2 = stats.bootstrap_ci(big)
    assert hi2 - lo2 < hi - lo
    assert all(np.isnan(v) for v in stats.bootstrap_ci([]))
    assert all(np.isnan(v) for v in stats.bootstrap_ci([np.nan, np.inf]))  # non-finite samples are dropped
    assert stats.bootstrap_ci([3.0]) == (3.0, 3.0)


def test_bootstrap_is_deterministic_with_seed():
    x = np.arange(50.0)
    assert stats.bootstrap_ci(x, seed=3) == stats.bootstrap_ci(x, seed=3)


def test_summarize_pairs_and_wide_ci():
    base = np.array([10.0, 10.2, 9.8, 10.1] * 10)
    p = stats.summarize_pairs(base, base / 2)
    assert p["ratio_median"] == pytest.approx(2.0)
    assert p["n_pairs"] == 40 and p["rse"] == pytest.approx(0.0)
    assert stats.ci_too_wide(10.0, 9.0, 11.1)
    assert not stats.ci_too_wide(10.0, 9.6, 10.4)
    assert stats.ci_too_wide(float("nan"), 1, 2)


def test_stats_imports_without_torch():
    import subprocess
    import sys

    code = "import sys, profiler.measure.stats, datasets.runfile; assert 'torch' not in sys.modules; assert 'scipy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=__file__.rsplit("/tests/", 1)[0])
