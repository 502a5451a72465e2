"""What an outcome record holds beside the Psychologist's half (its `Outcome` type): the
choice AgentConnect froze for the session, merged under `selection`. No user or model
text: ids, the target, which rule held and each step's answer value and probability.

No `from __future__ import annotations` here, as in the APIs' documents modules."""

from datetime import datetime
from typing import Any

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
