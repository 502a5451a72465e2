"""The research API's statuses and codes, as stored and published (snake_case)."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    UNAVAILABLE = "unavailable"
    """Read only: a completed result whose sources or authority changed."""


class FailureCode(StrEnum):
    NOT_CONFIGURED = "not_configured"
    BUDGET_EXHAUSTED = "budget_exhausted"
    ACCESS_CHANGED = "access_changed"
    SOURCE_UNAVAILABLE = "source_unavailable"
    CONTEXT_CHANGED = "context_changed"
    INPUT_TOO_LARGE = "input_too_large"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    GENERATION_UNCONFIRMED = "generation_unconfirmed"
    INVALID_OUTPUT = "invalid_output"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    CONVERSATION_FULL = "conversation_full"
