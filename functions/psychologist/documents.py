"""The Psychologist's stored documents, replies, statuses and codes. TypedDicts cost
nothing at run time; Firestore data is cast to them where it is read. Hypotheses are
stored in the contract's camelCase; sessions, analyses and events keep the snake_case
they were first stored with (the views turn them into the contract's names).

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which `tests/test_typed_requests.py` reads of `Event`."""

from datetime import datetime
from enum import StrEnum
from typing import Any, NotRequired

from typing_extensions import TypedDict

from shared.codes import ProviderFailure
from shared.spend import TokenUsage


class AnalysisStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class AnalysisFailure(StrEnum):
    """Why an analysis failed (the contract's `failureCode`)."""

    NOT_CONFIGURED = ProviderFailure.NOT_CONFIGURED.value
    """No Gemini credentials are configured."""
    PROVIDER_UNAVAILABLE = ProviderFailure.PROVIDER_UNAVAILABLE.value
    """Gemini refused or failed a call, or did not answer within the deadline."""
    GENERATION_UNCONFIRMED = ProviderFailure.GENERATION_UNCONFIRMED.value
    """It is not known whether Gemini answered (the worker failed or lost its lease)."""
    INVALID_OUTPUT = ProviderFailure.INVALID_OUTPUT.value
    """Gemini's output broke the published schema."""
    SESSION_EMPTY = "session_empty"
    """The session holds no retained events."""
    INPUT_TOO_LARGE = "input_too_large"
    """The log needs more Gemini calls than fit in the lease, or a chunk is over the
    per-call budget."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """The project spent its Gemini token budget (`PSYCHOLOGIST_PROJECT_TOKEN_BUDGET`)."""


class AnalysisTrigger(StrEnum):
    MANUAL = "manual"
    """A member asked for it."""
    ABNORMAL_END = "abnormal_end"
    """The session ended abnormally."""
    SESSION_END = "session_end"
    """The session ended normally: its signals and outcomes are counted, no model is asked."""


class SessionState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    """Ended by its agent."""
    CLOSED_ABNORMALLY = "closed_abnormally"
    """Ended by a crash report or by the heartbeat timeout: queues an analysis."""


class HypothesisStatus(StrEnum):
    PROPOSED = "proposed"
    """Stored by an analysis; no person has decided on it yet."""
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class Event(TypedDict):
    """One agent session event, as sent (`schemas/psychologist/event.json`)."""

    id: str
    agent: str
    type: str
    at: str
    taskId: NotRequired[str]
    data: NotRequired[dict[str, Any]]


class SealedGeneration(TypedDict):
    id: str
    expires_at: datetime
    """When its last entry expires."""


class IndexHead(TypedDict):
    """`projects/{p}/sessions/{s}/event_index/head`: the newest packed entries of the
    session's event index (`event_index.py`), and its sealed generations, oldest first."""

    entries: bytes
    sealed: list[SealedGeneration]
    generations: int
    """How many generations were ever sealed: the next one's document id."""
    expires_at: datetime


class IndexGeneration(TypedDict):
    """`projects/{p}/sessions/{s}/event_index/{n}`: a sealed generation's packed entries."""

    entries: bytes
    expires_at: datetime


class EventChunk(TypedDict):
    """`projects/{p}/sessions/{s}/event_chunks/{c}`: a batch's new events as one JSON array."""

    events_json: str
    expires_at: datetime


class LastAnalysis(TypedDict):
    """The latest analysis of a session and the event count it was asked for: a manual
    analysis of a log that has not grown since is answered with it."""

    id: str
    event_count: int


SessionUsage = dict[str, float]
"""Tokens and cost the session's telemetry reported, each request counted once:
`input_tokens`, `output_tokens`, `cached_tokens`, `cost_usd` (`reports.USAGE_FIELDS`)."""


class TurnRecord(TypedDict):
    id: str
    failed: bool


class Turns(TypedDict):
    """What a telemetry session's turns say, for the end its silence gets: the turns
    started and not yet closed, the last few that closed, and the last to close."""

    open: list[str]
    closed: list[str]
    last: TurnRecord | None


class Session(TypedDict):
    """`projects/{p}/sessions/{s}`."""

    state: SessionState
    agents: list[str]
    event_count: int
    created_at: datetime
    first_event_micros: NotRequired[int]
    """The earliest event's `at`, in microseconds since the epoch (see `to_micros`)."""
    last_event_micros: NotRequired[int]
    last_seen_at: datetime
    """When a batch last arrived, moved at most once per heartbeat interval."""
    cause: NotRequired[str | None]
    ended_at: NotRequired[datetime]
    ended_by_silence: NotRequired[bool]
    """Ended by the sweep for silence while fed by telemetry: a provisional end, which a
    later record reopens and an explicit end replaces."""
    resumed: NotRequired[int]
    """How many times a record reopened the session after silence had ended it."""
    analysis_id: NotRequired[str | None]
    """The analysis its latest end queued."""
    last_analysis: NotRequired[LastAnalysis]
    source: NotRequired[str]
    """The telemetry source of a session fed by OTLP (`sources.py`); absent otherwise."""
    turns: NotRequired[Turns]
    tool_errors: NotRequired[int]
    usage: NotRequired[SessionUsage]
    """Summed over the requests its logs and spans reported."""
    metered: NotRequired[SessionUsage]
    """Summed over its metric points: what a source that sends only metrics reported."""


class Signal(TypedDict):
    kind: str
    agent: str
    summary: str
    eventIds: list[str]


class ModelCallRecord(TypedDict):
    phase: str
    modelVersion: str | None
    inputTokens: int
    outputTokens: int
    cachedTokens: int
    thoughtTokens: int
    estimatedInputTokens: int


class Rejected(TypedDict):
    phase: str
    hypothesis: dict[str, Any]
    """What the model proposed, as it proposed it (or its raw output when unparsable)."""
    reasons: list[str]


class BatchRecord(TypedDict):
    """An analysis's Gemini batch: the job, where it stands, and why the standard call
    was made instead, when it was."""

    name: str | None
    state: str
    """Gemini's job state (`pending`, `running`, `succeeded`, `failed`, `cancelled`,
    `expired`), or `unavailable` (the backend takes no batch) or `unsubmitted`."""
    submitted_at: datetime | None
    deadline_at: datetime | None
    requests: int
    fallback: str | None


NO_BATCH: BatchRecord = {
    "name": None,
    "state": "unsubmitted",
    "submitted_at": None,
    "deadline_at": None,
    "requests": 0,
    "fallback": None,
}


class Analysis(TypedDict):
    """`projects/{p}/analyses/{a}`: its creation runs the worker."""

    id: str
    project_id: str
    session_id: str
    status: AnalysisStatus
    failure_code: str | None
    failure_detail: NotRequired[str | None]
    trigger: AnalysisTrigger
    requested_by: str | None
    created_at: datetime
    expires_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    lease_until: datetime | None
    claim: NotRequired[str]
    trace: NotRequired[str]
    """The trace of the request that created it: the worker's log lines join it."""
    signals: NotRequired[list[Signal]]
    batch: NotRequired[BatchRecord]
    batch_poll_at: NotRequired[datetime]
    """When the sweep next asks Gemini about the batch; present only while it waits."""
    event_count: NotRequired[int]
    tool_error_count: NotRequired[int]
    chunk_count: NotRequired[int]
    calls: NotRequired[list[ModelCallRecord]]
    usage: NotRequired[TokenUsage]
    rejected: NotRequired[list[Rejected]]
    """As stored: within a byte budget (see `worker.stored_rejections`)."""
    rejected_count: NotRequired[int]
    session_usage: NotRequired["SessionUsageView | None"]
    """The session's tokens and cost when the analysis settled (`views.usage_view`)."""
    """Every rejection, the stored and the ones the budget left out."""
    hypothesis_ids: NotRequired[list[str]]


class TerminationFinding(TypedDict):
    analise: str


class Proposal(TypedDict):
    """What every hypothesis says, from the model's answer to the stored document."""

    agenteAlvo: str
    observacao: str
    hipotese: str
    sugestao: str
    confiancaPercent: float
    evidenceEventIds: list[str]


class Finding(Proposal):
    """One hypothesis as Gemini proposes it (`schemas/psychologist/model_output.json`)."""

    terminationAnalysis: TerminationFinding | None


class ClaimFinding(TypedDict):
    """One claim of a summary as Gemini proposes it: a sentence and the events it cites."""

    text: str
    eventIds: list[str]


class SummaryFinding(TypedDict):
    """A session's summary as Gemini proposes it (`schemas/psychologist/model_summary.json`)."""

    task: ClaimFinding
    ending: ClaimFinding
    failure: ClaimFinding | None
    """None: the session shows no failure."""


class ModelOutput(TypedDict):
    hypotheses: list[Finding]
    summary: NotRequired[SummaryFinding | None]
    """Asked of the single or combining call; null in a call over one part of a log."""


class SummaryStatus(StrEnum):
    SUMMARISED = "summarised"
    NOT_SUMMARISED = "not_summarised"
    """Left out (over budget, an empty log, a failed call): still counted as ended."""


class SummarySource(StrEnum):
    ANALYSIS = "analysis"
    """Given by an abnormal end's analysis, in the same Gemini call as its hypotheses."""
    SUMMARY = "summary"
    """Asked of the summary model in a call of its own: a normal end's."""


class NotSummarised(StrEnum):
    """Why an ended session has no summary (`reason`); a failed call's is `failed: <code>`."""

    OVER_BUDGET = "over_budget"
    EMPTY_LOG = "empty_log"
    SWITCHED_OFF = "summaries_off"
    """`PSYCHOLOGIST_NORMAL_END_SUMMARIES=off`: a normal end is not asked about."""


class SummaryClaim(TypedDict):
    text: str
    event_ids: list[str]


class RefusedClaim(TypedDict):
    claim: str
    """`task`, `ending` or `failure`."""
    reason: str


class SummaryUsage(TypedDict):
    input_tokens: int
    output_tokens: int


class Summary(TypedDict):
    """`projects/{p}/summaries/{session}`: one per ended session, written once by its end's
    analysis. A claim whose citations the session's record contradicts is refused: it is
    None here and its reason is in `refused`; `failure` is None with no refusal when the
    session shows no failure."""

    session_id: str
    agent: str
    """The session's agent: the one that emitted the most events."""
    ended_at: datetime
    state: SessionState
    status: SummaryStatus
    reason: str | None
    """Why it was not summarised: `over_budget`, `empty_log` or `failed: <code>`."""
    task: SummaryClaim | None
    ending: SummaryClaim | None
    failure: SummaryClaim | None
    refused: list[RefusedClaim]
    model: str | None
    """The model asked, when one was."""
    source: SummarySource
    usage: SummaryUsage
    """The tokens of the call it came in (an analysis's call also counts them)."""
    created_at: datetime
    expires_at: datetime


class TerminationAnalysis(TypedDict):
    causa: str | None
    estadoDaSessao: str | None
    analise: str


class DecidedBy(TypedDict):
    userId: str
    credentialClass: str | None
    displayName: str | None


class HypothesisFields(Proposal):
    """What a stored hypothesis and its published view share."""

    id: str
    projectId: str
    sessionId: str
    analysisId: str
    terminationAnalysis: TerminationAnalysis | None


class Hypothesis(HypothesisFields):
    """`projects/{p}/hypotheses/{h}`: the contract's fields, plus copies of the events it
    cites (so that it outlives them) and its expiry."""

    status: HypothesisStatus
    decidedBy: DecidedBy | None
    decidedAt: datetime | None
    createdAt: datetime
    updatedAt: datetime
    expires_at: datetime
    evidence_events: list[Event]
    signal_kinds: NotRequired[list[str]]
    """The kinds of signal (`task_reopened`, ...) its cited events stand behind: what its
    effect counts in the agent's sessions before and after it was accepted."""
    running_trial: NotRequired[str]
    """The trial of its suggestion running now, if any (`projects/{p}/trials/{t}`)."""
    last_trial: NotRequired[str]
    """The latest trial of its suggestion, running or stopped: what the effect reads."""


class HypothesisDecision(TypedDict):
    """`projects/{p}/hypotheses/{h}/decisions/{d}`: the decision history, append-only."""

    status: str
    previousStatus: str
    reason: str | None
    decidedBy: DecidedBy
    decidedAt: datetime
    requestId: str
    expires_at: datetime | None


class DecisionView(TypedDict):
    status: str
    previousStatus: str
    reason: str | None
    decidedBy: DecidedBy
    decidedAt: str
    requestId: str


class HypothesisView(HypothesisFields):
    status: str
    decidedBy: DecidedBy | None
    decidedAt: str | None
    createdAt: str
    updatedAt: str


class SessionView(TypedDict):
    projectId: str
    sessionId: str
    state: str
    cause: str | None
    agents: list[str]
    eventCount: int
    firstEventAt: str | None
    lastEventAt: str | None
    endedAt: str | None
    analysisId: str | None
    endedBySilence: bool
    resumedCount: int


SessionUsageView = TypedDict(
    "SessionUsageView",
    {
        "inputTokens": int,
        "outputTokens": int,
        "cachedTokens": int,
        "costUsd": float | None,
        "from": str,
    },
)
"""A session's tokens and cost as served; `from` says whose: `requests` (its logs and
spans), `metrics`, or `none`."""


class SessionRow(TypedDict):
    """One row of the sessions list."""

    sessionId: str
    agents: list[str]
    source: str | None
    state: str
    cause: str | None
    eventCount: int
    toolErrors: int
    usage: SessionUsageView
    createdAt: str
    endedAt: str | None
    endedBySilence: bool
    resumedCount: int
    lastAnalysisId: str | None
    instructionsVersion: int | None
    """The AgentConnect agent's instructions version the session was started under; None
    when it had none or was not started through AgentConnect."""


class AnalysisCounts(TypedDict):
    events: int
    toolErrors: int
    chunks: int
    calls: int
    hypotheses: int
    rejected: int


class UsageView(TypedDict):
    inputTokens: int
    outputTokens: int
    cachedTokens: int
    thoughtTokens: int


class BatchView(TypedDict):
    state: str
    submittedAt: str | None
    deadlineAt: str | None
    fallback: str | None


class AnalysisView(TypedDict):
    id: str
    projectId: str
    sessionId: str
    status: str
    failureCode: str | None
    failureDetail: str | None
    trigger: str
    createdAt: str
    startedAt: str | None
    finishedAt: str | None
    counts: AnalysisCounts
    usage: UsageView
    calls: list[ModelCallRecord]
    signals: list[Signal]
    hypothesisIds: list[str]
    rejected: list[Rejected]
    batch: BatchView | None
    sessionUsage: SessionUsageView | None
