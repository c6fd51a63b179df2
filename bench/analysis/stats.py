"""Confidence bounds and intervals: Clopper-Pearson bounds of outcome rates, bootstrap intervals of
median times and of ratios of medians, all from SciPy.

A configuration's ``false_accept`` count of ``k`` in ``n`` verified cases says little on its
own when ``k`` is 0: the one-sided upper bound at confidence ``c`` is ``1 - (1 - c)^(1/n)``
(0 in 64 cases: 4.6 %). These helpers compute the exact (Clopper-Pearson) bounds and the
number of event-free cases needed to show a rate.

The Beta quantiles of the bounds come from ``scipy.special.betaincinv`` (the inverse of the
regularized incomplete beta function, which is what ``scipy.stats.beta.ppf`` computes; the
same numbers, ``tests/test_stats.py``): importing ``scipy.stats`` takes 0.6 s, a tenth of a
small ``contactbench run``, whose summary needs no bootstrap when the cells ran one repeat.
The bootstraps import ``scipy.stats`` when they have two samples or more to resample.
"""

from __future__ import annotations

import math

from solvers.errors import ProblemError


def check_confidence(confidence: float) -> float:
    """``confidence`` as a float in (0, 1), else ``ProblemError`` naming it."""
    try:
        value = float(confidence)
    except (TypeError, ValueError):
        raise ProblemError(f"confidence: expected a number in (0, 1), got {confidence!r}") from None
    if not 0 < value < 1:
        raise ProblemError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    return value


def _check(k: int, n: int, confidence: float) -> None:
    if not (isinstance(n, int) and isinstance(k, int) and n >= 1 and 0 <= k <= n):
        raise ProblemError(f"k, n: expected integers with 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}")
    check_confidence(confidence)


def rate_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) interval of a rate with ``k`` events in ``n``
    trials, at ``confidence`` (``scipy.stats.binomtest(...).proportion_ci``)."""
    from scipy.stats import binomtest

    _check(k, n, confidence)
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def rate_upper_bound(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided exact upper bound of a rate with ``k`` events in ``n`` trials: the
    ``confidence`` quantile of Beta(k + 1, n - k) (1 when ``k == n``); the safety figure for
    ``false_accept``."""
    from scipy.special import betaincinv

    _check(k, n, confidence)
    return 1.0 if k == n else float(betaincinv(k + 1, n - k, confidence))


def cases_needed(rate: float, confidence: float = 0.95) -> int:
    """The fewest event-free trials whose one-sided upper bound at ``confidence`` is at most
    ``rate`` (0 < rate < 1): ``ceil(log(1 - confidence) / log(1 - rate))``, e.g. 2,995 for
    1e-3 at 95 %."""
    if not 0 < rate < 1:
        raise ProblemError(f"rate: expected a number in (0, 1), got {rate!r}")
    check_confidence(confidence)
    n = math.ceil(math.log(1 - confidence) / math.log1p(-rate))
    while n > 1 and rate_upper_bound(0, n - 1, confidence) <= rate:  # guard the rounding of the closed form
        n -= 1
    while rate_upper_bound(0, n, confidence) > rate:
        n += 1
    return n


def _check_arrays(k, n, confidence: float):
    import numpy as np

    k, n = np.asarray(k), np.asarray(n)
    if k.shape != n.shape or not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(n.dtype, np.integer)) \
            or (n < 1).any() or (k < 0).any() or (k > n).any():
        raise ProblemError(f"k, n: expected integer arrays of one shape with 0 <= k <= n and n >= 1, got "
                           f"k={k!r}, n={n!r}")
    check_confidence(confidence)
    return k, n


def rate_intervals(k, n, confidence: float = 0.95):
    """``(low, high)`` arrays: the two-sided Clopper-Pearson interval of each rate ``k / n``
    (integer arrays of one shape), from Beta quantiles (``scipy.special.betaincinv``): the same
    numbers as ``rate_interval``, for whole tables at once."""
    import numpy as np
    from scipy.special import betaincinv

    k, n = _check_arrays(k, n, confidence)
    alpha = 1 - confidence
    with np.errstate(invalid="ignore"):
        low = np.where(k == 0, 0.0, betaincinv(np.maximum(k, 1), n - k + 1, alpha / 2))
        high = np.where(k == n, 1.0, betaincinv(k + 1, np.maximum(n - k, 1), 1 - alpha / 2))
    return low.astype(float), high.astype(float)


def rate_upper_bounds(k, n, confidence: float = 0.95):
    """One-sided Clopper-Pearson upper bounds of the rates ``k / n`` (integer arrays): the
    array form of ``rate_upper_bound``."""
    import numpy as np
    from scipy.special import betaincinv

    k, n = _check_arrays(k, n, confidence)
    with np.errstate(invalid="ignore"):
        return np.where(k == n, 1.0, betaincinv(k + 1, np.maximum(n - k, 1), confidence)).astype(float)


def cases_to_show(k: int, n: int, rate: float, confidence: float = 0.95) -> int | None:
    """How many cases a rerun needs for the one-sided upper bound to reach ``rate``, if the
    rate stays at the observed ``k / n``: ``cases_needed(rate)`` when ``k`` is 0; None when
    ``k / n >= rate`` (no number of cases can show it). At least ``n``."""
    _check(k, n, confidence)
    if not 0 < rate < 1:
        raise ProblemError(f"rate: expected a number in (0, 1), got {rate!r}")
    if k == 0:
        return cases_needed(rate, confidence)
    observed = k / n
    if observed >= rate:
        return None

    def enough(m: int) -> bool:
        return rate_upper_bound(min(m, max(k, math.ceil(observed * m))), m, confidence) <= rate

    high = n
    while not enough(high):
        high *= 2
    low = max(n, high // 2)
    while low < high:  # the smallest sufficient count between the last two doublings
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid + 1
    return high


#: resamples of each bootstrap; seeded, so a report is the same every time it is written.
BOOTSTRAP_RESAMPLES = 2000


def rate_increase_p(k_new: int, n_new: int, k_base: int, n_base: int) -> float:
    """One-sided p-value that the rate behind ``k_new`` of ``n_new`` is higher than the rate
    behind ``k_base`` of ``n_base`` (Fisher's exact test on the 2x2 table, conditional on the
    margins: exact for rare events, where intervals that must separate miss 0 -> 6 of 16).
    1.0 where either sample is empty."""
    if min(n_new, n_base) <= 0:
        return 1.0
    from scipy.stats import fisher_exact

    table = [[int(k_new), int(n_new - k_new)], [int(k_base), int(n_base - k_base)]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def median_interval(samples, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval (``scipy.stats.bootstrap``, ``BOOTSTRAP_RESAMPLES``
    resamples, seeded) of the median of ``samples`` (1-D, e.g. one time per timed repeat, any
    unit: the interval has the unit of the samples). ``(nan, nan)`` with fewer than 2 finite
    samples: one repeat says nothing about the spread."""
    import numpy as np

    check_confidence(confidence)
    x = np.asarray(samples, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    from scipy.stats import bootstrap

    res = bootstrap((x,), np.median, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                    method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def ratio_interval(numerator, denominator, confidence: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the ratio of the medians of two independent samples (e.g. the
    repeat times of two configurations: > 1 means the numerator is slower) and its
    percentile-bootstrap interval (``scipy.stats.bootstrap``, the two samples resampled
    independently, seeded). NaN bounds when either sample has fewer than 2 finite values."""
    import numpy as np

    check_confidence(confidence)
    a = np.asarray(numerator, dtype=float).ravel()
    b = np.asarray(denominator, dtype=float).ravel()
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return float("nan"), float("nan"), float("nan")
    ratio = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2:
        return ratio, float("nan"), float("nan")

    from scipy.stats import bootstrap

    def statistic(x, y, axis=-1):
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    res = bootstrap((a, b), statistic, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                    method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return ratio, min(low, ratio), max(high, ratio)
