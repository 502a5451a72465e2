"""The Psychologist's request bodies and path and query parameters, as validated against
`schemas/psychologist/`: what `Call.body_as` and `Call.params_as` hand a domain function.
`tests/test_typed_requests.py` holds each to its schema.

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which that test compares with each schema's `required`."""

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from functions.psychologist.documents import Event, HypothesisStatus, SessionState


class ProjectParams(TypedDict):
    projectId: str


class SessionParams(ProjectParams):
    sessionId: str


class EventsAuditParams(SessionParams):
    ids: str
    """Comma-separated event ids."""


class AnalysisParams(ProjectParams):
    analysisId: str


class DecisionParams(ProjectParams):
    hypothesisId: str


class HypothesesParams(ProjectParams):
    sessionId: NotRequired[str]
    status: NotRequired[HypothesisStatus]
    agenteAlvo: NotRequired[str]
    limit: NotRequired[int]
    pageToken: NotRequired[str]


class SessionsParams(ProjectParams):
    agent: NotRequired[str]
    state: NotRequired[SessionState]
    since: NotRequired[str]
    until: NotRequired[str]
    limit: NotRequired[int]
    pageToken: NotRequired[str]


CalibrationParams = TypedDict(
    "CalibrationParams",
    {
        "projectId": str,
        "agenteAlvo": NotRequired[str],
        "from": NotRequired[str],
        "to": NotRequired[str],
    },
)
"""Declared by call: `from` is a Python keyword."""


class EventsRequest(TypedDict):
    events: list[Event]


class SessionEndRequest(TypedDict):
    state: Literal[SessionState.CLOSED, SessionState.CLOSED_ABNORMALLY]
    cause: NotRequired[str]


class AnalysisCreateRequest(TypedDict):
    sessionId: str


class DecisionRequest(TypedDict):
    status: Literal[HypothesisStatus.ACCEPTED, HypothesisStatus.DISMISSED]
    reason: NotRequired[str]


class TrialsParams(ProjectParams):
    hypothesisId: str


class TrialParams(TrialsParams):
    trialId: str


class EffectParams(TrialsParams):
    meaningfulRatio: NotRequired[float]


class TrialStartRequest(TypedDict):
    orgId: str
    agentId: str
    share: NotRequired[float]
    maxSessions: NotRequired[int]
    autoAdopt: NotRequired[bool]


class TrialStopRequest(TypedDict):
    reason: NotRequired[str]


class TrialAdoptRequest(TypedDict):
    reason: NotRequired[str]


class PatternsParams(ProjectParams):
    agent: NotRequired[str]
    since: NotRequired[str]
    until: NotRequired[str]
    status: NotRequired[Literal["open", "accepted", "dismissed", "resolved"]]
    sort: NotRequired[Literal["sessions", "cost"]]
    limit: NotRequired[int]
    pageToken: NotRequired[str]


class PatternParams(ProjectParams):
    patternId: str
    limit: NotRequired[int]
    pageToken: NotRequired[str]


class PatternDecisionParams(ProjectParams):
    patternId: str


class PatternTrialParams(PatternDecisionParams):
    trialId: str


class PatternRefreshParams(ProjectParams):
    refreshId: str


class PatternRefreshRequest(TypedDict):
    agent: NotRequired[str]


REQUESTS: dict[str, type] = {
    "psychologist/project.params": ProjectParams,
    "psychologist/session.params": SessionParams,
    "psychologist/events_audit.params": EventsAuditParams,
    "psychologist/analysis.params": AnalysisParams,
    "psychologist/decision.params": DecisionParams,
    "psychologist/hypotheses.params": HypothesesParams,
    "psychologist/sessions.params": SessionsParams,
    "psychologist/calibration.params": CalibrationParams,
    "psychologist/events.request": EventsRequest,
    "psychologist/session_end.request": SessionEndRequest,
    "psychologist/analysis_create.request": AnalysisCreateRequest,
    "psychologist/decision.request": DecisionRequest,
    "psychologist/trial.params": TrialParams,
    "psychologist/effect.params": EffectParams,
    "psychologist/trial_start.request": TrialStartRequest,
    "psychologist/trial_stop.request": TrialStopRequest,
    "psychologist/trial_adopt.request": TrialAdoptRequest,
    "psychologist/patterns.params": PatternsParams,
    "psychologist/pattern.params": PatternParams,
    "psychologist/pattern_refresh.params": PatternRefreshParams,
    "psychologist/pattern_decision.params": PatternDecisionParams,
    "psychologist/pattern_trial.params": PatternTrialParams,
    "psychologist/pattern_refresh.request": PatternRefreshRequest,
}
"""Each request and params schema this API's operations name, by name, to its TypedDict."""
