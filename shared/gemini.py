"""One way to ask Gemini for JSON that follows a schema, with every failure classified.

The client is the cached one from `shared.clients`. Tries are made here, not by the
library, so that a job's deadline bounds them: `GEMINI_ATTEMPTS` tries in all, spaced by
Gemini's own `Retry-After` when it sends one, else by exponential backoff from
`GEMINI_INITIAL_DELAY_S`; no try starts, or waits, past the deadline. The answer is
returned parsed but unchecked: callers validate it against the schema and against what
is stored, because model output is untrusted.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import tenacity
from google.genai import errors, types

from shared.clients import gemini
from shared.codes import ProviderFailure
from shared.config import settings
from shared.retention import utcnow
from shared.validation import Schema
from shared.wire import Wire, recording

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 30.0


FailureKind = ProviderFailure
"""Why Gemini gave no usable answer (the codes every API shares)."""


class GeminiError(Exception):
    def __init__(
        self, kind: FailureKind, detail: str, usage: Usage | None = None, wire: Wire | None = None
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.usage = usage or Usage(0, 0)
        self.wire = wire or Wire()
        """What was sent and what came back, exactly, when anything did."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class JsonAnswer:
    data: Any
    text: str
    model_version: str | None
    usage: Usage
    logprobs: list[tuple[str, float]] | None
    """The chosen tokens with their log-probabilities, when asked for and returned."""
    wire: Wire
    """The request and response bodies exactly as they went over the wire."""


@cache
def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's transport errors: google-genai ships on httpx or its fork httpx2."""
    found: list[type[BaseException]] = [OSError]
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name).HTTPError)
        except ImportError:
            continue
    return tuple(found)


def estimate_tokens(text: str) -> int:
    """A conservative token estimate (about four characters a token, rounded up)."""
    return (len(text.encode()) + 3) // 4


def _usage(response: types.GenerateContentResponse) -> Usage:
    meta = response.usage_metadata
    if meta is None:
        return Usage(0, 0)
    output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return Usage(meta.prompt_token_count or 0, output)


def _logprobs(candidate: types.Candidate) -> list[tuple[str, float]] | None:
    result = candidate.logprobs_result
    if result is None or not result.chosen_candidates:
        return None
    return [
        (c.token or "", c.log_probability)
        for c in result.chosen_candidates
        if c.log_probability is not None
    ]


def _retryable(error: BaseException) -> bool:
    if isinstance(error, errors.APIError):
        return error.code in RETRIED_STATUSES
    return isinstance(error, _transport_errors())


def _retry_after_s(error: BaseException | None) -> float | None:
    """Gemini's `Retry-After` in seconds, when it sent one as a number."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    raw = headers.get("retry-after") if headers is not None else None
    try:
        return max(float(raw), 0.0) if raw is not None else None
    except ValueError:
        return None


def _remaining_s(deadline: datetime | None) -> float:
    return float("inf") if deadline is None else (deadline - utcnow()).total_seconds()


class _Pacing(tenacity.wait.wait_base):
    """Gemini's `Retry-After` when given, else exponential backoff."""

    def __init__(self, initial_s: float) -> None:
        self.backoff = tenacity.wait_exponential(multiplier=initial_s, max=MAX_BACKOFF_S)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        asked = _retry_after_s(outcome.exception() if outcome is not None else None)
        return asked if asked is not None else float(self.backoff(retry_state))


class _OutOfTime(tenacity.stop.stop_base):
    """Stop when the next wait would end past the deadline."""

    def __init__(self, pacing: _Pacing, deadline: datetime | None) -> None:
        self.pacing = pacing
        self.deadline = deadline

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.pacing(retry_state) >= _remaining_s(self.deadline)


def _call(
    prompt: str, request_config: types.GenerateContentConfig, deadline: datetime | None
) -> types.GenerateContentResponse:
    """One answer from Gemini, tried as the settings and the deadline allow."""
    config = settings()
    pacing = _Pacing(config.gemini_initial_delay_s)

    def attempt() -> types.GenerateContentResponse:
        remaining = _remaining_s(deadline)
        if remaining <= 0:
            raise TimeoutError("the job's deadline passed before Gemini answered")
        timeout_ms = max(int(min(config.gemini_timeout_ms, remaining * 1000)), 1)
        bounded = request_config.model_copy(
            update={"http_options": types.HttpOptions(timeout=timeout_ms)}
        )
        return gemini().models.generate_content(
            model=config.gemini_model, contents=prompt, config=bounded
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max(config.gemini_attempts, 1))
        | _OutOfTime(pacing, deadline),
        wait=pacing,
        retry=tenacity.retry_if_exception(_retryable),
        reraise=True,
    )
    response: types.GenerateContentResponse = retrying(attempt)
    return response


def generate_json(
    *,
    system: str,
    prompt: str,
    schema: Schema,
    max_output_tokens: int,
    logprobs: bool = False,
    deadline: datetime | None = None,
) -> JsonAnswer:
    """Gemini's JSON answer to one prompt; every failure is a classified `GeminiError`.

    `deadline` is when the caller's job must be done: no try runs or waits past it."""
    config = settings()
    if not config.gemini_configured:
        raise GeminiError(FailureKind.NOT_CONFIGURED, "no Gemini credentials are configured")
    request_config = types.GenerateContentConfig(
        system_instruction=system,
        response_mime_type="application/json",
        response_json_schema=schema,
        max_output_tokens=max_output_tokens,
        temperature=0.0,
        response_logprobs=logprobs or None,
    )
    with recording() as wire:
        try:
            response = _call(prompt, request_config, deadline)
        except errors.APIError as error:
            raise GeminiError(
                FailureKind.PROVIDER_UNAVAILABLE, f"Gemini answered HTTP {error.code}", wire=wire
            ) from error
        except TimeoutError as error:
            raise GeminiError(FailureKind.PROVIDER_UNAVAILABLE, str(error), wire=wire) from error
        except _transport_errors() as error:
            detail = f"Gemini was not reached: {type(error).__name__}"
            raise GeminiError(FailureKind.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
        except ValueError as error:
            # The library raises ValueError (JSONDecodeError, pydantic's ValidationError)
            # when a 200 response's body is not a GenerateContentResponse.
            detail = f"Gemini's response could not be read: {type(error).__name__}"
            raise GeminiError(FailureKind.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
    return _json_answer(response, wire)


def _json_answer(response: types.GenerateContentResponse, wire: Wire) -> JsonAnswer:
    usage = _usage(response)
    candidate = response.candidates[0] if response.candidates else None
    if candidate is None:
        raise GeminiError(
            FailureKind.GENERATION_UNCONFIRMED, "Gemini returned no candidate", usage, wire
        )
    finish = candidate.finish_reason
    if finish != types.FinishReason.STOP:
        reason = finish.value if finish is not None else "none"
        raise GeminiError(
            FailureKind.GENERATION_UNCONFIRMED, f"Gemini finished with {reason}", usage, wire
        )
    text = (
        "".join(
            part.text for part in (candidate.content.parts or []) if part.text and not part.thought
        )
        if candidate.content
        else ""
    )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise GeminiError(
            FailureKind.INVALID_OUTPUT, f"Gemini's answer is not JSON: {error}", usage, wire
        ) from error
    return JsonAnswer(data, text, response.model_version, usage, _logprobs(candidate), wire)


_MODEL_SCHEMA_DROPPED = frozenset({"$schema", "$id", "pattern", "format", "title"})


def model_schema(schema: Schema) -> Schema:
    """A published JSON Schema rewritten into the subset Gemini's structured output takes.

    `const` becomes a one-value `enum`; regex patterns and formats Gemini does not know are
    dropped (the full published schema is still checked on the answer afterwards).
    """
    rewritten: Schema = _rewritten(schema)
    return rewritten


def _rewritten(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_rewritten(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: Schema = {}
    for key, value in schema.items():
        if key in _MODEL_SCHEMA_DROPPED:
            continue
        if key == "const":
            result["enum"] = [value]
        elif key == "properties":
            result[key] = {name: _rewritten(sub) for name, sub in value.items()}
        else:
            result[key] = _rewritten(value)
    return result
