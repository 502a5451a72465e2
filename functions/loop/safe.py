"""The randomised trial's read, exact at every sample size and valid however often it is
read: a safe test (e-value) for each risk ratio r of a two-arm trial, inverted into a 95 %
confidence sequence; a one-sided test for harm (the guardrail); the sessions each needs;
pure.

The null H0(r) says the treatment arm's share of the pattern is r times the control arm's,
p1 = r p0, whatever p0 is. For an alternative (p1~, p0~), the e-variable is the
alternative's likelihood over that of the member of H0(r) closest to it in
Kullback-Leibler divergence (its reverse information projection, RIPr), taken at the arms'
joined sizes n1 and n0: the control share c that solves r c^2 - B c + m = 0, with s =
n1 / (n1 + n0), m = s p1~ + (1 - s) p0~ and B = (1 + r) m + s r (1 - p1~) + (1 - s)(1 -
p0~). At r = 1 this is the safe test for two-by-two tables of Turner, Ly and Grünwald
("Generic E-variables for exact sequential k-sample tests that allow for optional
stopping", Journal of Statistical Planning and Inference 2024) for a block of n1 treated and
n0 control sessions; for any r it is their construction with the risk-ratio null in place
of equality, as Turner and Grünwald invert safe tests into confidence sequences ("Exact
anytime-valid confidence intervals for contingency tables and beyond", Statistics &
Probability Letters 2023).

Why it holds when sessions go missing: given the arms' joined sizes, the expectation of
the e-variable under a member c' of H0(r) is f1(c')^n1 f0(c')^n0, each f linear in c' and
1 at c' = c; its logarithm is concave with zero slope at c (that is what the RIPr solves),
so it is at most 1. Losses unrelated to the outcome change only the sizes, never the
outcomes' law given them, so neither they nor a split away from the declared share can
manufacture a verdict. At a fixed number of sessions this is exact; read after every
session (the RIPr follows the sizes), its validity is shown by the bench's simulation at
joined splits from 30/70 to 70/30 (`python -m benchmarks --only trials`). A loss that
depends on the outcome (sessions that would show the pattern crash before their telemetry)
biases this and every other method; the read flags a sample-ratio mismatch instead.

The mixture depends on the four counts alone, never on the order sessions ended in, so it
is read from aggregation queries. The chance that the e-value of the true r ever reaches
1/alpha = 20 is at most 5 %: the confidence sequence {r : E(r) < 20} covers the truth at all
times at once with probability at least 95 %, with no correction to zero cells.

The two-sided mixture's prior (`HELP_AND_HARM`): the alternative's ratio to r at 0.30 and
0.61 (a quarter and a half of the weight: a trial tests a suggestion the team accepted as
likely to help) and at 1.65 and 3.3 (an eighth each); the guardrail's (`HARM`) bets on
harm alone, at 1.22, 1.65 and 3.3 times r, so that a harm is found about as fast as the
mirror improvement and a mild one (1.2) is found at all. Each at twenty control shares
weighted as a Beta(2, 3) density (a pattern shown by a minority of sessions)."""

from __future__ import annotations

import math
from dataclasses import dataclass

ALPHA = 0.05
LOG_THRESHOLD = math.log(1 / ALPHA)
"""An e-value at or above 1/alpha rejects."""
Shifts = tuple[tuple[float, float], ...]
"""(ln(alternative ratio / r), weight): the ratios a mixture bets on, around each r."""
HELP_AND_HARM: Shifts = ((-1.2, 2.0), (-0.5, 4.0), (0.5, 1.0), (1.2, 1.0))
HARM: Shifts = ((0.2, 1.0), (0.5, 2.0), (1.2, 1.0))
EITHER_WAY: Shifts = ((-1.2, 1.0), (-0.5, 1.0), (0.5, 1.0), (1.2, 1.0))
"""A difference either way, weighted alike: the sample-ratio mismatch test's bets."""
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

    @property
    def share(self) -> float:
        """The treatment arm's share of the sessions: the block the e-variable is for."""
        return self.treated_n / max(self.treated_n + self.control_n, 1)


@dataclass(frozen=True)
class Alternative:
    treated_share: float
    control_share: float
    weight: float


def alternatives(ratio: float, shifts: Shifts = HELP_AND_HARM) -> list[Alternative]:
    """The mixture's alternatives for testing H0(ratio), weights summing to 1: each
    alternative ratio at control shares spread over (0, min(1, 1 / that ratio)), where
    both arms' shares are below 1."""
    total = sum(weight for _, weight in shifts) * sum(p for _, p in CONTROL_SHARES)
    found = []
    for shift, weight in shifts:
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
    """ln of the likelihood of `count` of `sessions` at `chance`, in order (no term for
    an outcome none showed, so a chance at the edge of its range is allowed)."""
    shown = count * math.log(chance) if count else 0.0
    return shown + ((sessions - count) * math.log1p(-chance) if sessions > count else 0.0)


def point_log_e_value(table: Table, alternative: Alternative, ratio: float) -> float:
    """ln of one alternative's e-value against H0(ratio) at the table's arm sizes: the
    likelihood of the table under the alternative over that under its RIPr."""
    c = ripr(alternative.treated_share, alternative.control_share, ratio, table.share)
    return (
        _bernoulli_log(table.treated, table.treated_n, alternative.treated_share)
        + _bernoulli_log(table.control, table.control_n, alternative.control_share)
        - _bernoulli_log(table.treated, table.treated_n, ratio * c)
        - _bernoulli_log(table.control, table.control_n, c)
    )


def log_e_value(table: Table, ratio: float, shifts: Shifts = HELP_AND_HARM) -> float:
    """ln of the mixture e-value against H0(ratio) after the sessions in `table`."""
    terms = [
        math.log(each.weight) + point_log_e_value(table, each, ratio)
        for each in alternatives(ratio, shifts)
    ]
    top = max(terms)
    return top + math.log(math.fsum(math.exp(term - top) for term in terms))


@dataclass(frozen=True)
class Interval:
    ratio: float | None
    """Treatment over control share; None when the control arm shows no pattern."""
    low: float | None
    high: float | None
    """None: no upper end (or, with `empty`, no interval)."""
    empty: bool = False
    """Every ratio searched is rejected: the data fit no H0(r), so there is no interval
    and no verdict (both ends None)."""


def _accepted(table: Table, log_ratio: float) -> bool:
    return log_e_value(table, math.exp(log_ratio)) < LOG_THRESHOLD


def _bisect(table: Table, inside: float, outside: float) -> float:
    """The end of the sequence between an accepted and a rejected log ratio."""
    while abs(inside - outside) >= TOLERANCE:
        middle = (inside + outside) / 2
        if _accepted(table, middle):
            inside = middle
        else:
            outside = middle
    return inside


def _log_ratios() -> list[float]:
    lowest, highest = math.log(LOWEST), math.log(HIGHEST)
    return [lowest + step * SCAN_STEP for step in range(int((highest - lowest) / SCAN_STEP) + 1)]


def _beyond_the_search(table: Table, ratio: float | None) -> Interval:
    """No ratio searched is accepted: when the estimate lies past an end of the search, the
    sequence lies there too (every ratio up to LOWEST, or from HIGHEST on); otherwise no
    ratio fits the data, and that is said, never served as a point."""
    if ratio is not None and ratio < LOWEST:
        return Interval(ratio, 0.0, LOWEST)
    if (ratio is None and table.treated > 0) or (ratio is not None and ratio > HIGHEST):
        return Interval(ratio, HIGHEST, None)
    return Interval(ratio, None, None, empty=True)


def confidence_sequence(table: Table) -> Interval:
    """The 95 % confidence sequence for the risk ratio: the ratios whose e-value is below
    20, from the lowest to the highest (a scan on the log scale, the point estimate
    included, then bisection at each end)."""
    ratio = None
    if table.control > 0 and table.treated_n > 0:
        ratio = (table.treated / table.treated_n) / (table.control / table.control_n)
    points = _log_ratios()
    if ratio is not None and ratio > 0:
        points = sorted({*points, min(max(math.log(ratio), points[0]), points[-1])})
    accepted = [index for index, point in enumerate(points) if _accepted(table, point)]
    if not accepted:
        return _beyond_the_search(table, ratio)
    first, last = accepted[0], accepted[-1]
    low = 0.0 if first == 0 else math.exp(_bisect(table, points[first], points[first - 1]))
    high = (
        None
        if last == len(points) - 1
        else math.exp(_bisect(table, points[last], points[last + 1]))
    )
    return Interval(ratio, low, high)


def harm_found(table: Table, threshold: float = LOG_THRESHOLD) -> bool:
    """The guardrail's one-sided test: every ratio of at most 1 is rejected by the e-value
    that bets on harm alone (`HARM`), so that the chance of ever finding harm where the
    treatment does none is at most exp(-threshold)."""
    if table.treated * table.control_n <= table.control * table.treated_n:
        return False
    return all(
        log_e_value(table, math.exp(point), HARM) >= threshold
        for point in [*(p for p in _log_ratios() if p < 0), 0.0]
    )


MOST_NEEDED = 1_000_000
"""Beyond this many sessions no number is served: the ratio is out of the method's reach."""
ITERATIONS = 30


def _increments(
    alternative: Alternative, p0: float, ratio: float, share: float
) -> tuple[float, float]:
    """Mean and variance of one session's addition to ln of the alternative's e-value
    against a ratio of 1, when the truth is `ratio` at control share `p0` and a session is
    treated with chance `share`."""
    c = ripr(alternative.treated_share, alternative.control_share, 1.0, share)
    moments = [0.0, 0.0]
    for arm_share, chance, bet in (
        (share, ratio * p0, alternative.treated_share),
        (1 - share, p0, alternative.control_share),
    ):
        shown, not_shown = math.log(bet / c), math.log((1 - bet) / (1 - c))
        moments[0] += arm_share * (chance * shown + (1 - chance) * not_shown)
        moments[1] += arm_share * (chance * shown**2 + (1 - chance) * not_shown**2)
    return moments[0], moments[1] - moments[0] ** 2


FAR_TAIL = 30.0
"""Past this many standard deviations the normal tail is taken from its asymptote."""


def _log_lower_tail(y: float) -> float:
    """ln P(Z <= -y) for a standard normal Z, without underflow far in the tail."""
    if y < FAR_TAIL:
        return math.log(0.5 * math.erfc(y / math.sqrt(2)))
    return -y * y / 2 - math.log(y) - 0.5 * math.log(2 * math.pi)


def _crossed(sessions: int, drift: float, variance: float, level: float) -> float:
    """The chance that a random walk with this drift and variance a session reaches
    `level` by `sessions` (Brownian motion's first passage: the walk read every session)."""
    spread = math.sqrt(sessions * variance)
    ahead = sessions * drift
    direct = math.exp(_log_lower_tail((level - ahead) / spread))
    reflected = 2 * drift * level / variance + _log_lower_tail((ahead + level) / spread)
    return direct + math.exp(min(reflected, 0.0))


OVERSHOOT = 0.5826
"""Siegmund's constant (ζ(1/2)/√(2π) negated): a walk read once a session, not
continuously, reaches a level as Brownian motion reaches that level raised by this many
standard deviations of one step ("Corrected diffusion approximations in certain random
walk problems", Advances in Applied Probability 1979)."""


def _first_crossing(drift: float, variance: float, level: float, power: float) -> int | None:
    """The fewest sessions by which the walk, read once a session, has reached `level`
    with chance `power`."""
    level += OVERSHOOT * math.sqrt(variance)
    if level <= 0:
        return 1
    if _crossed(MOST_NEEDED, drift, variance, level) < power:
        return None
    low, high = 1, MOST_NEEDED
    while low < high:
        middle = (low + high) // 2
        if _crossed(middle, drift, variance, level) >= power:
            high = middle
        else:
            low = middle + 1
    return low


def sessions_needed(
    p0: float, ratio: float, share: float, shifts: Shifts = HELP_AND_HARM, power: float = 0.8
) -> int | None:
    """Sessions over both arms by which the mixture's e-value against a ratio of 1 has
    reached 20 with chance `power`, when the truth is `ratio` at control share `p0` and
    `share` of sessions are treated; derived from the method, not simulated. Each
    alternative's log e-value is a random walk (D and V the mean and variance of one
    session's addition); the walk of the alternative that leads at n must reach ln 20 less
    the log of the weight the mixture holds at n around it (its own and its neighbours',
    each discounted by how far it falls behind), a fixed point found by iteration. None
    when no alternative gains on the null (a ratio too close to 1 for the mixture's bets)
    or beyond MOST_NEEDED sessions."""
    if not 0 < ratio * p0 < 1:
        return None
    walks = [
        (each.weight, *_increments(each, p0, ratio, share)) for each in alternatives(1.0, shifts)
    ]
    gaining = [walk for walk in walks if walk[1] > 0]
    if not gaining:
        return None
    sessions = 1
    for _ in range(ITERATIONS):
        _, drift, variance = max(gaining, key=lambda walk: math.log(walk[0]) + sessions * walk[1])
        held = [math.log(weight) + sessions * (gain - drift) for weight, gain, _ in walks]
        top = max(held)
        pooled = top + math.log(math.fsum(math.exp(each - top) for each in held))
        found = _first_crossing(drift, variance, LOG_THRESHOLD - pooled, power)
        if found is None or found == sessions:
            return found
        sessions = found
    return sessions
