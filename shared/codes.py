"""The codes every API shares: a failed job's status, and why a call to Gemini gave no
usable answer."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    FAILED = "failed"
    """A settled job that has no result: the one status every API's jobs share."""


class ProviderFailure(StrEnum):
    """Why Gemini gave no usable answer: the failure codes every API publishes alike."""

    NOT_CONFIGURED = "not_configured"
    """No Gemini credentials (or Vertex AI project) are configured."""
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    """Gemini refused or failed the call (quota, overload, a 4xx or 5xx) or did not answer
    within the job's deadline, after the retries that fit in it."""
    GENERATION_UNCONFIRMED = "generation_unconfirmed"
    """It is not known whether Gemini answered: the worker failed unexpectedly, lost its
    lease, or the job was never taken up in time."""
    INVALID_OUTPUT = "invalid_output"
    """Gemini answered, but the answer broke the published schema or cited what it may not."""
