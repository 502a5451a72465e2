"""The selection report's mean cost per target, on simulated sessions with known truth:
how often the 95% interval `functions.outcomes.means.mean_interval` serves (normal, on
the sample standard deviation, from the sums an aggregation query returns) covers the
true mean, when session costs are as skewed as agents' are.

Distributions: log-normal costs with a median of $0.50 and a log-scale spread of 1.0
(the middle half of sessions between $0.25 and $0.98) and of 1.5 ($0.18 to $1.37, a
heavier tail); and a two-point mixture, nine sessions in ten at $0.20 and one in ten a
runaway at $5.00. At 5, 10, 30 and 100 sessions, `REPLICATIONS` seeded replications
each. Beside the served interval, for comparison only, Student's t interval on the same
sums (the same centre and spread, a wider multiplier)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

REPLICATIONS = 2_000
SIZES = (5, 10, 30, 100)
SEED = 20261245
GOAL = 0.95
POOR_BELOW = 0.90
"""Coverage under which the table says the interval is poor at that size."""
T975 = {5: 2.7764, 10: 2.2622, 30: 2.0452, 100: 1.9842}
"""Student's t 0.975 quantile at n - 1 degrees of freedom."""
MEDIAN_USD = 0.5
LOW_USD, HIGH_USD, HIGH_SHARE = 0.2, 5.0, 0.1

Draw = Callable[[np.random.Generator, tuple[int, int]], Any]


def _lognormal(sigma: float) -> tuple[str, float, Draw]:
    mu = math.log(MEDIAN_USD)
    return (
        f"log-normal, median ${MEDIAN_USD:.2f}, sigma {sigma:g}",
        math.exp(mu + sigma * sigma / 2),
        lambda rng, shape: rng.lognormal(mu, sigma, shape),
    )


def _two_point() -> tuple[str, float, Draw]:
    return (
        f"two-point, {1 - HIGH_SHARE:.0%} ${LOW_USD:.2f}, {HIGH_SHARE:.0%} ${HIGH_USD:.2f}",
        (1 - HIGH_SHARE) * LOW_USD + HIGH_SHARE * HIGH_USD,
        lambda rng, shape: np.where(rng.random(shape) < HIGH_SHARE, HIGH_USD, LOW_USD),
    )


def _coverage(draws: Any, truth: float, n: int) -> dict[str, Any]:
    from functions.outcomes.means import mean_interval

    covered = below = above = flat = covered_t = 0
    widths = []
    for row in draws:
        total, total_sq = float(row.sum()), float((row * row).sum())
        served = mean_interval(n, total, total_sq)
        if served.low is None or served.high is None or served.mean is None:
            raise RuntimeError(f"no interval served at {n} sessions")
        covered += served.low <= truth <= served.high
        below += served.high < truth
        above += served.low > truth
        flat += served.high - served.low < 1e-9 * truth
        widths.append((served.high - served.low) / truth)
        half_t = (served.high - served.mean) / 1.959963984540054 * T975[n]
        covered_t += served.mean - half_t <= truth <= served.mean + half_t
    replications = len(draws)
    return {
        "sessions": n,
        "coverage": round(covered / replications, 4),
        "missed_below": round(below / replications, 4),
        "missed_above": round(above / replications, 4),
        "zero_width": round(flat / replications, 4),
        "median_width_over_mean": round(float(np.median(widths)), 3),
        "coverage_t": round(covered_t / replications, 4),
        "poor": covered / replications < POOR_BELOW,
    }


def cost_intervals() -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    rows = []
    for name, truth, draw in (_lognormal(1.0), _lognormal(1.5), _two_point()):
        sizes = [_coverage(draw(rng, (REPLICATIONS, n)), truth, n) for n in SIZES]
        rows.append({"distribution": name, "true_mean_usd": round(truth, 4), "sizes": sizes})
        shown = ", ".join(f"n={row['sessions']} {row['coverage']:.1%}" for row in sizes)
        print(f"  {name}: {shown}", flush=True)
    return {
        "replications": REPLICATIONS,
        "goal": GOAL,
        "poor_below": POOR_BELOW,
        "distributions": rows,
    }
