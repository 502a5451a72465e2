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
  4,096; a budget up to 2,048; no thinking setting: the profile's default): when they use
  it all the answer is `MAX_TOKENS` with no content, and `thoughtsTokenCount` is in the
  usage;
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
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from shared.models import PROFILES, Backend, Control, ModelProfile

_DEVELOPER = re.compile(r"^/(v1beta|v1)/models/(?P<model>[^/:]+):generateContent$")
_VERTEX = re.compile(
    r"^/(v1beta1|v1)/projects/[^/]+/locations/[^/]+/publishers/google/models/"
    r"(?P<model>[^/:]+):generateContent$"
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
THOUGHTS_BY_LEVEL = {"MINIMAL": 0, "LOW": 128, "MEDIUM": 1_024, "HIGH": 4_096}
DYNAMIC_THOUGHTS = 2_048
QUOTA_IDS = {
    "minute": "GenerateRequestsPerMinutePerProjectPerModel",
    "day": "GenerateRequestsPerDayPerProjectPerModel",
}
_CACHE_MEMORY = 64
"""How many earlier prompts per model the implicit cache compares against."""


def field_of(message: dict[str, Any], name: str) -> Any:
    """A field of a JSON request by its camelCase name or its proto snake_case name:
    Google's JSON parser takes both, and the library sends some fields either way."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return message.get(name, message.get(snake))


def tokens_of(text: str) -> int:
    return (len(text.encode()) + 3) // 4


def error_body(code: int, message: str, details: list[dict[str, Any]] | None = None) -> bytes:
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "status": STATUS_NAMES.get(code, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return json.dumps({"error": error}).encode()


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

    def open(self) -> None:
        self.opened.set()


@dataclass
class Reply:
    status: int = 200
    text: str | None = None
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

    @property
    def prompt(self) -> str:
        return "".join(part.get("text", "") for part in self.body["contents"][0]["parts"])

    @property
    def system(self) -> str:
        parts = (self.body.get("systemInstruction") or {}).get("parts", [])
        return "".join(part.get("text", "") for part in parts)

    @property
    def generation(self) -> dict[str, Any]:
        config: dict[str, Any] = self.body.get("generationConfig") or {}
        return config


@dataclass(frozen=True)
class Answered:
    """What the server sends: status, body, headers."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


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
    return DYNAMIC_THOUGHTS


def _shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class GeminiTestServer:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None
    responder: Callable[[Recorded], Reply] | None = None
    """Answers when no scripted reply is left: a stand-in model that reads the prompt."""
    keep_requests: bool = True
    """Record every request (tests read them); off for a long-running local model."""
    latency_s: float = 0.0
    """Every generateContent call takes at least this long."""
    refused_until: float = 0.0
    refusal_sent: Answered | None = None
    prompts: dict[str, deque[str]] = field(default_factory=dict)
    """Recent prompts per model, for the implicit cache."""
    gates: list[Gate] = field(default_factory=list)
    """Every gate handed out, opened on reset so that no held call outlives its test."""

    # scripting -----------------------------------------------------------------
    def answer_json(self, data: Any, **kwargs: Any) -> None:
        self.replies.append(Reply(text=json.dumps(data), **kwargs))

    def held_answer_json(self, data: Any) -> Gate:
        """This answer, sent only once the returned gate is opened."""
        gate = Gate()
        self.gates.append(gate)
        self.replies.append(Reply(text=json.dumps(data), gate=gate))
        return gate

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

    def reported_usage(self) -> dict[str, int]:
        """The usage every answer so far reported, added up as Evidencia stores it:
        output tokens include thought tokens."""
        total = {"inputTokens": 0, "outputTokens": 0, "cachedTokens": 0, "thoughtTokens": 0}
        for recorded in self.requests:
            meta = json.loads(recorded.sent or b"{}").get("usageMetadata") or {}
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
        with self.lock:
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        return responder(recorded) if responder else Reply(status=500)

    def _cached_tokens(self, recorded: Recorded, profile: ModelProfile) -> int:
        """The prefix this prompt shares with a recent one to the same model, in tokens,
        when it reaches the model's implicit-cache minimum (else 0)."""
        text = recorded.system + "\n" + recorded.prompt
        with self.lock:
            seen = self.prompts.setdefault(profile.name, deque(maxlen=_CACHE_MEMORY))
            shared = max((_shared_prefix(text, earlier) for earlier in seen), default=0)
            seen.append(text)
        tokens = len(text[:shared].encode()) // 4
        return tokens if tokens >= profile.cache_min_tokens else 0

    def answer(self, recorded: Recorded) -> Answered | None:  # noqa: PLR0911 - one per kind of reply
        """The answer to one generateContent request; None for a connection reset."""
        if self.keep_requests:
            with self.lock:
                self.requests.append(recorded)
        profile = PROFILES.get(recorded.model)
        if profile is None or not profile.served_by(recorded.backend):
            message = (
                f"models/{recorded.model} is not found for API version v1beta, or is not "
                "supported for generateContent. Call ListModels to see the list of available "
                "models and their supported methods."
            )
            return Answered(404, error_body(404, message))
        refused = refusal(profile, recorded)
        if refused is not None:
            return refused
        with self.lock:
            if time.monotonic() < self.refused_until and self.refusal_sent is not None:
                return self.refusal_sent
        reply = self._next(recorded)
        if reply.gate is not None:
            reply.gate.opened.wait(GATE_TIMEOUT_S)
        time.sleep(self.latency_s + reply.delay_s)
        if reply.reset:
            return None
        if reply.raw_body is not None:
            return Answered(reply.status, reply.raw_body, reply.headers)
        if reply.status != HTTPStatus.OK:
            answered = Answered(
                reply.status, error_body(reply.status, reply.message, reply.details), reply.headers
            )
            if reply.refuse_for_s:
                with self.lock:
                    self.refused_until = time.monotonic() + reply.refuse_for_s
                    self.refusal_sent = answered
            return answered
        body = self._success(recorded, profile, reply)
        # Google's JSON carries text as UTF-8, not as \u escapes.
        return Answered(200, json.dumps(body, ensure_ascii=False).encode(), reply.headers)

    def _success(self, recorded: Recorded, profile: ModelProfile, reply: Reply) -> dict[str, Any]:
        prompt_tokens = tokens_of(recorded.system + recorded.prompt)
        text = reply.text or ""
        if reply.usage is not None:
            prompt_tokens, answer_tokens = reply.usage
        else:
            answer_tokens = tokens_of(text)
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
            "modelVersion": reply.model_version or f"{profile.name}-001",
            "responseId": "test-response",
        }
        if reply.block_reason:
            body["promptFeedback"] = {"blockReason": reply.block_reason}
        if reply.candidates:
            parts = [{"text": text}] if text else []
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

    # serving -------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError("the Gemini stand-in has not been started")
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> GeminiTestServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                return

            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                if path == "/token":
                    token = {"access_token": "stand-in-token", "expires_in": 3600}
                    self._send(Answered(200, json.dumps(token).encode()))
                    return
                developer, vertex = _DEVELOPER.match(path), _VERTEX.match(path)
                match = developer or vertex
                if match is None:
                    self._send(Answered(404, error_body(404, "unknown path")))
                    return
                recorded = Recorded(
                    match.group("model"),
                    json.loads(raw),
                    dict(self.headers),
                    Backend.DEVELOPER if developer else Backend.VERTEX,
                    raw=raw,
                )
                answered = owner.answer(recorded)
                if answered is None:
                    self._reset()
                    return
                recorded.sent, recorded.status = answered.body, answered.status
                self._send(answered)

            def _reset(self) -> None:
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()
                self.close_connection = True

            def _send(self, answered: Answered) -> None:
                try:
                    self.send_response(answered.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answered.body)))
                    for name, value in answered.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(answered.body)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


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
