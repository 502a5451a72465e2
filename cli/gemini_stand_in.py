"""A local HTTP server that speaks Gemini's REST protocol, scripted per test.

Development tooling shared by the tests and the bench (`cli/` is never deployed).

`POST /{v1beta|v1}/models/{model}:generateContent` takes the next scripted reply: a JSON
answer, an HTTP error status (with `Retry-After` if asked), a delay past the client's
timeout, malformed JSON text, no candidate, a finish reason other than STOP, a `200`
whose body is not JSON or is empty, or a connection reset before any answer. Every
request body is recorded.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PATH = re.compile(r"^/(v1beta|v1)/models/(?P<model>[^/:]+):generateContent$")


@dataclass
class Reply:
    status: int = 200
    text: str | None = None
    finish_reason: str = "STOP"
    candidates: bool = True
    delay_s: float = 0.0
    usage: tuple[int, int] = (120, 40)
    model_version: str = "gemini-test-001"
    logprobs: list[tuple[str, float]] | None = None
    raw_body: bytes | None = None
    """Sent as it is instead of a JSON body."""
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False
    """Close the connection with a TCP reset instead of answering."""

    def body(self) -> dict[str, Any]:
        if self.status != 200:
            return {
                "error": {
                    "code": self.status,
                    "message": "scripted failure",
                    "status": "UNAVAILABLE",
                }
            }
        body: dict[str, Any] = {
            "usageMetadata": {
                "promptTokenCount": self.usage[0],
                "candidatesTokenCount": self.usage[1],
                "totalTokenCount": sum(self.usage),
            },
            "modelVersion": self.model_version,
            "responseId": "test-response",
        }
        if self.candidates:
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": [{"text": self.text or ""}]},
                "finishReason": self.finish_reason,
                "index": 0,
            }
            if self.logprobs is not None:
                candidate["logprobsResult"] = {
                    "chosenCandidates": [
                        {"token": t, "logProbability": p} for t, p in self.logprobs
                    ],
                    "topCandidates": [],
                }
            body["candidates"] = [candidate]
        return body


@dataclass
class Recorded:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    """When the request arrived (monotonic clock)."""
    raw: bytes = b""
    """The request body as received."""
    sent: bytes = b""
    """The response body as sent."""

    @property
    def prompt(self) -> str:
        return "".join(part.get("text", "") for part in self.body["contents"][0]["parts"])


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

    # scripting -----------------------------------------------------------------
    def answer_json(self, data: Any, **kwargs: Any) -> None:
        self.replies.append(Reply(text=json.dumps(data), **kwargs))

    def answer_text(self, text: str, **kwargs: Any) -> None:
        self.replies.append(Reply(text=text, **kwargs))

    def fail(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.replies.extend(Reply(status=status, headers=headers) for _ in range(times))

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

    def reset(self) -> None:
        with self.lock:
            self.replies.clear()
            self.requests.clear()
            self.responder = None

    def _next(self, recorded: Recorded) -> Reply:
        with self.lock:
            if self.keep_requests:
                self.requests.append(recorded)
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        return responder(recorded) if responder else Reply(status=500)

    # serving -------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> GeminiTestServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                return

            def do_POST(self) -> None:
                match = _PATH.match(self.path.split("?")[0])
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                if match is None:
                    self._send(404, {"error": {"code": 404, "message": "unknown path"}})
                    return
                recorded = Recorded(
                    match.group("model"), json.loads(raw), dict(self.headers), raw=raw
                )
                reply = owner._next(recorded)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.reset:
                    self._reset()
                    return
                data = reply.raw_body
                if data is None:
                    data = json.dumps(reply.body()).encode()
                recorded.sent = data
                self._send(reply.status, reply.body(), data, reply.headers)

            def _reset(self) -> None:
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()
                self.close_connection = True

            def _send(
                self,
                status: int,
                body: dict[str, Any],
                data: bytes | None = None,
                headers: dict[str, str] | None = None,
            ) -> None:
                data = json.dumps(body).encode() if data is None else data
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
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
