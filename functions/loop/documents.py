"""What an outcome record holds beside the Psychologist's half (its `Outcome` type): the
choice AgentConnect froze for the session, merged under `selection`. No user or model
text: ids, the target, which rule held and each step's answer value and probability.

No `from __future__ import annotations` here, as in the APIs' documents modules."""

from datetime import datetime
from enum import StrEnum
from typing import Any, NotRequired

from typing_extensions import TypedDict

SIGNAL_KINDS = ("task_reopened", "tool_error_repeated", "last_events_before_abnormal_end")
"""The signal kinds the Psychologist counts in a log (its `signals` module finds them)."""


class StepAnswer(TypedDict):
    type: str
    value: bool | str
    probability: float


class ChoiceRecord(TypedDict):
    """`projects/{p}/outcomes/{s}-{a}.selection`: how the session's target was chosen."""

    org_id: str
    agent_id: str
    seq: int
    selection_version: int
    started_at: datetime
    target_key: str
    target: dict[str, Any]
    route: str
    """Which rule held on which answer (`initial/1:true`), `default`, `fallback`, or
    `explored` when the target was drawn."""
    explored: bool
    propensity: float
    """The probability the selection gave this session the target it got."""
    candidates: int
    """How many targets an exploring session drew among (1 / it is its draw's chance)."""
    candidate_keys: list[str]
    """Those targets' keys, for an exploring session (else empty): a policy that would
    have given a target outside them cannot be judged on this session."""
    answers: dict[str, StepAnswer]
    """Every step's answer, by step id: the steps walked, or every step when it explored."""
    trial_arms: list[str]
    """`{trial id}:{arm}` for each running trial the session was assigned to."""
    instructions_version: int | None
    """The agent's instructions version the session was served at its start; None when
    it had none."""


GENERIC_KINDS = frozenset({"last_events_before_abnormal_end"})
"""Signal kinds every abnormal session shows whatever went wrong: a hypothesis is judged
on the kinds specific to it, never on these."""


class Arm(StrEnum):
    TREATMENT = "treatment"
    CONTROL = "control"


class TrialStatus(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"


class RunningTrial(TypedDict):
    """`orgs/{o}/agents/{a}.running_trials.{t}`: what a session start needs of a trial."""

    project_id: str
    hypothesis_id: str | None
    """None for a pattern's trial (`pattern_id` names it)."""
    pattern_id: NotRequired[str | None]
    share: float
    sugestao: str
    max_sessions: int | None
    assigned: int


class StopCause(StrEnum):
    """Who stopped a trial when no person did."""

    GUARDRAIL = "guardrail"
    """Its verdict read `worse`, or its one-sided test found harm: treatment stops at once."""
    AUTO_ADOPT = "autoAdopt"
    """Started with `autoAdopt`, its verdict read `improved`: its suggestion was adopted."""


class Trial(TypedDict):
    """`projects/{p}/trials/{t}`: a randomised trial of an accepted hypothesis's or
    pattern's suggestion, with what calibration counts of a hypothesis's (its confidence,
    agent and creation; the verdict stored when it stops)."""

    id: str
    project_id: str
    hypothesis_id: str | None
    """None for a pattern's trial."""
    pattern_id: NotRequired[str | None]
    """Set for a pattern's trial, whose verdict is on the pattern's own rate per arm."""
    org_id: str
    agent_id: str
    share: float
    max_sessions: int | None
    status: TrialStatus
    started_at: datetime
    started_by: str
    stopped_at: datetime | None
    stopped_by: NotRequired[str]
    """A person's id, or a `StopCause`."""
    stop_reason: NotRequired[str | None]
    agenteAlvo: str
    confiancaPercent: NotRequired[float]
    """A hypothesis's: a pattern's trial has none, so calibration never counts it."""
    createdAt: NotRequired[datetime]
    """The hypothesis's creation: calibration's window."""
    signal_kinds: list[str]
    sugestao: NotRequired[str]
    auto_adopt: NotRequired[bool]
    """Adopt the suggestion the first time the verdict reads `improved`."""
    adopted_as: NotRequired[int | None]
    """The instructions version the suggestion became."""
    resolved: NotRequired[bool]
    """A pattern's trial that read `improved` and resolved its pattern."""
    verdict: str | None
    """The randomized verdict when it stopped (None while running)."""


class TrialOrigin(TypedDict):
    """The trial an instructions version was adopted from, and what it tested."""

    trial_id: str
    hypothesis_id: str | None
    pattern_id: str | None


class StoredInstructions(TypedDict):
    """`orgs/{o}/agents/{a}/instructions/{version}`: every version, kept and never changed;
    the current one is copied on the agent document (`instructions`)."""

    version: int
    text: str
    created_at: datetime
    created_by: str
    reason: str | None
    origin: TrialOrigin | None
    """Set when a trial's suggestion was adopted; None for a person's edit or a rollback."""
    rolled_back_from: int | None
    """The version whose text a rollback took again; None otherwise."""
