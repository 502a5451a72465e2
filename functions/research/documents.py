"""The research API's stored documents, replies, statuses and codes (all snake_case, as
its contract). TypedDicts cost nothing at run time; Firestore data is cast to them where
it is read."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import NotRequired

from typing_extensions import TypedDict

from shared.codes import ProviderFailure
from shared.spend import TokenUsage


class RunStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    UNAVAILABLE = "unavailable"
    """Read only: a completed result whose sources or authority changed."""


class FailureCode(StrEnum):
    """Why a run failed, or why its completed result no longer stands (the contract's
    `failure_code` and `availability.reason`)."""

    NOT_CONFIGURED = ProviderFailure.NOT_CONFIGURED.value
    """No Gemini credentials are configured."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """The workspace's Gemini token budget is spent."""
    ACCESS_CHANGED = "access_changed"
    """The asker lost the right to ask (token revoked or expired, membership gone or below
    member) before the answer was stored, or since."""
    SOURCE_UNAVAILABLE = "source_unavailable"
    """An item the answer cites was removed, or the conversation holds no evidence."""
    CONTEXT_CHANGED = "context_changed"
    """The evidence changed while the run was processing, or a cited item was revised."""
    INPUT_TOO_LARGE = "input_too_large"
    """The evidence is over the run's input token budget; it is never sampled."""
    PROVIDER_UNAVAILABLE = ProviderFailure.PROVIDER_UNAVAILABLE.value
    """Gemini refused or failed the call, or did not answer within the deadline."""
    GENERATION_UNCONFIRMED = ProviderFailure.GENERATION_UNCONFIRMED.value
    """It is not known whether Gemini answered (the worker failed or lost its lease)."""
    INVALID_OUTPUT = ProviderFailure.INVALID_OUTPUT.value
    """Gemini's answer broke the answer schema or cited what the prompt did not hold."""
    CANCELLED = "cancelled"
    """A member cancelled the run."""
    EXPIRED = "expired"
    """The run is past its 24 hours."""
    CONVERSATION_FULL = "conversation_full"
    """The conversation already has `RESEARCH_MAX_RUNS_PER_CONVERSATION` runs."""


class EvidenceRef(TypedDict):
    evidence_id: str
    revision: int


class Statement(TypedDict):
    statement: str
    basis: str
    evidence: list[EvidenceRef]
    uncertainty: str


class SentimentEntry(TypedDict):
    evidence_id: str
    revision: int
    label: str
    uncertainty: str


class QuerySuggestion(TypedDict):
    query: str
    excluded_terms: list[str]
    evidence: list[EvidenceRef]
    rationale: str


class Answer(TypedDict):
    """The contract's `message.answer`: what Gemini must answer and what a run stores."""

    answer: Statement
    findings: list[Statement]
    sentiment: list[SentimentEntry]
    query_suggestions: list[QuerySuggestion]
    limitations: list[str]
    quantitative_claims: bool
    method_version: str


class Source(TypedDict, total=False):
    title: str
    url: str
    author: str
    kind: str
    captured_at: str


class Evidence(TypedDict):
    """`workspaces/{ws}/conversations/{c}/evidence/{e}`."""

    text: str
    source: Source | None
    revision: int
    updated_at: NotRequired[datetime]
    expires_at: NotRequired[datetime]


class EvidenceState(StrEnum):
    CURRENT = "current"
    REVISED = "revised"
    REMOVED = "removed"


class EvidenceAtRevision(TypedDict):
    evidence_id: str
    revision: int
    state: EvidenceState
    current_revision: int | None
    text: str | None
    source: Source | None


class Conversation(TypedDict):
    """`workspaces/{ws}/conversations/{c}`."""

    workspace_id: str
    title: str | None
    revision: int
    evidence_revisions: dict[str, int]
    """{evidence id: revision} of every item the conversation holds."""
    run_count: int
    created_by: str
    created_at: datetime
    expires_at: datetime
    updated_at: NotRequired[datetime]


class Slot(TypedDict):
    """`workspaces/{ws}/slots/{k}`: one of the workspace's active-run slots."""

    run_id: str
    until: datetime
    """When the slot frees itself even if its run never settles."""


class Asker(TypedDict):
    user_id: str
    token_id: str


class Rejection(TypedDict):
    path: str
    reason: str


class Message(TypedDict):
    id: str
    run_id: str
    question: str | None
    answer: Answer
    created_at: datetime


class Citation(TypedDict):
    """One citation of a completed run's answer with the passage it rests on: `text[start:
    end]` of the item at `revision` is the passage as the item says it."""

    path: str
    """Where the citation stands in the answer (`answer.evidence[0]`, `sentiment[1]`)."""
    evidence_id: str
    revision: int
    quote: str
    start: int
    end: int
    supported: bool | None
    """True when the support check found its statement supported; None when it is off."""


class Run(TypedDict):
    """`workspaces/{ws}/runs/{r}`: one run; the assistant message lives in it."""

    workspace_id: str
    conversation_id: str
    conversation_revision: int
    generation: int
    request_kind: str
    question: str | None
    status: RunStatus
    failure_code: str | None
    created_at: datetime
    expires_at: datetime
    lease_until: datetime | None
    model_id: str | None
    model_version: str | None
    """The version of the model that made the answer (or its failure)."""
    support_check_model_version: NotRequired[str | None]
    """The version of the model that made the support check, when one was asked."""
    asker: Asker
    message: Message | None
    rejected: list[Rejection]
    usage: TokenUsage
    slot: NotRequired[str]
    """The active-run slot a queued run took (see `store.SLOTS`)."""
    citations: NotRequired[list[Citation]]
    """Each citation's verified passage, once the run completed."""
    quote_repairs: NotRequired[int]
    """1 when the model was asked once more because a quote was not in its item."""
    claim: NotRequired[str]
    started_at: NotRequired[datetime]
    finished_at: NotRequired[datetime]
    cancelled_at: NotRequired[datetime]
    trace: NotRequired[str]
    """The trace of the ask that created it: the worker's log lines join it."""


class Remembered(TypedDict):
    """`workspaces/{ws}/idempotency/{sha256(user, key)}`: the run an Idempotency-Key made."""

    run_id: str
    request_hash: str
    expires_at: datetime


class RunView(TypedDict):
    id: str
    workspace_id: str
    conversation_id: str
    conversation_revision: int
    generation: int
    request_kind: str
    status: str
    failure_code: str | None
    created_at: str
    expires_at: str
    processor: str
    model_id: str | None
    model_version: str | None


class MessageView(TypedDict):
    id: str
    run_id: str
    role: str
    question: str | None
    answer: Answer
    created_at: str
    expires_at: str


class Availability(TypedDict):
    configured: bool
    reason: str | None
    processor: str
    retention_hours: int


class StatusView(TypedDict):
    """The contract's status response."""

    run: RunView
    message: MessageView | None
    conversation_revision: int
    availability: Availability


class ConversationView(TypedDict):
    id: str
    workspace_id: str
    title: str | None
    revision: int
    created_at: str
    expires_at: str


class SupportCheckView(TypedDict):
    model_id: str | None
    model_version: str | None


class StatementCitations(TypedDict):
    """A statement's citations as the citations read serves them: as stored."""

    path: str
    citations: list[Citation]
