"""Randomised trials under continuous monitoring, on simulated sessions with known truth,
read after every session from the 2nd to the 2,000th: the verdict the effect read serves
(`functions.outcomes.safe`, an exact safe test inverted into a confidence sequence) beside
the one it replaced (an asymptotic confidence sequence on ln RR with 0.5 added to zero
cells, tightest at 500 sessions, ten sessions an arm before any verdict).

False verdicts: with no true difference at control shares of 5 %, 30 % and 70 %, how many
trials ever read `improved` or `worse` (goal at most 5 %). Power, counting sessions over
both arms: a true risk ratio of 0.3 at 50 % control read `improved` within 80 sessions,
and 0.6 at 30 % within 600 (goal at least 80 % each), with the sessions by which 80 % of
trials have read it. `sessionsNeeded` checked: at several control shares and ratios, how
many trials read `improved` within the sessions `safe.sessions_needed` gives (goal at
least 80 %).

Vectorised with NumPy: at r = 1 the e-value's logarithm is linear in the four counts for
each alternative, so every trial's every session is one matrix product and one
log-sum-exp."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

TRIALS = 1_000
NULL_TRIALS = 4_000
SHARE = 0.5
HORIZON = 2_000
NULL_SHARES = (0.05, 0.3, 0.7)
POWER = ((0.5, 0.3, 80), (0.3, 0.6, 600))
"""(control share, true ratio, sessions within which it should be found)."""
NEEDED_CHECKS = ((0.5, 0.3), (0.3, 0.6), (0.3, 0.7), (0.1, 0.5), (0.7, 0.8))
"""(control share, ratio) at which sessionsNeeded is checked."""
SEED = 20261203
CHUNK = 50

Counts = npt.NDArray[np.float64]


def _paths(
    rng: np.random.Generator, trials: int, horizon: int, control_share: float, ratio: float
) -> tuple[Counts, Counts, Counts, Counts]:
    """Cumulative (treated with the pattern, treated, control with it, control) per
    trial and session."""
    treated = rng.random((trials, horizon)) < SHARE
    chance = np.where(treated, control_share * ratio, control_share)
    shown = rng.random((trials, horizon)) < chance
    cum = np.cumsum
    return (
        cum(treated & shown, axis=1, dtype=np.float64),
        cum(treated, axis=1, dtype=np.float64),
        cum(~treated & shown, axis=1, dtype=np.float64),
        cum(~treated, axis=1, dtype=np.float64),
    )


def _safe_verdicts(a: Counts, n1: Counts, b: Counts, n0: Counts) -> npt.NDArray[np.int8]:
    """-1 improved, 1 worse, 0 neither: the served method's verdict at each session (the
    confidence sequence excludes 1 exactly when the e-value against a ratio of 1 reaches
    20; its side is the estimate's)."""
    from functions.outcomes.safe import LOG_THRESHOLD, alternatives

    found = alternatives(1.0)
    p1 = np.array([each.treated_share for each in found])
    p0 = np.array([each.control_share for each in found])
    pooled = SHARE * p1 + (1 - SHARE) * p0
    weights = np.log(np.array([each.weight for each in found]))
    coefficients = np.stack(
        [
            np.log(p1 / pooled),
            np.log1p(-p1) - np.log1p(-pooled),
            np.log(p0 / pooled),
            np.log1p(-p0) - np.log1p(-pooled),
        ]
    )
    counts = np.stack([a, n1 - a, b, n0 - b], axis=-1)
    terms = counts @ coefficients + weights
    top = terms.max(axis=-1)
    log_e = top + np.log(np.exp(terms - top[..., None]).sum(axis=-1))
    side = np.sign(a * n0 - b * n1)
    return np.where(log_e >= LOG_THRESHOLD, side, 0).astype(np.int8)


def _asymptotic_verdicts(a: Counts, n1: Counts, b: Counts, n0: Counts) -> npt.NDArray[np.int8]:
    """The replaced method: Waudby-Smith et al.'s asymptotic confidence sequence on ln RR
    (Robbins' normal mixture tuned to 500 sessions), delta-method variance with 0.5 added
    to each cell when a count is 0, no verdict below 10 sessions an arm."""
    alpha, planned = 0.05, 500
    zero = (a == 0) | (b == 0)
    a_, b_ = np.where(zero, a + 0.5, a), np.where(zero, b + 0.5, b)
    n1_, n0_ = np.where(zero, n1 + 1, n1), np.where(zero, n0 + 1, n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log((a_ / n1_) / (b_ / n0_))
        variance = 1 / a_ - 1 / n1_ + 1 / b_ - 1 / n0_
        t = n1 + n0
        rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / planned
        spread = np.sqrt(t * variance) * np.sqrt(
            (t * rho2 + 1) / (t * t * rho2) * np.log((t * rho2 + 1) / alpha**2)
        )
        verdict = np.where(log_ratio + spread < 0, -1, np.where(log_ratio - spread > 0, 1, 0))
    return np.where(np.minimum(n1, n0) >= 10, verdict, 0).astype(np.int8)


METHODS = {"safe": _safe_verdicts, "asymptotic": _asymptotic_verdicts}


def first_verdicts(
    method: str, control_share: float, ratio: float, horizon: int, trials: int, seed: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]:
    """Per trial, the first session (over both arms, from the 2nd) at which a verdict
    other than none is read (inf when never) and which one."""
    rng = np.random.default_rng(seed)
    first = np.full(trials, np.inf)
    which = np.zeros(trials, dtype=np.int8)
    for start in range(0, trials, CHUNK):
        size = min(CHUNK, trials - start)
        verdicts = METHODS[method](*_paths(rng, size, horizon, control_share, ratio))
        verdicts[:, 0] = 0  # read from the 2nd session on
        read = verdicts != 0
        ever = read.any(axis=1)
        at = read.argmax(axis=1)
        first[start : start + size] = np.where(ever, at + 1, np.inf)
        which[start : start + size] = np.where(ever, verdicts[np.arange(size), at], 0)
    return first, which


def _found_by(first: npt.NDArray[np.float64], which: npt.NDArray[np.int8], within: int) -> float:
    return float(np.mean((first <= within) & (which == -1)))


def _eighty(first: npt.NDArray[np.float64], which: npt.NDArray[np.int8]) -> int | None:
    """Sessions by which 80 % of trials have read improved; None when fewer ever do."""
    improved = np.sort(np.where(which == -1, first, np.inf))
    at = improved[math.ceil(0.8 * len(improved)) - 1]
    return int(at) if math.isfinite(at) else None


def trials(count: int = TRIALS, null_count: int = NULL_TRIALS) -> dict[str, Any]:
    from functions.outcomes.safe import sessions_needed

    results: dict[str, Any] = {
        "trials": count,
        "null_trials": null_count,
        "horizon": HORIZON,
        "share": SHARE,
    }
    for method in METHODS:
        null = []
        for index, control in enumerate(NULL_SHARES):
            first, _ = first_verdicts(method, control, 1.0, HORIZON, null_count, SEED + index)
            false = int(np.isfinite(first).sum())
            null.append(
                {
                    "control_share": control,
                    "false_verdicts": false,
                    "false_share": round(false / null_count, 4),
                }
            )
        power = []
        for index, (control, ratio, within) in enumerate(POWER):
            horizon = min(HORIZON, 3 * within)
            first, which = first_verdicts(method, control, ratio, horizon, count, SEED + 10 + index)
            power.append(
                {
                    "control_share": control,
                    "true_ratio": ratio,
                    "within": within,
                    "found_share": round(_found_by(first, which, within), 4),
                    "sessions_for_80": _eighty(first, which),
                }
            )
        results[method] = {"null": null, "power": power}
    checks = []
    for index, (control, ratio) in enumerate(NEEDED_CHECKS):
        needed = sessions_needed(round(control * 1000), 1000, ratio, SHARE)
        first, which = first_verdicts("safe", control, ratio, needed, count, SEED + 20 + index)
        checks.append(
            {
                "control_share": control,
                "ratio": ratio,
                "sessions_needed": needed,
                "found_share": round(_found_by(first, which, needed), 4),
            }
        )
    results["sessions_needed"] = checks
    return results
