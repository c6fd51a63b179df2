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
