"""The research API's request bodies, as validated against `schemas/research/`: what
`Call.body_as` hands a domain function. `tests/test_typed_requests.py` holds each to its
schema.

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which that test compares with each schema's `required`."""

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from functions.research.documents import EvidenceRef, Source

RequestKind = Literal[
    "question", "overview", "themes", "audiences", "sentiment", "query_suggestions"
]


class ConversationCreateRequest(TypedDict):
    workspace_id: str
    title: NotRequired[str]


class InConversation(TypedDict):
    """What every request about one conversation names first."""

    workspace_id: str
    conversation_id: str


class EvidenceItem(TypedDict):
    """An item to add (no `evidence_id`: a new id is made) or to change."""

    evidence_id: NotRequired[str]
    text: str
    source: NotRequired[Source]


class EvidenceUpsertRequest(InConversation):
    items: list[EvidenceItem]


class EvidenceRemoveRequest(InConversation):
    evidence_ids: list[str]


class EvidenceReadRequest(InConversation):
    items: list[EvidenceRef]
    """The items at the revisions a result cites."""


class AskRequest(InConversation):
    request_kind: RequestKind
    question: NotRequired[str]
    """Required when `request_kind` is `question` (the schema's `if`/`then`)."""


class StatusRequest(InConversation):
    run_id: str


class CancelRequest(StatusRequest):
    """Names the run as a status read does."""


class CitationsParams(TypedDict):
    runId: str
    workspace_id: str


REQUESTS: dict[str, type] = {
    "research/citations.params": CitationsParams,
    "research/conversation_create.request": ConversationCreateRequest,
    "research/evidence_upsert.request": EvidenceUpsertRequest,
    "research/evidence_remove.request": EvidenceRemoveRequest,
    "research/evidence_read.request": EvidenceReadRequest,
    "research/ask.request": AskRequest,
    "research/status.request": StatusRequest,
    "research/cancel.request": CancelRequest,
}
"""Each request schema this API's operations name, by name, to its TypedDict."""
