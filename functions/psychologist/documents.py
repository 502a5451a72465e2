"""The Psychologist's statuses and codes, as stored and published."""

from __future__ import annotations

from enum import StrEnum


class AnalysisStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class AnalysisFailure(StrEnum):
    NOT_CONFIGURED = "not_configured"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    GENERATION_UNCONFIRMED = "generation_unconfirmed"
    INVALID_OUTPUT = "invalid_output"
    SESSION_EMPTY = "session_empty"
    INPUT_TOO_LARGE = "input_too_large"


class SessionState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    CLOSED_ABNORMALLY = "closed_abnormally"


class HypothesisStatus(StrEnum):
    PROPOSED = "proposed"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"
