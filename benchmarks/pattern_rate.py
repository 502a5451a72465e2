"""A pattern's own rate per arm, as a trial started from the pattern reads it, on simulated
sessions with known truth, read after every session from the 2nd to the 2,000th: per arm,
k = the arm's sessions whose summary joined the pattern and n = the arm's sessions that
ended (`functions.loop.arms`, through `verdict_of`).

What is observed is not the true rate: a session is summarised with chance s (a session
never summarised is counted in n, never in k), and a summarised session that shows the
failure joins the pattern with chance (recall) q, so an arm's observed rate is p q s. The
interval is for the ratio of the OBSERVED rates, p1 q1 s1 / (p0 q0 s0): it is the true
ratio p1 / p0 exactly when recall and the summarised share are equal across the arms
(randomisation makes them so unless the suggestion changes how sessions are summarised or
how their failures are worded). Each trial here: s = 0.95 and q = 0.9 in both arms,
and one case with recall 0.9 treated against 0.6 control, where the interval covers the
observed ratio and not the true one.

Coverage: the share of trials whose confidence sequence holds the ratio at every read
(the e-value against it stays below 20; goal at least 95 %). False verdicts: with no true
difference at pattern rates of 5 %, 30 % and 70 %, the share of trials that ever read
`improved` or `worse` (goal at most 5 %)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.trials import (
    HORIZON,
    NULL_SHARES,
    SEED,
    SHARE,
    Counts,
    _two_sided,
    chunks,
    log_e_values_at,
)
from functions.loop.randomization import MIN_PER_ARM
from functions.loop.safe import LOG_THRESHOLD

SUMMARISED = 0.95
RECALL = 0.9
NULL_TRIALS = 1_000
COVERAGE_TRIALS = 500
"""Per case: a coverage of 95 % reads within about 1 %."""
EFFECTS = ((0.3, 0.5), (0.1, 0.6), (0.5, 0.8), (0.2, 1.5))
"""(control arm's true pattern rate, true ratio)."""
UNEQUAL_RECALL = (0.3, 0.5, 0.9, 0.6)
"""(control rate, true ratio, treated recall, control recall)."""
GOAL_COVERAGE_MIN = 0.95
GOAL_FALSE_MAX = 0.05


@dataclass(frozen=True)
class Arms:
    """The truth per arm: pattern rate, recall, summarised share (treated, control)."""

    control: float
    ratio: float
    recall: tuple[float, float] = (RECALL, RECALL)
    summarised: tuple[float, float] = (SUMMARISED, SUMMARISED)

    @property
    def observed_ratio(self) -> float:
        treated = self.ratio * self.recall[0] * self.summarised[0]
        return treated / (self.recall[1] * self.summarised[1])


def _counts(rng: np.random.Generator, trials: int, arms: Arms) -> tuple[Counts, ...]:
    """Cumulative (k, n) per arm at every session: each session ends (n), shows the
    failure at its arm's rate, is summarised, and if both, joins the pattern at the
    arm's recall (k)."""
    shape = (trials, HORIZON)
    treated = rng.random(shape) < SHARE
    shows = rng.random(shape) < np.where(treated, arms.control * arms.ratio, arms.control)
    summarised = rng.random(shape) < np.where(treated, *arms.summarised)
    joined = shows & summarised & (rng.random(shape) < np.where(treated, *arms.recall))
    cum = np.cumsum
    return (
        cum(joined & treated, axis=1, dtype=np.float64),
        cum(treated, axis=1, dtype=np.float64),
        cum(joined & ~treated, axis=1, dtype=np.float64),
        cum(~treated, axis=1, dtype=np.float64),
    )


def reads(arms: Arms, ratios: tuple[float, ...], trials: int, seed: int) -> dict[str, Any]:
    """Per trial, whether a verdict other than `no_clear_change` was ever read, and for
    each of `ratios` whether the sequence held it at every read."""
    rng = np.random.default_rng(seed)
    verdicts = 0
    held = dict.fromkeys(ratios, 0)
    for _, size in chunks(trials):
        a, n1, b, n0 = _counts(rng, size, arms)
        ready = np.minimum(n1, n0) >= MIN_PER_ARM
        ready[:, 0] = False
        verdicts += int(((_two_sided(a, n1, b, n0) != 0) & ready).any(axis=1).sum())
        for ratio in ratios:
            rejected = (log_e_values_at(a, n1, b, n0, ratio) >= LOG_THRESHOLD) & ready
            held[ratio] += int((~rejected.any(axis=1)).sum())
    return {
        "verdict_share": round(verdicts / trials, 4),
        "held": {ratio: round(count / trials, 4) for ratio, count in held.items()},
    }


def pattern_rate(
    null_trials: int = NULL_TRIALS, coverage_trials: int = COVERAGE_TRIALS
) -> dict[str, Any]:
    null = []
    for index, control in enumerate(NULL_SHARES):
        found = reads(Arms(control, 1.0), (), null_trials, SEED + 300 + index)
        null.append({"control_share": control, "false_share": found["verdict_share"]})
    coverage = []
    for index, (control, ratio) in enumerate(EFFECTS):
        arms = Arms(control, ratio)
        found = reads(arms, (ratio,), coverage_trials, SEED + 310 + index)
        coverage.append(
            {
                "control_share": control,
                "true_ratio": ratio,
                "observed_ratio": round(arms.observed_ratio, 4),
                "coverage": found["held"][ratio],
                "verdict_share": found["verdict_share"],
            }
        )
    control, ratio, treated_recall, control_recall = UNEQUAL_RECALL
    arms = Arms(control, ratio, (treated_recall, control_recall))
    observed = round(arms.observed_ratio, 4)
    found = reads(arms, (observed, ratio), coverage_trials, SEED + 320)
    lowest = min(each["coverage"] for each in coverage)
    worst = max(each["false_share"] for each in null)
    return {
        "horizon": HORIZON,
        "share": SHARE,
        "summarised": SUMMARISED,
        "recall": RECALL,
        "null_trials": null_trials,
        "coverage_trials": coverage_trials,
        "null": null,
        "coverage": coverage,
        "unequal_recall": {
            "control_share": control,
            "true_ratio": ratio,
            "recall": [treated_recall, control_recall],
            "observed_ratio": observed,
            "coverage_observed": found["held"][observed],
            "coverage_true": found["held"][ratio],
        },
        "goal_coverage_min": GOAL_COVERAGE_MIN,
        "goal_false_max": GOAL_FALSE_MAX,
        "met": lowest >= GOAL_COVERAGE_MIN and worst <= GOAL_FALSE_MAX,
    }
