"""AgentConnect's statuses and outcomes, as stored and published."""

from __future__ import annotations

from enum import StrEnum


class EvaluationStatus(StrEnum):
    PENDING = "pending"
    EVALUATING = "evaluating"
    FROZEN = "frozen"


class Outcome(StrEnum):
    SELECTED = "selected"
    DEFAULTED = "defaulted"
    FALLBACK = "fallback"


class StepStatus(StrEnum):
    ANSWERED = "answered"
    FAILED = "failed"
    INVALID = "invalid"
