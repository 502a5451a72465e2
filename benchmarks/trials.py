"""Randomised trials under continuous monitoring, on simulated sessions with known truth,
read after every session from the 2nd to the 2,000th: the verdict the effect read serves
(`functions.loop.safe`, an exact safe test at the arms' joined sizes inverted into a
confidence sequence) beside the one it replaced first (an asymptotic confidence sequence
on ln RR with 0.5 added to zero cells, tightest at 500 sessions, ten sessions an arm before
any verdict).

False verdicts: with no true difference at control shares of 5 %, 30 % and 70 %, how many
trials ever read `improved` or `worse` (goal at most 5 %), with the arms joined at the
declared half and at 46 %, 40 % and 30 % treated (sessions lost at random, unrelated to
the outcome). The sample-ratio mismatch flag: how often it is ever raised when both arms
lose 5 % of their sessions (goal at most 1 %), and when the treatment arm loses 25 %. Power,
counting sessions over both arms: a true risk ratio of 0.3 at 50 % control read `improved`
within 80 sessions, and 0.6 at 30 % within 600 (goal at least 80 % each), with the sessions
by which 80 % of trials have read it. Harm: the guardrail's one-sided test, sessions to
80 % for 1.5 at 30 % and 2 at 20 % beside the two-sided read's mirror improvements (0.67 at
45 %, 0.5 at 40 %), and how often it ever finds harm where there is none (goal at most
5 %). `sessionsNeeded` checked: how many trials read their verdict within the
number `safe.sessions_needed` serves (goal at least 80 % wherever a number is served), for
one signal kind and for two (where `improved` needs both).

Vectorised with NumPy: at r = 1, each alternative's log e-value is linear in the four
counts less the log likelihood of the counts under its RIPr at the joined share, so a chunk
of trials' every session is a matrix product, one projection per alternative and session,
and one log-sum-exp."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from functions.loop.randomization import SRM_LOG_THRESHOLD
from functions.loop.safe import (
    EITHER_WAY,
    HARM,
    HELP_AND_HARM,
    LOG_THRESHOLD,
    Shifts,
    alternatives,
    sessions_needed,
)

TRIALS = 1_000
NULL_TRIALS = 4_000
SPLIT_TRIALS = 2_000
NEEDED_TRIALS = 2_000
"""Each sessionsNeeded check: enough that a share found of 80 % reads within about 1 %."""
SHARE = 0.5
HORIZON = 2_000
NULL_SHARES = (0.05, 0.3, 0.7)
SPLITS = (0.46, 0.4, 0.3)
"""The treatment arm's share of joined sessions, against a declared half."""
LOSSES = ((0.05, 0.05), (0.25, 0.05))
"""(treatment, control): the share of each arm's assigned sessions never joined."""
POWER = ((0.5, 0.3, 80), (0.3, 0.6, 600))
"""(control share, true ratio, sessions within which it should be found)."""
HARMS = ((0.3, 1.5, 0.45, 0.67), (0.2, 2.0, 0.4, 0.5))
"""(control share, harmful ratio, and the mirror improvement's control share and ratio)."""
NEEDED_CHECKS = (
    ((0.5,), 0.3),
    ((0.3,), 0.6),
    ((0.3,), 0.7),
    ((0.1,), 0.5),
    ((0.05,), 0.3),
    ((0.7,), 0.8),
    ((0.3, 0.1), 0.6),
    ((0.5, 0.2), 0.5),
)
"""(control share of each signal kind, ratio on every kind) where sessionsNeeded is held
to the share of trials that read `improved` within it."""
HARM_NEEDED_CHECKS = ((0.3, 1.5), (0.2, 2.0), (0.3, 1.25))
SEED = 20261204
CHUNK_CELLS = 4_000_000
"""Trials x sessions x alternatives held at once."""

Counts = npt.NDArray[np.float64]
Verdicts = npt.NDArray[np.int8]


@dataclass(frozen=True)
class Paths:
    """Cumulative counts per trial and session: (shown, sessions) per arm, one `shown`
    per signal kind."""

    treated: list[Counts]
    treated_n: Counts
    control: list[Counts]
    control_n: Counts


def _paths(
    rng: np.random.Generator,
    trials: int,
    horizon: int,
    control_shares: tuple[float, ...],
    ratio: float,
    joined_share: float = SHARE,
) -> Paths:
    treated = rng.random((trials, horizon)) < joined_share
    cum = np.cumsum
    shown = []
    for control in control_shares:
        chance = np.where(treated, control * ratio, control)
        shown.append(rng.random((trials, horizon)) < chance)
    return Paths(
        [cum(each & treated, axis=1, dtype=np.float64) for each in shown],
        cum(treated, axis=1, dtype=np.float64),
        [cum(each & ~treated, axis=1, dtype=np.float64) for each in shown],
        cum(~treated, axis=1, dtype=np.float64),
    )


def log_e_values(a: Counts, n1: Counts, b: Counts, n0: Counts, shifts: Shifts) -> Counts:
    """ln of the served e-value against a ratio of 1 at every (trial, session): each
    alternative's RIPr at the joined share, as `safe.point_log_e_value` takes it."""
    found = alternatives(1.0, shifts)
    q1 = np.array([each.treated_share for each in found])
    q0 = np.array([each.control_share for each in found])
    weights = np.log(np.array([each.weight for each in found]))
    bets = np.stack([np.log(q1), np.log1p(-q1), np.log(q0), np.log1p(-q0)])
    counts = np.stack([a, n1 - a, b, n0 - b], axis=-1)
    sessions = np.maximum(n1 + n0, 1)[..., None]
    share = n1[..., None] / sessions
    m = share * q1 + (1 - share) * q0
    big_b = 2 * m + share * (1 - q1) + (1 - share) * (1 - q0)
    c = 2 * m / (big_b + np.sqrt(np.maximum(big_b * big_b - 4 * m, 0.0)))
    shown = (a + b)[..., None]
    terms = counts @ bets + weights - shown * np.log(c) - (sessions - shown) * np.log1p(-c)
    top = terms.max(axis=-1)
    result: Counts = top + np.log(np.exp(terms - top[..., None]).sum(axis=-1))
    return result


def log_e_values_at(
    a: Counts, n1: Counts, b: Counts, n0: Counts, ratio: float, shifts: Shifts = HELP_AND_HARM
) -> Counts:
    """ln of the served e-value against H0(`ratio`) at every (trial, session), as
    `safe.log_e_value` takes it: `log_e_values` at any ratio, the RIPr's treated share
    being `ratio` times its control share. The sequence holds `ratio` where it is below
    `LOG_THRESHOLD`."""
    found = alternatives(ratio, shifts)
    q1 = np.array([each.treated_share for each in found])
    q0 = np.array([each.control_share for each in found])
    weights = np.log(np.array([each.weight for each in found]))
    bets = np.stack([np.log(q1), np.log1p(-q1), np.log(q0), np.log1p(-q0)])
    counts = np.stack([a, n1 - a, b, n0 - b], axis=-1)
    share = (n1 / np.maximum(n1 + n0, 1))[..., None]
    m = share * q1 + (1 - share) * q0
    big_b = (1 + ratio) * m + share * ratio * (1 - q1) + (1 - share) * (1 - q0)
    c = 2 * m / (big_b + np.sqrt(np.maximum(big_b * big_b - 4 * ratio * m, 0.0)))
    # A RIPr at the edge of its range (an arm with no session): no term for an outcome
    # none showed, as in `safe._bernoulli_log` (0 times a finite floor, not 0 times -inf).
    treated, c = np.minimum(ratio * c, 1.0), np.minimum(c, 1.0)
    with np.errstate(divide="ignore"):
        null = np.stack([np.log(treated), np.log1p(-treated), np.log(c), np.log1p(-c)], axis=-1)
    null = np.maximum(null, -1e300)
    terms = counts @ bets + weights - np.einsum("...j,...kj->...k", counts, null)
    top = terms.max(axis=-1)
    result: Counts = top + np.log(np.exp(terms - top[..., None]).sum(axis=-1))
    return result


def _sides(a: Counts, n1: Counts, b: Counts, n0: Counts) -> Counts:
    side: Counts = np.sign(a * n0 - b * n1)
    return side


def _two_sided(a: Counts, n1: Counts, b: Counts, n0: Counts) -> Verdicts:
    """-1 improved, 1 worse, 0 neither: the served verdict at each session (the sequence
    excludes 1 exactly when the e-value against 1 reaches 20; its side is the estimate's)."""
    log_e = log_e_values(a, n1, b, n0, HELP_AND_HARM)
    return np.where(log_e >= LOG_THRESHOLD, _sides(a, n1, b, n0), 0).astype(np.int8)


def _harm(a: Counts, n1: Counts, b: Counts, n0: Counts) -> Verdicts:
    """1 where the guardrail's one-sided test finds harm, else 0."""
    log_e = log_e_values(a, n1, b, n0, HARM)
    return ((log_e >= LOG_THRESHOLD) & (_sides(a, n1, b, n0) > 0)).astype(np.int8)


def _asymptotic(a: Counts, n1: Counts, b: Counts, n0: Counts) -> Verdicts:
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


METHODS = {"safe": _two_sided, "asymptotic": _asymptotic, "harm": _harm}


def chunks(trials: int, horizon: int = HORIZON) -> Iterator[tuple[int, int]]:
    """(first trial, trials) of each chunk of at most `CHUNK_CELLS` cells, a cell per
    trial, session and alternative of the two-sided read."""
    chunk = max(1, CHUNK_CELLS // (horizon * len(alternatives(1.0))))
    for start in range(0, trials, chunk):
        yield start, min(chunk, trials - start)


@dataclass(frozen=True)
class Case:
    control_shares: tuple[float, ...]
    ratio: float
    joined_share: float = SHARE
    method: str = "safe"


def first_reads(case: Case, horizon: int, trials: int, seed: int) -> tuple[Counts, Verdicts]:
    """Per trial, the first session (over both arms, from the 2nd) at which every signal
    kind reads the same verdict other than none (inf when never), and which one."""
    rng = np.random.default_rng(seed)
    first = np.full(trials, np.inf)
    which = np.zeros(trials, dtype=np.int8)
    cells = horizon * len(alternatives(1.0))
    chunk = max(1, CHUNK_CELLS // cells)
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        paths = _paths(rng, size, horizon, case.control_shares, case.ratio, case.joined_share)
        kinds = [
            METHODS[case.method](a, paths.treated_n, b, paths.control_n)
            for a, b in zip(paths.treated, paths.control, strict=True)
        ]
        verdicts = np.where(np.all([k == kinds[0] for k in kinds], axis=0), kinds[0], 0)
        verdicts[:, 0] = 0
        read = verdicts != 0
        ever = read.any(axis=1)
        at = read.argmax(axis=1)
        first[start : start + size] = np.where(ever, at + 1, np.inf)
        which[start : start + size] = np.where(ever, verdicts[np.arange(size), at], 0)
    return first, which


def _found_by(first: Counts, which: Verdicts, within: int, side: int) -> float:
    return float(np.mean((first <= within) & (which == side)))


def _eighty(first: Counts, which: Verdicts, side: int) -> int | None:
    """Sessions by which 80 % of trials have read the verdict; None when fewer ever do."""
    found = np.sort(np.where(which == side, first, np.inf))
    at = found[math.ceil(0.8 * len(found)) - 1]
    return int(at) if math.isfinite(at) else None


def _loss_flags(lost: tuple[float, float], trials: int, seed: int) -> float:
    """The share of trials whose sample-ratio mismatch flag is ever raised by the 2,000th
    assigned session: the served test over (lost, assigned) per arm, arms at the declared
    half, each assigned session lost with its arm's chance."""
    rng = np.random.default_rng(seed)
    raised = 0
    chunk = max(1, CHUNK_CELLS // (HORIZON * len(alternatives(1.0, EITHER_WAY))))
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        treated = rng.random((size, HORIZON)) < SHARE
        gone = rng.random((size, HORIZON)) < np.where(treated, *lost)
        cum = np.cumsum
        log_e = log_e_values(
            cum(gone & treated, axis=1, dtype=np.float64),
            cum(treated, axis=1, dtype=np.float64),
            cum(gone & ~treated, axis=1, dtype=np.float64),
            cum(~treated, axis=1, dtype=np.float64),
            EITHER_WAY,
        )
        raised += int((log_e >= SRM_LOG_THRESHOLD).any(axis=1).sum())
    return raised / trials


HIDDEN = 0.3
"""The share of the treated arm's sessions that end badly which never report (a crash
before the telemetry flushes), in the outcome-dependent loss."""
LOSS_TRIALS = 1_000


def _served_under_loss(
    a: Counts, n1: Counts, b: Counts, n0: Counts, m1: Counts, m0: Counts, rule: str
) -> Verdicts:
    """-1 improved, 1 worse, 0 neither at every session, with `m1`, `m0` sessions assigned
    and never joined: `joined` reads the joined sessions alone, the mismatch flag recomputed
    at each read (the rule before); `served` is the effect read's (`arms.judged`), `improved`
    only when it also holds with the unjoined sessions counted as showing the kind, and the
    flag latched from its first rise."""
    srm = log_e_values(m1, n1 + m1, m0, n0 + m0, EITHER_WAY) >= SRM_LOG_THRESHOLD
    crossed = log_e_values(a, n1, b, n0, HELP_AND_HARM) >= LOG_THRESHOLD
    side = _sides(a, n1, b, n0)
    worse, improved = crossed & (side > 0), crossed & (side < 0)
    if rule == "served":
        a_, n1_, b_, n0_ = a + m1, n1 + m1, b + m0, n0 + m0
        bound = log_e_values(a_, n1_, b_, n0_, HELP_AND_HARM) >= LOG_THRESHOLD
        improved &= bound & (_sides(a_, n1_, b_, n0_) < 0)
        srm = np.maximum.accumulate(srm, axis=1)
    verdicts = np.where(improved, -1, np.where(worse, 1, 0)).astype(np.int8)
    return np.where(srm, 0, verdicts).astype(np.int8)


def _outcome_loss(rule: str, control: float, trials: int, seed: int) -> float:
    """The share of trials with no true difference that ever read a verdict when `HIDDEN`
    of the treated sessions that end badly never report, read after every assigned session
    to the 2,000th."""
    rng = np.random.default_rng(seed)
    ever = 0
    for _, size in chunks(trials):
        treated = rng.random((size, HORIZON)) < SHARE
        bad = rng.random((size, HORIZON)) < control
        lost = treated & bad & (rng.random((size, HORIZON)) < HIDDEN)
        joined = ~lost

        def cum(mask: npt.NDArray[np.bool_]) -> Counts:
            return np.cumsum(mask, axis=1, dtype=np.float64)

        verdicts = _served_under_loss(
            cum(treated & joined & bad),
            cum(treated & joined),
            cum(~treated & bad),
            cum(~treated),
            cum(treated & lost),
            np.zeros((size, HORIZON)),
            rule,
        )
        verdicts[:, 0] = 0
        ever += int((verdicts != 0).any(axis=1).sum())
    return ever / trials


def _outcome_losses(trials: int, seed: int) -> list[dict[str, Any]]:
    return [
        {
            "control_share": control,
            "hidden": HIDDEN,
            **{
                f"{rule}_false_share": round(_outcome_loss(rule, control, trials, seed + index), 4)
                for rule in ("joined", "served")
            },
        }
        for index, control in enumerate(NULL_SHARES)
    ]


def _null(method: str, trials: int, seed: int) -> list[dict[str, Any]]:
    found = []
    for index, control in enumerate(NULL_SHARES):
        first, _ = first_reads(Case((control,), 1.0, method=method), HORIZON, trials, seed + index)
        false = int(np.isfinite(first).sum())
        found.append(
            {
                "control_share": control,
                "false_verdicts": false,
                "false_share": round(false / trials, 4),
            }
        )
    return found


def _power(method: str, trials: int, seed: int) -> list[dict[str, Any]]:
    found = []
    for index, (control, ratio, within) in enumerate(POWER):
        horizon = min(HORIZON, 3 * within)
        case = Case((control,), ratio, method=method)
        first, which = first_reads(case, horizon, trials, seed + index)
        found.append(
            {
                "control_share": control,
                "true_ratio": ratio,
                "within": within,
                "found_share": round(_found_by(first, which, within, -1), 4),
                "sessions_for_80": _eighty(first, which, -1),
            }
        )
    return found


def _splits(trials: int, seed: int) -> list[dict[str, Any]]:
    found = []
    for index, (joined, control) in enumerate(
        (joined, control) for joined in SPLITS for control in NULL_SHARES
    ):
        first, _ = first_reads(Case((control,), 1.0, joined), HORIZON, trials, seed + index)
        found.append(
            {
                "joined_share": joined,
                "control_share": control,
                "false_share": round(float(np.isfinite(first).mean()), 4),
            }
        )
    return found


def _harms(trials: int, seed: int) -> list[dict[str, Any]]:
    found = []
    for index, (control, ratio, mirror_control, mirror_ratio) in enumerate(HARMS):
        harm = first_reads(Case((control,), ratio, method="harm"), HORIZON, trials, seed + index)
        mirror = first_reads(Case((mirror_control,), mirror_ratio), HORIZON, trials, seed + index)
        found.append(
            {
                "control_share": control,
                "true_ratio": ratio,
                "sessions_for_80": _eighty(*harm, 1),
                "mirror": {
                    "control_share": mirror_control,
                    "true_ratio": mirror_ratio,
                    "sessions_for_80": _eighty(*mirror, -1),
                },
            }
        )
    return found


def _needed_checks(trials: int, seed: int) -> list[dict[str, Any]]:
    """sessionsNeeded as the effect read serves it for these kinds (each at the power
    that makes all of them together 80 %), and the share of trials found within it."""
    found = []
    for index, (controls, ratio) in enumerate(NEEDED_CHECKS):
        power = 1 - 0.2 / len(controls)
        each = [sessions_needed(control, ratio, SHARE, power=power) for control in controls]
        needed = None if None in each else max(n for n in each if n is not None)
        share = None
        if needed is not None:
            first, which = first_reads(Case(controls, ratio), needed, trials, seed + index)
            share = round(_found_by(first, which, needed, -1), 4)
        found.append(
            {
                "control_shares": list(controls),
                "ratio": ratio,
                "sessions_needed": needed,
                "found_share": share,
            }
        )
    for index, (control, ratio) in enumerate(HARM_NEEDED_CHECKS):
        needed = sessions_needed(control, ratio, SHARE, HARM)
        share = None
        if needed is not None:
            case = Case((control,), ratio, method="harm")
            first, which = first_reads(case, needed, trials, seed + 100 + index)
            share = round(_found_by(first, which, needed, 1), 4)
        found.append(
            {
                "control_shares": [control],
                "ratio": ratio,
                "harm": True,
                "sessions_needed": needed,
                "found_share": share,
            }
        )
    return found


def trials(count: int = TRIALS, null_count: int = NULL_TRIALS) -> dict[str, Any]:
    return {
        "trials": count,
        "null_trials": null_count,
        "split_trials": SPLIT_TRIALS,
        "horizon": HORIZON,
        "share": SHARE,
        **{
            method: {
                "null": _null(method, null_count, SEED),
                "power": _power(method, count, SEED + 10),
            }
            for method in ("safe", "asymptotic")
        },
        "splits": _splits(SPLIT_TRIALS, SEED + 30),
        "sample_ratio_mismatch": [
            {
                "lost": list(lost),
                "flagged_share": round(_loss_flags(lost, SPLIT_TRIALS, SEED + 40 + i), 4),
            }
            for i, lost in enumerate(LOSSES)
        ],
        "loss_trials": LOSS_TRIALS,
        "outcome_loss": _outcome_losses(LOSS_TRIALS, SEED + 80),
        "harm": _harms(count, SEED + 50),
        "harm_null": _null("harm", null_count, SEED + 70),
        "needed_trials": NEEDED_TRIALS,
        "sessions_needed": _needed_checks(NEEDED_TRIALS, SEED + 60),
    }
