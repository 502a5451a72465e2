"""One way to ask Gemini for JSON that follows a schema, with every failure classified.

The client is the cached one from `shared.clients`; the request is shaped by the
configured model's profile (`shared.models`): its thinking setting, whether to ask for
log-probabilities, whether to send a temperature. Tries are made here, not by the
library, so that a job's deadline bounds them: `GEMINI_ATTEMPTS` tries in all, spaced by
the delay Gemini names (`RetryInfo` in its error body, or a `Retry-After` header), else by
exponential backoff from `GEMINI_INITIAL_DELAY_S`; no try starts, or waits, past the
deadline, and a per-day quota or a configuration error (400, 403, 404) is not tried again.
The answer is returned parsed but unchecked: callers validate it against the schema and
against what is stored, because model output is untrusted.

`embed` asks the embedding model the same way (the same tries, deadline and failures), a
hundred texts a call, and returns unit-length vectors for clustering.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from http import HTTPStatus
from typing import Any, TypeVar

import tenacity
from google.auth import exceptions as auth_exceptions
from google.genai import errors, types

from shared.clients import gemini
from shared.codes import ProviderFailure
from shared.instance import Instance, instance, settings
from shared.models import profile_of
from shared.retention import utcnow
from shared.spend import TokenUsage
from shared.validation import Schema
from shared.wire import Wire, recording

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses worth another try; any other (400, 403, 404: a bad key, region, model or
parameter) is a configuration error that a retry cannot fix."""
MAX_BACKOFF_S = 30.0
DETAIL_LIMIT = 600
T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    """Everything the model wrote, thought tokens included (they are billed as output)."""
    cached_tokens: int = 0
    """Prompt tokens served from the implicit cache (part of `input_tokens`)."""
    thought_tokens: int = 0
    """Thinking tokens (part of `output_tokens`)."""

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.thought_tokens + other.thought_tokens,
        )

    def stored(self) -> TokenUsage:
        """As a job stores it."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "thought_tokens": self.thought_tokens,
        }


NO_USAGE = Usage(0, 0)


class GeminiError(Exception):
    def __init__(
        self,
        kind: ProviderFailure,
        detail: str,
        usage: Usage | None = None,
        wire: Wire | None = None,
        model_version: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.usage = usage or NO_USAGE
        self.wire = wire or Wire()
        """What was sent and what came back, exactly, when anything did."""
        self.model_version = model_version


@dataclass(frozen=True)
class Output:
    """What one call may write: the answer's tokens and the thinking allowance;
    `max_output_tokens` is their sum, since thought tokens count against it."""

    answer_tokens: int
    thinking_tokens: int
    least_thinking: bool = False
    """Ask for the least thinking the model allows (one-value answers)."""

    @property
    def max_output_tokens(self) -> int:
        return self.answer_tokens + self.thinking_tokens


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


@dataclass(frozen=True)
class Refusal:
    """Gemini's error body, read as it sends it (`google.rpc.Status` with its details)."""

    code: int
    status: str
    message: str
    retry_delay_s: float | None
    """`google.rpc.RetryInfo.retryDelay`, when the body carries one."""
    daily_quota: str | None
    """The `quotaId` of a per-day quota the request ran into: no retry helps today."""

    def describe(self) -> str:
        text = f"Gemini answered HTTP {self.code} {self.status}: {self.message}".strip()
        if self.daily_quota:
            text = f"Gemini's per-day quota {self.daily_quota} is used up; {text}"
        return scrub(text)[:DETAIL_LIMIT]


def _no_refusals(_owner: Instance) -> set[str]:
    return set()


def _refused_logprobs() -> set[str]:
    """Models this instance has seen refuse `responseLogprobs`: never asked for them again."""
    return instance().get(_no_refusals)


_KEY_PARAMETER = re.compile(r"([?&](?:key|api_key)=)[^&#\s\"']+", re.IGNORECASE)
_KEY_HEADER = re.compile(
    r"((?:x-goog-api-key|authorization)[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+)?[^\s,;\"']+",
    re.IGNORECASE,
)


def scrub(text: str) -> str:
    """`text` with credentials taken out where they travel: a URL's `key` parameter and the
    `x-goog-api-key` and `Authorization` headers. Nothing else is touched, so a string
    that happens to equal the key elsewhere stays as it is (raw exchanges are never
    scrubbed: the key travels in a header, never in a body)."""
    return _KEY_HEADER.sub(r"\1[redacted]", _KEY_PARAMETER.sub(r"\1[redacted]", text))


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


def _duration_s(raw: object) -> float | None:
    """A protobuf Duration as JSON ("26s", "1.5s") in seconds."""
    if not isinstance(raw, str) or not raw.endswith("s"):
        return None
    try:
        return max(float(raw[:-1]), 0.0)
    except ValueError:
        return None


def refusal_of(error: errors.APIError) -> Refusal:
    body = error.details.get("error", {}) if isinstance(error.details, dict) else {}
    details = body.get("details") if isinstance(body, dict) else None
    delay, daily = None, None
    for detail in details if isinstance(details, list) else []:
        if not isinstance(detail, dict):
            continue
        kind = str(detail.get("@type", ""))
        if kind.endswith("google.rpc.RetryInfo"):
            delay = _duration_s(detail.get("retryDelay"))
        elif kind.endswith("google.rpc.QuotaFailure"):
            for violation in detail.get("violations") or []:
                quota = str(violation.get("quotaId", "")) if isinstance(violation, dict) else ""
                if "PerDay" in quota:
                    daily = quota
    return Refusal(
        code=int(error.code or 0),
        status=str(error.status or ""),
        message=str(error.message or ""),
        retry_delay_s=delay,
        daily_quota=daily,
    )


def _usage(response: types.GenerateContentResponse) -> Usage:
    meta = response.usage_metadata
    if meta is None:
        return NO_USAGE
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + thoughts,
        cached_tokens=meta.cached_content_token_count or 0,
        thought_tokens=thoughts,
    )


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
        return error.code in RETRIED_STATUSES and refusal_of(error).daily_quota is None
    return isinstance(error, _transport_errors())


def _asked_delay_s(error: BaseException | None) -> float | None:
    """How long Gemini asked to wait: `RetryInfo` in the error body, else `Retry-After`."""
    if isinstance(error, errors.APIError):
        delay = refusal_of(error).retry_delay_s
        if delay is not None:
            return delay
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
    """The delay Gemini asked for when it gave one, else exponential backoff."""

    def __init__(self, initial_s: float) -> None:
        self.backoff = tenacity.wait_exponential(multiplier=initial_s, max=MAX_BACKOFF_S)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        asked = _asked_delay_s(outcome.exception() if outcome is not None else None)
        return asked if asked is not None else float(self.backoff(retry_state))


class _OutOfTime(tenacity.stop.stop_base):
    """Stop when the next wait would end past the deadline."""

    def __init__(self, pacing: _Pacing, deadline: datetime | None) -> None:
        self.pacing = pacing
        self.deadline = deadline

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.pacing(retry_state) >= _remaining_s(self.deadline)


def _tried(attempt: Callable[[int], T], deadline: datetime | None) -> T:
    """`attempt(timeout_ms)` tried as the settings and the deadline allow: each try's
    timeout ends by the deadline, and no try starts, or waits, past it."""
    config = settings()
    pacing = _Pacing(config.gemini_initial_delay_s)

    def bounded() -> T:
        remaining = _remaining_s(deadline)
        if remaining <= 0:
            raise TimeoutError("the job's deadline passed before Gemini answered")
        return attempt(max(int(min(config.gemini_timeout_ms, remaining * 1000)), 1))

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(config.gemini_attempts) | _OutOfTime(pacing, deadline),
        wait=pacing,
        retry=tenacity.retry_if_exception(_retryable),
        reraise=True,
    )
    answer: T = retrying(bounded)
    return answer


def _call(
    model: str,
    prompt: str,
    request_config: types.GenerateContentConfig,
    deadline: datetime | None,
) -> types.GenerateContentResponse:
    """One answer from Gemini, tried as the settings and the deadline allow."""

    def attempt(timeout_ms: int) -> types.GenerateContentResponse:
        bounded = request_config.model_copy(
            update={"http_options": types.HttpOptions(timeout=timeout_ms)}
        )
        return gemini().models.generate_content(model=model, contents=prompt, config=bounded)

    return _tried(attempt, deadline)


def _request_config(
    model: str, system: str, schema: Schema, output: Output, logprobs: bool
) -> types.GenerateContentConfig:
    """The request as the model's profile takes it."""
    profile = profile_of(model)
    thinking = (
        profile.least_thinking()
        if output.least_thinking
        else profile.bounded_thinking(output.thinking_tokens)
    )
    return types.GenerateContentConfig(
        system_instruction=system,
        response_mime_type="application/json",
        response_json_schema=schema,
        max_output_tokens=min(output.max_output_tokens, profile.output_limit),
        temperature=0.0 if profile.send_temperature else None,
        thinking_config=types.ThinkingConfig(**thinking) if thinking else None,  # type: ignore[arg-type]
        response_logprobs=True if logprobs else None,
    )


def _logprobs_accepted(model: str) -> bool:
    profile = profile_of(model)
    return settings().gemini_backend in profile.logprobs and profile.name not in _refused_logprobs()


def _refuses_logprobs(error: errors.APIError) -> bool:
    return error.code == HTTPStatus.BAD_REQUEST and "logprobs" in str(error.message or "").lower()


def generate_json(
    *,
    model: str,
    system: str,
    prompt: str,
    schema: Schema,
    output: Output,
    logprobs: bool = False,
    deadline: datetime | None = None,
) -> JsonAnswer:
    """`model`'s JSON answer to one prompt; every failure is a classified `GeminiError`.

    Token log-probabilities are asked for only where the model's profile accepts them;
    a 400 that refuses them anyway is tried once more without them (within the same
    deadline) and the instance does not ask that model again. `deadline` is when the
    caller's job must be done: no try runs or waits past it."""
    config = settings()
    if not config.gemini_configured:
        raise GeminiError(ProviderFailure.NOT_CONFIGURED, "no Gemini credentials are configured")
    ask_logprobs = logprobs and _logprobs_accepted(model)
    with recording() as wire:
        try:
            try:
                asked = _request_config(model, system, schema, output, ask_logprobs)
                response = _call(model, prompt, asked, deadline)
            except errors.APIError as error:
                if not (ask_logprobs and _refuses_logprobs(error)):
                    raise
                _refused_logprobs().add(profile_of(model).name)
                plain = _request_config(model, system, schema, output, False)
                response = _call(model, prompt, plain, deadline)
        except errors.APIError as error:
            detail = refusal_of(error).describe()
            raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
        except TimeoutError as error:
            raise GeminiError(
                ProviderFailure.PROVIDER_UNAVAILABLE, str(error), wire=wire
            ) from error
        except auth_exceptions.GoogleAuthError as error:
            detail = scrub(f"Gemini's credentials could not be used: {error}")[:DETAIL_LIMIT]
            raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
        except _transport_errors() as error:
            detail = f"Gemini was not reached: {type(error).__name__}"
            raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
        except ValueError as error:
            # The library raises ValueError (JSONDecodeError, pydantic's ValidationError)
            # when a 200 response's body is not a GenerateContentResponse.
            detail = f"Gemini's response could not be read: {type(error).__name__}"
            raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail, wire=wire) from error
    return _json_answer(response, wire, output)


def _unfinished(candidate: types.Candidate, usage: Usage, output: Output) -> str:
    """Why a candidate that did not finish with STOP has no usable answer, in words."""
    finish = candidate.finish_reason
    reason = finish.value if finish is not None else "no finish reason"
    if finish == types.FinishReason.MAX_TOKENS:
        limit = output.max_output_tokens
        answer = usage.output_tokens - usage.thought_tokens
        if answer == 0 and usage.thought_tokens:
            return (
                f"Gemini stopped at MAX_TOKENS while thinking: thinking used "
                f"{usage.thought_tokens} of the {limit} output tokens and none was left for "
                f"the answer (raise the thinking allowance)"
            )
        return (
            f"Gemini stopped at MAX_TOKENS: the answer used {answer} tokens and thinking "
            f"{usage.thought_tokens} of the {limit} output tokens (the answer is too long)"
        )
    message = f": {candidate.finish_message}" if candidate.finish_message else ""
    return scrub(f"Gemini finished with {reason}{message}")[:DETAIL_LIMIT]


def _json_answer(response: types.GenerateContentResponse, wire: Wire, output: Output) -> JsonAnswer:
    usage = _usage(response)
    version = response.model_version

    def unconfirmed(detail: str) -> GeminiError:
        return GeminiError(ProviderFailure.GENERATION_UNCONFIRMED, detail, usage, wire, version)

    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        why = f" ({feedback.block_reason_message})" if feedback.block_reason_message else ""
        raise unconfirmed(f"Gemini blocked the prompt: {feedback.block_reason.value}{why}")
    candidate = response.candidates[0] if response.candidates else None
    if candidate is None:
        raise unconfirmed("Gemini returned no candidate")
    if candidate.finish_reason != types.FinishReason.STOP:
        raise unconfirmed(_unfinished(candidate, usage, output))
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
            ProviderFailure.INVALID_OUTPUT,
            f"Gemini's answer is not JSON: {error}",
            usage,
            wire,
            version,
        ) from error
    return JsonAnswer(data, text, version, usage, _logprobs(candidate), wire)


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


BATCH_WAITING = frozenset({"JOB_STATE_PENDING", "JOB_STATE_QUEUED", "JOB_STATE_RUNNING"})
"""Batch states from which the job may still succeed."""


def batch_unavailable() -> str | None:
    """Why this backend cannot take a batch, in words; None when it can. Vertex AI reads
    a batch's requests from Cloud Storage or BigQuery, which this project does not set
    up; the Developer API takes them inline."""
    if settings().gemini_use_vertex:
        return (
            "Vertex AI batch prediction reads its requests from a Cloud Storage bucket or "
            "BigQuery, and none is configured: asked the standard way"
        )
    return None


@dataclass(frozen=True)
class BatchStatus:
    state: str
    """Gemini's job state without its prefix, lower case (`pending`, `succeeded`...)."""
    waiting: bool
    answers: list[JsonAnswer | GeminiError]
    """One per request, in order, once the job succeeded."""
    detail: str | None
    """Why a job that did not succeed ended, in words."""


def _batch_faults() -> tuple[type[BaseException], ...]:
    return (errors.APIError, *_transport_errors())


def _batch_fault(what: str, error: BaseException) -> GeminiError:
    if isinstance(error, errors.APIError):
        detail = refusal_of(error).describe()
    else:
        detail = f"Gemini was not reached: {type(error).__name__}"
    return GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, f"{what}: {detail}"[:DETAIL_LIMIT])


def submit_batch(
    *, model: str, system: str, prompts: list[str], schema: Schema, output: Output, name: str
) -> str:
    """Submit one request per prompt to Gemini's Batch API (half the standard price);
    the job's name. Raises `GeminiError` when it cannot be submitted."""
    config = _request_config(model, system, schema, output, False)
    requests = [types.InlinedRequest(contents=prompt, config=config) for prompt in prompts]
    try:
        job = gemini().batches.create(
            model=model, src=requests, config=types.CreateBatchJobConfig(display_name=name)
        )
    except _batch_faults() as error:
        raise _batch_fault("the batch could not be submitted", error) from error
    if not job.name:
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, "the batch came back unnamed")
    return job.name


def _answers(job: types.BatchJob, output: Output) -> list[JsonAnswer | GeminiError]:
    answers: list[JsonAnswer | GeminiError] = []
    for item in (job.dest.inlined_responses if job.dest else None) or []:
        if item.response is None:
            error = item.error
            message = error.message if error is not None else "no response and no error"
            code = error.code if error is not None else None
            detail = scrub(f"failed in the batch (code {code}): {message}")[:DETAIL_LIMIT]
            answers.append(GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail))
            continue
        try:
            answers.append(_json_answer(item.response, Wire(), output))
        except GeminiError as error:
            answers.append(error)
    return answers


def batch_status(name: str, output: Output) -> BatchStatus:
    """Where the batch job stands, and its answers once it succeeded. Raises
    `GeminiError` when Gemini cannot be asked."""
    try:
        job = gemini().batches.get(name=name)
    except _batch_faults() as error:
        raise _batch_fault("the batch could not be read", error) from error
    state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
    short = state.removeprefix("JOB_STATE_").lower()
    if state == "JOB_STATE_SUCCEEDED":
        return BatchStatus(short, False, _answers(job, output), None)
    failed = job.error.message if job.error is not None and job.error.message else None
    detail = (
        None
        if state in BATCH_WAITING
        else f"the batch ended {short}" + (f": {scrub(failed)}" if failed else "")
    )
    return BatchStatus(short, state in BATCH_WAITING, [], detail)


def cancel_batch(name: str) -> None:
    """Ask Gemini to cancel the job; a job that already ended stays as it is."""
    try:
        gemini().batches.cancel(name=name)
    except _batch_faults() as error:
        raise _batch_fault("the batch could not be cancelled", error) from error


EMBEDDING_TASK = "CLUSTERING"
"""The task type the patterns' sentences are embedded for: Google's task types tune a
vector to its use, and CLUSTERING is the one for grouping texts by similarity
(https://ai.google.dev/gemini-api/docs/embeddings, "Supported task types")."""
EMBEDDING_BATCH_LIMIT = 100
"""The most texts one batchEmbedContents call takes: Google answers more with 400 "at most
100 requests can be in one batch". Each text is read up to 2,048 tokens (the model page,
https://ai.google.dev/gemini-api/docs/models/gemini-embedding-001); Google's announcement
(https://developers.googleblog.com/en/gemini-embedding-available-gemini-api/) prices the
model at $0.15 per million input tokens, and nothing for the vectors."""


@dataclass(frozen=True)
class Embedded:
    """Texts embedded: one unit-length vector per text, in order, and what they cost."""

    vectors: list[list[float]]
    tokens: int
    """The texts' input tokens, as Gemini reported them, else estimated."""
    tokens_estimated: bool
    """Gemini reported no count for some texts (the Developer API reports none): those
    are counted at about four characters a token (`estimate_tokens`)."""
    model: str


@contextmanager
def _classified(what: str) -> Iterator[None]:
    """Every failure of a Gemini call inside, raised as a `GeminiError` saying `what` failed."""
    try:
        yield
    except errors.APIError as error:
        detail = f"{what}: {refusal_of(error).describe()}"[:DETAIL_LIMIT]
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail) from error
    except TimeoutError as error:
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, f"{what}: {error}") from error
    except auth_exceptions.GoogleAuthError as error:
        detail = scrub(f"{what}: Gemini's credentials could not be used: {error}")
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail[:DETAIL_LIMIT]) from error
    except _transport_errors() as error:
        detail = f"{what}: Gemini was not reached: {type(error).__name__}"
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail) from error
    except ValueError as error:
        # As for generate_content: a 200 whose body is not the response the library expects.
        detail = f"{what}: Gemini's response could not be read: {type(error).__name__}"
        raise GeminiError(ProviderFailure.PROVIDER_UNAVAILABLE, detail) from error


def _embedded_batch(
    model: str, size: int, texts: list[str], deadline: datetime | None
) -> types.EmbedContentResponse:
    """One call's embeddings of up to `EMBEDDING_BATCH_LIMIT` texts, tried as the settings
    and the deadline allow (google-genai sends batchEmbedContents on the Developer API,
    and embedContent for one text on Vertex AI)."""

    def attempt(timeout_ms: int) -> types.EmbedContentResponse:
        config = types.EmbedContentConfig(
            task_type=EMBEDDING_TASK,
            output_dimensionality=size,
            http_options=types.HttpOptions(timeout=timeout_ms),
        )
        return gemini().models.embed_content(model=model, contents=list(texts), config=config)

    return _tried(attempt, deadline)


def _unit_vectors(response: types.EmbedContentResponse, count: int, size: int) -> list[list[float]]:
    """The response's vectors scaled to unit length: Google normalises only the full 3,072
    values of gemini-embedding-001, and asks callers to normalise a smaller size
    (https://ai.google.dev/gemini-api/docs/embeddings, "Ensuring quality for smaller
    dimensions"). A response of another shape is `INVALID_OUTPUT`."""

    def invalid(detail: str) -> GeminiError:
        return GeminiError(ProviderFailure.INVALID_OUTPUT, f"Gemini's embeddings {detail}")

    embeddings = response.embeddings or []
    if len(embeddings) != count:
        raise invalid(f"number {len(embeddings)} for {count} texts")
    vectors = []
    for embedding in embeddings:
        values = embedding.values or []
        if len(values) != size:
            raise invalid(f"have {len(values)} values where {size} were asked for")
        length = math.hypot(*values)
        if not length:
            raise invalid("include a vector of zeros, which has no direction")
        vectors.append([value / length for value in values])
    return vectors


def _reported_tokens(response: types.EmbedContentResponse) -> int | None:
    usage = response.usage_metadata
    return usage.prompt_token_count if usage is not None else None


def embed(texts: list[str], *, deadline: datetime | None = None) -> Embedded:
    """`texts` embedded for clustering with the configured model and size
    (`PSYCHOLOGIST_EMBEDDING_MODEL`, `PSYCHOLOGIST_EMBEDDING_DIMENSIONS`), in calls of at
    most `EMBEDDING_BATCH_LIMIT` texts, each tried as the generate calls are and within
    `deadline`; every failure is a classified `GeminiError` (an empty text is refused by
    Gemini: `PROVIDER_UNAVAILABLE`)."""
    config = settings()
    if not config.gemini_configured:
        raise GeminiError(ProviderFailure.NOT_CONFIGURED, "no Gemini credentials are configured")
    model, size = config.psychologist_embedding_model, config.psychologist_embedding_dimensions
    vectors: list[list[float]] = []
    tokens, estimated = 0, False
    for start in range(0, len(texts), EMBEDDING_BATCH_LIMIT):
        batch = texts[start : start + EMBEDDING_BATCH_LIMIT]
        with _classified(f"embedding texts {start + 1} to {start + len(batch)}"):
            response = _embedded_batch(model, size, batch, deadline)
        vectors.extend(_unit_vectors(response, len(batch), size))
        reported = _reported_tokens(response)
        tokens += sum(map(estimate_tokens, batch)) if reported is None else reported
        estimated = estimated or reported is None
    return Embedded(vectors, tokens, estimated, model)
