"""Confidence bounds of outcome rates (bench.analysis.stats): known values and properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.analysis import stats
from solvers.errors import ProblemError


def test_known_values():
    assert f"{stats.rate_upper_bound(0, 2995):.1e}" == "1.0e-03"
    assert f"{stats.rate_upper_bound(0, 64):.1e}" == "4.6e-02"
    assert stats.rate_upper_bound(0, 64) == pytest.approx(1 - 0.05 ** (1 / 64))
    low, high = stats.rate_interval(5, 1000)
    assert f"{low:.1e}" == "1.6e-03" and f"{high:.1e}" == "1.2e-02"
    assert stats.cases_needed(1e-3) == 2995 and stats.cases_needed(1e-2) == 299
    assert stats.rate_upper_bound(3, 3) == 1.0


@given(n=st.integers(1, 5000), data=st.data(), confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_bounds_contain_the_observed_rate_and_tighten_with_more_cases(n, data, confidence):
    k = data.draw(st.integers(0, n))
    low, high = stats.rate_interval(k, n, confidence)
    assert 0 <= low <= k / n <= high <= 1
    assert stats.rate_upper_bound(k, n, confidence) <= high + 1e-12  # one-sided sits inside two-sided
    assert stats.rate_upper_bound(0, n + 1, confidence) < stats.rate_upper_bound(0, n, confidence)


@given(rate=st.floats(1e-5, 0.5), confidence=st.sampled_from([0.9, 0.95, 0.99]))
def test_cases_needed_is_the_smallest_sufficient_count(rate, confidence):
    n = stats.cases_needed(rate, confidence)
    assert stats.rate_upper_bound(0, n, confidence) <= rate
    assert n == 1 or stats.rate_upper_bound(0, n - 1, confidence) > rate


@pytest.mark.parametrize("args", [(3, 2), (-1, 5), (0, 0), (1.5, 4)])
def test_bad_counts_name_the_arguments(args):
    with pytest.raises(ProblemError, match="k, n: expected integers"):
        stats.rate_interval(*args)


def test_bad_confidence_and_rate_are_refused():
    with pytest.raises(ProblemError, match="confidence"):
        stats.rate_upper_bound(0, 10, 1.0)
    with pytest.raises(ProblemError, match="rate"):
        stats.cases_needed(0.0)


@given(pairs=st.lists(st.tuples(st.integers(1, 3000), st.floats(0, 1)), min_size=1, max_size=20),
       confidence=st.sampled_from([0.8, 0.95, 0.99]))
def test_table_intervals_equal_the_scalar_ones(pairs, confidence):
    import numpy as np

    n = np.array([p[0] for p in pairs])
    k = np.array([int(round(p[1] * p[0])) for p in pairs])
    low, high = stats.rate_intervals(k, n, confidence)
    bound = stats.rate_upper_bounds(k, n, confidence)
    for i in range(len(n)):
        assert (low[i], high[i]) == pytest.approx(stats.rate_interval(int(k[i]), int(n[i]), confidence), abs=1e-12)
        assert bound[i] == pytest.approx(stats.rate_upper_bound(int(k[i]), int(n[i]), confidence), abs=1e-12)


def test_table_intervals_refuse_bad_counts():
    import numpy as np

    with pytest.raises(ProblemError, match="k, n: expected integer arrays"):
        stats.rate_intervals(np.array([3]), np.array([2]))
    with pytest.raises(ProblemError, match="k, n: expected integer arrays"):
        stats.rate_upper_bounds(np.array([0.5]), np.array([2]))


@given(n=st.integers(1, 3000), data=st.data(), rate=st.sampled_from([1e-3, 1e-2, 0.05, 0.2]))
def test_cases_to_show_reaches_the_rate_at_the_observed_frequency(n, data, rate):
    import math

    k = data.draw(st.integers(0, n))
    m = stats.cases_to_show(k, n, rate)
    if k / n >= rate:
        assert m is None
        return
    assert m >= (n if k else 1)
    events = 0 if k == 0 else min(m, max(k, math.ceil(k / n * m)))
    assert stats.rate_upper_bound(events, m) <= rate
    if k == 0:
        assert m == stats.cases_needed(rate)


def test_median_interval_brackets_the_median_and_is_reproducible():
    import numpy as np

    x = np.array([10.0, 10.4, 9.8, 10.1, 12.5, 10.2, 9.9])
    low, high = stats.median_interval(x)
    assert low <= np.median(x) <= high and x.min() <= low and high <= x.max()
    assert stats.median_interval(x) == (low, high)  # seeded
    assert all(np.isnan(stats.median_interval([3.0])))  # one repeat: no spread to speak of
    assert stats.median_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    wide = stats.median_interval(x, 0.99)
    assert wide[0] <= low and high <= wide[1]


def test_ratio_interval_of_well_separated_samples_excludes_one():
    ratio, low, high = stats.ratio_interval([2.0, 2.1, 1.9, 2.05, 1.95], [1.0, 1.05, 0.95, 1.02, 0.98])
    assert ratio == pytest.approx(2.0) and 1 < low <= ratio <= high
    ratio, low, high = stats.ratio_interval([1.0, 1.1, 0.9, 1.05], [1.0, 1.08, 0.92, 1.02])
    assert low < 1 < high  # the same distribution: a tie
    assert stats.ratio_interval([3.0, 3.0], [1.0, 1.0]) == (3.0, 3.0, 3.0)
    assert all(map(lambda v: v != v, stats.ratio_interval([1.0], [2.0])[1:]))


@given(n=st.integers(1, 100_000), data=st.data(), confidence=st.sampled_from([0.8, 0.9, 0.95, 0.975, 0.99, 0.999]))
def test_beta_quantiles_are_scipy_stats_beta_ppf(n, data, confidence):
    """The bounds take their Beta quantiles from ``scipy.special.betaincinv`` (no 0.6 s import
    of ``scipy.stats``); they are ``scipy.stats.beta.ppf``'s, the Clopper-Pearson definition."""
    import numpy as np
    from scipy.stats import beta

    k = data.draw(st.integers(0, n))
    alpha = 1 - confidence
    expect_bound = 1.0 if k == n else beta.ppf(confidence, k + 1, n - k)
    expect_low = 0.0 if k == 0 else beta.ppf(alpha / 2, k, n - k + 1)
    expect_high = 1.0 if k == n else beta.ppf(1 - alpha / 2, k + 1, n - k)
    assert stats.rate_upper_bound(k, n, confidence) == pytest.approx(expect_bound, rel=1e-12, abs=1e-300)
    (bound,) = stats.rate_upper_bounds(np.array([k]), np.array([n]), confidence)
    (low,), (high,) = stats.rate_intervals(np.array([k]), np.array([n]), confidence)
    assert bound == pytest.approx(expect_bound, rel=1e-12, abs=1e-300)
    assert (low, high) == pytest.approx((expect_low, expect_high), rel=1e-12, abs=1e-300)


def test_a_one_repeat_summary_does_not_import_scipy_stats():
    """A run of one repeat has no time interval to bootstrap: its summary (rates, bounds,
    ``median_interval`` of one sample) must not pay ``scipy.stats``' import; two samples do."""
    import subprocess
    import sys

    code = ("import sys, numpy as np; from bench.analysis import stats; "
            "stats.rate_intervals(np.array([0, 3]), np.array([4, 9])); stats.rate_upper_bounds(np.array([1]), np.array([5])); "
            "stats.rate_upper_bound(0, 64); one = stats.median_interval([1.0]); same = stats.median_interval([2.0, 2.0]); "
            "before = 'scipy.stats' in sys.modules; two = stats.median_interval([1.0, 2.0, 4.0]); "
            "print(before, 'scipy.stats' in sys.modules, np.isnan(one).all(), same, two[0] <= 2.0 <= two[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True", "(2.0,", "2.0)", "True"], out
