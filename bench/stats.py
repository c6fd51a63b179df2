"""Confidence bounds for outcome rates (issue 16's foundation): Clopper-Pearson, from scipy.

A configuration's ``false_accept`` count of ``k`` in ``n`` verified cases says little on its
own when ``k`` is 0: the one-sided upper bound at confidence ``c`` is ``1 - (1 - c)^(1/n)``
(0 in 64 cases: 4.6 %). These helpers compute the exact (Clopper-Pearson) bounds with
``scipy.stats`` and the number of event-free cases needed to show a rate.
"""

from __future__ import annotations

import math

from solvers.errors import ProblemError


def _check(k: int, n: int, confidence: float) -> None:
    if not (isinstance(n, int) and isinstance(k, int) and n >= 1 and 0 <= k <= n):
        raise ProblemError(f"k, n: expected integers with 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}")
    if not 0 < confidence < 1:
        raise ProblemError(f"confidence: expected a number in (0, 1), got {confidence!r}")


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
    from scipy.stats import beta

    _check(k, n, confidence)
    return 1.0 if k == n else float(beta.ppf(confidence, k + 1, n - k))


def cases_needed(rate: float, confidence: float = 0.95) -> int:
    """The fewest event-free trials whose one-sided upper bound at ``confidence`` is at most
    ``rate`` (0 < rate < 1): ``ceil(log(1 - confidence) / log(1 - rate))``, e.g. 2,995 for
    1e-3 at 95 %."""
    if not 0 < rate < 1:
        raise ProblemError(f"rate: expected a number in (0, 1), got {rate!r}")
    if not 0 < confidence < 1:
        raise ProblemError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    n = math.ceil(math.log(1 - confidence) / math.log1p(-rate))
    while n > 1 and rate_upper_bound(0, n - 1, confidence) <= rate:  # guard the rounding of the closed form
        n -= 1
    while rate_upper_bound(0, n, confidence) > rate:
        n += 1
    return n
