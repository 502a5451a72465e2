"""A local HTTP server that speaks Gemini's REST protocol, scripted per test.

Development tooling shared by the tests and the bench (`cli/` is never deployed).

It behaves as Google documents the service for the requested model's profile
(`shared.models`), before any scripted reply is taken:

- a retired or unknown model name answers `404 NOT_FOUND`;
- parameters the model refuses answer `400 INVALID_ARGUMENT` with Google's message:
  `responseLogprobs` where the profile does not accept them (the Developer API's and
  Vertex AI's wording differ), a thinking level the model does not take, a level on a
  budget model, both a level and a budget, a budget of 0 where thinking cannot be off,
  `maxOutputTokens` above the model's limit;
- thought tokens are spent from `maxOutputTokens` (MINIMAL 0, LOW 128, MEDIUM 1,024, HIGH
  4,096; a budget up to 2,048; no thinking setting: the profile's default, which for
  2.5 Flash-Lite is no thinking): when they use it all the answer is `MAX_TOKENS` with no
  content, and `thoughtsTokenCount` is in the usage;
- the usage counts the request's own tokens (about four characters a token), and
  `cachedContentTokenCount` reports the prefix this request shares with an earlier one to
  the same model when it reaches the model's implicit-cache minimum;
- every call waits `latency_s` (a test scales it), and a held reply waits for its gate,
  which the test opens once it has done what must happen while the call is in flight.

`POST /v1beta/models/{model}:generateContent` (the Developer API) and
`POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent`
(Vertex AI; `POST /token` hands out the access token a test's credentials file asks for)
then take the next scripted reply: a JSON answer, an HTTP error with Google's status
string, a 429 carrying `QuotaFailure` and `RetryInfo` in its body (refused again until its
delay has passed), a blocked prompt, a delay past the client's timeout, malformed JSON,
no candidate, a finish reason other than STOP, a `200` whose body is not JSON or is empty,
or a connection reset before any answer. Every request body is recorded.

`POST .../models/{model}:streamGenerateContent` (both backends) answers the same reply as
Google streams it: with `?alt=sse`, server-sent events `data: {GenerateContentResponse}`
(text cut into pieces after a space, each `functionCall` part whole), the last chunk
carrying `finishReason` and `usageMetadata`; without `alt=sse`, a JSON array of the chunks.
An error is answered before any chunk, as the error body with its status. A reply may be
`functionCall` parts (`call_function`), after its text if it has any; a Gemini 3 profile
puts a `thoughtSignature` on the first. `POST .../models/{model}:countTokens` answers
`{"totalTokens": N}`, counted as the usage counts the request (not recorded).

Side requests are told apart by purpose (`PURPOSES`: a research support check, and Gemini
CLI's router, model choice, next-speaker check, loop check and session summary, each
recognised by its response schema or prompt): each takes its own scripted queue
(`answer_side`), else its purpose's default, and never the main queue, so that a test
scripts only the turns it is about. The usage counts every turn of `contents`.

The Developer API's Batch API (Google's batch mode: asynchronous, at half the standard
price, a 24-hour target turnaround, inlined requests up to 20 MB in all, and a batch
pending or running for more than 48 hours expires):

- `POST /v1beta/models/{model}:batchGenerateContent` takes
  `batch.inputConfig.requests.requests[]` (`{request, metadata}`). A body over 20 MB is
  `400 INVALID_ARGUMENT`; a retired or unknown model `404 NOT_FOUND`. Otherwise every
  inlined request is answered there and then as a generateContent call would be (the
  profile's refusals, the next scripted reply or the responder, the same usage and
  implicit cache), without `latency_s`, a reply's delay or its gate, and outside an
  interactive 429's refusal window; each is recorded with `Recorded.batch` set. The
  answer is the long-running operation `batches/{id}` with a `GenerateContentBatch` in
  `metadata`, state `BATCH_STATE_PENDING`.
- `GET /v1beta/batches/{id}` reports the batch. By default its first GET finds it
  `BATCH_STATE_SUCCEEDED`: `done`, `batchStats`, and the answers in order in
  `metadata.output` and `response` (`inlinedResponses.inlinedResponses[]`: the
  `GenerateContentResponse` and the request's `metadata`, or an `error` as
  `google.rpc.Status`, its code the canonical gRPC one, for a request answered with an
  HTTP error). `hold_batches()` keeps batches `BATCH_STATE_RUNNING` until
  `release_batches()`; `fail_next_batch()` makes the next batch end `BATCH_STATE_FAILED`
  with the operation's `error` and no output (its requests recorded, not answered); one
  pending or running longer than `batch_expiry_s` is `BATCH_STATE_EXPIRED`, no output.
- `POST /v1beta/batches/{id}:cancel` answers `{}` and cancels a pending or running batch
  (`BATCH_STATE_CANCELLED`, no output); a finished one stays as it is.
- `DELETE /v1beta/batches/{id}` answers `{}`; the batch is then `404 NOT_FOUND`.

`batches` holds every batch by name; `reported_usage()` counts a batched request once its
batch has reported its output.

Embeddings (`EMBEDDING_MODELS`: gemini-embedding-001), as Google documents them:

- `POST /v1beta/models/{model}:batchEmbedContents` takes `{requests: [{model, content:
  {parts: [{text}]}, taskType, outputDimensionality}]}` and answers `{embeddings:
  [{values}]}` in order; `:embedContent` takes one such request and answers `{embedding:
  {values}}`. google-genai 3.6 sends batchEmbedContents on the Developer API even for one
  text; on Vertex AI it sends `.../publishers/google/models/{model}:embedContent` for one
  text and `:batchEmbedContents` for more, the options in `embedContentConfig`, and its
  answers report `usageMetadata.promptTokenCount` (the Developer API's report none here).
- A model that does not embed (a generate model, an unknown name) answers `404 NOT_FOUND`
  as the generate path does; more than `EMBEDDING_BATCH_LIMIT` (100) requests in one
  batch, an empty text, an unknown task type or a dimensionality outside 128 to 3,072
  answer `400 INVALID_ARGUMENT` (the batch limit's message is Google's; the others' wording
  is the stand-in's).
- The values come from `cli.meaning`, a stand-in for meaning, not a model of it:
  paraphrases of one failure lie near each other and different failures apart, and the
  task type changes nothing. They are the model's full 3,072 values cut to the
  dimensionality asked, so, as Google says of gemini-embedding-001, only the full size is
  unit length and a smaller one is for the caller to normalise.
- Every embedding request is recorded in `embedding_requests`; `fail_embedding()` scripts
  the next ones' errors as `fail()` scripts a generate call's.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import parse_qs

from cli import meaning, stand_in
from cli.stand_in import Request, StandIn, shared_prefix, tokens_of
from shared.models import PROFILES, Backend, Control, ModelProfile

_DEVELOPER = re.compile(
    r"^/(v1beta|v1)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|countTokens)$"
)
_VERTEX = re.compile(
    r"^/(v1beta1|v1)/projects/[^/]+/locations/[^/]+/publishers/google/models/"
    r"(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|countTokens)$"
)
_BATCH_CREATE = re.compile(r"^/(v1beta|v1)/models/(?P<model>[^/:]+):batchGenerateContent$")
_BATCH = re.compile(r"^/(v1beta|v1)/batches/(?P<id>[^/:]+)(?P<cancel>:cancel)?$")
_EMBED = re.compile(
    r"^/(v1beta|v1)/models/(?P<model>[^/:]+):(?P<method>embedContent|batchEmbedContents)$"
)
_VERTEX_EMBED = re.compile(
    r"^/(v1beta1|v1)/projects/[^/]+/locations/[^/]+/publishers/google/models/"
    r"(?P<model>[^/:]+):(?P<method>embedContent|batchEmbedContents)$"
)
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
RPC_CODES = {
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "UNAUTHENTICATED": 16,
}
"""google.rpc.Code by status name: a batch reports errors as `google.rpc.Status`."""
BATCH_INLINE_LIMIT = 20 * 1024 * 1024
"""The largest batchGenerateContent body with inlined requests (Google: under 20 MB)."""
BATCH_EXPIRY_S = 48 * 3600.0
"""A batch pending or running longer than this expires (Google: 48 hours)."""
PENDING, RUNNING, SUCCEEDED = "BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"
FAILED, CANCELLED, EXPIRED = "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"
FINISHED = frozenset({SUCCEEDED, FAILED, CANCELLED, EXPIRED})
_TYPES = "type.googleapis.com/google.ai.generativelanguage.v1beta."
THOUGHTS_BY_LEVEL = {"MINIMAL": 0, "LOW": 128, "MEDIUM": 1_024, "HIGH": 4_096}
DYNAMIC_THOUGHTS = 2_048
QUOTA_IDS = {
    "minute": "GenerateRequestsPerMinutePerProjectPerModel",
    "day": "GenerateRequestsPerDayPerProjectPerModel",
}
_CACHE_MEMORY = 64
STREAM_PIECE = 48
"""About how many characters of text each streamed chunk carries."""
THOUGHT_SIGNATURE = "c3RhbmQtaW4gdGhvdWdodCBzaWduYXR1cmU="
"""The opaque `thoughtSignature` a Gemini 3 stand-in puts on its first function call."""
"""How many earlier prompts per model the implicit cache compares against."""


def field_of(message: dict[str, Any], name: str) -> Any:
    """A field of a JSON request by its camelCase name or its proto snake_case name:
    Google's JSON parser takes both, and the library sends some fields either way."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return message.get(name, message.get(snake))


def error_body(code: int, message: str, details: list[dict[str, Any]] | None = None) -> bytes:
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "status": STATUS_NAMES.get(code, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return json.dumps({"error": error}).encode()


def rpc_status(http_status: int, message: str) -> dict[str, Any]:
    """An error as a batch reports it: `google.rpc.Status`, whose code is the canonical
    gRPC code (INVALID_ARGUMENT 3, RESOURCE_EXHAUSTED 8, INTERNAL 13), not the HTTP one."""
    return {"code": RPC_CODES.get(STATUS_NAMES.get(http_status, ""), 2), "message": message}


def not_found(model: str, method: str) -> Answered:
    message = (
        f"models/{model} is not found for API version v1beta, or is not supported for "
        f"{method}. Call ListModels to see the list of available models and their supported "
        "methods."
    )
    return Answered(404, error_body(404, message))


def timestamp() -> str:
    """Now, as Google's JSON writes a Timestamp (RFC 3339, UTC, `Z`)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def quota_details(window: str, delay_s: float) -> list[dict[str, Any]]:
    """The details Gemini sends with a 429: which quota, a help link, when to retry."""
    return [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                    "quotaId": QUOTA_IDS[window],
                    "quotaDimensions": {"location": "global"},
                    "quotaValue": "10",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{"description": "Learn more about Gemini API quotas"}],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay_s:g}s"},
    ]


GATE_TIMEOUT_S = 60.0
"""A gate left shut opens by itself after this long, so a failing test never hangs."""


@dataclass
class Gate:
    """Holds a scripted reply until the test opens it: the worker's call to Gemini stays in
    flight exactly as long as the test needs, with no guessed delay."""

    opened: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    """Set once the call it holds has arrived: whatever the caller read before calling
    Gemini (a run's evidence and access) is read by then."""

    def open(self) -> None:
        self.opened.set()

    def wait_reached(self, timeout: float = GATE_TIMEOUT_S) -> bool:
        return self.reached.wait(timeout)


@dataclass(frozen=True)
class FunctionCall:
    """A `functionCall` part the model answers with: the function's name and its arguments."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def part(self) -> dict[str, Any]:
        return {"functionCall": {"name": self.name, "args": self.args}}


@dataclass
class Reply:
    status: int = 200
    text: str | None = None
    function_calls: list[FunctionCall] = field(default_factory=list)
    """`functionCall` parts sent after the text part (if any), in order."""
    finish_reason: str = "STOP"
    candidates: bool = True
    delay_s: float = 0.0
    usage: tuple[int, int] | None = None
    """(prompt, answer) tokens to report; measured from the request and answer when None."""
    thoughts: int | None = None
    """Thought tokens spent; what the request's thinking setting spends when None."""
    model_version: str | None = None
    """Reported `modelVersion`; the requested model's name with `-001` when None."""
    logprobs: list[tuple[str, float]] | None = None
    raw_body: bytes | None = None
    """Sent as it is instead of a JSON body."""
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False
    """Close the connection with a TCP reset instead of answering."""
    message: str = "scripted failure"
    details: list[dict[str, Any]] | None = None
    """`error.details` of an error reply."""
    block_reason: str | None = None
    """Answer with `promptFeedback.blockReason` and no candidate."""
    refuse_for_s: float = 0.0
    """After this 429, refuse every request this long with the same body."""
    gate: Gate | None = None
    """Answer only once this gate is open."""


@dataclass
class Recorded:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    backend: Backend = Backend.DEVELOPER
    at: float = field(default_factory=time.monotonic)
    """When the request arrived (monotonic clock)."""
    raw: bytes = b""
    """The request body as received."""
    sent: bytes = b""
    """The response body as sent."""
    status: int = 0
    """The HTTP status answered."""
    batch: str | None = None
    """The name of the batch this request came in (`batches/...`); None for a call."""
    streamed: bool = False
    """Asked through `streamGenerateContent` (answered in chunks)."""

    @property
    def prompt(self) -> str:
        return "".join(part.get("text", "") for part in self.body["contents"][0]["parts"])

    @property
    def conversation(self) -> str:
        """Every turn of `contents` as text: text parts as they are, function calls and
        responses as their JSON (what the usage counts; the prompt alone for one turn)."""
        texts = []
        for content in self.body.get("contents") or []:
            for part in content.get("parts") or []:
                if "text" in part:
                    texts.append(part["text"])
                else:
                    call = field_of(part, "functionCall") or field_of(part, "functionResponse")
                    if call is not None:
                        texts.append(json.dumps(call, sort_keys=True))
        return "".join(texts)

    @property
    def purpose(self) -> str | None:
        """The side purpose this request serves (`PURPOSES`), None for a main request."""
        return next((p.name for p in PURPOSES if p.recognises(self)), None)

    def chunks(self) -> list[dict[str, Any]]:
        """The `GenerateContentResponse`s sent: one, or a stream's chunks in order (none
        for a body that is not such JSON)."""
        text = self.sent.decode(errors="replace")
        try:
            if self.streamed and text.startswith("data:"):
                events = [e for e in re.split(r"\r?\n\r?\n", text) if e.strip()]
                return [json.loads(e.removeprefix("data:")) for e in events]
            sent = json.loads(text or "{}")
        except ValueError:
            return []
        found = sent if isinstance(sent, list) else [sent]
        return [chunk for chunk in found if isinstance(chunk, dict)]

    @property
    def usage(self) -> dict[str, Any]:
        """The `usageMetadata` the answer reported (a stream's last)."""
        reported = [c["usageMetadata"] for c in self.chunks() if "usageMetadata" in c]
        return reported[-1] if reported else {}

    @property
    def tools(self) -> list[str]:
        """The names of the functions the request declares."""
        return [
            declaration["name"]
            for tool in self.body.get("tools") or []
            for declaration in field_of(tool, "functionDeclarations") or []
        ]

    @property
    def system(self) -> str:
        parts = (self.body.get("systemInstruction") or {}).get("parts", [])
        return "".join(part.get("text", "") for part in parts)

    @property
    def generation(self) -> dict[str, Any]:
        config: dict[str, Any] = self.body.get("generationConfig") or {}
        return config


@dataclass(frozen=True)
class Answered(stand_in.Answered):
    """What the server sends: status, body, headers; and whether the body is a scripted one
    sent as it is."""

    raw: bool = False
    """A scripted body sent as it is (never cut into stream chunks)."""


@dataclass
class Batch:
    """A batch the stand-in holds (`GeminiTestServer.batches`), for tests to read."""

    name: str
    model: str
    request_count: int
    display_name: str = ""
    state: str = PENDING
    cancelled: bool = False
    """A cancel was asked for (`state` says whether it took effect)."""
    deleted: bool = False
    failure: str | None = None
    """The operation's error message when it is to end FAILED (`fail_next_batch`)."""
    created_at: float = field(default_factory=time.monotonic)
    create_time: str = field(default_factory=timestamp)
    update_time: str = ""
    end_time: str | None = None
    responses: list[dict[str, Any]] = field(default_factory=list)
    """One `InlinedResponse` per request, in order: `response` or `error`, `metadata`."""

    def move(self, state: str) -> None:
        self.state, self.update_time = state, timestamp()
        if state in FINISHED:
            self.end_time = self.update_time

    def operation(self) -> dict[str, Any]:
        """The long-running operation Google answers for this batch."""
        done = self.state in FINISHED
        succeeded = sum("response" in item for item in self.responses)
        reported = self.state == SUCCEEDED
        metadata: dict[str, Any] = {
            "@type": _TYPES + "GenerateContentBatch",
            "name": self.name,
            "model": f"models/{self.model}",
            "createTime": self.create_time,
            "updateTime": self.update_time or self.create_time,
            "batchStats": {
                "requestCount": str(self.request_count),
                "successfulRequestCount": str(succeeded if reported else 0),
                "failedRequestCount": str(len(self.responses) - succeeded if reported else 0),
                "pendingRequestCount": str(0 if done else self.request_count),
            },
            "state": self.state,
        }
        if self.display_name:
            metadata["displayName"] = self.display_name
        if self.end_time:
            metadata["endTime"] = self.end_time
        operation: dict[str, Any] = {"name": self.name, "metadata": metadata}
        if done:
            operation["done"] = True
        if reported:
            output = {"inlinedResponses": {"inlinedResponses": self.responses}}
            metadata["output"] = output
            operation["response"] = {"@type": _TYPES + "GenerateContentBatchOutput", **output}
        elif self.state == FAILED:
            operation["error"] = rpc_status(500, self.failure or "Internal error encountered.")
        return operation


def stream_chunks(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A `GenerateContentResponse` as `streamGenerateContent` sends it: each text part in
    pieces (cut after a space), each function call whole, in order; every chunk carries
    `modelVersion` and `responseId`, the first `promptFeedback`, the last the candidate's
    `finishReason` (and log-probabilities) and the `usageMetadata`."""
    common: dict[str, Any] = {
        k: response[k] for k in ("modelVersion", "responseId") if k in response
    }
    candidates = response.get("candidates") or []
    parts = candidates[0].get("content", {}).get("parts", []) if candidates else []
    pieces: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part and len(part["text"]) > STREAM_PIECE:
            text = part["text"]
            cuts = [0]
            while len(text) - cuts[-1] > STREAM_PIECE:
                space = text.find(" ", cuts[-1] + STREAM_PIECE)
                if space < 0:
                    break
                cuts.append(space + 1)
            if cuts[-1] < len(text):
                cuts.append(len(text))
            pieces.extend({**part, "text": text[a:b]} for a, b in itertools.pairwise(cuts))
        else:
            pieces.append(part)
    if not candidates or not pieces:
        return [response]
    chunks: list[dict[str, Any]] = []
    for piece in pieces:
        content = {"role": "model", "parts": [piece]}
        chunks.append({"candidates": [{"content": content, "index": 0}], **common})
    last = candidates[0]
    chunks[-1]["candidates"][0].update(
        {k: v for k, v in last.items() if k not in ("content", "index")}
    )
    if "usageMetadata" in response:
        chunks[-1]["usageMetadata"] = response["usageMetadata"]
    if "promptFeedback" in response:
        chunks[0]["promptFeedback"] = response["promptFeedback"]
    return chunks


def streamed(answered: Answered, sse: bool) -> Answered:
    """A generateContent answer as `streamGenerateContent` sends it: with `alt=sse`,
    server-sent events `data: {GenerateContentResponse}` (Google ends each with CRLF CRLF);
    without, one JSON array of the chunks. An error is the same error body, not streamed."""
    if answered.raw or answered.status != HTTPStatus.OK:
        return answered
    chunks = stream_chunks(json.loads(answered.body))
    if not sse:
        return replace(answered, body=json.dumps(chunks, ensure_ascii=False).encode())
    body = b"".join(
        b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\r\n\r\n" for chunk in chunks
    )
    return replace(answered, body=body, content_type="text/event-stream")


def inlined_response(answered: Answered | None, metadata: Any) -> dict[str, Any]:
    """What a batch reports for one request answered `answered` (None: a reset)."""
    item: dict[str, Any] = {}
    if answered is None:
        item["error"] = rpc_status(500, "Internal error encountered.")
    else:
        try:
            body = json.loads(answered.body)
        except ValueError:
            body = None
        if answered.status == HTTPStatus.OK and isinstance(body, dict):
            item["response"] = body
        elif answered.status == HTTPStatus.OK:
            item["error"] = rpc_status(500, "Internal error encountered.")
        else:
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message", "") if isinstance(error, dict) else ""
            item["error"] = rpc_status(answered.status, message)
    if metadata is not None:
        item["metadata"] = metadata
    return item


def refusal(profile: ModelProfile, request: Recorded) -> Answered | None:
    """The 400 the real service answers for a parameter this model does not take."""
    config = request.generation
    thinking = field_of(config, "thinkingConfig") or {}
    level, budget = field_of(thinking, "thinkingLevel"), field_of(thinking, "thinkingBudget")
    control = profile.thinking
    problem = None
    if field_of(config, "responseLogprobs") and request.backend not in profile.logprobs:
        problem = (
            f"Logprobs is not enabled for models/{profile.name}"
            if request.backend == Backend.DEVELOPER
            else "Unable to submit request because Logprobs is not supported for this model."
        )
    elif level is not None and budget is not None:
        problem = "You cannot set both thinking_level and the legacy thinking_budget parameter."
    elif level is not None and control.control != Control.LEVEL:
        problem = "Thinking level is not supported for this model."
    elif level is not None and level not in control.levels:
        problem = (
            f"Thinking level {level} is not supported by models/{profile.name}. "
            f"Supported levels: {', '.join(control.levels)}."
        )
    elif budget == 0 and control.control == Control.BUDGET and not control.can_disable:
        problem = "Budget 0 is invalid. This model only works in thinking mode."
    elif int(field_of(config, "maxOutputTokens") or 0) > profile.output_limit:
        problem = (
            f"The maximum number of output tokens is {profile.output_limit}; "
            f"maxOutputTokens is {field_of(config, 'maxOutputTokens')}."
        )
    return None if problem is None else Answered(400, error_body(400, problem))


def thoughts_spent(profile: ModelProfile, request: Recorded) -> int:
    """How many thought tokens this request's thinking setting makes the model spend."""
    thinking = field_of(request.generation, "thinkingConfig") or {}
    level, budget = field_of(thinking, "thinkingLevel"), field_of(thinking, "thinkingBudget")
    if level is not None:
        return THOUGHTS_BY_LEVEL[level]
    if budget is not None:
        return DYNAMIC_THOUGHTS if budget < 0 else min(int(budget), DYNAMIC_THOUGHTS)
    if profile.thinking.control == Control.LEVEL:
        return THOUGHTS_BY_LEVEL[profile.thinking.default_level or "HIGH"]
    return DYNAMIC_THOUGHTS if profile.thinking.thinks_unasked else 0


@dataclass
class GeminiTestServer(StandIn):
    title: ClassVar[str] = "Gemini stand-in"
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    responder: Callable[[Recorded], Reply] | None = None
    """Answers when no scripted reply is left: a stand-in model that reads the prompt."""
    keep_requests: bool = True
    """Record every request (tests read them); off for a long-running local model."""
    model_version: str | None = None
    """Reported `modelVersion` of every answer whose reply names none, side requests'
    included; the requested model's name with `-001` when None (as Gemini reports it)."""
    latency_s: float = 0.0
    """Every generateContent call takes at least this long."""
    refused_until: float = 0.0
    refusal_sent: Answered | None = None
    prompts: dict[str, deque[str]] = field(default_factory=dict)
    """Recent prompts per model, for the implicit cache."""
    gates: list[Gate] = field(default_factory=list)
    """Every gate handed out, opened on reset so that no held call outlives its test."""
    batches: dict[str, Batch] = field(default_factory=dict)
    """Every batch created, by name (`batches/...`)."""
    batch_expiry_s: float = BATCH_EXPIRY_S
    """A batch pending or running longer than this reports BATCH_STATE_EXPIRED."""
    holding_batches: bool = False
    failing_batches: deque[str] = field(default_factory=deque)
    side_replies: dict[str, deque[Reply]] = field(
        default_factory=lambda: {purpose.name: deque() for purpose in PURPOSES}
    )
    """Scripted answers of side requests by purpose (`PURPOSES`), apart from the main
    queue: a research support check, a coding agent's router or next-speaker check."""
    batch_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    embedding_requests: list[EmbeddingRequest] = field(default_factory=list)
    """Every embedContent and batchEmbedContents request, answered or refused, in order."""
    embedding_failures: deque[Reply] = field(default_factory=deque)

    # scripting -----------------------------------------------------------------
    def answer_json(self, data: Any, **kwargs: Any) -> None:
        self.replies.append(Reply(text=json.dumps(data), **kwargs))

    def held_answer_json(self, data: Any) -> Gate:
        """This answer, sent only once the returned gate is opened."""
        gate = Gate()
        self.gates.append(gate)
        self.replies.append(Reply(text=json.dumps(data), gate=gate))
        return gate

    @property
    def support_replies(self) -> deque[Reply]:
        """Scripted answers of research support checks."""
        return self.side_replies[SUPPORT_CHECK]

    def answer_support(self, data: Any, **kwargs: Any) -> None:
        """The next research support check's answer. Unscripted, a support check finds
        every statement supported, so that research scripts need not answer it."""
        self.answer_side(SUPPORT_CHECK, data, **kwargs)

    def answer_side(self, purpose: str, data: Any, **kwargs: Any) -> None:
        """The next answer (JSON) of a side request for `purpose` (a name in `PURPOSES`);
        unscripted, a side request takes its purpose's default answer."""
        self.side_replies[purpose].append(Reply(text=json.dumps(data), **kwargs))

    def call_function(
        self, name: str, args: dict[str, Any] | None = None, text: str | None = None, **kwargs: Any
    ) -> None:
        """The next answer asks for one function call (after `text`, if any)."""
        self.replies.append(
            Reply(text=text, function_calls=[FunctionCall(name, args or {})], **kwargs)
        )

    def main_requests(self) -> list[Recorded]:
        """The requests recorded that served no side purpose: those the main queue answered."""
        with self.lock:
            requests = list(self.requests)
        return [r for r in requests if r.purpose is None]

    def answer_text(self, text: str, **kwargs: Any) -> None:
        self.replies.append(Reply(text=text, **kwargs))

    def fail(
        self, status: int, times: int = 1, retry_after: str | None = None, message: str = ""
    ) -> None:
        """An error with Google's status string; a 429 carries a per-minute quota's
        `QuotaFailure` and a 1 s `RetryInfo`. `retry_after` adds that header (a proxy's;
        Gemini itself sends none)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        quota = status == HTTPStatus.TOO_MANY_REQUESTS
        details = quota_details("minute", 1) if quota else None
        text = message or ("You exceeded your current quota." if quota else "failed")
        self.replies.extend(
            Reply(status=status, headers=headers, message=text, details=details)
            for _ in range(times)
        )

    def quota(self, window: str = "minute", delay_s: float = 1.0) -> None:
        """A 429 as Gemini sends it, then the same refusal to every request for `delay_s`."""
        self.replies.append(
            Reply(
                status=429,
                message="You exceeded your current quota, please check your plan and billing.",
                details=quota_details(window, delay_s),
                refuse_for_s=delay_s,
            )
        )

    def block(self, reason: str = "PROHIBITED_CONTENT") -> None:
        self.replies.append(Reply(block_reason=reason, candidates=False))

    def answer_raw(self, body: bytes, times: int = 1) -> None:
        """A `200` whose body is these bytes, JSON or not."""
        self.replies.extend(Reply(raw_body=body) for _ in range(times))

    def reset_connection(self, times: int = 1) -> None:
        self.replies.extend(Reply(reset=True) for _ in range(times))

    def stall(self, seconds: float, times: int = 1) -> None:
        self.replies.extend(Reply(delay_s=seconds, text="{}") for _ in range(times))

    def finish(self, reason: str, text: str = "{}") -> None:
        self.replies.append(Reply(text=text, finish_reason=reason))

    def no_candidates(self) -> None:
        self.replies.append(Reply(candidates=False))

    def respond_with(self, responder: Callable[[Recorded], Reply]) -> None:
        self.responder = responder

    def hold_batches(self) -> None:
        """Batches not yet finished report BATCH_STATE_RUNNING until `release_batches()`."""
        with self.lock:
            self.holding_batches = True

    def release_batches(self) -> None:
        """Held batches finish at their next GET (SUCCEEDED, or FAILED when scripted)."""
        with self.lock:
            self.holding_batches = False

    def fail_next_batch(self, message: str = "Internal error encountered.") -> None:
        """The next batch created ends BATCH_STATE_FAILED with this error and no output;
        its requests are recorded but take no scripted reply. Each call fails one more."""
        with self.lock:
            self.failing_batches.append(message)

    def open_gates(self) -> None:
        """Let every held call answer (a test's end: nothing it held outlives it)."""
        with self.lock:
            for gate in self.gates:
                gate.open()
            self.gates.clear()

    def reset(self) -> None:
        self.open_gates()
        with self.lock:
            self.replies.clear()
            self.requests.clear()
            self.prompts.clear()
            self.responder = None
            self.latency_s = 0.0
            self.refused_until, self.refusal_sent = 0.0, None
            self.batches.clear()
            self.batch_expiry_s = BATCH_EXPIRY_S
            self.holding_batches = False
            self.failing_batches.clear()
            for queue in self.side_replies.values():
                queue.clear()
            self.embedding_requests.clear()
            self.embedding_failures.clear()

    def reported_usage(self) -> dict[str, int]:
        """The usage every answer so far reported, added up as Evidencia stores it:
        output tokens include thought tokens. A batched request counts once its batch has
        reported its output (BATCH_STATE_SUCCEEDED)."""
        total = {"inputTokens": 0, "outputTokens": 0, "cachedTokens": 0, "thoughtTokens": 0}
        with self.lock:
            requests = list(self.requests)
            reported = {name for name, batch in self.batches.items() if batch.state == SUCCEEDED}
        for recorded in requests:
            if recorded.batch is not None and recorded.batch not in reported:
                continue
            meta = recorded.usage
            thoughts = meta.get("thoughtsTokenCount", 0)
            total["inputTokens"] += meta.get("promptTokenCount", 0)
            total["outputTokens"] += meta.get("candidatesTokenCount", 0) + thoughts
            total["cachedTokens"] += meta.get("cachedContentTokenCount", 0)
            total["thoughtTokens"] += thoughts
        return total

    def reported_tokens(self) -> int:
        usage = self.reported_usage()
        return usage["inputTokens"] + usage["outputTokens"]

    # answering -----------------------------------------------------------------
    def _next(self, recorded: Recorded) -> Reply:
        purpose = next((p for p in PURPOSES if p.recognises(recorded)), None)
        if purpose is not None:
            with self.lock:
                queue = self.side_replies[purpose.name]
                scripted = queue.popleft() if queue else None
            return scripted or purpose.default(recorded)
        with self.lock:
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        return responder(recorded) if responder else Reply(status=500)

    def _cached_tokens(self, recorded: Recorded, profile: ModelProfile) -> int:
        """The prefix this prompt shares with a recent one to the same model, in tokens,
        when it reaches the model's implicit-cache minimum (else 0)."""
        text = recorded.system + "\n" + recorded.conversation
        with self.lock:
            seen = self.prompts.setdefault(profile.name, deque(maxlen=_CACHE_MEMORY))
            shared = max((shared_prefix(text, earlier) for earlier in seen), default=0)
            seen.append(text)
        tokens = len(text[:shared].encode()) // 4
        return tokens if tokens >= profile.cache_min_tokens else 0

    def _record(self, recorded: Recorded) -> None:
        if self.keep_requests:
            with self.lock:
                self.requests.append(recorded)

    def answer(self, recorded: Recorded) -> Answered | None:
        """The answer to one generateContent request; None for a connection reset."""
        self._record(recorded)
        return self._reply_to(recorded, interactive=True)

    def _reply_to(self, recorded: Recorded, interactive: bool) -> Answered | None:  # noqa: PLR0911 - one per kind of reply
        """A call's answer; a batched request's (not `interactive`) takes no latency, delay
        or gate, and neither opens nor meets a 429's refusal window."""
        profile = PROFILES.get(recorded.model)
        if profile is None or not profile.served_by(recorded.backend):
            return not_found(recorded.model, "generateContent")
        refused = refusal(profile, recorded)
        if refused is not None:
            return refused
        if interactive:
            with self.lock:
                if time.monotonic() < self.refused_until and self.refusal_sent is not None:
                    return self.refusal_sent
        reply = self._next(recorded)
        if interactive and reply.gate is not None:
            reply.gate.reached.set()
            reply.gate.opened.wait(GATE_TIMEOUT_S)
        if interactive:
            time.sleep(self.latency_s + reply.delay_s)
        if reply.reset:
            return None
        if reply.raw_body is not None:
            return Answered(reply.status, reply.raw_body, reply.headers, raw=True)
        if reply.status != HTTPStatus.OK:
            answered = Answered(
                reply.status, error_body(reply.status, reply.message, reply.details), reply.headers
            )
            if reply.refuse_for_s and interactive:
                with self.lock:
                    self.refused_until = time.monotonic() + reply.refuse_for_s
                    self.refusal_sent = answered
            return answered
        body = self._success(recorded, profile, reply)
        # Google's JSON carries text as UTF-8, not as \u escapes.
        return Answered(200, json.dumps(body, ensure_ascii=False).encode(), reply.headers)

    def _success(self, recorded: Recorded, profile: ModelProfile, reply: Reply) -> dict[str, Any]:
        prompt_tokens = tokens_of(recorded.system + recorded.conversation)
        text = quoted(reply.text or "", recorded)
        calls = [call.part() for call in reply.function_calls]
        if calls and profile.thinking.control == Control.LEVEL:
            # Gemini 3 signs its first function call of a step (Google: thought signatures).
            calls[0]["thoughtSignature"] = THOUGHT_SIGNATURE
        if reply.usage is not None:
            prompt_tokens, answer_tokens = reply.usage
        else:
            answer_tokens = tokens_of(text + "".join(json.dumps(c) for c in calls))
        limit = int(field_of(recorded.generation, "maxOutputTokens") or profile.output_limit)
        thoughts = min(
            thoughts_spent(profile, recorded) if reply.thoughts is None else reply.thoughts, limit
        )
        finish = reply.finish_reason
        if thoughts + answer_tokens > limit and reply.candidates:
            answer_tokens = limit - thoughts
            text, finish = text[: answer_tokens * 4], "MAX_TOKENS"
        usage: dict[str, Any] = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": answer_tokens,
            "totalTokenCount": prompt_tokens + answer_tokens + thoughts,
        }
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        cached = min(self._cached_tokens(recorded, profile), prompt_tokens)
        if cached:
            usage["cachedContentTokenCount"] = cached
        body: dict[str, Any] = {
            "usageMetadata": usage,
            "modelVersion": reply.model_version or self.model_version or f"{profile.name}-001",
            "responseId": "test-response",
        }
        if reply.block_reason:
            body["promptFeedback"] = {"blockReason": reply.block_reason}
        if reply.candidates:
            parts = [{"text": text}] if text else []
            if finish != "MAX_TOKENS":
                parts.extend(calls)
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": parts},
                "finishReason": finish,
                "index": 0,
            }
            if reply.logprobs is not None:
                candidate["logprobsResult"] = {
                    "chosenCandidates": [
                        {"token": t, "logProbability": p} for t, p in reply.logprobs
                    ],
                    "topCandidates": [],
                }
            body["candidates"] = [candidate]
        return body

    def count_tokens(self, model: str, raw: bytes, backend: Backend) -> Answered:
        """`models/{model}:countTokens`: the request's tokens as the usage would count them
        (`contents`, or a whole `generateContentRequest` with its system instruction)."""
        profile = PROFILES.get(model)
        if profile is None or not profile.served_by(backend):
            return not_found(model, "countTokens")
        body = json.loads(raw or b"{}")
        request = field_of(body, "generateContentRequest") or {"contents": body.get("contents")}
        recorded = Recorded(model, request, {}, backend)
        total = tokens_of(recorded.system + recorded.conversation)
        return Answered(200, json.dumps({"totalTokens": total}).encode())

    # batches -------------------------------------------------------------------
    def create_batch(self, model: str, raw: bytes, headers: dict[str, str]) -> Answered:
        """`models/{model}:batchGenerateContent`: every inlined request answered now."""
        if len(raw) > BATCH_INLINE_LIMIT:
            message = f"Request payload size exceeds the limit: {BATCH_INLINE_LIMIT} bytes."
            return Answered(400, error_body(400, message))
        profile = PROFILES.get(model)
        if profile is None or not profile.served_by(Backend.DEVELOPER):
            return not_found(model, "batchGenerateContent")
        batch_body = field_of(json.loads(raw), "batch") or {}
        source = field_of(batch_body, "inputConfig") or {}
        inlined = (field_of(source, "requests") or {}).get("requests") or []
        if not inlined:
            message = (
                "batch.input_config must hold inlined requests: the stand-in keeps no files"
                if field_of(source, "fileName")
                else "batch.input_config.requests must not be empty."
            )
            return Answered(400, error_body(400, message))
        with self.lock:
            name = f"batches/stand-in-{next(self.batch_ids)}"
            failure = self.failing_batches.popleft() if self.failing_batches else None
        batch = Batch(
            name,
            model,
            len(inlined),
            display_name=field_of(batch_body, "displayName") or "",
            failure=failure,
        )
        for item in inlined:
            request = item.get("request") or {}
            recorded = Recorded(
                model,
                request,
                headers,
                Backend.DEVELOPER,
                raw=json.dumps(request).encode(),
                batch=name,
            )
            self._record(recorded)
            if failure is not None:
                continue
            answered = self._reply_to(recorded, interactive=False)
            if answered is not None:
                recorded.sent, recorded.status = answered.body, answered.status
            batch.responses.append(inlined_response(answered, item.get("metadata")))
        with self.lock:
            self.batches[name] = batch
            operation = batch.operation()
        return Answered(200, json.dumps(operation, ensure_ascii=False).encode())

    def _batch(self, batch_id: str) -> Batch | None:
        """The batch by id, its expiry applied (call with the lock held)."""
        batch = self.batches.get(f"batches/{batch_id}")
        if batch is None or batch.deleted:
            return None
        age = time.monotonic() - batch.created_at
        if batch.state not in FINISHED and age > self.batch_expiry_s:
            batch.move(EXPIRED)
        return batch

    def get_batch(self, batch_id: str) -> Answered:
        """`batches/{id}`: a batch not held finishes at its first GET."""
        with self.lock:
            batch = self._batch(batch_id)
            if batch is None:
                return Answered(404, error_body(404, "Requested entity was not found."))
            if batch.state not in FINISHED:
                if self.holding_batches:
                    if batch.state != RUNNING:
                        batch.move(RUNNING)
                else:
                    batch.move(FAILED if batch.failure is not None else SUCCEEDED)
            operation = batch.operation()
        return Answered(200, json.dumps(operation, ensure_ascii=False).encode())

    def cancel_batch(self, batch_id: str) -> Answered:
        """`batches/{id}:cancel`: a pending or running batch is cancelled."""
        with self.lock:
            batch = self._batch(batch_id)
            if batch is None:
                return Answered(404, error_body(404, "Requested entity was not found."))
            batch.cancelled = True
            if batch.state not in FINISHED:
                batch.move(CANCELLED)
        return Answered(200, b"{}")

    def delete_batch(self, batch_id: str) -> Answered:
        """`DELETE batches/{id}`: the batch is gone (it stays in `batches`, `deleted`)."""
        with self.lock:
            batch = self._batch(batch_id)
            if batch is None:
                return Answered(404, error_body(404, "Requested entity was not found."))
            batch.deleted = True
        return Answered(200, b"{}")

    # embeddings ----------------------------------------------------------------
    def fail_embedding(self, status: int, times: int = 1, message: str = "") -> None:
        """The next `times` embedding requests that pass the model's checks answer this
        error with Google's status string; a 429 carries a per-minute quota's
        `QuotaFailure` and a 1 s `RetryInfo`."""
        quota = status == HTTPStatus.TOO_MANY_REQUESTS
        details = quota_details("minute", 1) if quota else None
        text = message or ("You exceeded your current quota." if quota else "failed")
        with self.lock:
            self.embedding_failures.extend(
                Reply(status=status, message=text, details=details) for _ in range(times)
            )

    def answer_embedding(self, request: Request) -> Answered | None:
        """The answer to an embedContent or batchEmbedContents request (None: another path)."""
        developer = _EMBED.match(request.path)
        match = developer or _VERTEX_EMBED.match(request.path)
        if request.method != "POST" or match is None:
            return None
        model, method = match.group("model"), match.group("method")
        backend = Backend.DEVELOPER if developer else Backend.VERTEX
        items = embedding_items(request.json_body(), method)
        recorded = EmbeddingRequest(model, method, backend, items)
        answered = embedding_refusal(model, method, items)
        with self.lock:
            self.embedding_requests.append(recorded)
            scripted = answered is None and bool(self.embedding_failures)
            failure = self.embedding_failures.popleft() if scripted else None
        if failure is not None:
            body = error_body(failure.status, failure.message, failure.details)
            answered = Answered(failure.status, body)
        if answered is None:
            answered = json_body(embedding_answer(model, method, items, backend))
        recorded.status = answered.status
        return answered

    # serving -------------------------------------------------------------------
    def unknown(self, _request: Request) -> Answered:
        return Answered(404, error_body(404, "unknown path"))

    def respond(self, request: Request) -> Answered | None:
        if request.method == "POST":
            return self.post(request)
        batch = _BATCH.match(request.path)
        if batch is None or batch.group("cancel"):
            return self.unknown(request)
        if request.method == "GET":
            return self.get_batch(batch.group("id"))
        if request.method == "DELETE":
            return self.delete_batch(batch.group("id"))
        return self.unknown(request)

    def post(self, request: Request) -> Answered | None:  # noqa: PLR0911 - one per path
        """The answer to a POST: the token, a batch's creation or cancellation, or a model
        method (None: a connection reset)."""
        path, raw = request.path, request.raw
        if path == "/token":
            token = {"access_token": "stand-in-token", "expires_in": 3600}
            return Answered(200, json.dumps(token).encode())
        embedded = self.answer_embedding(request)
        if embedded is not None:
            return embedded
        create, batch = _BATCH_CREATE.match(path), _BATCH.match(path)
        if create is not None:
            return self.create_batch(create.group("model"), raw, request.headers)
        if batch is not None and batch.group("cancel"):
            return self.cancel_batch(batch.group("id"))
        developer, vertex = _DEVELOPER.match(path), _VERTEX.match(path)
        match = developer or vertex
        if match is None:
            return self.unknown(request)
        backend = Backend.DEVELOPER if developer else Backend.VERTEX
        method = match.group("method")
        if method == "countTokens":
            return self.count_tokens(match.group("model"), raw, backend)
        stream = method == "streamGenerateContent"
        model, body = match.group("model"), json.loads(raw)
        recorded = Recorded(model, body, request.headers, backend, raw=raw, streamed=stream)
        answered = self.answer(recorded)
        if answered is None:
            return None
        if stream:
            answered = streamed(answered, sse=parse_qs(request.query).get("alt") == ["sse"])
        recorded.sent, recorded.status = answered.body, answered.status
        return answered


EMBEDDING_MODELS = {"gemini-embedding-001": 3072}
"""Models that embed, with the number of values they answer unasked (Google's models page:
gemini-embedding-001, 128 to 3,072 values, 768, 1,536 and 3,072 recommended)."""
EMBEDDING_DIMENSIONS = range(128, 3072 + 1)
EMBEDDING_BATCH_LIMIT = 100
"""The most requests one batchEmbedContents call takes (Google answers 400 past it)."""
EMBEDDING_TASK_TYPES = frozenset(
    {
        "TASK_TYPE_UNSPECIFIED",
        "RETRIEVAL_QUERY",
        "RETRIEVAL_DOCUMENT",
        "SEMANTIC_SIMILARITY",
        "CLASSIFICATION",
        "CLUSTERING",
        "QUESTION_ANSWERING",
        "FACT_VERIFICATION",
        "CODE_RETRIEVAL_QUERY",
    }
)
"""The `TaskType` values Google's API reference lists."""


@dataclass
class EmbeddingRequest:
    """One embedContent or batchEmbedContents request as it arrived (for tests to read)."""

    model: str
    method: str
    """`embedContent` or `batchEmbedContents`."""
    backend: Backend
    items: list[dict[str, Any]]
    """Its single embedding requests: a batch's `requests`, else the body itself."""
    status: int = 0
    """The HTTP status answered."""

    @property
    def texts(self) -> list[str]:
        return [embedding_text(item) for item in self.items]

    @property
    def task_types(self) -> list[Any]:
        return [embedding_option(item, "taskType") for item in self.items]

    @property
    def dimensions(self) -> list[Any]:
        return [embedding_option(item, "outputDimensionality") for item in self.items]


def embedding_items(body: dict[str, Any], method: str) -> list[dict[str, Any]]:
    """The single embedding requests a body holds: a batch's `requests`, else the body."""
    if method != "batchEmbedContents":
        return [body]
    return [item for item in body.get("requests") or [] if isinstance(item, dict)]


def embedding_text(item: dict[str, Any]) -> str:
    """The text one embedding request asks about: its content's text parts, joined."""
    parts = (field_of(item, "content") or {}).get("parts") or []
    return "".join(part.get("text", "") for part in parts if isinstance(part, dict))


def embedding_option(item: dict[str, Any], name: str) -> Any:
    """An option of one embedding request: at its top (what google-genai sends the
    Developer API) or in `embedContentConfig` (Vertex AI, and the API's newer form)."""
    value = field_of(item, name)
    config = field_of(item, "embedContentConfig") or {}
    return value if value is not None else field_of(config, name)


def embedding_problem(model: str, index: int, item: dict[str, Any]) -> str | None:
    """Why one embedding request of a batch is refused, in words; None when it is not."""
    where = f"BatchEmbedContentsRequest.requests[{index}]"
    named = field_of(item, "model")
    if named is not None and str(named).removeprefix("models/") != model:
        return f"* {where}.model: the model must match the batch's models/{model}\n"
    if not embedding_text(item).strip():
        return f"* {where}.content: the text to embed must not be empty\n"
    task = embedding_option(item, "taskType")
    if task is not None and task not in EMBEDDING_TASK_TYPES:
        return f"Invalid value at '{where}.task_type' (type.googleapis.com/TaskType), \"{task}\""
    size = embedding_option(item, "outputDimensionality")
    if size is not None and int(size) not in EMBEDDING_DIMENSIONS:
        return (
            f"* {where}.output_dimensionality: must be {EMBEDDING_DIMENSIONS.start} to "
            f"{EMBEDDING_DIMENSIONS.stop - 1} for models/{model}, got {size}\n"
        )
    return None


def embedding_refusal(model: str, method: str, items: list[dict[str, Any]]) -> Answered | None:
    """The error Google answers before embedding anything: 404 for a model that does not
    embed, 400 for too many requests in a batch or for a request it refuses."""
    if model not in EMBEDDING_MODELS:
        return not_found(model, method)
    if len(items) > EMBEDDING_BATCH_LIMIT:
        message = (
            "* BatchEmbedContentsRequest.requests: at most "
            f"{EMBEDDING_BATCH_LIMIT} requests can be in one batch\n"
        )
        return Answered(400, error_body(400, message))
    if not items:
        return Answered(400, error_body(400, "* BatchEmbedContentsRequest.requests: required\n"))
    for index, item in enumerate(items):
        problem = embedding_problem(model, index, item)
        if problem is not None:
            return Answered(400, error_body(400, problem))
    return None


def embedding_values(model: str, item: dict[str, Any]) -> list[float]:
    """The values answered for one request: the meaning stand-in's vector at the model's
    full size, cut to the dimensionality asked (so only the full size is unit length)."""
    full = meaning.embedding(embedding_text(item), EMBEDDING_MODELS[model])
    size = embedding_option(item, "outputDimensionality")
    return full[: int(size)] if size is not None else full


def embedding_answer(
    model: str, method: str, items: list[dict[str, Any]], backend: Backend
) -> dict[str, Any]:
    """`{embedding: {values}}` for embedContent, `{embeddings: [{values}]}` for a batch;
    Vertex AI's answers also count the texts' tokens in `usageMetadata`."""
    embeddings = [{"values": embedding_values(model, item)} for item in items]
    body: dict[str, Any] = (
        {"embedding": embeddings[0]} if method == "embedContent" else {"embeddings": embeddings}
    )
    if backend == Backend.VERTEX:
        tokens = sum(tokens_of(embedding_text(item)) for item in items)
        body["usageMetadata"] = {"promptTokenCount": tokens, "totalTokenCount": tokens}
    return body


def json_body(payload: dict[str, Any]) -> Answered:
    """A `200` with this JSON body."""
    return Answered(200, json.dumps(payload).encode())


def is_support_check(recorded: Recorded) -> bool:
    schema = field_of(recorded.generation, "responseJsonSchema") or {}
    return "verdicts" in schema.get("properties", {})


def all_supported(prompt: str) -> dict[str, Any]:
    """Every statement the support check names, found supported."""
    named = [line["statement"] for line in fenced_lines(prompt, "statements")]
    return {"verdicts": [{"statement": name, "supported": True} for name in named]}


def asks_for(*names: str) -> Callable[[Recorded], bool]:
    """Recognises a request whose response schema requires all of `names`."""

    def recognises(recorded: Recorded) -> bool:
        config = recorded.generation
        schema = field_of(config, "responseJsonSchema") or field_of(config, "responseSchema") or {}
        required = schema.get("required") if isinstance(schema, dict) else None
        return isinstance(required, list) and set(names) <= set(required)

    return recognises


def flash_choice(recorded: Recorded) -> Reply:
    """A model-choice router's answer: the schema's `flash` choice (a simple task)."""
    schema = field_of(recorded.generation, "responseJsonSchema") or {}
    choices = schema.get("properties", {}).get("model_choice", {}).get("enum") or ["flash"]
    choice = next((c for c in choices if "flash" in c), choices[0])
    return Reply(text=json.dumps({"reasoning": "Stand-in router.", "model_choice": choice}))


def answers(data: dict[str, Any]) -> Callable[[Recorded], Reply]:
    return lambda _recorded: Reply(text=json.dumps(data))


@dataclass(frozen=True)
class Purpose:
    """A side request: what it is for, how it is recognised, and what it is answered when
    no test has scripted it. Side requests never take the main queue's replies, so that a
    test scripts only the calls it is about (a research answer, an agent's turns)."""

    name: str
    recognises: Callable[[Recorded], bool]
    default: Callable[[Recorded], Reply]


def is_pattern_label(recorded: Recorded) -> bool:
    return "<pattern_members>" in recorded.prompt


def pattern_label(recorded: Recorded) -> Reply:
    """A pattern's label citing the most central member shown, as a model would answer:
    its failure sentence is the title and the claim, with the events its summary cites."""
    shown = list(fenced_lines(recorded.prompt, "pattern_members")) or [
        {"sessionId": "none", "failure": "No member was shown.", "eventIds": []}
    ]
    central = shown[0]
    label = {
        "title": central["failure"][:80],
        "description": central["failure"],
        "sugestao": f"Before you act, check for this: {central['failure']}",
        "evidence": [
            {
                "sessionId": member["sessionId"],
                "eventIds": member["eventIds"][:3],
                "claim": member["failure"],
            }
            for member in shown[:3]
            if member["eventIds"]
        ],
    }
    return Reply(text=json.dumps(label))


def psychologist_summary(recorded: Recorded) -> Reply:
    """A session's summary as a model that reads the prompt gives it: of the events shown of
    the session's agent (the `Session:` header's), the task cites the first, the ending
    the last, the failure the first tool error, in the error's own words where it gives
    them (null when none is shown). With no event
    shown, its claims cite an event named `none`, which a check refuses."""
    header = re.search(r"^Session: (.*)$", recorded.prompt, re.MULTILINE)
    agent = json.loads(header.group(1)).get("agent") if header else None
    events = list(fenced_lines(recorded.prompt, "session_events"))
    none = {"id": "none", "agent": agent, "type": "none"}
    shown = [event for event in events if event["agent"] == agent] or events or [none]
    errors = [event for event in shown if event["type"] == "tool.error"]
    first, last = shown[0], shown[-1]
    failure = None
    if errors:
        data = errors[0].get("data") or {}
        said = data.get("error") if isinstance(data.get("error"), str) else None
        text = said or f"A call to {data.get('tool', 'a tool')} failed."
        failure = {"text": text, "eventIds": [errors[0]["id"]]}
    summary = {
        "task": {
            "text": f"The agent worked on {first.get('taskId', 'its task')}.",
            "eventIds": [first["id"]],
        },
        "ending": {
            "text": f"The session ended after a {last['type']} event.",
            "eventIds": [last["id"]],
        },
        "failure": failure,
    }
    return Reply(text=json.dumps(summary))


PSYCHOLOGIST_SUMMARY = "psychologist_summary"
SUPPORT_CHECK = "support_check"
PATTERN_LABEL = "pattern_label"
PURPOSES: tuple[Purpose, ...] = (
    Purpose(PATTERN_LABEL, is_pattern_label, pattern_label),
    Purpose(
        SUPPORT_CHECK,
        is_support_check,
        lambda recorded: Reply(text=json.dumps(all_supported(recorded.prompt))),
    ),
    # Gemini CLI's utility calls (generateContent with a response schema, on a Flash-Lite or
    # the main model), answered so that the agent carries on with the scripted main turns.
    # Its router, asked when no --model is given, is told the task is simple: Gemini CLI
    # 0.61 then takes Flash (gemini-3.8-flash); a high score would take
    # gemini-3.1-pro-preview-customtools, which the profiles do not know (404).
    Purpose(
        "agent_router",
        asks_for("complexity_score"),
        answers({"complexity_reasoning": "Stand-in router.", "complexity_score": 10}),
    ),
    Purpose("agent_model_choice", asks_for("model_choice"), flash_choice),
    Purpose(
        "agent_next_speaker",
        asks_for("next_speaker"),
        answers({"reasoning": "Stand-in: the turn is complete.", "next_speaker": "user"}),
    ),
    Purpose(
        "agent_loop_check",
        asks_for("unproductive_state_confidence"),
        answers({"unproductive_state_analysis": "No loop.", "unproductive_state_confidence": 0}),
    ),
    Purpose(
        "agent_session_summary",
        lambda recorded: recorded.prompt.startswith("Summarize the user's primary intent"),
        lambda _recorded: Reply(text="Stand-in session"),
    ),
    # A Psychologist normal end's summary (its own call, over the log's compact view).
    Purpose(PSYCHOLOGIST_SUMMARY, asks_for("task", "ending", "failure"), psychologist_summary),
)
"""Side requests by purpose, tried in order before the main queue."""


def fenced_lines(prompt: str, tag: str) -> Iterator[Any]:
    """Each line between `<tag>` and `</tag>`, read back as the JSON it was fenced as."""
    inside = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    for line in inside.group(1).splitlines() if inside else []:
        if line.strip():
            yield json.loads(line)


def first_sentence(text: str) -> str:
    """The item's first sentence, verbatim: what a citation without a scripted quote quotes."""
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def quoted(text: str, recorded: Recorded) -> str:
    """A research answer as a model that quotes gives it: each citation its script or
    responder left without a `quote` quotes the first sentence of the cited item's text
    in the prompt (a scripted quote, adversarial or not, is sent as it is)."""
    schema = field_of(recorded.generation, "responseJsonSchema") or {}
    if "findings" not in schema.get("properties", {}):
        return text
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    items = {i["evidence_id"]: i["text"] for i in fenced_lines(recorded.prompt, "evidence_items")}
    sections = [data.get("answer"), *data.get("findings", []), *data.get("query_suggestions", [])]
    refs = [r for s in sections if isinstance(s, dict) for r in s.get("evidence", [])]
    for ref in [*refs, *data.get("sentiment", [])]:
        if isinstance(ref, dict) and "quote" not in ref and ref.get("evidence_id") in items:
            ref["quote"] = first_sentence(items[ref["evidence_id"]])
    return json.dumps(data, ensure_ascii=False)


def cited_research_answer(
    cite: list[tuple[str, int]], statement: str = "Users find onboarding slow."
) -> dict[str, Any]:
    """A research answer that passes every check: one observed statement citing `cite`
    (evidence id, revision), no counts, the contract's method version."""
    return {
        "answer": {
            "statement": statement,
            "basis": "observed",
            "evidence": [{"evidence_id": e, "revision": r} for e, r in cite],
            "uncertainty": "Small sample.",
        },
        "findings": [],
        "sentiment": [],
        "query_suggestions": [],
        "limitations": ["The evidence comes from a single onboarding survey."],
        "quantitative_claims": False,
        "method_version": "research-cited/v1",
    }
