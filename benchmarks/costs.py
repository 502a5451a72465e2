"""The selection report's mean cost per target, on simulated sessions with known truth:
how often the 95% interval `functions.loop.means.mean_interval` serves (Student's t,
Hall's skewness-corrected t and Cox's log-normal interval joined, from the sums an
aggregation query returns, from 30 sessions) covers the true mean, when session costs are
as skewed as agents' are.

Distributions: log-normal costs with a median of $0.50 and a log-scale spread of 1.0 and
of 1.5; two-point mixtures, nine sessions in ten at $0.20 and one in ten a runaway at
$4.00 (20 times) or $5.00 (25 times); a log-normal mixture, nine in ten around $0.20 and
one in ten around $4.00; a gamma with shape 2 (mean $1.00); and log-normal costs with one
session in ten a true $0. At 30, 60, 100 and 300 sessions the table's cells, and at every
size from 30 to 300 the worst coverage (`REPLICATIONS` seeded replications each). Beside
the served interval, for comparison only, the normal interval on the same sums, which the
report served first."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

REPLICATIONS = 2_000
SIZES = (30, 60, 100, 300)
EVERY = range(30, 301)
"""Every size the worst coverage is taken over: a mixture's coverage saws with n."""
WORST_GOAL = 0.93
SEED = 20261245
GOAL = 0.95
POOR_BELOW = 0.90
"""Coverage under which the table says the interval is poor at that size."""
Z975 = 1.959963984540054
MEDIAN_USD = 0.5
LOW_USD, HIGH_USD, HIGH_SHARE = 0.2, 5.0, 0.1
RUNAWAY_USD = 4.0
ZERO_SHARE = 0.1

Draw = Callable[[np.random.Generator, tuple[int, int]], Any]


def _lognormal(sigma: float) -> tuple[str, float, Draw]:
    mu = math.log(MEDIAN_USD)
    return (
        f"log-normal, median ${MEDIAN_USD:.2f}, sigma {sigma:g}",
        math.exp(mu + sigma * sigma / 2),
        lambda rng, shape: rng.lognormal(mu, sigma, shape),
    )


def _two_point(high: float) -> tuple[str, float, Draw]:
    return (
        f"two-point, {1 - HIGH_SHARE:.0%} ${LOW_USD:.2f}, {HIGH_SHARE:.0%} ${high:.2f}",
        (1 - HIGH_SHARE) * LOW_USD + HIGH_SHARE * high,
        lambda rng, shape: np.where(rng.random(shape) < HIGH_SHARE, high, LOW_USD),
    )


def _lognormal_mixture() -> tuple[str, float, Draw]:
    sigma = 0.5
    spread = math.exp(sigma * sigma / 2)

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> Any:
        runaway = rng.random(shape) < HIGH_SHARE
        median = np.where(runaway, RUNAWAY_USD, LOW_USD)
        return median * rng.lognormal(0.0, sigma, shape)

    return (
        f"log-normal mixture, {1 - HIGH_SHARE:.0%} around ${LOW_USD:.2f}, "
        f"{HIGH_SHARE:.0%} around ${RUNAWAY_USD:.2f}",
        ((1 - HIGH_SHARE) * LOW_USD + HIGH_SHARE * RUNAWAY_USD) * spread,
        draw,
    )


def _with_zeros() -> tuple[str, float, Draw]:
    mu = math.log(MEDIAN_USD)

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> Any:
        return np.where(rng.random(shape) < ZERO_SHARE, 0.0, rng.lognormal(mu, 1.0, shape))

    return (
        f"log-normal, median ${MEDIAN_USD:.2f}, sigma 1, {ZERO_SHARE:.0%} at $0",
        (1 - ZERO_SHARE) * math.exp(mu + 0.5),
        draw,
    )


def _gamma() -> tuple[str, float, Draw]:
    return ("gamma, shape 2, mean $1.00", 1.0, lambda rng, shape: rng.gamma(2.0, 0.5, shape))


def _sums(row: Any) -> Any:
    from functions.loop.means import Sums

    positive = row[row > 0]
    logs = np.log(positive)
    return Sums(
        len(row),
        float(row.sum()),
        float((row * row).sum()),
        len(positive),
        float(logs.sum()),
        float((logs * logs).sum()),
        float((row**3).sum()),
    )


def _coverage(draws: Any, truth: float, n: int) -> dict[str, Any]:
    from functions.loop.means import mean_interval

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


def _worst(rng: np.random.Generator, truth: float, draw: Draw) -> dict[str, Any]:
    """The lowest coverage over every size in EVERY, where, and how many sizes fall under
    WORST_GOAL."""
    coverage = {n: _coverage(draw(rng, (REPLICATIONS, n)), truth, n)["coverage"] for n in EVERY}
    at = min(coverage, key=lambda n: coverage[n])
    return {
        "coverage": coverage[at],
        "sessions": at,
        "sizes_under_goal": sum(value < WORST_GOAL for value in coverage.values()),
    }


def cost_intervals() -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    rows = []
    for name, truth, draw in (
        _lognormal(1.0),
        _lognormal(1.5),
        _two_point(HIGH_USD),
        _two_point(RUNAWAY_USD),
        _lognormal_mixture(),
        _gamma(),
        _with_zeros(),
    ):
        sizes = [_coverage(draw(rng, (REPLICATIONS, n)), truth, n) for n in SIZES]
        worst = _worst(rng, truth, draw)
        rows.append(
            {"distribution": name, "true_mean_usd": round(truth, 4), "sizes": sizes, "worst": worst}
        )
        shown = ", ".join(f"n={row['sessions']} {row['coverage']:.1%}" for row in sizes)
        print(
            f"  {name}: {shown}; worst {worst['coverage']:.1%} at {worst['sessions']}", flush=True
        )
    return {
        "replications": REPLICATIONS,
        "goal": GOAL,
        "worst_goal": WORST_GOAL,
        "every": [EVERY.start, EVERY.stop - 1],
        "poor_below": POOR_BELOW,
        "distributions": rows,
    }
