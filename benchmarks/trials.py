"""Randomised trials under continuous monitoring, on simulated sessions with known truth:
the verdict the effect read serves (`functions.outcomes.trials.verdict_of`, an asymptotic
confidence sequence on the risk ratio) read after every 10 sessions.

With no true difference, how many of 1,000 trials ever read `improved` or `worse` (goal at
most 5 %); with a true risk ratio of 0.6 at a 30 % control share, how many read `improved`
by the `sessionsNeeded` the read itself gives for that ratio (goal at least 80 %)."""

from __future__ import annotations

import random
from typing import Any

TRIALS = 1_000
CONTROL_SHARE = 0.3
TRUE_RATIO = 0.6
TREATED_SHARE = 0.5
LOOK_EVERY = 10
NULL_HORIZON = 2_000
SEED = 20261202


def _monitored(rng: random.Random, treated_chance: float, horizon: int, wanted: set[str]) -> bool:
    """Whether a trial of `horizon` sessions, read after every LOOK_EVERY, ever reads one
    of `wanted`."""
    from functions.outcomes.trials import verdict_of

    treated = treated_n = control = control_n = 0
    for session in range(1, horizon + 1):
        if rng.random() < TREATED_SHARE:
            treated_n += 1
            treated += rng.random() < treated_chance
        else:
            control_n += 1
            control += rng.random() < CONTROL_SHARE
        if session % LOOK_EVERY == 0:
            verdict, _ = verdict_of(treated, treated_n, control, control_n)
            if verdict in wanted:
                return True
    return False


def trials(count: int = TRIALS) -> dict[str, Any]:
    from functions.outcomes.estimators import sessions_needed

    rng = random.Random(SEED)  # noqa: S311 - a seeded simulation
    false = sum(
        _monitored(rng, CONTROL_SHARE, NULL_HORIZON, {"improved", "worse"}) for _ in range(count)
    )
    needed = sessions_needed(CONTROL_SHARE, TRUE_RATIO, TREATED_SHARE)
    if needed is None:
        raise ValueError("the simulated effect has no sessionsNeeded")
    treated_chance = CONTROL_SHARE * TRUE_RATIO
    detected = sum(_monitored(rng, treated_chance, needed, {"improved"}) for _ in range(count))
    return {
        "trials": count,
        "look_every": LOOK_EVERY,
        "null": {
            "horizon": NULL_HORIZON,
            "control_share": CONTROL_SHARE,
            "false_verdicts": false,
            "false_share": round(false / count, 4),
        },
        "effect": {
            "true_ratio": TRUE_RATIO,
            "control_share": CONTROL_SHARE,
            "sessions_needed": needed,
            "detected": detected,
            "detected_share": round(detected / count, 4),
        },
    }
