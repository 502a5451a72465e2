"""A loopback OTLP relay for the run of an agent whose telemetry is set in its configuration
only (Codex CLI), so that its records join the launched session and its bearer stays out of
sight.

Why a relay: Codex CLI reads its OpenTelemetry settings from its configuration alone (`-c
otel.…` or `config.toml`; the `OTEL_EXPORTER_OTLP_*` variables do nothing), and it names its
own session (`conversation.id`), which it cannot be told. The bearer would then have to be
in a header on its command line (seen by every local process) or in a file (left behind,
or written into the user's `~/.codex`). Instead the launcher starts this relay on
127.0.0.1 for the agent's run and points Codex's exporters at it (OTLP/HTTP, JSON). The
relay

- takes `POST /v1/logs`, `/v1/traces` and `/v1/metrics` as OTLP/JSON under a path only the
  agent was given (a page in a browser cannot name it), and refuses protobuf (415: Codex is
  configured for JSON) and any other path (404);
- sets `session.id` to the launched session on every log record, span and metric data
  point (the Psychologist's Codex row reads it before `conversation.id`, so every record
  joins the launched session and its choice), and `gen_ai.agent.name` to the linked agent
  name on every resource, replacing any;
- forwards the export to the project's OTLP endpoint with `Authorization: Bearer TOKEN`,
  and answers the agent with the project's status and body.

Codex's metrics thereby go to the project only, never to the vendor's default collector.
Each export is forwarded while the agent waits for its answer, and the relay stops after
the agent has exited, having finished every export it took: nothing is lost.
"""

from __future__ import annotations

import json
import secrets
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FORWARD_TIMEOUT_S = 30.0
RECORDS = {
    "/v1/logs": ("resourceLogs", "scopeLogs", "logRecords"),
    "/v1/traces": ("resourceSpans", "scopeSpans", "spans"),
    "/v1/metrics": ("resourceMetrics", "scopeMetrics", "metrics"),
}
"""Each signal's path, and the keys down to its records: resources, scopes, records."""
POINTS = ("gauge", "sum", "histogram", "exponentialHistogram", "summary")
"""The kinds of metric whose `dataPoints` carry the session."""
JSON = "application/json"


@dataclass(frozen=True)
class Reply:
    """What the relay answers the agent."""

    status: int
    content_type: str
    body: bytes


@contextmanager
def relaying(upstream: str, token: str, session_id: str, agent: str) -> Iterator[str]:
    """Relay the OTLP/JSON exports posted under the yielded base URL (`…/v1/logs` etc.) to
    `upstream` (the project's `…/otlp`) as records of `session_id` and `agent`, with the
    bearer `token`, for as long as the block runs."""
    relay = Relay(upstream, token, session_id, agent, secrets.token_urlsafe(16))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(relay))
    serving = threading.Thread(target=server.serve_forever, name="otlp-relay", daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/{relay.secret}"
    finally:
        server.shutdown()
        server.server_close()  # waits for the exports still being forwarded
        serving.join()


@dataclass(frozen=True)
class Relay:
    upstream: str
    token: str
    session_id: str
    agent: str
    secret: str

    def answer(self, path: str, content_type: str, encoding: str, body: bytes) -> Reply:
        """The reply to one export posted to `path`."""
        signal = path.removeprefix(f"/{self.secret}")
        if signal == path or signal not in RECORDS:
            return said(HTTPStatus.NOT_FOUND, f"no OTLP signal at {path}")
        media = content_type.partition(";")[0].strip().lower()
        if media != JSON or encoding not in ("", "identity"):
            return said(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "the relay takes OTLP/JSON only")
        try:
            export = json.loads(body)
        except ValueError:
            return said(HTTPStatus.BAD_REQUEST, "the export is not JSON")
        if not isinstance(export, dict):
            return said(HTTPStatus.BAD_REQUEST, "the export is not a JSON object")
        stamp(export, signal, self.session_id, self.agent)
        return self.forward(signal, json.dumps(export).encode())

    def forward(self, signal: str, body: bytes) -> Reply:
        """The project's answer to the export."""
        request = urllib.request.Request(  # noqa: S310 - the launcher's own EVIDENCIA_URL
            self.upstream + signal, data=body, method="POST"
        )
        request.add_header("Content-Type", JSON)
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT_S) as reply:  # noqa: S310
                return Reply(reply.status, reply.headers.get_content_type(), reply.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, error.headers.get_content_type(), error.read())
        except OSError as error:
            return said(HTTPStatus.BAD_GATEWAY, f"the project's OTLP endpoint: {error}")


def said(status: HTTPStatus, message: str) -> Reply:
    return Reply(status, JSON, json.dumps({"message": message}).encode())


def stamp(export: dict[str, Any], signal: str, session_id: str, agent: str) -> None:
    """Name the session on every record of the export and the agent on every resource."""
    resources_key, scopes_key, records_key = RECORDS[signal]
    for resource in objects(export, resources_key):
        described = resource.setdefault("resource", {})
        if isinstance(described, dict):
            set_attribute(described, "gen_ai.agent.name", agent)
        for scope in objects(resource, scopes_key):
            for record in objects(scope, records_key):
                for carrier in points(record) if signal == "/v1/metrics" else [record]:
                    set_attribute(carrier, "session.id", session_id)


def points(metric: dict[str, Any]) -> list[dict[str, Any]]:
    """A metric's data points, whichever its kind."""
    return [point for kind in POINTS for point in objects(metric.get(kind), "dataPoints")]


def objects(parent: Any, key: str) -> list[dict[str, Any]]:
    """The objects in `parent[key]`, a list; none when it is not one."""
    found = parent.get(key) if isinstance(parent, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def set_attribute(owner: dict[str, Any], key: str, value: str) -> None:
    """Set a string attribute of an OTLP/JSON object, replacing any of that key."""
    attributes = [a for a in objects(owner, "attributes") if a.get("key") != key]
    owner["attributes"] = [*attributes, {"key": key, "value": {"stringValue": value}}]


def handler_for(relay: Relay) -> type[BaseHTTPRequestHandler]:
    """The request handler answering each export through `relay`."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            content_type = self.headers.get("Content-Type", "")
            encoding = self.headers.get("Content-Encoding", "").strip().lower()
            reply = relay.answer(self.path, content_type, encoding, body)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet: stderr is the agent's and the launcher's."""

    return Handler
