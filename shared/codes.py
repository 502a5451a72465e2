"""The vocabulary every API shares: why a call to Gemini gave no usable answer, and how a
job's token usage is stored."""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict


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


class TokenUsage(TypedDict):
    """A job's Gemini tokens as every API stores them (a run's and an analysis's `usage`)."""

    input_tokens: int
    output_tokens: int
    """Thought tokens included: they are billed as output."""
    cached_tokens: int
    """Prompt tokens the implicit cache served (part of `input_tokens`)."""
    thought_tokens: int
    """Thinking tokens (part of `output_tokens`)."""


NO_TOKENS: TokenUsage = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_tokens": 0,
    "thought_tokens": 0,
}
