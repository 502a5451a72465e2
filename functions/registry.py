"""The one list of entry points, read by `main.py`, the local host, OpenAPI and deploy.

This module imports nothing from the APIs, so reading it costs nothing at cold start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Access:
    """Who may call an API's entry points: a token's capability, in one kind of tenant."""

    capability: str
    tenant_kind: str
    tenant_param: str
    """Where the request names its tenant: a path parameter or a body field."""


RESEARCH = Access("agent:research", "workspace", "workspace_id")
PSYCHOLOGIST = Access("agent:psychologist", "project", "projectId")
CONNECT = Access("agent:connect", "org", "orgId")


@dataclass(frozen=True)
class Operation:
    """One method served at an HTTP entry point's route, with its published schemas and
    the least tenant role that may call it."""

    method: str
    summary: str = ""
    """Defaults to the entry's summary."""
    request_schema: str | None = None
    params_schema: str | None = None
    """Path and query parameters, as one object."""
    response_schema: str | None = None
    success_status: int = 200
    role: str = "viewer"
    """The least role in the tenant that may call it."""
    errors: tuple[int, ...] = ()
    """Error statuses it may answer beyond those every operation may (see `error_statuses`)."""
    audience: bool = False
    """Also admits the `session_audience` token of the session the call is about."""


@dataclass(frozen=True)
class Entry:
    name: str
    """The function name: the attribute of `main` and the deployed function's name."""
    kind: Literal["http", "trigger"]
    module: str
    summary: str
    tag: str
    route: str | None = None
    """Public path pattern of an HTTP entry point, with `{param}` placeholders."""
    operations: tuple[Operation, ...] = ()
    document: str | None = None
    """Document path pattern whose creation runs a trigger."""
    calls_gemini: bool = False
    schedule: str | None = None
    """Cron schedule for an HTTP entry point that Cloud Scheduler calls."""
    access: Access | None = None
    """Who may call it; None for private entries (triggers, scheduled jobs)."""

    def operation(self, method: str) -> Operation:
        return next(op for op in self.operations if op.method == method)


def _sweep(api: str, summary: str) -> Entry:
    """An API's scheduled sweep: a private HTTP function that Cloud Scheduler calls."""
    return Entry(
        name=f"{api}_sweep",
        kind="http",
        module=f"functions.{api}.sweep",
        summary=summary,
        tag=api,
        route=f"/internal/{api}/sweep",
        operations=(Operation("POST"),),
        schedule="* * * * *",
    )


ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="research_conversation_create",
        kind="http",
        module="functions.research.conversation_create",
        summary="Create a conversation in a workspace",
        tag="research",
        access=RESEARCH,
        route="/research-api/conversations/create",
        operations=(
            Operation(
                "POST",
                role="member",
                request_schema="research/conversation_create.request",
                response_schema="research/conversation",
                success_status=201,
            ),
        ),
    ),
    Entry(
        name="research_evidence_upsert",
        kind="http",
        module="functions.research.evidence_upsert",
        summary="Add or change evidence items of a conversation",
        tag="research",
        access=RESEARCH,
        route="/research-api/evidence/upsert",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="member",
                request_schema="research/evidence_upsert.request",
                response_schema="research/evidence_upsert.response",
            ),
        ),
    ),
    Entry(
        name="research_evidence_remove",
        kind="http",
        module="functions.research.evidence_remove",
        summary="Remove evidence items from a conversation",
        tag="research",
        access=RESEARCH,
        route="/research-api/evidence/remove",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="member",
                request_schema="research/evidence_remove.request",
                response_schema="research/evidence_remove.response",
            ),
        ),
    ),
    Entry(
        name="research_ask",
        kind="http",
        module="functions.research.ask",
        summary="Queue a cited analysis run over a conversation's evidence",
        tag="research",
        access=RESEARCH,
        route="/research-api/assistant/ask",
        operations=(
            Operation(
                "POST",
                errors=(409, 429),
                role="member",
                request_schema="research/ask.request",
                response_schema="research/ask.response",
                success_status=202,
            ),
        ),
    ),
    Entry(
        name="research_status",
        kind="http",
        module="functions.research.status",
        summary="Read a run's state and its cited, untrusted output; never regenerates",
        tag="research",
        access=RESEARCH,
        route="/research-api/assistant/status",
        operations=(
            Operation(
                "POST",
                role="viewer",
                request_schema="research/status.request",
                response_schema="research/status.response",
            ),
        ),
    ),
    Entry(
        name="research_cancel",
        kind="http",
        module="functions.research.cancel",
        summary="Cancel a queued or processing run",
        tag="research",
        access=RESEARCH,
        route="/research-api/assistant/cancel",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="member",
                request_schema="research/cancel.request",
                response_schema="research/cancel.response",
            ),
        ),
    ),
    _sweep(
        "research",
        "Settle runs stuck past their lease or queue deadline (Cloud Scheduler)",
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
    Entry(
        name="psychologist_session_events",
        kind="http",
        module="functions.psychologist.session_events",
        summary="Ingest a session's events, or read cited events for audit",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/sessions/{sessionId}/events",
        operations=(
            Operation(
                "POST",
                "Ingest a batch of at most 500 events; idempotent per event id",
                role="member",
                errors=(409,),
                request_schema="psychologist/events.request",
                params_schema="psychologist/session.params",
                response_schema="psychologist/events.response",
            ),
            Operation(
                "GET",
                "Read the events with the given ids, for audit",
                params_schema="psychologist/events_audit.params",
                response_schema="psychologist/events_audit.response",
            ),
        ),
    ),
    Entry(
        name="psychologist_session_end",
        kind="http",
        module="functions.psychologist.session_end",
        summary="End a session; an abnormal end queues an analysis",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/sessions/{sessionId}/end",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="member",
                request_schema="psychologist/session_end.request",
                params_schema="psychologist/session.params",
                response_schema="psychologist/session",
            ),
        ),
    ),
    Entry(
        name="psychologist_analysis_create",
        kind="http",
        module="functions.psychologist.analysis_create",
        summary="Queue an analysis of a session",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/analyses",
        operations=(
            Operation(
                "POST",
                role="member",
                request_schema="psychologist/analysis_create.request",
                params_schema="psychologist/project.params",
                response_schema="psychologist/analysis",
                success_status=202,
            ),
        ),
    ),
    Entry(
        name="psychologist_analysis_get",
        kind="http",
        module="functions.psychologist.analysis_get",
        summary="Read an analysis: status, counts, token use and rejected hypotheses",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/analyses/{analysisId}",
        operations=(
            Operation(
                "GET",
                role="viewer",
                params_schema="psychologist/analysis.params",
                response_schema="psychologist/analysis",
            ),
        ),
    ),
    Entry(
        name="psychologist_hypotheses_list",
        kind="http",
        module="functions.psychologist.hypotheses_list",
        summary="List the Psychologist's hypotheses about agents, newest first",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/hypotheses",
        operations=(
            Operation(
                "GET",
                role="viewer",
                params_schema="psychologist/hypotheses.params",
                response_schema="psychologist/hypotheses.response",
            ),
        ),
    ),
    Entry(
        name="psychologist_hypothesis_decision",
        kind="http",
        module="functions.psychologist.hypothesis_decision",
        summary="Accept or dismiss a hypothesis",
        tag="psychologist",
        access=PSYCHOLOGIST,
        route="/projects/{projectId}/hypotheses/{hypothesisId}/decision",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="admin",
                request_schema="psychologist/decision.request",
                params_schema="psychologist/decision.params",
                response_schema="psychologist/hypothesis",
            ),
        ),
    ),
    _sweep(
        "psychologist",
        "End silent sessions, settle stuck analyses (Cloud Scheduler)",
    ),
    Entry(
        name="psychologist_analysis_worker",
        kind="trigger",
        module="functions.psychologist.analysis_worker",
        summary="Claim a created analysis, ground it in signals, ask Gemini, check, store",
        tag="psychologist",
        document="projects/{projectId}/analyses/{analysisId}",
        calls_gemini=True,
    ),
    Entry(
        name="agentconnect_selection_put",
        kind="http",
        module="functions.agentconnect.selection_put",
        summary="Configure an agent's model selection; every PUT is a new immutable version",
        tag="agentconnect",
        access=CONNECT,
        route="/v1/orgs/{orgId}/agents/{id}/model-selection",
        operations=(
            Operation(
                "PUT",
                errors=(409,),
                role="admin",
                request_schema="agentconnect/selection.request",
                params_schema="agentconnect/agent.params",
                response_schema="agentconnect/selection",
                success_status=201,
            ),
        ),
    ),
    Entry(
        name="agentconnect_session_start",
        kind="http",
        module="functions.agentconnect.session_start",
        summary="Start an agent session: the next seq and a token for this session alone",
        tag="agentconnect",
        access=CONNECT,
        route="/v1/orgs/{orgId}/agents/{id}/sessions",
        operations=(
            Operation(
                "POST",
                errors=(409,),
                role="member",
                request_schema="agentconnect/session_start.request",
                params_schema="agentconnect/agent.params",
                response_schema="agentconnect/session_start.response",
                success_status=202,
            ),
        ),
    ),
    Entry(
        name="agentconnect_evaluation_get",
        kind="http",
        module="functions.agentconnect.evaluation_get",
        summary="Get a model selection evaluation",
        tag="agentconnect",
        access=CONNECT,
        route="/v1/orgs/{orgId}/agents/{id}/model-evaluations/{seq}",
        operations=(
            Operation(
                "GET",
                errors=(409,),
                role="viewer",
                audience=True,
                params_schema="agentconnect/evaluation.params",
                response_schema="agentconnect/evaluation",
            ),
        ),
    ),
    Entry(
        name="agentconnect_evaluations_list",
        kind="http",
        module="functions.agentconnect.evaluations_list",
        summary="List an agent's frozen evaluations, newest first",
        tag="agentconnect",
        access=CONNECT,
        route="/v1/orgs/{orgId}/agents/{id}/model-evaluations",
        operations=(
            Operation(
                "GET",
                role="viewer",
                params_schema="agentconnect/evaluations.params",
                response_schema="agentconnect/evaluations.response",
            ),
        ),
    ),
    _sweep(
        "agentconnect",
        "Freeze evaluations stuck past their lease or queue deadline (Cloud Scheduler)",
    ),
    Entry(
        name="agentconnect_evaluation_worker",
        kind="trigger",
        module="functions.agentconnect.evaluation_worker",
        summary="Walk the selection chain with Gemini and freeze the evaluation",
        tag="agentconnect",
        document="orgs/{orgId}/agents/{agentId}/agent_sessions/{sessionId}",
        calls_gemini=True,
    ),
)

BY_NAME = {entry.name: entry for entry in ENTRIES}


def http_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "http")


def trigger_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.kind == "trigger")


def scheduled_entries() -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.schedule is not None)


COMMON_ERRORS = (400, 401, 403, 404, 405, 500, 503)
BODY_ERRORS = (413, 415)


def error_statuses(operation: Operation) -> tuple[int, ...]:
    """Every error status an operation may answer: validation, auth, an unknown resource,
    a wrong method, a fault, Firestore unavailable; too large or wrong content type when
    it takes a body; and its own (409 conflicts, 429 limits)."""
    body = BODY_ERRORS if operation.request_schema else ()
    return tuple(sorted({*COMMON_ERRORS, *body, *operation.errors}))
