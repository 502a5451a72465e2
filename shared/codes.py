"""Codes every API shares: why a call to Gemini gave no usable answer."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    FAILED = "failed"
    """A settled job that has no result: the one status every API's jobs share."""


class ProviderFailure(StrEnum):
    NOT_CONFIGURED = "not_configured"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    GENERATION_UNCONFIRMED = "generation_unconfirmed"
    INVALID_OUTPUT = "invalid_output"
