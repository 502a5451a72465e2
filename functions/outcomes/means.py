"""A mean and its 95% interval from three sums an aggregation query returns (count, sum,
sum of squares): what a target's joined sessions cost on average, read without reading
one record. The interval is the normal one on the sample standard deviation; its coverage
at the sizes served is measured by the bench's seeded simulation (`benchmarks/costs.py`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054
MIN_SESSIONS = 2
"""Below this, no spread can be estimated: the mean is served without an interval."""


@dataclass(frozen=True)
class Mean:
    sessions: int
    mean: float | None
    low: float | None
    high: float | None


def mean_interval(sessions: int, total: float, total_sq: float) -> Mean:
    """The mean of `sessions` values whose sum is `total` and sum of squares `total_sq`,
    with its 95% interval (floored at 0, for these are costs)."""
    if sessions == 0:
        return Mean(0, None, None, None)
    mean = total / sessions
    if sessions < MIN_SESSIONS:
        return Mean(sessions, mean, None, None)
    variance = max(0.0, (total_sq - sessions * mean * mean) / (sessions - 1))
    half = Z95 * math.sqrt(variance / sessions)
    return Mean(sessions, mean, max(0.0, mean - half), mean + half)
