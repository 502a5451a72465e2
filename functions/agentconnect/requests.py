"""AgentConnect's request bodies and path and query parameters, as validated against
`schemas/agentconnect/`: what `Call.body_as` and `Call.params_as` hand a domain function.
`tests/test_typed_requests.py` holds each to its schema. A selection's body is stored as
sent, so its type is the stored `Selection`.

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which that test compares with each schema's `required`."""

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from functions.agentconnect.documents import Selection


class AgentParams(TypedDict):
    orgId: str
    id: str
    """The agent's id."""


class EvaluationParams(AgentParams):
    seq: int


class EvaluationsParams(AgentParams):
    limit: NotRequired[int]
    pageToken: NotRequired[str]


class VersionsParams(AgentParams):
    limit: NotRequired[int]
    pageToken: NotRequired[str]


class InstructionsRequest(TypedDict):
    """A new text, or a rollback to `fromVersion`'s text: the schema admits exactly one."""

    text: NotRequired[str]
    fromVersion: NotRequired[int]
    reason: NotRequired[str]


class ReportParams(AgentParams):
    since: NotRequired[str]
    until: NotRequired[str]


class OutcomeSourceRequest(TypedDict):
    projectId: str
    agent: str


class SessionStartRequest(TypedDict):
    sessionId: NotRequired[str]
    title: str
    input: dict[str, Any]
    startedBy: NotRequired[Literal["launch", "hook", "api"]]


REQUESTS: dict[str, type] = {
    "agentconnect/agent.params": AgentParams,
    "agentconnect/evaluation.params": EvaluationParams,
    "agentconnect/evaluations.params": EvaluationsParams,
    "agentconnect/session_start.request": SessionStartRequest,
    "agentconnect/selection.request": Selection,
    "agentconnect/selection_report.params": ReportParams,
    "agentconnect/outcome_source.request": OutcomeSourceRequest,
    "agentconnect/instructions.request": InstructionsRequest,
    "agentconnect/instructions_versions.params": VersionsParams,
}
"""Each request and params schema this API's operations name, by name, to its TypedDict."""
