"""`autoAdopt` under continuous monitoring, on simulated sessions with known truth: a trial
started with `autoAdopt` adopts its suggestion the first time its verdict
(`functions.loop.randomization.verdict_of` on the basis rate per arm) reads `improved`, read
after every session from the 2nd to the 2,000th, as the sweep reads it; a verdict of
`worse`, or harm found by the guardrail's one-sided test, stops it first for good
(`functions.loop.trials.watch`).

With no true effect, at control rates of 5 %, 30 % and 70 %: the share of trials ever
adopted (goal at most 5 %, what the confidence sequence's validity at every look
promises). At a true ratio of 0.5 at a 30 % control rate: the sessions, over both arms,
each trial took to adopt (median and 80th percentile), and the share adopted by the
2,000th.

The verdict and the guardrail are the trials bench's vectorised ones (`benchmarks.trials`,
held to the served functions by `tests/test_safe_test.py`); the guardrail is computed only
for the trials that would adopt, up to their adoption, as only there can it change the
outcome."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.trials import (
    HORIZON,
    NULL_SHARES,
    SEED,
    SHARE,
    Counts,
    _harm,
    _paths,
    _two_sided,
    chunks,
)
from functions.loop.randomization import MIN_PER_ARM

NULL_TRIALS = 2_000
"""Per control rate: a share found of 5 % reads within about 1 %."""
EFFECT_TRIALS = 1_000
EFFECT = (0.3, 0.5)
"""(control rate, true ratio) whose sessions to adoption are printed."""
GOAL_ADOPTED_MAX = 0.05
NEVER = math.inf


def adoptions(control: float, ratio: float, trials: int, seed: int) -> tuple[Counts, Counts]:
    """Per trial, the session (over both arms, from the 2nd) at which it adopts, and at
    which the guardrail stops it before adopting; inf where it never does."""
    rng = np.random.default_rng(seed)
    adopted = np.full(trials, NEVER)
    stopped = np.full(trials, NEVER)
    for start, size in chunks(trials):
        paths = _paths(rng, size, HORIZON, (control,), ratio)
        adopted[start : start + size], stopped[start : start + size] = acted(
            paths.treated[0], paths.treated_n, paths.control[0], paths.control_n
        )
    return adopted, stopped


def acted(a: Counts, n1: Counts, b: Counts, n0: Counts) -> tuple[Counts, Counts]:
    """What the sweep does to trials with these cumulative counts (trials x sessions):
    the session each adopts at, and the session the guardrail stops it at before its
    verdict read `improved` (a verdict of `worse`, or harm found: harm is looked for
    only in a trial whose verdict reads `improved`, before it does); inf where it never
    does."""
    verdicts = np.where(np.minimum(n1, n0) >= MIN_PER_ARM, _two_sided(a, n1, b, n0), 0)
    verdicts[:, 0] = 0
    first = _first(verdicts == -1)
    worse = _first(verdicts == 1)
    harmed = np.full(len(first), NEVER)
    adopting = np.flatnonzero(first < worse)
    if adopting.size:
        until = int(first[adopting].max())
        harm = _harm(*(x[adopting, :until] for x in (a, n1, b, n0))).astype(bool)
        harm[:, 0] = False
        harmed[adopting] = _first(harm)
    guardrail = np.minimum(worse, harmed)
    return np.where(first < guardrail, first, NEVER), np.where(guardrail < first, guardrail, NEVER)


def _first(read: npt.NDArray[np.bool_]) -> Counts:
    """The 1-based session of each row's first True; inf where there is none."""
    found: Counts = np.where(read.any(axis=1), read.argmax(axis=1) + 1.0, NEVER)
    return found


def _quantile(sessions: Counts, q: float) -> int | None:
    """The sessions by which a share `q` of all trials had adopted; None when fewer did."""
    ordered = np.sort(sessions)
    at = ordered[math.ceil(q * len(ordered)) - 1]
    return int(at) if math.isfinite(at) else None


def auto_adopt(
    null_trials: int = NULL_TRIALS, effect_trials: int = EFFECT_TRIALS
) -> dict[str, Any]:
    null = []
    for index, control in enumerate(NULL_SHARES):
        adopted, _ = adoptions(control, 1.0, null_trials, SEED + 200 + index)
        null.append(
            {
                "control_share": control,
                "adopted_share": round(float(np.isfinite(adopted).mean()), 4),
            }
        )
    control, ratio = EFFECT
    adopted, stopped = adoptions(control, ratio, effect_trials, SEED + 210)
    worst = max(each["adopted_share"] for each in null)
    return {
        "horizon": HORIZON,
        "share": SHARE,
        "null_trials": null_trials,
        "null": null,
        "goal_adopted_max": GOAL_ADOPTED_MAX,
        "met": worst <= GOAL_ADOPTED_MAX,
        "effect": {
            "trials": effect_trials,
            "control_share": control,
            "true_ratio": ratio,
            "adopted_share": round(float(np.isfinite(adopted).mean()), 4),
            "stopped_share": round(float(np.isfinite(stopped).mean()), 4),
            "sessions_median": _quantile(adopted, 0.5),
            "sessions_80": _quantile(adopted, 0.8),
        },
    }
