"""The estimates served over outcome records, pure: a share of sessions with its 95 %
interval, and what another policy's abnormal-end share would have been, estimated from
sessions whose target was drawn with a known probability.

A share is k of n sessions with Wilson's score interval. An off-policy estimate is
self-normalised inverse propensity weighting (SNIPW): a session counts when the policy
evaluated would have chosen the target it was given, weighted by 1 / the probability it
was read and given it (its version's exploration share over the targets it was drawn
among, so that versions with different shares stand for their own sessions), and the
estimate is the weighted share of abnormal ends. Its variance is the delta method's,
sum(w²(y - μ)²) / (sum w)²; the interval is Wilson's at the effective sample size that
variance implies (μ(1 - μ) / variance), which keeps it inside [0, 1] and honest when few
sessions count. A difference between two policies over the same sessions is paired: 0
where they decide alike, and where they differ the draw was a randomised trial between
them, read with Newcombe's hybrid score interval, so that it keeps its width at small
counts.
`python -m benchmarks --only routing` prints the coverage of each interval on simulated
sessions with known truth."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959964
"""The standard normal quantile of a two-sided 95 % interval."""


def rounded(value: float | None) -> float | None:
    """A served figure: four decimals, or None."""
    return None if value is None else round(value, 4)


def share_of(count: int, sessions: int) -> float | None:
    """count / sessions as served; None without sessions."""
    return rounded(count / sessions) if sessions else None


@dataclass(frozen=True)
class Share:
    count: int
    sessions: int
    share: float | None
    low: float | None
    high: float | None


def wilson_bounds(share: float, sessions: float, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of a share observed over `sessions` (which may be an
    effective, fractional count)."""
    z2 = z * z
    centre = (share + z2 / (2 * sessions)) / (1 + z2 / sessions)
    spread = (
        z
        / (1 + z2 / sessions)
        * math.sqrt(share * (1 - share) / sessions + z2 / (4 * sessions * sessions))
    )
    return max(0.0, centre - spread), min(1.0, centre + spread)


def wilson(count: int, sessions: int) -> Share:
    """k of n sessions, with its 95 % interval; no share of no sessions."""
    if sessions <= 0:
        return Share(count, sessions, None, None, None)
    share = count / sessions
    low, high = wilson_bounds(share, sessions)
    return Share(count, sessions, share, low, high)


@dataclass(frozen=True)
class Logged:
    """One joined session as an off-policy estimate reads it."""

    target: str
    """The target it was given."""
    propensity: float
    """The probability that the session was in the sample read and was given that
    target, in (0, 1]: for an explored session, its version's exploration share over the
    number of targets it was drawn among."""
    abnormal: int
    """1 when it ended abnormally."""
    sampled: float = 1.0
    """The probability that the session was in the sample at all (its version's
    exploration share): it stands for 1 / sampled sessions of the window."""


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None
    matched: int
    """Sessions whose given target the policy would have chosen: those that count."""
    effective: float
    """The effective sample size of the weights, (sum w)² / sum w²."""


@dataclass(frozen=True)
class Weighted:
    """A policy's estimate over logged sessions."""

    estimate: Estimate


NO_ESTIMATE = Estimate(None, None, None, 0, 0.0)


def weighted_share(pairs: Sequence[tuple[float, int]], z: float = Z_95) -> Estimate:
    """The weighted share of abnormal ends over (weight, abnormal) pairs with positive
    weights, its delta-method variance and Wilson's interval at the size it implies."""
    total = sum(w for w, _ in pairs)
    if total <= 0:
        return NO_ESTIMATE
    value = sum(w * y for w, y in pairs) / total
    variance = sum((w * (y - value) / total) ** 2 for w, y in pairs)
    effective = total * total / sum(w * w for w, _ in pairs)
    low, high = _interval(value, variance, effective, z)
    return Estimate(value, low, high, len(pairs), effective)


def weighted(logged: Sequence[Logged], chosen: Sequence[str | None]) -> Weighted:
    """The SNIPW estimate of the abnormal-end share had each session been given
    `chosen[i]`, from sessions actually given `logged[i].target`, each weighted by
    1 / its propensity. A session the policy cannot decide (None) does not count."""
    pairs = [
        (1 / each.propensity, each.abnormal)
        for each, choice in zip(logged, chosen, strict=True)
        if each.target == choice
    ]
    return Weighted(weighted_share(pairs))


def _interval(value: float, variance: float, effective: float, z: float) -> tuple[float, float]:
    """Wilson's interval at the sample size the delta method's variance implies; at a
    share of 0 or 1 (no variance to read), at the weights' effective size."""
    implied = value * (1 - value) / variance if variance > 0 and 0 < value < 1 else effective
    return wilson_bounds(value, max(implied, 1e-9), z)


@dataclass(frozen=True)
class Difference:
    value: float
    low: float
    high: float
    sessions: int = 0
    """Sessions both policies could be judged on."""
    discordant: int = 0
    """Of them, those the two policies decide differently: the only ones that differ."""


def _served(found: Estimate) -> tuple[float, float, float] | None:
    if found.value is None or found.low is None or found.high is None:
        return None
    return found.value, found.low, found.high


def share_difference(
    first: Sequence[tuple[float, int]], second: Sequence[tuple[float, int]], z: float = Z_95
) -> Difference | None:
    """First minus second weighted abnormal-end share, two independent samples of
    (weight, abnormal) pairs, with Newcombe's hybrid score interval (Newcombe 1998,
    "Interval estimation for the difference between independent proportions",
    Statistics in Medicine, method 10): each share's Wilson interval at its weights'
    effective size, joined in quadrature. It keeps its width when either share is 0 or
    1 and covers at small counts. None when either sample is empty."""
    a, b = _served(weighted_share(first, z)), _served(weighted_share(second, z))
    if a is None or b is None:
        return None
    (a_value, a_low, a_high), (b_value, b_low, b_high) = a, b
    value = a_value - b_value
    low = value - math.hypot(a_value - a_low, b_high - b_value)
    high = value + math.hypot(a_high - a_value, b_value - b_low)
    return Difference(value, low, high, len(first) + len(second))


def difference(
    logged: Sequence[Logged],
    proposed: Sequence[str | None],
    current: Sequence[str | None],
    z: float = Z_95,
) -> Difference | None:
    """Proposed minus current abnormal-end share over the sessions both can be judged on
    (both decide, and both choices were among the targets drawn), with its interval at
    `z`. Paired: where the two decide alike the difference is exactly 0; where they
    differ (discordant sessions), the draw was a randomised trial between them, so the
    difference is the discordant share times the difference of the two arms' weighted
    abnormal-end shares, the latter with Newcombe's interval (`share_difference`) and
    the former with its Wilson interval, the interval taken at whichever end of it is
    wider. Never of zero width: with no discordant session it is 0 within the discordant
    share's bound. None without a supported session, or when a discordant arm has none."""
    supported = [
        (each, a, b)
        for each, a, b in zip(logged, proposed, current, strict=True)
        if a is not None and b is not None
    ]
    if not supported:
        return None
    stands = sum(1 / each.sampled for each, _, _ in supported)
    discordant = [(each, a, b) for each, a, b in supported if a != b]
    stood = sum(1 / each.sampled for each, _, _ in discordant)
    size = stands * stands / sum(1 / each.sampled**2 for each, _, _ in supported)
    share_low, share_high = wilson_bounds(stood / stands, size, z)
    if not discordant:
        return Difference(0.0, -share_high, share_high, len(supported), 0)
    arms = share_difference(
        [(1 / each.propensity, each.abnormal) for each, a, _ in discordant if each.target == a],
        [(1 / each.propensity, each.abnormal) for each, _, b in discordant if each.target == b],
        z,
    )
    if arms is None:
        return None
    share = stood / stands

    low = max(-share_high, arms.low * (share_high if arms.low < 0 else share_low))
    high = min(share_high, arms.high * (share_high if arms.high > 0 else share_low))
    return Difference(share * arms.value, low, high, len(supported), len(discordant))


def bonferroni_z(comparisons: int) -> float:
    """The two-sided normal quantile that keeps the chance of any false finding among
    `comparisons` at 5 %: the 1 - 0.025 / m quantile."""
    from statistics import NormalDist  # 5 ms a cold start: only the report needs it

    return NormalDist().inv_cdf(1 - 0.025 / max(comparisons, 1))
