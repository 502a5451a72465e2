"""The patterns' stored documents and their published shapes, as TypedDicts: a pattern
(`projects/{p}/patterns/{id}`, written by a refresh, then by joins and decisions) and
what the API answers of it (`schemas/psychologist/pattern.json`).

No `from __future__ import annotations` here, as in the APIs' documents modules."""

from datetime import datetime
from typing import Any, NotRequired

from typing_extensions import TypedDict


class Week(TypedDict):
    """One ISO week of the window: the pattern's sessions and the agent's ended ones."""

    week: str
    matching: int
    total: int


class TargetRow(TypedDict):
    """Per runtime and model chosen (None: AgentConnect chose none)."""

    runtime: str | None
    model: str | None
    matching: int
    total: int


class Cost(TypedDict):
    input_tokens: int
    output_tokens: int
    usd: float | None
    """None when no member session reported a cost."""


class Claim(TypedDict):
    """A label's claim: one sentence about one member, citing its events."""

    sessionId: str
    eventIds: list[str]
    claim: str


class Refused(TypedDict):
    """A claim that did not hold (or an answer that was not a label), with why."""

    claim: str | None
    reason: str
    sessionId: NotRequired[str]
    eventIds: NotRequired[list[str]]


class Span(TypedDict):
    since: datetime
    until: datetime


class Placed(TypedDict):
    """A pattern's place and counts, as of its last refresh."""

    id: str
    project_id: str
    agent: str
    centroid: Any
    """A Firestore `Vector` of the members' mean embedding."""
    radius: float
    matching: int
    total: int
    summarised: int
    weekly: list[Week]
    first_seen: datetime
    last_seen: datetime
    central: str
    """The member nearest the centroid."""
    expires_at: datetime


class Labelling(TypedDict, total=False):
    """What a label gives a pattern, and on which members it was asked (all of it, or
    none while the pattern was never labelled)."""

    title: str | None
    description: str
    sugestao: str | None
    evidence: list[Claim]
    refused: list[Refused]
    label_model: str | None
    labelled_at: datetime
    labelled_members: list[str]


class Refreshed(Placed):
    """What every refresh that finds the pattern writes of it."""

    cost: Cost
    by_target: list[TargetRow]
    hypothesis_ids: list[str]
    window: Span
    refreshed_at: datetime


class StoredPattern(Refreshed, Labelling, total=False):
    """`projects/{p}/patterns/{id}`, whole: a refresh writes its place, counts, cost and
    targets, and a label when its members changed; a person's decision its status; a
    trial its `running_trial` and, reading improved, `resolved_by`."""

    split_from: str
    merged_into: str
    status: str
    """`open`, `accepted`, `dismissed`, or `resolved` by its trial."""
    created_at: datetime
    trial_id: str | None
    running_trial: str
    resolved_by: str
    decided_by: str
    decided_at: datetime


class ShareView(TypedDict):
    matching: int
    total: int
    share: float | None
    low: float | None
    high: float | None


class CostView(TypedDict):
    inputTokens: int
    outputTokens: int
    usd: float | None


class TargetView(TypedDict):
    runtime: str | None
    model: str | None
    sessions: ShareView


class SpanView(TypedDict):
    since: str
    until: str


class PatternView(TypedDict):
    """A pattern as published (`schemas/psychologist/pattern.json`)."""

    id: str
    agent: str
    status: str
    title: str | None
    description: str | None
    sugestao: str | None
    sessions: ShareView
    window: SpanView
    cost: CostView
    byTarget: list[TargetView]
    weekly: list[Week]
    firstSeen: str
    lastSeen: str
    evidence: list[Claim]
    hypothesisIds: list[str]
    trialId: str | None
    splitFrom: str | None
    mergedInto: str | None


class MemberView(TypedDict):
    sessionId: str
    summary: str
    distance: float | None
    joinedAt: str | None
