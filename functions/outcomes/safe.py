"""The randomised trial's read, exact at every sample size and valid however often it is
read: a safe test (e-value) for each risk ratio r of a two-arm trial, inverted into a 95 %
confidence sequence, pure.

Each session is one draw: its arm, treatment with the trial's known share s, and whether
it showed the pattern. The null H0(r) says the treatment arm's share of the pattern is r
times the control arm's, p1 = r p0, whatever p0 is. For an alternative (p1~, p0~), the
e-variable of one session is Q(arm, y) / P(arm, y), with Q the alternative and P the
member of H0(r) closest to it in Kullback-Leibler divergence (its reverse information
projection, RIPr): the control share c that solves r c^2 - B c + m = 0, with
m = s p1~ + (1 - s) p0~ and B = (1 + r) m + s r (1 - p1~) + (1 - s)(1 - p0~). Its
expectation is exactly 1 under every member of H0(r) (the expectation is linear in p0 and
its slope is zero at the RIPr), so the product over sessions is a test martingale, and so
is any fixed mixture of such products over alternatives. At r = 1 this is the safe test
for two-by-two tables of Turner, Ly and Grünwald ("Generic E-variables for exact
sequential k-sample tests that allow for optional stopping", Journal of Statistical
Planning and Inference 2024), whose RIPr is the pooled
share m; for any r it is their construction with the risk-ratio null in place of equality,
as Turner and Grünwald invert safe tests into confidence sequences ("Exact anytime-valid
confidence intervals for contingency tables and beyond", Statistics & Probability Letters
2023).

The mixture depends on the four counts alone, never on the order sessions ended in, so it
is read from aggregation queries. By Ville's inequality the chance that the e-value of the
true r ever reaches 1/alpha = 20 is at most 5 %: the confidence sequence
{r : E(r) < 20}, read after every session, covers the truth at all times at once with
probability at least 95 %, with no approximation and no correction to zero cells.

The mixture's prior (`ALTERNATIVES`, `CONTROL_SHARES`): the alternative's ratio to r at
0.30 and 0.61 (strong and moderate improvements, a quarter and a half of the weight: a
trial tests a suggestion the team accepted as likely to help) and at their inverses 3.3
and 1.65 (harms, an eighth each), each at twenty control shares weighted as a Beta(2, 3) density (a
pattern shown by a minority of sessions). `python -m benchmarks --only trials` simulates
its false verdicts and its power."""

from __future__ import annotations

import math
from dataclasses import dataclass

ALPHA = 0.05
LOG_THRESHOLD = math.log(1 / ALPHA)
"""An e-value at or above 1/alpha rejects."""
ALTERNATIVES = ((-1.2, 2.0), (-0.5, 4.0), (0.5, 1.0), (1.2, 1.0))
"""(ln(alternative ratio / r), weight): the ratios the mixture bets on, around each r."""
GRID = 20
CONTROL_SHARES = tuple(
    ((index + 0.5) / GRID, ((index + 0.5) / GRID) * (1 - (index + 0.5) / GRID) ** 2)
    for index in range(GRID)
)
"""(control share of the alternative as a fraction of the highest it can be, weight): a
Beta(2, 3) density at twenty midpoints."""
LOWEST, HIGHEST = 1e-3, 1e3
"""The ratios searched: an interval reaching either end is open there (0, or no upper end)."""
TOLERANCE = 1e-5
"""How close, on the log scale, bisection brings each end."""
SCAN_STEP = 0.25
"""The step, on the log scale, of the scan before the ends are found by bisection."""


@dataclass(frozen=True)
class Table:
    """A trial's two-by-two table: sessions showing the pattern and sessions, per arm."""

    treated: int
    treated_n: int
    control: int
    control_n: int


@dataclass(frozen=True)
class Alternative:
    treated_share: float
    control_share: float
    weight: float


def alternatives(ratio: float) -> list[Alternative]:
    """The mixture's alternatives for testing H0(ratio), weights summing to 1: each
    alternative ratio at control shares spread over (0, min(1, 1 / that ratio)), where
    both arms' shares are below 1."""
    total = sum(weight for _, weight in ALTERNATIVES) * sum(p for _, p in CONTROL_SHARES)
    found = []
    for shift, weight in ALTERNATIVES:
        alternative = ratio * math.exp(shift)
        scale = min(1.0, 1 / alternative)
        found += [
            Alternative(alternative * scale * u, scale * u, weight * prior / total)
            for u, prior in CONTROL_SHARES
        ]
    return found


def ripr(treated_share: float, control_share: float, ratio: float, share: float) -> float:
    """The control share c of the member of H0(ratio) nearest to the alternative (the
    reverse information projection): the root of r c^2 - B c + m = 0 in (0, min(1, 1/r))."""
    m = share * treated_share + (1 - share) * control_share
    b = (1 + ratio) * m + share * ratio * (1 - treated_share) + (1 - share) * (1 - control_share)
    return 2 * m / (b + math.sqrt(max(b * b - 4 * ratio * m, 0.0)))


def _bernoulli_log(count: int, sessions: int, chance: float) -> float:
    """ln of the likelihood of `count` of `sessions` at `chance`, in order."""
    return count * math.log(chance) + (sessions - count) * math.log1p(-chance)


def point_log_e_value(table: Table, alternative: Alternative, ratio: float, share: float) -> float:
    """ln of one alternative's e-value against H0(ratio): the product over sessions of
    Q(arm, y) / P(arm, y), P the alternative's RIPr (the arms' shares cancel)."""
    c = ripr(alternative.treated_share, alternative.control_share, ratio, share)
    return (
        _bernoulli_log(table.treated, table.treated_n, alternative.treated_share)
        + _bernoulli_log(table.control, table.control_n, alternative.control_share)
        - _bernoulli_log(table.treated, table.treated_n, ratio * c)
        - _bernoulli_log(table.control, table.control_n, c)
    )


def log_e_value(table: Table, ratio: float, share: float) -> float:
    """ln of the mixture e-value against H0(ratio) after the sessions in `table`."""
    terms = [
        math.log(each.weight) + point_log_e_value(table, each, ratio, share)
        for each in alternatives(ratio)
    ]
    top = max(terms)
    return top + math.log(math.fsum(math.exp(term - top) for term in terms))


@dataclass(frozen=True)
class Interval:
    ratio: float | None
    """Treatment over control share; None when the control arm shows no pattern."""
    low: float
    high: float | None
    """None: no upper end."""


def _accepted(table: Table, log_ratio: float, share: float) -> bool:
    return log_e_value(table, math.exp(log_ratio), share) < LOG_THRESHOLD


def _bisect(table: Table, inside: float, outside: float, share: float) -> float:
    """The end of the sequence between an accepted and a rejected log ratio."""
    while abs(inside - outside) >= TOLERANCE:
        middle = (inside + outside) / 2
        if _accepted(table, middle, share):
            inside = middle
        else:
            outside = middle
    return inside


def confidence_sequence(table: Table, share: float) -> Interval:
    """The 95 % confidence sequence for the risk ratio: the ratios whose e-value is below
    20, from the lowest to the highest (a scan on the log scale, the point estimate
    included, then bisection at each end)."""
    ratio = None
    if table.control > 0 and table.treated_n > 0:
        ratio = (table.treated / table.treated_n) / (table.control / table.control_n)
    lowest, highest = math.log(LOWEST), math.log(HIGHEST)
    points = [lowest + step * SCAN_STEP for step in range(int((highest - lowest) / SCAN_STEP) + 1)]
    if ratio is not None and ratio > 0:
        points = sorted({*points, min(max(math.log(ratio), lowest), highest)})
    accepted = [index for index, point in enumerate(points) if _accepted(table, point, share)]
    if not accepted:
        estimate = ratio if ratio is not None else 1.0
        return Interval(ratio, estimate, estimate)
    first, last = accepted[0], accepted[-1]
    low = 0.0 if first == 0 else math.exp(_bisect(table, points[first], points[first - 1], share))
    high = (
        None
        if last == len(points) - 1
        else math.exp(_bisect(table, points[last], points[last + 1], share))
    )
    return Interval(ratio, low, high)


ANYTIME_FACTOR = 1.75
"""sessionsNeeded over a fixed-sample test's sessions for the same power, for ratios of
MODERATE or stronger: what reading after every session costs this method, as the bench's
simulation finds it. Milder ratios, further from the mixture's alternatives, cost more:
the factor grows as ln MODERATE / ln ratio."""
MODERATE = 0.6
Z_TWO_SIDED = 1.959964
Z_POWER = 0.841621
"""Standard normal quantiles of a two-sided 5 % test and of 80 % power."""


def sessions_needed(control: int, control_n: int, ratio: float, share: float) -> int:
    """Sessions over both arms at which this method finds a true risk ratio `ratio` (below
    1) with 80 % power, at the control share seen so far ((k + 1/2) / (n + 1), so 1/2
    before any control session): a factor times the two-proportion test's
    (z_0.975 + z_0.8)^2 (p1 q1 / s + p0 q0 / (1 - s)) / (p1 - p0)^2."""
    p0 = (control + 0.5) / (control_n + 1)
    p1 = p0 * ratio
    fixed = (
        (Z_TWO_SIDED + Z_POWER) ** 2
        * (p1 * (1 - p1) / share + p0 * (1 - p0) / (1 - share))
        / (p1 - p0) ** 2
    )
    factor = ANYTIME_FACTOR * max(1.0, math.log(MODERATE) / math.log(ratio))
    return max(2, math.ceil(factor * fixed))
