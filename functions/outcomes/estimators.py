"""The estimates served over outcome records, pure: a share of sessions with its 95 %
interval, and what another policy's abnormal-end share would have been, estimated from
sessions whose target was drawn with a known probability.

A share is k of n sessions with Wilson's score interval. An off-policy estimate is
self-normalised inverse propensity weighting (SNIPW): a session counts when the policy
evaluated would have chosen the target it was given, weighted by 1 / the probability it
was given it, and the estimate is the weighted share of abnormal ends. Its variance is the
delta method's, sum(w²(y - μ)²) / (sum w)²; the interval is Wilson's at the effective
sample size that variance implies (μ(1 - μ) / variance), which keeps it inside [0, 1] and
honest when few sessions count. A difference between two policies over the same sessions
is paired and inverse-propensity weighted without normalising (unbiased, and exactly
zero on every session the two policies decide alike), with the sample variance of the
per-session differences.
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
    """The probability the logging policy gave that target, in (0, 1]."""
    abnormal: int
    """1 when it ended abnormally."""


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
    """A policy's weights over logged sessions: its estimate, and each session's
    inverse-propensity term (1 / propensity when the policy matches the session's target
    and it ended abnormally, else 0), which a paired difference reads."""

    estimate: Estimate
    terms: list[float]


NO_ESTIMATE = Estimate(None, None, None, 0, 0.0)


def weighted(logged: Sequence[Logged], chosen: Sequence[str | None]) -> Weighted:
    """The SNIPW estimate of the abnormal-end share had each session been given
    `chosen[i]`, from sessions actually given `logged[i].target`. A session the policy
    cannot decide (None) does not count."""
    weights = [
        1 / each.propensity if each.target == choice else 0.0
        for each, choice in zip(logged, chosen, strict=True)
    ]
    total = sum(weights)
    terms = [w * each.abnormal for w, each in zip(weights, logged, strict=True)]
    if total <= 0:
        return Weighted(NO_ESTIMATE, terms)
    value = sum(w * each.abnormal for w, each in zip(weights, logged, strict=True)) / total
    variance = sum(
        (w * (each.abnormal - value) / total) ** 2 for w, each in zip(weights, logged, strict=True)
    )
    effective = total * total / sum(w * w for w in weights)
    matched = sum(1 for w in weights if w > 0)
    low, high = _interval(value, variance, effective)
    return Weighted(Estimate(value, low, high, matched, effective), terms)


def _interval(value: float, variance: float, effective: float) -> tuple[float, float]:
    """Wilson's interval at the sample size the delta method's variance implies; at a
    share of 0 or 1 (no variance to read), at the weights' effective size."""
    implied = value * (1 - value) / variance if variance > 0 and 0 < value < 1 else effective
    return wilson_bounds(value, max(implied, 1e-9))


@dataclass(frozen=True)
class Difference:
    value: float
    low: float
    high: float


def difference(proposed: Weighted, current: Weighted, z: float = Z_95) -> Difference | None:
    """Proposed minus current abnormal-end share over the same sessions, with its
    interval at `z`. Paired and not normalised: the mean of each session's difference of
    inverse-propensity terms, which is exactly 0 wherever the two policies agree, so only
    the sessions they decide differently add variance."""
    n = len(proposed.terms)
    if n <= 1 or proposed.estimate.value is None or current.estimate.value is None:
        return None
    gaps = [a - b for a, b in zip(proposed.terms, current.terms, strict=True)]
    value = sum(gaps) / n
    variance = sum((gap - value) ** 2 for gap in gaps) / (n - 1) / n
    spread = z * math.sqrt(variance)
    return Difference(value, value - spread, value + spread)


def bonferroni_z(comparisons: int) -> float:
    """The two-sided normal quantile that keeps the chance of any false finding among
    `comparisons` at 5 %: the 1 - 0.025 / m quantile."""
    from statistics import NormalDist  # 5 ms a cold start: only the report needs it

    return NormalDist().inv_cdf(1 - 0.025 / max(comparisons, 1))
