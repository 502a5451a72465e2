"""The selection report's mean cost per target, on simulated sessions with known truth:
how often the 95% interval `functions.outcomes.means.mean_interval` serves (Student's t
joined with Cox's log-normal interval, from the sums an aggregation query returns, from
30 sessions) covers the true mean, when session costs are as skewed as agents' are.

Distributions: log-normal costs with a median of $0.50 and a log-scale spread of 1.0
(the middle half of sessions between $0.25 and $0.98) and of 1.5 ($0.18 to $1.37, a
heavier tail); a two-point mixture, nine sessions in ten at $0.20 and one in ten a
runaway at $5.00; and a gamma with shape 2 (mean $1.00). At 30, 60, 100 and 300 sessions,
`REPLICATIONS` seeded replications each. Beside the served interval, for comparison only,
the normal interval on the same sums, which the report served before."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

REPLICATIONS = 2_000
SIZES = (30, 60, 100, 300)
SEED = 20261245
GOAL = 0.95
POOR_BELOW = 0.90
"""Coverage under which the table says the interval is poor at that size."""
Z975 = 1.959963984540054
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


def _gamma() -> tuple[str, float, Draw]:
    return ("gamma, shape 2, mean $1.00", 1.0, lambda rng, shape: rng.gamma(2.0, 0.5, shape))


def _sums(row: Any) -> Any:
    from functions.outcomes.means import Sums

    positive = row[row > 0]
    logs = np.log(positive)
    return Sums(
        len(row),
        float(row.sum()),
        float((row * row).sum()),
        len(positive),
        float(logs.sum()),
        float((logs * logs).sum()),
    )


def _coverage(draws: Any, truth: float, n: int) -> dict[str, Any]:
    from functions.outcomes.means import mean_interval

    covered = below = above = flat = covered_normal = 0
    widths = []
    for row in draws:
        served = mean_interval(_sums(row))
        if served.low is None or served.high is None or served.mean is None:
            raise RuntimeError(f"no interval served at {n} sessions")
        covered += served.low <= truth <= served.high
        below += served.high < truth
        above += served.low > truth
        flat += served.high - served.low < 1e-9 * truth
        widths.append((served.high - served.low) / truth)
        half = Z975 * float(row.std(ddof=1)) / math.sqrt(n)
        covered_normal += served.mean - half <= truth <= served.mean + half
    replications = len(draws)
    return {
        "sessions": n,
        "coverage": round(covered / replications, 4),
        "missed_below": round(below / replications, 4),
        "missed_above": round(above / replications, 4),
        "zero_width": round(flat / replications, 4),
        "median_width_over_mean": round(float(np.median(widths)), 3),
        "coverage_normal": round(covered_normal / replications, 4),
        "poor": covered / replications < POOR_BELOW,
    }


def cost_intervals() -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    rows = []
    for name, truth, draw in (_lognormal(1.0), _lognormal(1.5), _two_point(), _gamma()):
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
