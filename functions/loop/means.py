"""A mean and its 95% interval from sums an aggregation query returns: what a target's
joined sessions cost on average, read without reading one record.

Session costs are skewed (a few runaway sessions cost many times the rest), where the
normal interval on the sample spread lies below the true mean far too often. The interval
served is the union of three: Student's t on the values; Hall's skewness-corrected t
(Hall 1992, "On the removal of skewness by transformation", Journal of the Royal
Statistical Society B), which bends the studentised mean by the sample's skewness with a
monotone cubic, from the sum of the cubes; and Cox's interval for a log-normal mean on the
logarithms of the positive values (Land 1972; Zhou and Gao 1997), scaled by their share
when some sessions cost a true 0 (the delta-log-normal mean, Aitchison 1955). Each covers
where the others fail: a runaway mixture (Hall's), a log-normal tail and true zeros
(Cox's). It is served from `MIN_SESSIONS` sessions, below which no interval on sums covers
a rare costly session that the sample has not met. `benchmarks/costs.py` measures its
coverage at every size from 30 to 300 sessions on seeded skewed costs
(docs/performance.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z975 = 1.959963984540054
MIN_SESSIONS = 30
"""From this many sessions the interval is served; below, the mean alone."""


@dataclass(frozen=True)
class Sums:
    """What an aggregation query returns of a field over `sessions` records: its sum and
    sum of squares, and over the records where it is positive their count and the sum and
    sum of squares of its natural logarithm."""

    sessions: int
    total: float
    total_sq: float
    positive: int = 0
    log_total: float = 0.0
    log_total_sq: float = 0.0
    total_cu: float = 0.0
    """The sum of the cubes: the sample's skewness, for Hall's interval."""


@dataclass(frozen=True)
class Mean:
    sessions: int
    mean: float | None
    low: float | None
    high: float | None


def t975(freedom: int) -> float:
    """Student's t 0.975 quantile (Cornish-Fisher expansion about the normal one; within
    1e-4 of the exact value from 20 degrees of freedom)."""
    z, v = Z975, float(freedom)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def _variance(sessions: int, total: float, total_sq: float) -> float:
    mean = total / sessions
    return max(0.0, (total_sq - sessions * mean * mean) / (sessions - 1))


def _skewed(sums: Sums, mean: float, quantile: float) -> tuple[float, float] | None:
    """Hall's interval: T = (mean - mu) / se bent to g(T) = ((1 + aT)^3 - 1) / 3a + b,
    a = skewness / (3 sqrt n) and b = skewness / (6 sqrt n), is nearer normal; the
    interval is every mu whose g(T) lies within the quantile (g is monotone, so its inverse
    is closed-form). None when the values do not vary."""
    n = sums.sessions
    variance = _variance(n, sums.total, sums.total_sq)
    if variance <= 0:
        return None
    third = (sums.total_cu - 3 * mean * sums.total_sq + 2 * n * mean**3) / n
    skewness = third / (variance * math.sqrt(variance))
    a, b = skewness / (3 * math.sqrt(n)), skewness / (6 * math.sqrt(n))
    se = math.sqrt(variance / n)

    def bent_back(level: float) -> float:
        return (math.cbrt(1 + 3 * a * (level - b)) - 1) / a if a else level - b

    return mean - bent_back(quantile) * se, mean - bent_back(-quantile) * se


def mean_interval(sums: Sums) -> Mean:
    """The mean, and from MIN_SESSIONS its 95% interval (floored at 0: these are costs)."""
    n = sums.sessions
    if n == 0:
        return Mean(0, None, None, None)
    mean = sums.total / n
    if n < MIN_SESSIONS:
        return Mean(n, mean, None, None)
    quantile = t975(n - 1)
    half = quantile * math.sqrt(_variance(n, sums.total, sums.total_sq) / n)
    low, high = mean - half, mean + half
    skewed = _skewed(sums, mean, quantile)
    if skewed is not None:
        low, high = min(low, skewed[0]), max(high, skewed[1])
    logged = _log_normal(sums, quantile)
    if logged is not None:
        low, high = min(low, logged[0]), max(high, logged[1])
    return Mean(n, mean, max(0.0, low), high)


def _log_normal(sums: Sums, quantile: float) -> tuple[float, float] | None:
    """Cox's interval for a log-normal mean, over the positive values, scaled by their share
    when some are a true 0 (a delta-log-normal: the share's binomial variance joins on the
    log scale). None with fewer than two positive values."""
    n, positive = sums.sessions, sums.positive
    if positive < 2:  # noqa: PLR2004 - a spread needs two values
        return None
    share = positive / n
    log_variance = _variance(positive, sums.log_total, sums.log_total_sq)
    centre = math.log(share) + sums.log_total / positive + log_variance / 2
    spread = math.sqrt(
        (1 - share) / (n * share) + log_variance / positive + log_variance**2 / (2 * (positive - 1))
    )
    return math.exp(centre - quantile * spread), math.exp(centre + quantile * spread)
