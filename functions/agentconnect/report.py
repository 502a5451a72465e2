"""The selection report: how the sessions each chosen target led to ended, and what
other thresholds would have given.

Counted, never scanned: each target's sessions, abnormal ends and signal kinds, and how
often each route (a rule on a step's answer, the default, a fallback, a draw) led to it,
are aggregation queries over the outcome records of the project the agent's link names
(the join made when the session froze and when its log ended, `functions/loop`).
Started sessions are counted over the agent's frozen evaluations. The only records read
are the explored ones, which the off-policy estimates need one by one, at most
EXPLORED_READ of them, newest first. Round trips: the agent, then the versions decided
under and the link's author, then every count and the explored records at once (and
only when an explored record names a version older than those, that version).

Shares carry Wilson's 95 % interval; estimates are SNIPW over explored sessions
(`functions.loop.estimators`), each weighted by its own version's propensity, and
each policy over the sessions that could have drawn its choice. They are the window's
average: the pure `assess` compares each drawn target's older and newer halves, and when
they disagree beyond chance judges the recent half alone. A threshold change is
recommended only when the whole paired interval of its difference from the current rules
lies below zero, at a Bonferroni level over the changes tried. Each explored record keeps
its version (`Read`, `Explored`), so a grouping by another of its fields (the
instructions version) is a filter over the same list before `assess`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.agentconnect import store
from functions.agentconnect.documents import (
    Agent,
    DifferenceView,
    DriftView,
    EstimatesView,
    EstimateView,
    ExploredVersion,
    MeanView,
    Selection,
    ShareRead,
    SpentView,
    StoredSelection,
    Target,
    TargetReport,
    VersionReport,
)
from functions.agentconnect.outcomes import HAND_STARTED_KEY
from functions.agentconnect.requests import ReportParams
from functions.agentconnect.selection import (
    DEFAULT_ROUTE,
    EXPLORED_ROUTE,
    FALLBACK_ROUTE,
    ThresholdChange,
    changed,
    choice_of,
    route_of_threshold,
    steps_of,
    target_key,
    target_of,
    threshold_changes,
)
from functions.agentconnect.views import author_can_view
from functions.loop import store as outcome_store
from functions.loop.documents import SIGNAL_KINDS, OutcomeSource, StepAnswer, StoredInstructions
from functions.loop.estimators import (
    Difference,
    Estimate,
    Logged,
    Share,
    Weighted,
    bonferroni_z,
    difference,
    rounded,
    share_difference,
    weighted,
    weighted_share,
    wilson,
)
from functions.loop.instructions import instructions
from functions.loop.means import Mean, Sums, mean_interval
from shared.errors import ApiError, ErrorCode, not_found
from shared.http import Call, Reply
from shared.retention import iso, parse_instant, utcnow
from shared.store import counted, read_as, read_fields, stream_as

REPORT_WINDOW = timedelta(days=30)
MIN_EXPLORED = 30
"""Explored, joined sessions needed before any off-policy estimate is served."""
MIN_MATCHED = 10
"""Explored sessions a policy must match (would have drawn the same) for its estimate."""
EXPLORED_READ = 5_000
VERSIONS_READ = 20
"""Selection versions a window's targets are taken from, newest first."""
MAX_TARGETS = 50
MAX_ROUTES = 200
PARALLEL_QUERIES = 16
FROZEN = "frozen"
SELECTION = outcome_store.SELECTION
METHOD = (
    "Shares of joined sessions with Wilson 95% intervals. Off-policy estimates of the "
    "window's average (not today's): self-normalised inverse propensity weighting (SNIPW) "
    "over explored sessions, each weighted by its own version's propensity (the number of "
    "targets it was drawn among over its version's exploration share) when the policy "
    "would have drawn the same, with a delta-method variance and Wilson's interval at the "
    "effective size it implies. A change is compared with the current rules over the "
    "sessions both can be judged on: 0 where they decide alike, and where they differ a "
    "randomised trial read with Newcombe's interval, scaled by the share that differ; it "
    "is better when that interval (Bonferroni over the changes tried) lies below zero. "
    "Each target drawn is compared between the older and the newer half of the window; "
    "when they disagree beyond chance, nothing is recommended on the window, and the "
    "recent half is estimated alone."
)
CAVEATS = [
    "A target's shares are associations: the rules give targets to different tasks, so "
    "its sessions differ from another target's in more than the target. Only the "
    "off-policy estimates, from sessions whose target was drawn at random, compare "
    "policies on like sessions.",
    "A session is joined only when the linked project logged and ended it under the same "
    "session id and agent name: sessions logged elsewhere, under another name or not yet "
    "ended are counted as not joined, never guessed.",
    "An explored session counts toward a policy only when the policy decides it from the "
    "answers recorded (a step added since cannot) and would have drawn the target it got.",
    "Sessions under one instructions version against another (byInstructions) are an "
    "association over time: the trial that made a version holds its randomised result.",
    "Every estimate is the window's average: a change in models, tasks or targets within "
    "the window is seen only as far as its older and newer halves differ beyond chance, "
    "target by target; a drift smaller than that, one within a half, or one that moves "
    "every target alike, is not told apart from chance.",
]


@dataclass(frozen=True)
class Window:
    since: datetime
    until: datetime


def _window(params: ReportParams) -> Window:
    until = parse_instant(params["until"]) if "until" in params else utcnow()
    since = parse_instant(params["since"]) if "since" in params else until - REPORT_WINDOW
    if since >= until:
        raise ApiError(ErrorCode.INVALID_REQUEST, "The window's since must come before its until.")
    return Window(since, until)


def _versions_in(org_id: str, agent_id: str, window: Window) -> list[StoredSelection]:
    """The selection versions sessions started in the window were decided under, oldest
    first: those created in it and the one in force when it began."""
    query = (
        store.selections(org_id, agent_id)
        .where(filter=FieldFilter("created_at", "<", window.until))
        .order_by("created_at", direction=firestore.Query.DESCENDING)
        .limit(VERSIONS_READ)
    )
    found: list[StoredSelection] = []
    for version in stream_as(query, StoredSelection).values():
        found.append(version)
        if version["created_at"] <= window.since:
            break
    return found[::-1]


def _instructions_in(org_id: str, agent_id: str, window: Window) -> list[int | None]:
    """The instructions versions sessions started in the window may have been served,
    oldest first: those made in it and the one in force when it began (None when none
    was, or the first came within it)."""
    query = (
        instructions(org_id, agent_id)
        .where(filter=FieldFilter("created_at", "<", window.until))
        .order_by("created_at", direction=firestore.Query.DESCENDING)
        .limit(VERSIONS_READ)
    )
    found: list[int | None] = []
    for version in stream_as(query, StoredInstructions).values():
        found.append(version["version"])
        if version["created_at"] <= window.since:
            return found[::-1]
    return [None, *found[::-1]]


def _by_instructions(base: Any, versions: list[int | None], keys: list[str]) -> list[VersionReport]:
    """Per instructions version, and per target within it, the joined sessions and their
    abnormal ends: two aggregations each, all at once."""
    cells = [(version, key) for version in versions for key in (None, *keys)]
    tasks: list[Callable[[], Any]] = []
    for version, key in cells:
        query = base.where(filter=FieldFilter(f"{SELECTION}.instructions_version", "==", version))
        if key is not None:
            query = query.where(filter=FieldFilter(f"{SELECTION}.target_key", "==", key))
        tasks += [
            _count_of(query.where(filter=FieldFilter("abnormal_end", "in", [0, 1]))),
            _count_of(query.where(filter=FieldFilter("abnormal_end", "==", 1))),
        ]
    found = _in_parallel(tasks)
    shares = {
        cell: wilson(found[2 * index + 1], found[2 * index]) for index, cell in enumerate(cells)
    }
    return [
        {
            "version": version,
            "sessions": shares[version, None].sessions,
            "abnormalEnds": _share_view(shares[version, None]),
            "targets": [
                {
                    "targetKey": key,
                    "sessions": shares[version, key].sessions,
                    "abnormalEnds": _share_view(shares[version, key]),
                }
                for key in keys
                if shares[version, key].sessions
            ],
        }
        for version in versions
        if shares[version, None].sessions
    ]


def _routes(selection: Selection) -> dict[tuple[str, str], Target]:
    """Every (target, route) the selection can lead to, with the target."""
    default = selection["default"]
    found: dict[tuple[str, str], Target] = {}
    for step in steps_of(selection):
        for index, rule in enumerate(step.rules, start=1):
            target = target_of(rule, default)
            for value in rule["when"]["thresholds"]:
                found[(target_key(target), route_of_threshold(step, index, value))] = target
    for route in (DEFAULT_ROUTE, FALLBACK_ROUTE):
        found[(target_key(default), route)] = default
    if selection.get("exploration"):
        for target in list(found.values()):
            found[(target_key(target), EXPLORED_ROUTE)] = target
    return found


def _recorded(source: OutcomeSource, org_id: str, agent_id: str, window: Window) -> Any:
    return (
        outcome_store.outcomes(source["project_id"])
        .where(filter=FieldFilter(f"{SELECTION}.org_id", "==", org_id))
        .where(filter=FieldFilter(f"{SELECTION}.agent_id", "==", agent_id))
        .where(filter=FieldFilter(f"{SELECTION}.started_at", ">=", window.since))
        .where(filter=FieldFilter(f"{SELECTION}.started_at", "<", window.until))
    )


def _target_queries(base: Any, key: str) -> list[Any]:
    """A target's recorded sessions, joined ones, abnormal ends and each signal kind."""
    of_target = base.where(filter=FieldFilter(f"{SELECTION}.target_key", "==", key))
    return [
        of_target,
        of_target.where(filter=FieldFilter("abnormal_end", "in", [0, 1])),
        of_target.where(filter=FieldFilter("abnormal_end", "==", 1)),
        *(
            of_target.where(filter=FieldFilter("signal_kinds", "array_contains", kind))
            for kind in SIGNAL_KINDS
        ),
    ]


PER_TARGET = 3 + len(SIGNAL_KINDS)


def _explored_query(base: Any) -> Any:
    return (
        base.where(filter=FieldFilter(f"{SELECTION}.explored", "==", True))
        .where(filter=FieldFilter("abnormal_end", "in", [0, 1]))
        .order_by(f"{SELECTION}.started_at", direction=firestore.Query.DESCENDING)
        .select(
            [
                f"{SELECTION}.target_key",
                f"{SELECTION}.candidates",
                f"{SELECTION}.candidate_keys",
                f"{SELECTION}.answers",
                f"{SELECTION}.selection_version",
                f"{SELECTION}.started_at",
                "abnormal_end",
            ]
        )
        .limit(EXPLORED_READ)
    )


@dataclass(frozen=True)
class Explored:
    """One explored, joined session as the estimates read it."""

    logged: Logged
    answers: dict[str, StepAnswer]
    drawable: frozenset[str]
    version: int
    started_at: datetime


@dataclass(frozen=True)
class Read:
    """An explored record as stored, before its version's share is known."""

    target_key: str
    candidates: int
    abnormal: int
    answers: dict[str, StepAnswer]
    drawable: frozenset[str]
    version: int
    started_at: datetime

    def explored(self, share: float) -> Explored:
        """Weighted by its own version's propensity: read at its share, drawn among its
        candidates."""
        logged = Logged(self.target_key, share / self.candidates, self.abnormal, share)
        return Explored(logged, self.answers, self.drawable, self.version, self.started_at)


def _explored(query: Any) -> list[Read]:
    found = []
    for snapshot in query.stream():
        fields = read_fields(snapshot) or {}
        choice = fields[SELECTION]
        found.append(
            Read(
                choice["target_key"],
                choice["candidates"],
                fields["abnormal_end"],
                choice["answers"],
                frozenset(choice.get("candidate_keys", ())),
                choice.get("selection_version", 0),
                choice["started_at"],
            )
        )
    return found


def _count_of(query: Any) -> Callable[[], int]:
    return lambda: counted(query)


def _in_parallel(tasks: list[Callable[[], Any]]) -> list[Any]:
    if not tasks:
        return []
    with ThreadPoolExecutor(max_workers=min(PARALLEL_QUERIES, len(tasks))) as pool:
        return list(pool.map(lambda task: task(), tasks))


def _share_view(found: Share) -> ShareRead:
    return {
        "count": found.count,
        "sessions": found.sessions,
        "share": rounded(found.share),
        "low": rounded(found.low),
        "high": rounded(found.high),
    }


def _estimate(found: Estimate) -> EstimateView:
    shown = found.matched >= MIN_MATCHED
    return {
        "abnormalShare": rounded(found.value) if shown else None,
        "low": rounded(found.low) if shown else None,
        "high": rounded(found.high) if shown else None,
        "matched": found.matched,
        "effectiveSessions": round(found.effective, 2),
    }


@dataclass(frozen=True)
class Judged:
    """A policy over the explored sessions: what it would have given each (None when it
    cannot decide from the answers recorded, or would give a target the draw could not)."""

    chosen: list[str | None]
    undetermined: int
    unsupported: int
    """Sessions where it would give a target their draw could not: one above the
    permission mode the rules chose, or one added since. Nothing says how they would
    have ended, so they leave its estimate."""


def judged(selection: Selection, explored: list[Explored]) -> Judged:
    chosen: list[str | None] = []
    undetermined = unsupported = 0
    for each in explored:
        choice = choice_of(selection, each.answers)
        key = None if choice is None else target_key(choice.target)
        undetermined += key is None
        unsupported += key is not None and key not in each.drawable
        chosen.append(key if key in each.drawable else None)
    return Judged(chosen, undetermined, unsupported)


@dataclass(frozen=True)
class Candidate:
    change: ThresholdChange
    weights: Weighted
    unsupported: int
    difference: Difference | None
    """Against the current rules over the sessions both can be judged on, at the
    Bonferroni level; None when not served."""

    @property
    def served(self) -> bool:
        return self.difference is not None

    @property
    def better(self) -> bool:
        return self.difference is not None and self.difference.high < 0


@dataclass(frozen=True)
class Estimates:
    """The current rules and each threshold change, estimated over explored sessions."""

    explored: int
    current: Weighted
    undetermined: int
    unsupported: int
    """Explored sessions that could not have drawn the current rules' choice."""
    candidates: list[Candidate]


def estimate(current: Selection, explored: list[Explored]) -> Estimates:
    """SNIPW estimates of the current rules and of each threshold change, each over the
    explored sessions that could have drawn its choice (served from MIN_MATCHED). A
    change's difference from the current rules is served when both are; it is better
    when that paired difference, over the sessions both can be judged on, lies below zero
    at the Bonferroni level over the changes tried."""
    logged = [each.logged for each in explored]
    now = judged(current, explored)
    now_weights = weighted(logged, now.chosen)
    changes = threshold_changes(current)
    z = bonferroni_z(len(changes))
    candidates = []
    for change in changes:
        policy = judged(changed(current, change), explored)
        weights = weighted(logged, policy.chosen)
        servable = (
            weights.estimate.matched >= MIN_MATCHED and now_weights.estimate.matched >= MIN_MATCHED
        )
        gap = difference(logged, policy.chosen, now.chosen, z) if servable else None
        candidates.append(Candidate(change, weights, policy.unsupported, gap))
    return Estimates(len(explored), now_weights, now.undetermined, now.unsupported, candidates)


@dataclass(frozen=True)
class Shift:
    """One target's abnormal-end share over the explored sessions that drew it, in the
    older and the newer half of the window, and newer minus older."""

    target_key: str
    older: Estimate
    newer: Estimate
    difference: Difference | None

    @property
    def beyond_chance(self) -> bool:
        found = self.difference
        return found is not None and (found.low > 0 or found.high < 0)


@dataclass(frozen=True)
class Drift:
    split: datetime
    older: int
    newer: int
    shifts: list[Shift]

    @property
    def drifted(self) -> bool:
        return any(shift.beyond_chance for shift in self.shifts)


def drift(explored: list[Explored], split: datetime) -> Drift:
    """Each drawn target's share in the older half against the newer, at the Bonferroni
    level over the targets compared (those with MIN_MATCHED sessions in each half);
    Newcombe's interval, as a target drawn at random in both halves is a trial of
    time."""
    halves: dict[str, tuple[list[tuple[float, int]], list[tuple[float, int]]]] = {}
    for each in explored:
        older, newer = halves.setdefault(each.logged.target, ([], []))
        pair = (1 / each.logged.propensity, each.logged.abnormal)
        (newer if each.started_at >= split else older).append(pair)
    compared = {key: pairs for key, pairs in halves.items() if min(map(len, pairs)) >= MIN_MATCHED}
    z = bonferroni_z(len(compared))
    shifts = [
        Shift(key, weighted_share(older), weighted_share(newer), share_difference(newer, older, z))
        for key, (older, newer) in sorted(compared.items())
    ]
    newer_count = sum(each.started_at >= split for each in explored)
    return Drift(split, len(explored) - newer_count, newer_count, shifts)


@dataclass(frozen=True)
class Assessment:
    """What the explored sessions say: estimates over the whole window, the halves'
    comparison, and when they disagree the recent half's own estimates."""

    whole: Estimates | None
    drift: Drift | None
    recent: Estimates | None
    basis: str | None
    """What a recommendation rests on: `window`, `recent_half`, or None (none made)."""

    @property
    def recommended(self) -> Candidate | None:
        return recommended(self.recent if self.basis == RECENT_HALF else self.whole)


WHOLE_WINDOW = "window"
RECENT_HALF = "recent_half"


def assess(current: Selection, explored: list[Explored], split: datetime) -> Assessment:
    """The window's estimates; then, when a target's older and newer halves disagree
    beyond chance, nothing recommended on the window, and the recent half estimated on
    its own when it has MIN_EXPLORED explored sessions."""
    if len(explored) < MIN_EXPLORED:
        return Assessment(None, None, None, None)
    whole = estimate(current, explored)
    shifted = drift(explored, split)
    if not shifted.drifted:
        return Assessment(whole, shifted, None, WHOLE_WINDOW)
    newer = [each for each in explored if each.started_at >= split]
    if len(newer) < MIN_EXPLORED:
        return Assessment(whole, shifted, None, None)
    return Assessment(whole, shifted, estimate(current, newer), RECENT_HALF)


def _difference(found: Difference | None) -> DifferenceView | None:
    if found is None:
        return None
    return {
        "value": round(found.value, 4),
        "low": round(found.low, 4),
        "high": round(found.high, 4),
        "sessions": found.sessions,
        "discordant": found.discordant,
    }


def _estimates_view(found: Estimates) -> EstimatesView:
    return {
        "explored": found.explored,
        "undetermined": found.undetermined,
        "unsupported": found.unsupported,
        "current": _estimate(found.current.estimate),
        "candidates": [
            {
                "change": {
                    "stepId": c.change.step_id,
                    "rule": c.change.rule,
                    "value": c.change.value,
                    "from": c.change.before,
                    "to": c.change.after,
                },
                "estimate": _estimate(c.weights.estimate),
                "unsupported": c.unsupported,
                "difference": _difference(c.difference),
                "better": c.better,
            }
            for c in found.candidates
        ],
    }


def _drift_view(found: Drift) -> DriftView:
    drifted = [shift.target_key for shift in found.shifts if shift.beyond_chance]
    if drifted:
        said = (
            f"The older and newer halves disagree beyond chance for {', '.join(drifted)}: "
            "the window's average is not today's, so nothing is recommended on it."
        )
    elif found.shifts:
        said = "The older and newer halves agree within chance for every target compared."
    else:
        said = "Too few explored sessions in each half to compare them."
    return {
        "status": "drifted" if drifted else "stable" if found.shifts else "not_compared",
        "splitAt": iso(found.split),
        "older": found.older,
        "newer": found.newer,
        "targets": [
            {
                "targetKey": shift.target_key,
                "older": _estimate(shift.older),
                "newer": _estimate(shift.newer),
                "difference": _difference(shift.difference),
                "beyondChance": shift.beyond_chance,
            }
            for shift in found.shifts
        ],
        "said": said,
    }


def _versions_view(explored: list[Explored], shares: dict[int, float]) -> list[ExploredVersion]:
    counted: dict[int, int] = {}
    for each in explored:
        counted[each.version] = counted.get(each.version, 0) + 1
    return [
        {"version": version, "share": shares.get(version, 0.0), "explored": count}
        for version, count in sorted(counted.items())
    ]


def _exploration(
    current: Selection, explored: list[Explored], shares: dict[int, float], split: datetime
) -> tuple[dict[str, Any], Assessment]:
    share = current.get("exploration", {}).get("share", 0.0)
    section: dict[str, Any] = {
        "share": share,
        "status": "off" if share == 0 and not explored else "too_few_explored",
        "explored": len(explored),
        "minimumExplored": MIN_EXPLORED,
        "versions": _versions_view(explored, shares),
        "undetermined": 0,
        "unsupported": 0,
        "current": None,
        "candidates": [],
        "drift": None,
        "recent": None,
    }
    found = assess(current, explored, split)
    if found.whole is None or found.drift is None:
        return section, found
    section |= {
        "status": "estimated",
        **_estimates_view(found.whole),
        "drift": _drift_view(found.drift),
        "recent": _estimates_view(found.recent) if found.recent else None,
    }
    return section, found


def recommended(estimates: Estimates | None) -> Candidate | None:
    """The better change with the lowest estimated abnormal-end share, if any."""
    better = [c for c in estimates.candidates if c.better] if estimates else []
    return min(better, key=lambda c: c.weights.estimate.value or 0.0, default=None)


def _recommendation(
    current: Selection,
    found: Assessment,
    report_id: str,
    generated: datetime,
) -> dict[str, Any] | None:
    best = found.recommended
    if best is None or best.difference is None:
        return None
    gap = best.difference
    over = "the recent half of the window" if found.basis == RECENT_HALF else "the window"
    said = (
        f"{best.change.said()}: abnormal-end share {best.weights.estimate.value:.3f} "
        f"estimated over {over}, {gap.value:+.3f} against the current rules "
        f"(interval {gap.low:+.3f} to {gap.high:+.3f})"
    )
    body = changed(current, best.change)
    body["fromReport"] = {"reportId": report_id, "generatedAt": iso(generated), "change": said}
    return {"change": said, "basis": found.basis, "selection": body}


def _report_id(org_id: str, agent_id: str, window: Window, generated: datetime) -> str:
    seed = f"{org_id}|{agent_id}|{iso(window.since)}|{iso(window.until)}|{iso(generated)}"
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def _started(org_id: str, agent_id: str, window: Window) -> Any:
    return (
        store.evaluations(org_id, agent_id)
        .where(filter=FieldFilter("status", "==", FROZEN))
        .where(filter=FieldFilter("at", ">=", window.since))
        .where(filter=FieldFilter("at", "<", window.until))
    )


def _targets(versions: list[Selection]) -> tuple[dict[str, Target], list[tuple[str, str]]]:
    """The targets and (target, route) pairs the versions can lead to, within the caps."""
    pairs: dict[tuple[str, str], Target] = {}
    for version in versions:
        pairs |= _routes(version)
    targets: dict[str, Target] = {}
    for (key, _route), target in pairs.items():
        if len(targets) < MAX_TARGETS:
            targets.setdefault(key, target)
    routes = [pair for pair in pairs if pair[0] in targets][:MAX_ROUTES]
    return targets, routes


@dataclass
class Counts:
    """What the counts and the explored records came to."""

    started: int = 0
    recorded: int = 0
    hand_started: int = 0
    """Recorded sessions started by hand (their hook registered them): no target applied."""
    by_target: dict[str, list[int]] = field(default_factory=dict)
    by_route: dict[tuple[str, str], int] = field(default_factory=dict)
    spent: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per target, the sums over its joined sessions whose tokens were reported."""
    explored: list[Read] = field(default_factory=list)


def _counts(
    org_id: str,
    agent_id: str,
    window: Window,
    source: OutcomeSource | None,
    paths: tuple[dict[str, Target], list[tuple[str, str]]],
) -> Counts:
    """Every count at once: started sessions, and through a readable link the recorded
    ones, each target's and each route's, and the explored records."""
    targets, routes = paths
    started_query = _started(org_id, agent_id, window)
    tasks: list[Callable[[], Any]] = [_count_of(started_query)]
    if source is not None:
        base = _recorded(source, org_id, agent_id, window)
        tasks.append(_count_of(base))
        by_hand = base.where(filter=FieldFilter(f"{SELECTION}.target_key", "==", HAND_STARTED_KEY))
        tasks.append(_count_of(by_hand))
        tasks += [_count_of(q) for key in targets for q in _target_queries(base, key)]
        tasks += [
            _count_of(
                base.where(filter=FieldFilter(f"{SELECTION}.target_key", "==", key)).where(
                    filter=FieldFilter(f"{SELECTION}.route", "==", route)
                )
            )
            for key, route in routes
        ]
        tasks += [_sums_of(_spent_query(base, key)) for key in targets]
        explored_query = _explored_query(base)
        tasks.append(lambda: _explored(explored_query))
    found = _in_parallel(tasks)
    if source is None:
        return Counts(started=found[0])
    routes_start = 3 + PER_TARGET * len(targets)
    spent_start = routes_start + len(routes)
    cells = found[3:routes_start]
    return Counts(
        started=found[0],
        recorded=found[1],
        hand_started=found[2],
        by_target={
            key: cells[index * PER_TARGET : (index + 1) * PER_TARGET]
            for index, key in enumerate(targets)
        },
        by_route=dict(zip(routes, found[routes_start:spent_start], strict=True)),
        spent=dict(zip(targets, found[spent_start:-1], strict=True)),
        explored=found[-1],
    )


SPENT = ("tokens", "cost_usd")
SPENT_FIELDS = tuple(
    field
    for name in SPENT
    for field in (
        name,
        f"{name}_sq",
        f"{name}_cu",
        f"{name}_positive",
        f"log_{name}",
        f"log_{name}_sq",
    )
)


def _spent_query(base: Any, key: str) -> Any:
    """A target's joined sessions whose telemetry reported their tokens."""
    return base.where(filter=FieldFilter(f"{SELECTION}.target_key", "==", key)).where(
        filter=FieldFilter("usage_reported", "==", 1)
    )


AGGREGATIONS_PER_QUERY = 5
"""Firestore's most aggregations in one query."""


def _sums_of(query: Any) -> Callable[[], dict[str, float]]:
    """How many, how many reported a cost, and the sum of each spent field, in aggregation
    queries of at most AGGREGATIONS_PER_QUERY each (3)."""
    wanted = ("sessions", "cost_reported", *SPENT_FIELDS)
    groups = [
        wanted[start : start + AGGREGATIONS_PER_QUERY]
        for start in range(0, len(wanted), AGGREGATIONS_PER_QUERY)
    ]

    def aggregated(names: tuple[str, ...]) -> dict[str, float]:
        aggregation: Any = None
        for name in names:
            if name == "sessions":
                aggregation = query.count(alias=name)
            elif aggregation is None:
                aggregation = query.sum(name, alias=name)
            else:
                aggregation = aggregation.sum(name, alias=name)
        [results] = aggregation.get()
        return {result.alias: float(result.value or 0) for result in results}

    def run() -> dict[str, float]:
        found: dict[str, float] = {}
        for names in groups:
            found.update(aggregated(names))
        return found

    return run


def _mean_view(found: Mean) -> MeanView:
    return {"mean": rounded(found.mean), "low": rounded(found.low), "high": rounded(found.high)}


def _spent_view(sums: dict[str, float]) -> SpentView:
    """A target's mean tokens per joined session that reported them, and its mean cost
    per session that reported a cost (a missing cost is missing, never $0), with 95%
    intervals."""
    sessions = int(sums.get("sessions", 0))
    costed = int(sums.get("cost_reported", 0))

    def of(name: str, counted: int) -> Mean:
        return mean_interval(
            Sums(
                counted,
                sums.get(name, 0.0),
                sums.get(f"{name}_sq", 0.0),
                int(sums.get(f"{name}_positive", 0)),
                sums.get(f"log_{name}", 0.0),
                sums.get(f"log_{name}_sq", 0.0),
                sums.get(f"{name}_cu", 0.0),
            )
        )

    return {
        "sessions": sessions,
        "costSessions": costed,
        "tokens": _mean_view(of("tokens", sessions)),
        "costUsd": _mean_view(of("cost_usd", costed)),
    }


def _target_view(key: str, target: Target, cells: list[int], counts: Counts) -> TargetReport:
    in_target, joined, abnormal, *kinds = cells
    return {
        "targetKey": key,
        "target": target,
        "recorded": in_target,
        "sessions": joined,
        "abnormalEnds": _share_view(wilson(abnormal, joined)),
        "signals": {
            kind: _share_view(wilson(count, joined))
            for kind, count in zip(SIGNAL_KINDS, kinds, strict=True)
        },
        "routes": [
            {"route": route, "sessions": count}
            for (of_target, route), count in counts.by_route.items()
            if of_target == key and count
        ],
        "spent": _spent_view(counts.spent.get(key, {})),
    }


def selection_report(call: Call) -> Reply:
    params = call.params_as(ReportParams)
    org_id, agent_id = params["orgId"], params["id"]
    window = _window(params)
    agent = read_as(store.agent_ref(org_id, agent_id), Agent)
    if agent is None or "selection_version" not in agent:
        raise not_found("The agent's model selection")
    source = agent.get("outcome_source")
    current_ref = store.selection_ref(org_id, agent_id, agent["selection_version"])
    versions, stored, may_read, served = _in_parallel(
        [
            lambda: _versions_in(org_id, agent_id, window),
            lambda: read_as(current_ref, StoredSelection),
            lambda: source is not None and author_can_view(source),
            lambda: _instructions_in(org_id, agent_id, window),
        ]
    )
    if stored is None:
        raise not_found("The agent's model selection")
    current: Selection = stored["selection"]
    status = "not_linked" if source is None else "linked" if may_read else "access_lost"
    targets, routes = _targets([*(v["selection"] for v in versions), current])
    readable = source if status == "linked" else None
    counts = _counts(org_id, agent_id, window, readable, (targets, routes))
    shares = _shares(org_id, agent_id, [*versions, stored], counts.explored)
    explored = [read.explored(shares[read.version]) for read in counts.explored]
    target_views = [
        _target_view(key, target, counts.by_target[key], counts)
        for key, target in targets.items()
        if counts.by_target.get(key, [0])[0]
    ]
    joined = sum(view["sessions"] for view in target_views)
    by_instructions = (
        _by_instructions(
            _recorded(readable, org_id, agent_id, window),
            served,
            [view["targetKey"] for view in target_views],
        )
        if readable is not None
        else []
    )
    exploration, assessed = _exploration(current, explored, shares, _split(window, explored))
    # A session started by hand applied no target: the report's counts leave it out, and
    # say how many there were.
    started, recorded = counts.started - counts.hand_started, counts.recorded - counts.hand_started
    sessions = {
        "started": started,
        "recorded": recorded,
        "joined": joined,
        "notRecorded": max(started - recorded, 0),
        "notJoined": recorded - joined,
        "handStarted": counts.hand_started,
    }
    generated = utcnow()
    report_id = _report_id(org_id, agent_id, window, generated)
    return Reply(
        {
            "reportId": report_id,
            "orgId": org_id,
            "agentId": agent_id,
            "since": iso(window.since),
            "until": iso(window.until),
            "generatedAt": iso(generated),
            "source": {
                "status": status,
                "projectId": source["project_id"] if source else None,
                "agent": source["agent"] if source else None,
            },
            "sessions": sessions,
            "notJoined": _not_joined(sessions, status, source),
            "targets": target_views,
            "byInstructions": by_instructions,
            "exploration": exploration,
            "recommendation": _recommendation(current, assessed, report_id, generated),
            "method": METHOD,
            "caveats": [*CAVEATS, *_caveats(assessed, len(explored))],
        }
    )


def _shares(
    org_id: str, agent_id: str, versions: list[StoredSelection], read: list[Read]
) -> dict[int, float]:
    """Each version's exploration share, for every version an explored record names: the
    window's versions, and any older one read by its id (a window with more than
    VERSIONS_READ versions)."""
    shares = {
        v["version"]: v["selection"].get("exploration", {}).get("share", 0.0) for v in versions
    }
    missing = sorted({each.version for each in read} - set(shares))

    def reader(version: int) -> Callable[[], StoredSelection | None]:
        return lambda: read_as(store.selection_ref(org_id, agent_id, version), StoredSelection)

    found = _in_parallel([reader(version) for version in missing])
    for version, stored in zip(missing, found, strict=True):
        share = stored["selection"].get("exploration", {}).get("share", 0.0) if stored else 0.0
        shares[version] = share
    return {version: share if share > 0 else UNKNOWN_SHARE for version, share in shares.items()}


UNKNOWN_SHARE = 1.0
"""An explored record whose version says no share (never stored so): weighted as if every
session of it had been read, the least weight it could have."""


def _split(window: Window, explored: list[Explored]) -> datetime:
    """The middle of the window, or of the span read when the explored read reached its
    limit (its oldest sessions then are the oldest read)."""
    since = window.since
    if len(explored) >= EXPLORED_READ:
        since = max(since, min(each.started_at for each in explored))
    return since + (window.until - since) / 2


def _caveats(found: Assessment, explored: int) -> list[str]:
    said = []
    whole = found.whole
    if whole is not None and (whole.unsupported or any(c.unsupported for c in whole.candidates)):
        said.append(
            f"{whole.unsupported} of {whole.explored} explored sessions could not have "
            "drawn the current rules' choice (a target added since, or above the permission "
            "mode their rules chose): the current rules are estimated over the others, "
            "and each change is judged against them over the sessions where both choices "
            "could be drawn, which may differ from the sessions of today."
        )
    if explored >= EXPLORED_READ:
        said.append(
            f"Only the newest {EXPLORED_READ} explored sessions are read: the estimates and "
            "the halves compared cover the span they were started in."
        )
    if found.basis == RECENT_HALF:
        said.append(
            "The halves of the window disagree: the recommendation rests on the recent half "
            "alone, whose average is still not the present if the drift goes on."
        )
    elif found.drift is not None and found.drift.drifted:
        said.append(
            "The halves of the window disagree, and the recent half has too few explored "
            f"sessions (fewer than {MIN_EXPLORED}) for a recommendation of its own."
        )
    return said


def _not_joined(sessions: dict[str, int], status: str, source: OutcomeSource | None) -> list[str]:
    said = []
    if status == "not_linked":
        said.append("The agent has no outcome source: no session can be joined to how it ended.")
    if status == "access_lost":
        said.append(
            "The link's author can no longer view its project: nothing is read through it "
            "until an admin who can links it again."
        )
    if sessions["notRecorded"]:
        said.append(
            f"{sessions['notRecorded']} sessions started without an outcome source (or "
            "their evaluation never finished): their choice was recorded nowhere."
        )
    if sessions["notJoined"] and source is not None:
        said.append(
            f"{sessions['notJoined']} recorded sessions have no ended log in project "
            f"{source['project_id']} under agent {source['agent']}: not ended yet, never "
            "logged there, or logged under another id or name."
        )
    return said
