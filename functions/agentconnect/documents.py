"""AgentConnect's stored documents, replies, statuses and outcomes. TypedDicts cost
nothing at run time; Firestore data is cast to them where it is read. Evaluations are
stored in the contract's camelCase; the fields only the server reads (`created_at`,
`lease_until`, `details_expires_at`, the agent's counters) keep their first snake_case.

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which `tests/test_typed_requests.py` reads of `Selection`."""

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from functions.loop.documents import Link, OutcomeSource, RunningTrial, StoredInstructions


class EvaluationStatus(StrEnum):
    PENDING = "pending"
    """Created with the session; no worker has claimed it yet."""
    EVALUATING = "evaluating"
    FROZEN = "frozen"
    """Decided and stored; nothing changes it afterwards."""


class Outcome(StrEnum):
    SELECTED = "selected"
    """A rule held: its target applies."""
    DEFAULTED = "defaulted"
    """Every step was answered and no rule held: the default target applies."""
    FALLBACK = "fallback"
    """A step failed, answered outside its options, or the evaluation never finished."""


class StepStatus(StrEnum):
    ANSWERED = "answered"
    FAILED = "failed"
    """Gemini gave no answer (unreachable, timed out, refused)."""
    INVALID = "invalid"
    """Gemini answered outside the question's options or its schema."""


QuestionType = Literal["choice", "boolean"]
PermissionMode = Literal["plan", "default", "acceptEdits", "bypassPermissions"]


class Question(TypedDict):
    type: QuestionType
    instructions: str
    criteria: NotRequired[dict[str, str]]


class Condition(TypedDict):
    type: QuestionType
    thresholds: dict[str, float]


class Target(TypedDict):
    runtime: str
    model: str
    effort: str
    permissionMode: PermissionMode
    fastMode: bool


class Rule(TypedDict):
    when: Condition
    runtime: NotRequired[str]
    model: NotRequired[str]
    effort: NotRequired[str]
    permissionMode: NotRequired[PermissionMode]
    fastMode: NotRequired[bool]


class Decision(TypedDict):
    decisionId: str
    question: Question
    rules: list[Rule]


class StepDecision(Decision):
    id: str


class Exploration(TypedDict):
    share: float


class ReportReference(TypedDict):
    """The selection report a version was recommended by."""

    reportId: str
    generatedAt: str
    change: str


class Selection(TypedDict):
    """What a PUT stores (`schemas/agentconnect/selection.request.json`)."""

    decision: Decision
    steps: list[StepDecision]
    default: Target
    exploration: NotRequired[Exploration]
    fromReport: NotRequired[ReportReference]


class Fallback(TypedDict):
    target: Target
    decisionId: str


class ServedInstructions(TypedDict):
    """The instructions version a session start answers, as the runtime applies it."""

    version: int
    text: str


class Agent(TypedDict, total=False):
    """`orgs/{o}/agents/{a}`: written only by merges and updates."""

    selection_version: int
    selection_fallback: Fallback
    instructions: StoredInstructions
    """A copy of the current instructions version, so that a session start, which reads
    this document anyway, serves it without another read."""
    last_seq: int
    outcome_source: OutcomeSource
    running_trials: dict[str, RunningTrial]
    """Written by the Psychologist as its trials of this agent start and stop."""


class StoredSelection(TypedDict):
    """`orgs/{o}/agents/{a}/selections/{version}`: every version, kept."""

    version: int
    selection: Selection
    created_at: datetime
    created_by: str


class SessionTrial(TypedDict):
    trial_id: str
    hypothesis_id: str | None
    arm: str
    pattern_id: NotRequired[str | None]
    sugestao: NotRequired[str]
    """The suggestion as the start served it: a start of the same session again serves it
    whatever became of the trial since."""


class AgentSession(TypedDict):
    """`orgs/{o}/agents/{a}/agent_sessions/{s}`: its creation runs the worker."""

    seq: int
    title: str
    input: dict[str, Any]
    selection_version: int
    created_by: str
    created_at: datetime
    expires_at: datetime
    outcome_source: NotRequired[Link]
    """The agent's link when the session started: where its frozen choice is recorded."""
    trials: NotRequired[list[SessionTrial]]
    """The running trials it was assigned to when it started, with its arm in each."""
    instructions_version: NotRequired[int]
    """The agent's instructions version served at the start, when it had one."""
    started_by: NotRequired[str]
    """`launch`, `hook` (started by hand: no target applied) or `api`."""


class Answer(TypedDict):
    type: str
    value: bool | str
    probability: float


class FullAnswer(Answer):
    probabilitySource: str | None


class ModelAnswer(TypedDict):
    """What Gemini answers to one question (`schemas/agentconnect/model_answer.json`)."""

    value: bool | str
    probability: float


class TokenCounts(TypedDict):
    inputTokens: int
    outputTokens: int


class PendingEvaluation(TypedDict):
    """`orgs/{o}/agents/{a}/evaluations/{seq}` until it freezes."""

    seq: int
    sessionId: str
    status: EvaluationStatus
    created_at: datetime
    fallback: Fallback
    claim: NotRequired[str]
    lease_until: NotRequired[datetime | None]
    started_at: NotRequired[datetime]
    trace: NotRequired[str]
    """The trace of the session start that created it: the worker's log lines join it."""
    instructions_version: NotRequired[int]
    """The instructions version the session started with, kept through the freeze."""


class EvaluationFields(TypedDict):
    """What a frozen summary and its published view share."""

    seq: int
    sessionId: str
    decisionId: str
    reason: str
    target: Target
    answer: Answer | None
    requestedModel: str
    actualModel: str | None
    latencyMs: float
    usage: TokenCounts


class Drawn(TypedDict):
    """How an evaluation's target was drawn, stored beside it (the published read does
    not show it): whether this session explored, the exploration share in force, and the
    probability that the selection gave the target it froze."""

    explored: bool
    share: float
    propensity: float
    candidates: int
    """How many targets an exploring session drew among."""


class Summary(EvaluationFields):
    """`orgs/{o}/agents/{a}/evaluations/{seq}` once frozen: kept, never changed."""

    at: datetime
    outcome: Outcome
    status: EvaluationStatus
    details_expires_at: datetime
    drawn: NotRequired[Drawn]
    instructions_version: NotRequired[int]
    """The instructions version the session started with, when the agent had one."""


class Clipped(TypedDict):
    text: str
    truncated: bool


class FrozenStep(TypedDict):
    id: str
    decisionId: str
    rules: list[Rule]


class FrozenSelection(TypedDict):
    """The rules a decision was made under, as they were then."""

    decisionId: str
    rules: list[Rule]
    steps: list[FrozenStep]


class StepEvaluation(TypedDict):
    status: str
    answer: Answer | None
    model: str
    usage: TokenCounts


class ChainLink(TypedDict):
    stepId: str
    decisionId: str
    evaluation: StepEvaluation


class StepRecord(TypedDict):
    """A step asked, as its evaluation's details keep it: without its question, which its
    selection version holds."""

    stepId: str
    decisionId: str
    providerId: str
    model: str
    condition: Condition | None
    rawRequest: Clipped
    rawResponse: Clipped


class StepView(StepRecord):
    question: Question


class Details(TypedDict):
    """`orgs/{o}/agents/{a}/evaluation_details/{seq}`: what only this evaluation knows,
    expiring. The selection it was decided under, rules and questions, is read from its
    version, which is immutable and kept (a copy in each evaluation could pass 1 MiB);
    the decision's question and raw texts are its last step's."""

    selection_version: int
    title: str
    input: dict[str, Any]
    fullAnswer: FullAnswer | None
    chain: list[ChainLink]
    steps: list[StepRecord]
    expires_at: datetime


class EvaluationView(EvaluationFields):
    at: str
    title: str
    outcome: str
    detailsExpired: bool
    selection: NotRequired[FrozenSelection]
    question: NotRequired[Question]
    input: NotRequired[dict[str, Any]]
    fullAnswer: NotRequired[FullAnswer | None]
    chain: NotRequired[list[ChainLink]]
    steps: NotRequired[list[StepView]]
    rawRequest: NotRequired[Clipped]
    rawResponse: NotRequired[Clipped]


class SelectionView(TypedDict):
    orgId: str
    agentId: str
    version: int
    createdAt: str
    createdBy: str
    selection: Selection


class InstructionsOrigin(TypedDict):
    trialId: str
    hypothesisId: str | None
    patternId: str | None


InstructionsView = TypedDict(
    "InstructionsView",
    {
        "version": int,
        "text": str,
        "createdAt": str,
        "createdBy": str,
        "reason": str | None,
        "from": InstructionsOrigin | None,
    },
)
"""An instructions version as published (`from` is a Python keyword, hence this form)."""


class OutcomeSourceView(TypedDict):
    orgId: str
    agentId: str
    projectId: str
    agent: str
    createdBy: str
    createdAt: str
    authorCanView: bool


class ShareRead(TypedDict):
    """k of n sessions with the 95 % Wilson interval, as the selection report shows it."""

    count: int
    sessions: int
    share: float | None
    low: float | None
    high: float | None


class EstimateView(TypedDict):
    """An off-policy abnormal-end share; None where too few sessions matched."""

    abnormalShare: float | None
    low: float | None
    high: float | None
    matched: int
    effectiveSessions: float


class DifferenceView(TypedDict):
    value: float
    low: float
    high: float
    sessions: int
    discordant: int


class MeanView(TypedDict):
    mean: float | None
    low: float | None
    high: float | None


class SpentView(TypedDict):
    sessions: int
    costSessions: int
    tokens: MeanView
    costUsd: MeanView


class RouteCount(TypedDict):
    route: str
    sessions: int


class TargetReport(TypedDict):
    targetKey: str
    target: Target
    recorded: int
    sessions: int
    abnormalEnds: ShareRead
    signals: dict[str, ShareRead]
    routes: list[RouteCount]
    spent: SpentView


class VersionTarget(TypedDict):
    targetKey: str
    sessions: int
    abnormalEnds: ShareRead


class VersionReport(TypedDict):
    version: int | None
    sessions: int
    abnormalEnds: ShareRead
    targets: list[VersionTarget]


class ExploredVersion(TypedDict):
    version: int
    share: float
    explored: int


ChangeView = TypedDict(
    "ChangeView", {"stepId": str, "rule": int, "value": str, "from": float, "to": float}
)
"""One threshold moved (`from` and `to` are Python words, hence this form)."""


class CandidateView(TypedDict):
    change: ChangeView
    estimate: EstimateView
    unsupported: int
    difference: DifferenceView | None
    better: bool


class EstimatesView(TypedDict):
    explored: int
    undetermined: int
    unsupported: int
    current: EstimateView
    candidates: list[CandidateView]


class DriftTarget(TypedDict):
    targetKey: str
    older: EstimateView
    newer: EstimateView
    difference: DifferenceView | None
    beyondChance: bool


class DriftView(TypedDict):
    status: str
    splitAt: str
    older: int
    newer: int
    targets: list[DriftTarget]
    said: str
