"""One way to ask Gemini for JSON that follows a schema, with every failure classified.

The client is the cached one from `shared.clients`; the library retries 408/429/5xx and
transport faults with exponential backoff (`GEMINI_ATTEMPTS`, `GEMINI_INITIAL_DELAY_S`).
The answer is returned parsed but unchecked: callers validate it against the schema and
against what is stored, because model output is untrusted.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from google.genai import errors, types

from shared.clients import gemini
from shared.config import settings


class FailureKind(StrEnum):
    NOT_CONFIGURED = "not_configured"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    GENERATION_UNCONFIRMED = "generation_unconfirmed"
    INVALID_OUTPUT = "invalid_output"


class GeminiError(Exception):
    def __init__(
        self, kind: FailureKind, detail: str, usage: Usage | None = None, raw: str | None = None
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.usage = usage or Usage(0, 0)
        self.raw = raw if raw is not None else detail
        """What came back, for the record: the response JSON, or the error."""


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
    raw: str
    """The whole response as JSON, for the record."""


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


def generate_json(
    *,
    system: str,
    prompt: str,
    schema: dict[str, Any],
    max_output_tokens: int,
    logprobs: bool = False,
) -> JsonAnswer:
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
    try:
        response = gemini().models.generate_content(
            model=config.gemini_model, contents=prompt, config=request_config
        )
    except errors.APIError as error:
        raise GeminiError(
            FailureKind.PROVIDER_UNAVAILABLE,
            f"Gemini answered HTTP {error.code}",
            raw=f"HTTP {error.code}: {error.message}",
        ) from error
    except _transport_errors() as error:
        raise GeminiError(
            FailureKind.PROVIDER_UNAVAILABLE, f"Gemini was not reached: {type(error).__name__}"
        ) from error
    usage = _usage(response)
    raw = response.model_dump_json(exclude_none=True)
    candidate = response.candidates[0] if response.candidates else None
    if candidate is None:
        raise GeminiError(
            FailureKind.GENERATION_UNCONFIRMED, "Gemini returned no candidate", usage, raw
        )
    finish = candidate.finish_reason
    if finish != types.FinishReason.STOP:
        reason = finish.value if finish is not None else "none"
        raise GeminiError(
            FailureKind.GENERATION_UNCONFIRMED, f"Gemini finished with {reason}", usage, raw
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
            FailureKind.INVALID_OUTPUT, f"Gemini's answer is not JSON: {error}", usage, raw
        ) from error
    return JsonAnswer(data, text, response.model_version, usage, _logprobs(candidate), raw)


_MODEL_SCHEMA_DROPPED = frozenset({"$schema", "$id", "pattern", "format", "title"})


def model_schema(schema: Any) -> Any:
    """A published JSON Schema rewritten into the subset Gemini's structured output takes.

    `const` becomes a one-value `enum`; regex patterns and formats Gemini does not know are
    dropped (the full published schema is still checked on the answer afterwards).
    """
    if isinstance(schema, list):
        return [model_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _MODEL_SCHEMA_DROPPED:
            continue
        if key == "const":
            result["enum"] = [value]
        elif key == "properties":
            result[key] = {name: model_schema(sub) for name, sub in value.items()}
        else:
            result[key] = model_schema(value)
    return result
