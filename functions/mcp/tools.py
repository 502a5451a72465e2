"""The MCP tools: each is one operation of the HTTP API, reached through the same checks
(`shared.http.checked_call`: schemas, token, grants, role) and the same domain function,
so an agent can do through MCP exactly what its token can do over HTTP.

A tool's input schema joins the operation's published parameter and request schemas; its
output schema is the published response schema (a bare array is wrapped in an object,
since MCP structured content is an object)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from werkzeug.datastructures import Headers

from functions.agentconnect.audience import audience_authorizer
from functions.endpoints import endpoint
from functions.registry import Operation, rest_entry
from shared.http import Authorizer, Call, Endpoint, Reply, default_authorizer
from shared.jsonbody import JsonObject
from shared.validation import Schema, inlined, load_schema


@dataclass(frozen=True)
class Tool:
    """One MCP tool: one operation of an HTTP entry point, and the domain function behind
    it, with the description a model reads to decide when to call it."""

    name: str
    entry: str
    """The registry entry, and below the method, whose operation this is."""
    method: str
    domain: str
    """The domain function, `module:name`, imported on the tool's first call so that a
    cold instance imports only the API its first call needs."""
    description: str
    read_only: bool
    authorizer: Authorizer = default_authorizer
    listed_as: str | None = None
    """For a bare-array response: the property that holds the array in the tool's output."""

    def handler(self, call: Call) -> Reply:
        return _domain_function(self.domain)(call)

    @property
    def endpoint(self) -> Endpoint:
        return endpoint(self.entry, self.method)

    @property
    def operation(self) -> Operation:
        return rest_entry(self.entry).operation(self.method)

    @property
    def header_arguments(self) -> dict[str, str]:
        """{argument: request header} for the headers the operation reads."""
        return {HEADER_ARGUMENTS[name]: name for name in self.operation.headers}

    def input_schema(self) -> Schema:
        """The operation's published schema itself when it has one and takes nothing
        else (the contract's status request, as is); else its parts joined."""
        parts = [p for p in (self.endpoint.params_schema, self.endpoint.body_schema) if p]
        if len(parts) == 1 and not self.operation.headers:
            return _published(parts[0])
        properties: Schema = {}
        required: list[str] = []
        for name in parts:
            schema = inlined(load_schema(name))
            properties |= schema.get("properties", {})
            required += [r for r in schema.get("required", []) if r not in required]
        for argument in self.header_arguments:
            properties[argument] = HEADER_SCHEMAS[argument]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    def output_schema(self) -> Schema:
        name = self.operation.response_schema
        if name is None:
            raise LookupError(f"{self.entry} {self.method} publishes no response schema")
        schema = _published(name)
        if self.listed_as is not None:
            schema = {
                "type": "object",
                "properties": {
                    self.listed_as: schema,
                    "nextPageToken": {"type": ["string", "null"]},
                },
                "required": [self.listed_as, "nextPageToken"],
                "additionalProperties": False,
            }
        portable: Schema = _without_type_arrays(schema)
        return portable

    def split(self, arguments: JsonObject) -> tuple[JsonObject, JsonObject, Headers]:
        """(body, params, headers) from a call's arguments, as the HTTP request carries them."""
        params_schema = self.endpoint.params_schema
        in_params = (
            set(load_schema(params_schema).get("properties", {})) if params_schema else set()
        )
        headers = Headers()
        body: JsonObject = {}
        params: JsonObject = {}
        from_headers = self.header_arguments
        for key, value in arguments.items():
            if key in from_headers:
                headers[from_headers[key]] = str(value)
            elif key in in_params:
                params[key] = value
            else:
                body[key] = value
        return body, params, headers


SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""
DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose value is data, never a schema."""


def _without_type_arrays(schema: Any) -> Any:
    """The same schema with every `"type": [a, b]` as `anyOf` of one type each, the form
    strict MCP clients read. Each branch keeps the schema's other keywords: those that
    apply to one type ignore the others, the rest hold in both, so nothing changes."""
    if isinstance(schema, list):
        return [_without_type_arrays(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rest: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            rest[key] = {name: _without_type_arrays(sub) for name, sub in value.items()}
        elif key in DATA:
            rest[key] = value
        elif key != "type":
            rest[key] = _without_type_arrays(value)
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return {"anyOf": [{"type": kind, **rest} for kind in kinds]}
    return {**rest, "type": kinds} if "type" in schema else rest


@cache
def _domain_function(reference: str) -> Callable[[Call], Reply]:
    module, name = reference.split(":")
    function: Callable[[Call], Reply] = getattr(importlib.import_module(module), name)
    return function


def _published(name: str) -> Schema:
    """A published schema with its references inlined, as a tool's schema."""
    return {key: value for key, value in inlined(load_schema(name)).items() if key != "$schema"}


HEADER_ARGUMENTS = {"Idempotency-Key": "idempotencyKey"}
"""The tool argument that carries each request header an operation reads."""
HEADER_SCHEMAS: dict[str, Schema] = {
    "idempotencyKey": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "description": "Sent again with the same request, it returns the run the first call "
        "made instead of asking again: use one key per question.",
    }
}

POLL = (
    "A run is asynchronous: poll sosoapi_research_assistant_status about once a second "
    "until run.status is completed, failed, cancelled, expired or unavailable (usually "
    "seconds; give up after a few minutes)."
)

TOOLS = (
    Tool(
        "sosoapi_research_assistant_status",
        "research_status",
        "POST",
        "functions.research.service:status",
        "The status of a research run and, once completed, its answer: every statement "
        "with the evidence items (id and revision) it cites. A result whose cited evidence "
        "or asker's access changed reads status unavailable, with the reason. Call it to "
        "poll a run you asked for. " + POLL,
        read_only=True,
    ),
    Tool(
        "research_ask",
        "research_ask",
        "POST",
        "functions.research.service:ask",
        "Ask a research question (or an overview, themes, audiences, sentiment, query "
        "suggestions) over a conversation's evidence items. Creates a queued run and "
        "returns it at once; it counts against the workspace's token budget and active-run "
        "limit. " + POLL,
        read_only=False,
    ),
    Tool(
        "research_cancel",
        "research_cancel",
        "POST",
        "functions.research.service:cancel",
        "Cancel a queued or processing research run; a settled run cannot be cancelled.",
        read_only=False,
    ),
    Tool(
        "research_evidence_upsert",
        "research_evidence_upsert",
        "POST",
        "functions.research.service:upsert_evidence",
        "Add evidence items to a conversation, or change them (a changed text raises the "
        "item's and the conversation's revision, which makes results citing the old text "
        "unavailable). Returns each item's id and revision.",
        read_only=False,
    ),
    Tool(
        "research_evidence_read",
        "research_evidence_read",
        "POST",
        "functions.research.service:read_evidence",
        "Read the evidence items a result cites, at the cited revisions, to check a "
        "statement against what the model read: the text while the item still holds that "
        "revision, else whether it was revised since (with its current revision) or removed.",
        read_only=True,
    ),
    Tool(
        "psychologist_hypotheses_list",
        "psychologist_hypotheses_list",
        "GET",
        "functions.psychologist.service:list_hypotheses",
        "The hypotheses about a project's agents, newest first: observation, hypothesis, "
        "suggested instruction change, self-reported confidence and the event ids each "
        "cites. Filter by sessionId, status or agenteAlvo; pass nextPageToken back as "
        "pageToken for the next page.",
        read_only=True,
        listed_as="hypotheses",
    ),
    Tool(
        "psychologist_analysis_get",
        "psychologist_analysis_get",
        "GET",
        "functions.psychologist.service:get_analysis",
        "One analysis of a session: its status, counts, token use per Gemini call, the "
        "deterministic signals it found and the hypotheses it rejected, with why.",
        read_only=True,
    ),
    Tool(
        "psychologist_events_read",
        "psychologist_session_events",
        "GET",
        "functions.psychologist.service:read_events",
        "Read a session's events by id (comma-separated ids), to check what a hypothesis "
        "cites; ids no longer retained come back under missing.",
        read_only=True,
    ),
    Tool(
        "psychologist_hypothesis_decide",
        "psychologist_hypothesis_decision",
        "POST",
        "functions.psychologist.service:decide",
        "Accept or dismiss a hypothesis, with a reason; records who decided and when. "
        "Needs the admin role in the project.",
        read_only=False,
    ),
    Tool(
        "psychologist_decisions_read",
        "psychologist_hypothesis_decisions",
        "GET",
        "functions.psychologist.service:decision_history",
        "A hypothesis's decision history, newest first: each change of status, from what, "
        "by whom, when and why.",
        read_only=True,
    ),
    Tool(
        "psychologist_effect_read",
        "psychologist_hypothesis_effect",
        "GET",
        "functions.psychologist.effects:effect",
        "For an accepted hypothesis: the agent's sessions in equal windows before and after "
        "the decision, the rate per session of the signal kinds its cited events show and "
        "of abnormal ends, the after/before rate ratio with a 95% interval, and a verdict "
        "(improved, worse, no_clear_change, or too_few_sessions below 5 sessions a window). "
        "An association over time, not proof. Answers 409 for a hypothesis not accepted.",
        read_only=True,
    ),
    Tool(
        "psychologist_calibration",
        "psychologist_calibration",
        "GET",
        "functions.psychologist.calibrations:calibration",
        "How often people accepted hypotheses at each band of the model's self-reported "
        "confidence (0-20 ... 80-100), for one agent (agenteAlvo) or all, within a window "
        "(from, to; the last 90 days by default): hypotheses, accepted, dismissed and "
        "proposed per band, and the accepted rate among the decided.",
        read_only=True,
    ),
    Tool(
        "agentconnect_evaluation_get",
        "agentconnect_evaluation_get",
        "GET",
        "functions.agentconnect.service:get_evaluation",
        "The frozen model-selection evaluation of an agent's session, by its seq: the "
        "runtime, model, effort and permission mode chosen, why, and (for 24 hours) every "
        "step's question, answer and raw exchange. Answers 409 until it is frozen, usually "
        "within seconds of the session's start: wait a second and call again.",
        read_only=True,
        authorizer=audience_authorizer,
    ),
    Tool(
        "agentconnect_evaluations_list",
        "agentconnect_evaluations_list",
        "GET",
        "functions.agentconnect.service:list_evaluations",
        "An agent's frozen evaluations, newest first; pass nextPageToken back as pageToken.",
        read_only=True,
    ),
    Tool(
        "whoami",
        "account_whoami",
        "GET",
        "functions.account.service:whoami",
        "Who this token stands for: its user, credential class, capabilities and the "
        "tenants it is limited to (null: every tenant its user is a member of).",
        read_only=True,
    ),
)
BY_TOOL = {tool.name: tool for tool in TOOLS}
