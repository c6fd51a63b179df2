"""Confidence bounds of outcome rates (bench.stats): known values and properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import stats
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
