"""A mean and its 95% interval from sums an aggregation query returns: what a target's
joined sessions cost on average, read without reading one record.

Session costs are skewed (a few runaway sessions cost many times the rest), where the
normal interval on the sample spread lies below the true mean far too often. The interval
served is the union of two: Student's t on the values, and Cox's interval for a
log-normal mean on their logarithms (Land 1972; Zhou and Gao 1997) when every value is
positive; each covers where the other fails (a log-normal tail, a rare costly mixture).
It is served from `MIN_SESSIONS` sessions, below which no interval on sums covers a rare
costly session that the sample has not met. `benchmarks/costs.py` measures its coverage on
seeded skewed costs (docs/performance.md)."""

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
    if sums.positive == n:
        log_variance = _variance(n, sums.log_total, sums.log_total_sq)
        centre = sums.log_total / n + log_variance / 2
        spread = math.sqrt(log_variance / n + log_variance**2 / (2 * (n - 1)))
        low = min(low, math.exp(centre - quantile * spread))
        high = max(high, math.exp(centre + quantile * spread))
    return Mean(n, mean, max(0.0, low), high)
