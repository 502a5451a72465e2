"""The one list of entry points, read by `main.py`, the local host, OpenAPI and deploy.

This module imports nothing from the APIs, so reading it costs nothing at cold start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Entry:
    name: str
    """The function name: the attribute of `main` and the deployed function's name."""
    kind: Literal["http", "trigger"]
    module: str
    summary: str
    method: str | None = None
    route: str | None = None
    """Public path pattern of an HTTP entry point, with `{param}` placeholders."""
    document: str | None = None
    """Document path pattern whose creation runs a trigger."""
    request_schema: str | None = None
    params_schema: str | None = None
    response_schema: str | None = None
    success_status: int = 200
    calls_gemini: bool = False
    tag: str = ""


ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="research_conversation_create",
        kind="http",
        module="functions.research.conversation_create",
        summary="Create a conversation in a workspace",
        method="POST",
        route="/research-api/conversations/create",
        request_schema="research/conversation_create.request",
        response_schema="research/conversation",
        success_status=201,
        tag="research",
    ),
    Entry(
        name="research_evidence_upsert",
        kind="http",
        module="functions.research.evidence_upsert",
        summary="Add or change evidence items of a conversation",
        method="POST",
        route="/research-api/evidence/upsert",
        request_schema="research/evidence_upsert.request",
        response_schema="research/evidence_upsert.response",
        tag="research",
    ),
    Entry(
        name="research_evidence_remove",
        kind="http",
        module="functions.research.evidence_remove",
        summary="Remove evidence items from a conversation",
        method="POST",
        route="/research-api/evidence/remove",
        request_schema="research/evidence_remove.request",
        response_schema="research/evidence_remove.response",
        tag="research",
    ),
    Entry(
        name="research_ask",
        kind="http",
        module="functions.research.ask",
        summary="Queue a cited analysis run over a conversation's evidence",
        method="POST",
        route="/research-api/assistant/ask",
        request_schema="research/ask.request",
        response_schema="research/ask.response",
        success_status=202,
        tag="research",
    ),
    Entry(
        name="research_status",
        kind="http",
        module="functions.research.status",
        summary="Read a run's state and its cited, untrusted output; never regenerates",
        method="POST",
        route="/research-api/assistant/status",
        request_schema="research/status.request",
        response_schema="research/status.response",
        tag="research",
    ),
    Entry(
        name="research_cancel",
        kind="http",
        module="functions.research.cancel",
        summary="Cancel a queued or processing run",
        method="POST",
        route="/research-api/assistant/cancel",
        request_schema="research/cancel.request",
        response_schema="research/cancel.response",
        tag="research",
    ),
    Entry(
        name="research_run_worker",
        kind="trigger",
        module="functions.research.run_worker",
        summary="Claim a created run, ask Gemini, check citations, store the answer",
        document="workspaces/{workspaceId}/runs/{runId}",
        calls_gemini=True,
        tag="research",
    ),
)

BY_NAME = {entry.name: entry for entry in ENTRIES}


def http_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "http")


def trigger_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "trigger")
