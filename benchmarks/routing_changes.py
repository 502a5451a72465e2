"""The selection report when things change, on seeded simulations with known truth: a
step drift and a linear trend (are its recommendations right for the current period?), a
version change with a share change plus drift (do its intervals cover the window's
average?), a target added mid-window (do they cover, and is a truly better change still
found?), and the paired difference at 50, 100 and 300 explored sessions (does a served
interval cover?). Each scenario is judged by the report's own pure functions
(`functions.agentconnect.report.assess`), over the explored sessions alone: they are all
the estimates read."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, cast

from benchmarks.routing import ABNORMAL, DEFAULT, PLANNED, SELECTION, STRONG, Context, _context

SEED = 20261205
REPLICATIONS = 200
SESSIONS = 10_000
DRIFT_SESSIONS = 30_000
"""Sessions of the drift and new-target scenarios: enough for a change to be found."""
TRUTH_CONTEXTS = 20_000
TIME_POINTS = 40
"""Points a period's average over time is taken at."""
WINDOW_START = datetime(2026, 11, 1, tzinfo=UTC)
WINDOW = timedelta(days=30)
PAIRED_SIZES = (50, 100, 300)
PAIRED_REPLICATIONS = 1_000

NEW = {**DEFAULT, "model": "pro", "effort": "medium"}
"""The target a version added mid-window adds."""

Chance = Callable[[str, bool, float], float]
"""(target kind, hard task, time in [0, 1)) -> the chance of an abnormal end."""

STATIONARY = {**ABNORMAL, ("new", False): 0.08, ("new", True): 0.20}


OUTAGE = 0.9
"""The strong target's abnormal-end chance in the drifts' first half, or at their start."""


def _stationary(kind: str, hard: bool, _time: float) -> float:
    return STATIONARY[(kind, hard)]


def _step(kind: str, hard: bool, time: float) -> float:
    """The strong target failing in the first half of the window (a model outage, fixed
    since): abnormal at OUTAGE whatever the task, then as stationary."""
    if kind == "strong" and time < 0.5:
        return OUTAGE
    return STATIONARY[(kind, hard)]


def _trend(kind: str, hard: bool, time: float) -> float:
    """The strong target improving steadily: abnormal at OUTAGE at the window's start, its
    stationary chance at the end."""
    if kind == "strong":
        return OUTAGE + (STATIONARY[(kind, hard)] - OUTAGE) * time
    return STATIONARY[(kind, hard)]


def _default_worse(kind: str, hard: bool, time: float) -> float:
    """The default target worse in the second half (its model updated): +0.15."""
    base = STATIONARY[(kind, hard)]
    return base + 0.15 if kind == "default" and time >= 0.5 else base


def _kind(target: dict[str, Any]) -> str:
    if target["model"] == NEW["model"] and target["effort"] == NEW["effort"]:
        return "new"
    if target["model"] == STRONG["model"]:
        return "strong"
    return "planned" if target["runtime"] == PLANNED["runtime"] else "default"


def _with(threshold: float | None = None, share: float = 0.1, new: bool = False) -> Any:
    """The bench's selection with its first threshold, exploration share and, when
    `new`, a second rule on the size step that gives the NEW target."""
    selection = json.loads(json.dumps(SELECTION))
    if threshold is not None:
        selection["decision"]["rules"][0]["when"]["thresholds"]["true"] = threshold
    selection["exploration"] = {"share": share}
    if new:
        selection["steps"][0]["rules"].append(
            {
                "model": NEW["model"],
                "effort": NEW["effort"],
                "when": {"type": "choice", "thresholds": {"small": 0.7}},
            }
        )
    return selection


@dataclass(frozen=True)
class Period:
    """A version in force from `start` (a time in [0, 1)) to the next period's start."""

    start: float
    version: int
    selection: Any


@dataclass(frozen=True)
class Scenario:
    name: str
    periods: tuple[Period, ...]
    chance: Chance
    said: str
    sessions: int = SESSIONS

    @property
    def current(self) -> Any:
        return self.periods[-1].selection

    def period_at(self, time: float) -> Period:
        return [p for p in self.periods if p.start <= time][-1]

    def spans(self, start: float, end: float) -> list[tuple[Period, float, float]]:
        """Each period's part of [start, end)."""
        found = []
        for index, period in enumerate(self.periods):
            stop = self.periods[index + 1].start if index + 1 < len(self.periods) else 1.0
            low, high = max(start, period.start), min(end, stop)
            if high > low:
                found.append((period, low, high))
        return found


SCENARIOS = (
    Scenario(
        "step_drift",
        (Period(0.0, 1, _with()),),
        _step,
        f"the strong target ends abnormally at {OUTAGE} in the first half, as stationary after",
        DRIFT_SESSIONS,
    ),
    Scenario(
        "linear_trend",
        (Period(0.0, 1, _with()),),
        _trend,
        f"the strong target's abnormal-end chance falls linearly from {OUTAGE} to its "
        "stationary value over the window",
        DRIFT_SESSIONS,
    ),
    Scenario(
        "version_share_drift",
        (Period(0.0, 1, _with(share=0.2)), Period(0.5, 2, _with(threshold=0.7, share=0.05))),
        _default_worse,
        "version 2 mid-window lowers the first threshold to 0.7 and the exploration share "
        "from 0.2 to 0.05; the default target ends abnormally 0.15 more often from then",
    ),
    Scenario(
        "target_added",
        (Period(0.0, 1, _with(threshold=0.95)), Period(0.5, 2, _with(threshold=0.95, new=True))),
        _stationary,
        "version 2 mid-window adds a rule giving a new target (better than the default); "
        "the first threshold 0.95 is too high, so lowering it is truly better",
        DRIFT_SESSIONS,
    ),
)


STATIONARY_SCENARIO = Scenario("stationary", (Period(0.0, 1, _with()),), _stationary, "")
NAMED = {s.name: s for s in (*SCENARIOS, STATIONARY_SCENARIO)}


def _explored_sessions(scenario: Scenario, rng: random.Random, sessions: int) -> list[Any]:
    """The explored, joined sessions of one window: each session explores at its
    version's share and draws among its candidates; only those are simulated further."""
    from functions.agentconnect.report import Explored
    from functions.agentconnect.selection import choice_of, draw_candidates, target_key
    from functions.loop.estimators import Logged

    found = []
    for index in range(sessions):
        time = index / sessions
        period = scenario.period_at(time)
        share = period.selection["exploration"]["share"]
        if rng.random() >= share:
            continue
        context = _context(rng)
        chosen = choice_of(period.selection, context.answers)
        assert chosen is not None  # noqa: S101 - every step is answered
        candidates = draw_candidates(period.selection, chosen.target)
        target = rng.choice(candidates)
        ended = int(rng.random() < scenario.chance(_kind(cast(Any, target)), context.hard, time))
        found.append(
            Explored(
                Logged(target_key(target), share / len(candidates), ended, share),
                cast(Any, context.answers),
                frozenset(target_key(c) for c in candidates),
                period.version,
                WINDOW_START + WINDOW * time,
            )
        )
    return found


@dataclass(frozen=True)
class Policies:
    """Per truth context, what each policy (the current rules, then each threshold change)
    gives, and whether each version could have drawn it."""

    contexts: list[Context]
    kinds: list[list[str]]
    """kinds[policy][context]"""
    drawable: dict[int, list[list[bool]]]
    """drawable[version][policy][context]"""


@cache
def _policies(scenario_name: str) -> Policies:
    from functions.agentconnect.selection import (
        changed,
        choice_of,
        draw_candidates,
        target_key,
        threshold_changes,
    )

    scenario = NAMED[scenario_name]
    rng = random.Random(SEED + 7)  # noqa: S311 - a seeded simulation
    contexts = [_context(rng) for _ in range(TRUTH_CONTEXTS)]
    current = scenario.current
    rules = [current, *(changed(current, c) for c in threshold_changes(current))]
    targets = [
        [cast(Any, choice_of(policy, cast(Any, c.answers))).target for c in contexts]
        for policy in rules
    ]
    drawable: dict[int, list[list[bool]]] = {}
    for period in scenario.periods:
        own = [
            {
                target_key(t)
                for t in draw_candidates(
                    period.selection,
                    cast(Any, choice_of(period.selection, cast(Any, c.answers))).target,
                )
            }
            for c in contexts
        ]
        drawable[period.version] = [
            [target_key(t) in own[i] for i, t in enumerate(row)] for row in targets
        ]
    kinds = [[_kind(cast(Any, t)) for t in row] for row in targets]
    return Policies(contexts, kinds, drawable)


def _averaged(scenario: Scenario, start: float, end: float) -> list[tuple[Period, float, Any]]:
    """Each period's weight in [start, end), and its chance averaged over that part."""
    found = []
    for period, low, high in scenario.spans(start, end):
        times = [low + (high - low) * (k + 0.5) / TIME_POINTS for k in range(TIME_POINTS)]
        average = {
            (kind, hard): sum(scenario.chance(kind, hard, t) for t in times) / len(times)
            for kind in ("strong", "default", "planned", "new")
            for hard in (False, True)
        }
        found.append((period, high - low, average))
    return found


@cache
def _truths(scenario_name: str, start: float, end: float) -> tuple[list[float], list[float]]:
    """Over sessions started in [start, end): each policy's abnormal-end share over the
    sessions that could have drawn its choice, and each change's difference from the
    current rules over the sessions that could have drawn both."""
    scenario = NAMED[scenario_name]
    table = _policies(scenario_name)
    parts = _averaged(scenario, start, end)
    values, differences = [], []
    for policy, kinds in enumerate(table.kinds):
        total = weight = gap = gap_weight = 0.0
        for period, share, average in parts:
            can = table.drawable[period.version]
            for i, context in enumerate(table.contexts):
                if not can[policy][i]:
                    continue
                chance = average[(kinds[i], context.hard)]
                total += share * chance
                weight += share
                if can[0][i]:
                    gap += share * (chance - average[(table.kinds[0][i], context.hard)])
                    gap_weight += share
        values.append(total / weight if weight else float("nan"))
        differences.append(gap / gap_weight if gap_weight else float("nan"))
    return values, differences


def _everyone(scenario: Scenario) -> float:
    """The current rules' true window average over every session, drawable or not."""
    table = _policies(scenario.name)
    total = 0.0
    for _period, share, average in _averaged(scenario, 0.0, 1.0):
        total += share * sum(
            average[(table.kinds[0][i], c.hard)] for i, c in enumerate(table.contexts)
        )
    return total / len(table.contexts)


@cache
def _now(scenario_name: str) -> list[float]:
    """Each change's true difference from the current rules at the window's end, over
    every session: below 0 is better now."""
    scenario = NAMED[scenario_name]
    table = _policies(scenario_name)
    end = 1 - 1e-9
    gaps = []
    for kinds in table.kinds:
        gap = sum(
            scenario.chance(kinds[i], c.hard, end) - scenario.chance(table.kinds[0][i], c.hard, end)
            for i, c in enumerate(table.contexts)
        )
        gaps.append(gap / len(table.contexts))
    return gaps


def _covered(found: list[tuple[float, float, float]]) -> float | None:
    inside = sum(1 for low, high, truth in found if low <= truth <= high)
    return round(inside / len(found), 4) if found else None


def _index(current: Any, change: Any) -> int:
    from functions.agentconnect.selection import threshold_changes

    return 1 + threshold_changes(current).index(change)


@dataclass
class Covered:
    """Intervals served against their truths: estimates and differences."""

    estimates: list[tuple[float, float, float]] = field(default_factory=list)
    differences: list[tuple[float, float, float]] = field(default_factory=list)

    def add(self, found: Any, values: list[float], gaps: list[float], current: Any) -> None:
        """Every served interval of the report's `Estimates` against the truths."""
        from functions.agentconnect.report import MIN_MATCHED

        first = found.current.estimate
        if first.low is not None and first.high is not None:
            self.estimates.append((first.low, first.high, values[0]))
        for candidate in found.candidates:
            index = _index(current, candidate.change)
            estimate = candidate.weights.estimate
            if (
                estimate.matched >= MIN_MATCHED
                and estimate.low is not None
                and estimate.high is not None
            ):
                self.estimates.append((estimate.low, estimate.high, values[index]))
            if candidate.difference is not None:
                gap = candidate.difference
                self.differences.append((gap.low, gap.high, gaps[index]))


def _scenario(scenario: Scenario, replications: int) -> dict[str, Any]:
    from functions.agentconnect.report import assess, recommended

    rng = random.Random(f"{SEED}:{scenario.name}")  # noqa: S311 - a seeded simulation
    split = WINDOW_START + WINDOW / 2
    window_values, window_gaps = _truths(scenario.name, 0.0, 1.0)
    recent_values, recent_gaps = _truths(scenario.name, 0.5, 1.0)
    now = _now(scenario.name)
    truly_better_now = [i for i, gap in enumerate(now) if i and gap < 0]
    whole, recent = Covered(), Covered()
    current: list[tuple[float, float, float]] = []
    by_candidates: list[tuple[float, float, float]] = []
    harms: list[float] = []
    count = dict.fromkeys(
        ("explored", "unsupported", "drifted", "made", "wrong", "found", "alone", "alone_wrong"),
        0,
    )
    for _ in range(replications):
        sessions = _explored_sessions(scenario, rng, scenario.sessions)
        count["explored"] += len(sessions)
        found = assess(scenario.current, sessions, split)
        if found.whole is None or found.drift is None:
            continue
        count["drifted"] += found.drift.drifted
        count["unsupported"] += found.whole.unsupported
        first = found.whole.current.estimate
        if first.low is not None and first.high is not None:
            current.append((first.low, first.high, window_values[0]))
        if len(scenario.periods) > 1:
            by_candidates.append(_by_candidates_alone(scenario, sessions, window_values[0]))
        whole.add(found.whole, window_values, window_gaps, scenario.current)
        if found.recent is not None:
            recent.add(found.recent, recent_values, recent_gaps, scenario.current)
        best = found.recommended
        if best is not None:
            index = _index(scenario.current, best.change)
            count["made"] += 1
            count["wrong"] += now[index] >= 0
            harms.append(now[index])
            count["found"] += index in truly_better_now
        alone = recommended(found.whole)
        if alone is not None:
            count["alone"] += 1
            count["alone_wrong"] += now[_index(scenario.current, alone.change)] >= 0
    return {
        "said": scenario.said,
        "replications": replications,
        "sessions_per_replication": scenario.sessions,
        "explored_per_replication": round(count["explored"] / replications, 1),
        "versions": [
            {"version": p.version, "from": p.start, "share": p.selection["exploration"]["share"]}
            for p in scenario.periods
        ],
        "coverage_of_the_window_average": {
            "current_rules": _covered(current),
            "current_rules_weighted_by_candidates_alone": _covered(by_candidates),
            "every_served_estimate": _covered(whole.estimates),
            "served_estimates": len(whole.estimates),
            "every_served_difference": _covered(whole.differences),
            "served_differences": len(whole.differences),
        },
        "coverage_of_the_recent_half": {
            "every_served_estimate": _covered(recent.estimates),
            "served_estimates": len(recent.estimates),
            "every_served_difference": _covered(recent.differences),
            "served_differences": len(recent.differences),
        },
        "halves_disagreed": count["drifted"],
        "current_rules_truth": {
            "supported": round(window_values[0], 4),
            "every_session": round(_everyone(scenario), 4),
        },
        "unsupported_per_replication": round(count["unsupported"] / replications, 1),
        "changes_truly_better_now": len(truly_better_now),
        "recommendations": {
            "made": count["made"],
            "wrong_for_the_current_period": count["wrong"],
            "wrong_share": round(count["wrong"] / count["made"], 4) if count["made"] else None,
            "wrong_per_replication": round(count["wrong"] / replications, 4),
            "largest_true_difference_now": round(max(harms), 4) if harms else None,
            "truly_better_now_found": count["found"],
        },
        "on_the_window_alone": {
            "made": count["alone"],
            "wrong_for_the_current_period": count["alone_wrong"],
        },
    }


def _by_candidates_alone(
    scenario: Scenario, sessions: list[Any], truth: float
) -> tuple[float, float, float]:
    """The current rules' interval as the report served it before: each session weighted
    by its number of candidates alone, whatever its version's share."""
    from functions.agentconnect.report import judged
    from functions.loop.estimators import Logged, weighted

    logged = [
        Logged(s.logged.target, s.logged.propensity / s.logged.sampled, s.logged.abnormal)
        for s in sessions
    ]
    found = weighted(logged, judged(scenario.current, sessions).chosen).estimate
    return (found.low or 0.0, found.high or 0.0, truth)


def _paired(size: int, replications: int) -> dict[str, Any]:
    """Exactly `size` explored sessions of the stationary scenario; every change's
    difference from the current rules at the nominal 95% level (z 1.96, not the
    Bonferroni level the report serves, which is wider), against its truth."""
    from functions.agentconnect.report import judged
    from functions.agentconnect.selection import changed, threshold_changes
    from functions.loop.estimators import Z_95, bonferroni_z, difference

    scenario = STATIONARY_SCENARIO
    rng = random.Random(f"{SEED}:paired:{size}")  # noqa: S311 - a seeded simulation
    _values, gaps = _truths(scenario.name, 0.0, 1.0)
    current = scenario.current
    changes = threshold_changes(current)
    z_served = bonferroni_z(len(changes))
    nominal: list[tuple[float, float, float]] = []
    served: list[tuple[float, float, float]] = []
    by_change: dict[int, list[tuple[float, float, float]]] = {}
    tried = zero_width = 0
    for _ in range(replications):
        sessions: list[Any] = []
        while len(sessions) < size:
            sessions += _explored_sessions(scenario, rng, 2 * size * 10)
        sessions = sessions[:size]
        logged = [s.logged for s in sessions]
        now = judged(current, sessions).chosen
        for index, change in enumerate(changes, start=1):
            chosen = judged(changed(current, change), sessions).chosen
            tried += 1
            found = difference(logged, chosen, now, Z_95)
            if found is not None:
                zero_width += found.low == found.high
                nominal.append((found.low, found.high, gaps[index]))
                by_change.setdefault(index, []).append(nominal[-1])
            wide = difference(logged, chosen, now, z_served)
            if wide is not None:
                served.append((wide.low, wide.high, gaps[index]))
    return {
        "explored_sessions": size,
        "replications": replications,
        "differences_tried": tried,
        "served": len(nominal),
        "zero_width": zero_width,
        "coverage_at_95": _covered(nominal),
        "lowest_coverage_of_one_change_at_95": min(
            (_covered(found) or 0.0 for found in by_change.values()), default=None
        ),
        "coverage_at_the_served_bonferroni_level": _covered(served),
    }


def changes(
    replications: int = REPLICATIONS, paired_replications: int = PAIRED_REPLICATIONS
) -> dict[str, Any]:
    return {
        "scenarios": {s.name: _scenario(s, replications) for s in SCENARIOS},
        "paired_difference": [_paired(size, paired_replications) for size in PAIRED_SIZES],
    }


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def lines(routing: dict[str, Any]) -> list[str]:
    """The scenarios as the bench prints them, beside the stationary figures."""
    found, stationary = routing["changes"], routing["simulation"]
    said = [
        f"  stationary: the halves disagreed (a false alarm) in "
        f"{stationary.get('halves_disagreed', 'n/a')} of {stationary['replications']}",
        "  when things change (benchmarks/routing_changes.py):",
    ]
    for name, row in found["scenarios"].items():
        window, recent = row["coverage_of_the_window_average"], row["coverage_of_the_recent_half"]
        made = row["recommendations"]
        alone = row["on_the_window_alone"]
        said += [
            f"    {name}: {row['said']}; {row['replications']} replications of "
            f"{row['sessions_per_replication']:,} sessions ({row['explored_per_replication']:.0f}"
            " explored each)",
            f"      coverage of the window's average (goal at least 93%): current rules "
            f"{_share(window['current_rules'])} (weighted by candidates alone, as before: "
            f"{_share(window['current_rules_weighted_by_candidates_alone'])}); every served "
            f"estimate {_share(window['every_served_estimate'])} of "
            f"{window['served_estimates']}; every served difference "
            f"{_share(window['every_served_difference'])} of {window['served_differences']}",
            f"      halves disagreed in {row['halves_disagreed']}; recent half alone: every "
            f"served estimate {_share(recent['every_served_estimate'])} of "
            f"{recent['served_estimates']}, difference {_share(recent['every_served_difference'])}"
            f" of {recent['served_differences']}; sessions unsupported by the current rules "
            f"{row['unsupported_per_replication']:.0f} a replication (the current rules' true "
            f"share over the sessions that could draw their choice "
            f"{row['current_rules_truth']['supported']:.4f}, over every session "
            f"{row['current_rules_truth']['every_session']:.4f})",
            f"      recommendations (goal: at most 5% wrong for the current period): "
            f"{made['made']} made, {made['wrong_for_the_current_period']} wrong "
            f"({_share(made['wrong_share'])} of those made, "
            f"{_share(made['wrong_per_replication'])} of replications; the largest true "
            f"difference now of one made {made['largest_true_difference_now']}), "
            f"{made['truly_better_now_found']} a change truly better now "
            f"({row['changes_truly_better_now']} exist); on the window alone, as before: "
            f"{alone['made']} made, {alone['wrong_for_the_current_period']} wrong",
        ]
    said.append(
        "    paired difference, every change against the current rules (goal at least 93%, "
        "or not served):"
    )
    for row in found["paired_difference"]:
        said.append(
            f"      {row['explored_sessions']} explored: {row['served']} of "
            f"{row['differences_tried']} served, {row['zero_width']} of zero width; coverage at "
            f"95% {_share(row['coverage_at_95'])} (lowest of one change "
            f"{_share(row['lowest_coverage_of_one_change_at_95'])}), at the served Bonferroni "
            f"level {_share(row['coverage_at_the_served_bonferroni_level'])}"
        )
    return said
