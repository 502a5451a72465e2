"""The HTTP server our model stand-ins share (`cli.gemini_stand_in`, `cli.anthropic_stand_in`,
`cli.openai_stand_in`): development tooling for the tests and the bench, never deployed.

A stand-in is a dataclass that subclasses `StandIn` and answers `respond(request)`. The base
serves it on a free port of 127.0.0.1 (`start()`, `url`, `stop()`), one thread a connection:
it reads each request whatever its method (`Request`: path without the query, the query,
headers, body), sends the `Answered` status, headers and body with its `Content-Length` (a
server-sent event stream is sent whole, as one body), closes the connection with a TCP reset
when `respond` returns None, and ignores a client that hung up before its answer was written.
Paths a stand-in does not know are answered 404 (`unknown`, which a stand-in overrides to
answer in its vendor's error shape).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

EVENT_STREAM = "text/event-stream; charset=utf-8"


def tokens_of(text: str) -> int:
    """The tokens a stand-in counts for `text`: about four bytes of UTF-8 a token."""
    return (len(text.encode()) + 3) // 4


def shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Answered:
    """What a stand-in sends: status, body, extra headers and the body's content type."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass(frozen=True)
class Request:
    """One request as it arrived."""

    method: str
    path: str
    """The path without its query."""
    query: str
    headers: dict[str, str]
    raw: bytes
    """The body as received."""

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object; empty when it is none."""
        try:
            body = json.loads(self.raw) if self.raw else {}
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}


@dataclass
class Recorded:
    """A model request as a stand-in keeps it for the tests: what came and what was sent."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    raw: bytes = b""
    at: float = field(default_factory=time.monotonic)
    status: int = 0
    """The HTTP status answered."""
    sent: bytes = b""
    """The response body as sent (the whole event stream for a streamed answer)."""

    def header(self, name: str) -> str | None:
        """A request header by name, in any case (clients spell them differently)."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


def json_answer(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answered:
    """`payload` as a JSON body."""
    body = json.dumps(payload, ensure_ascii=False).encode()
    return Answered(status, body, dict(headers or {}))


def encode_events(events: Sequence[tuple[str, dict[str, Any]]]) -> bytes:
    """Server-sent events: per event an `event:` line with its name and a `data:` line with
    its JSON, then a blank line."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def sse_answer(
    events: Sequence[tuple[str, dict[str, Any]]], headers: dict[str, str] | None = None
) -> Answered:
    """A `200` whose body is the whole event stream, not to be cached."""
    sent = {"Cache-Control": "no-cache", **(headers or {})}
    return Answered(200, encode_events(events), sent, EVENT_STREAM)


def parse_events(stream: bytes) -> list[tuple[str, dict[str, Any]]]:
    """A server-sent event stream read back: (event name, data) per named event."""
    parsed = []
    for frame in stream.decode().split("\n\n"):
        name, data = "", []
        for line in frame.splitlines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                data.append(line.removeprefix("data:").strip())
        if name:
            parsed.append((name, json.loads("".join(data))))
    return parsed


@dataclass
class StandIn:
    """The server a stand-in runs on; a subclass answers `respond`."""

    title: ClassVar[str] = "model stand-in"
    """How errors name the stand-in."""
    server: ThreadingHTTPServer | None = field(default=None, repr=False)

    def respond(self, request: Request) -> Answered | None:
        """The answer to `request`; None closes the connection with a reset instead."""
        return self.unknown(request)

    def unknown(self, request: Request) -> Answered:
        """The answer to a path the stand-in does not serve: 404."""
        message = f"Not found: {request.method} {request.path}"
        return json_answer({"error": {"code": 404, "message": message}}, 404)

    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError(f"the {self.title} has not been started")
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Self:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def handler_for(owner: StandIn) -> type[BaseHTTPRequestHandler]:
    """The request handler that reads each request and sends `owner`'s answer."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            return

        def handle_any(self) -> None:
            answered = owner.respond(self.read_request())
            if answered is None:
                self.reset()
            else:
                self.send(answered)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any  # noqa: N815 - http.server's names

        def read_request(self) -> Request:
            length = int(self.headers.get("content-length", 0))
            path, _, query = self.path.partition("?")
            raw = self.rfile.read(length)
            return Request(self.command, path, query, dict(self.headers), raw)

        def reset(self) -> None:
            linger = struct.pack("ii", 1, 0)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            self.connection.close()
            self.close_connection = True

        def send(self, answered: Answered) -> None:
            try:
                self.send_response(answered.status)
                self.send_header("Content-Type", answered.content_type)
                self.send_header("Content-Length", str(len(answered.body)))
                for name, value in answered.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(answered.body)
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler
