"""The loopback OTLP relay that `evidencia launch` runs for Codex (`cli/relay.py`), fed the
real capture of a Codex CLI 0.171 run (`tests/telemetry_samples/codex`) against real
upstreams: the project's own OTLP endpoint on the local host, and a small HTTP server that
keeps what it is sent."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cli.relay import relaying
from tests.loop.launched import CODEX_SAMPLES, events_of, session_exists
from tests.loop.linked import AGENT_NAME, Loop

CODEX_CONVERSATION = "01a2437c-61b2-7ab2-b15d-3385bd131b8c"
"""The session Codex named itself in the capture."""
RECORDS = {
    "logs": ("resourceLogs", "scopeLogs", "logRecords"),
    "traces": ("resourceSpans", "scopeSpans", "spans"),
    "metrics": ("resourceMetrics", "scopeMetrics", "metrics"),
}


def sample(signal: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CODEX_SAMPLES / f"{signal}.json").read_text())
    return loaded


def post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
    """POST as an OTLP/HTTP exporter does; (status, body)."""
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def resources(export: dict[str, Any], signal: str) -> list[dict[str, Any]]:
    return [entry["resource"] for entry in export[RECORDS[signal][0]]]


def carriers(export: dict[str, Any], signal: str) -> list[dict[str, Any]]:
    """Every log record, span or metric data point of an export."""
    resources_key, scopes_key, records_key = RECORDS[signal]
    found = [
        record
        for resource in export[resources_key]
        for scope in resource[scopes_key]
        for record in scope[records_key]
    ]
    if signal != "metrics":
        return found
    kinds = ("gauge", "sum", "histogram", "exponentialHistogram", "summary")
    return [
        point
        for metric in found
        for kind in kinds
        for point in metric.get(kind, {}).get("dataPoints", [])
    ]


def attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def values(owner: dict[str, Any], key: str) -> list[Any]:
    return [a["value"] for a in owner.get("attributes", []) if a["key"] == key]


@dataclass
class Sink:
    """An OTLP upstream that keeps each request and answers `answer`."""

    url: str
    received: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    answer: tuple[int, bytes] = (200, b'{"partialSuccess":{}}')


@contextmanager
def sink() -> Iterator[Sink]:
    kept = Sink("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            kept.received.append((self.path, dict(self.headers), body))
            status, answer = kept.answer
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kept.url = f"http://127.0.0.1:{server.server_port}/projects/p1/otlp"
    try:
        yield kept
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_codex_logs_relayed_to_the_project_join_the_launched_session(loop: Loop) -> None:
    """Codex names its own session: through the relay its records join the launched one,
    under the linked agent name, and none lands under Codex's own id."""
    session = str(uuid.uuid4())
    endpoint = f"{loop.connect.api.base_url}/projects/{loop.project}/otlp"

    with relaying(endpoint, loop.logger, session, AGENT_NAME) as relay:
        status, answer = post(f"{relay}/v1/logs", json.dumps(sample("logs")).encode())

    assert status == 200, answer
    assert isinstance(json.loads(answer), dict)
    events = events_of(loop.project, session)
    assert events, "the records joined the launched session"
    assert {e["agent"] for e in events} == {AGENT_NAME}
    assert not session_exists(loop.project, CODEX_CONVERSATION)


def test_the_projects_refusal_is_the_relays_answer(loop: Loop) -> None:
    endpoint = f"{loop.connect.api.base_url}/projects/{loop.project}/otlp"
    export = json.dumps(sample("logs")).encode()
    direct = loop.connect.api.session.post(
        f"{endpoint}/v1/logs",
        data=export,
        headers={"Content-Type": "application/json", "Authorization": "Bearer evd_not_a_token"},
        timeout=30,
    )

    with relaying(endpoint, "evd_not_a_token", str(uuid.uuid4()), AGENT_NAME) as relay:
        status, answer = post(f"{relay}/v1/logs", export)

    assert status == direct.status_code == 401
    assert anonymous(json.loads(answer)) == anonymous(direct.json())


def anonymous(status: dict[str, Any]) -> dict[str, Any]:
    """An OTLP error (a `google.rpc.Status`) without its request's id."""
    details = [d for d in status.get("details", []) if "requestId" not in d]
    return {**status, "details": details}


@pytest.mark.parametrize("signal", ["logs", "traces", "metrics"])
def test_every_record_names_the_session_every_resource_the_agent_and_the_bearer_goes_along(
    signal: str,
) -> None:
    """Each log record, span and metric data point gets `session.id` (one, replacing any),
    each resource `gen_ai.agent.name`; the export goes to the project's path for its signal
    with the bearer, and the upstream's answer is the relay's."""
    export = sample(signal)
    first = carriers(export, signal)[0]
    first["attributes"] = [
        *first.get("attributes", []),
        {"key": "session.id", "value": {"stringValue": "theirs"}},
    ]
    resource = resources(export, signal)[0]
    resource["attributes"].append({"key": "gen_ai.agent.name", "value": {"stringValue": "someone"}})
    session = str(uuid.uuid4())

    with sink() as upstream, relaying(upstream.url, "tok", session, "dev-api") as relay:
        upstream.answer = (202, b'{"partialSuccess":{"rejectedLogRecords":"1"}}')
        status, answer = post(f"{relay}/v1/{signal}", json.dumps(export).encode())

    assert (status, answer) == upstream.answer
    [(path, headers, body)] = upstream.received
    assert path == f"/projects/p1/otlp/v1/{signal}"
    assert headers["Authorization"] == "Bearer tok"
    assert headers["Content-Type"] == "application/json"
    relayed = json.loads(body)
    sent = carriers(relayed, signal)
    assert len(sent) == len(carriers(sample(signal), signal)) > 0
    assert all(values(c, "session.id") == [{"stringValue": session}] for c in sent)
    named = [values(r, "gen_ai.agent.name") for r in resources(relayed, signal)]
    assert named == [[{"stringValue": "dev-api"}]] * len(named)


def test_the_relay_takes_otlp_json_at_its_own_paths_alone_and_stops_with_the_run() -> None:
    """Protobuf and compressed bodies are refused (Codex is configured for JSON), as is any
    path but the three signals under the relay's own secret; a project that does not answer
    is a 502; after the run nothing listens."""
    export = json.dumps(sample("logs")).encode()
    with sink() as upstream, relaying(upstream.url, "tok", "s-1", "dev-api") as relay:
        secretless = relay.rsplit("/", 1)[0]
        said = {
            "protobuf": post(f"{relay}/v1/logs", b"\x0a\x00", "application/x-protobuf")[0],
            "not json": post(f"{relay}/v1/logs", b"{", "application/json")[0],
            "no secret": post(f"{secretless}/v1/logs", export)[0],
            "no signal": post(f"{relay}/v1/profiles", export)[0],
        }
        gzipped = urllib.request.Request(f"{relay}/v1/logs", data=export, method="POST")
        gzipped.add_header("Content-Type", "application/json")
        gzipped.add_header("Content-Encoding", "gzip")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(gzipped, timeout=30)
        said["gzip"] = refused.value.code
    with relaying("http://127.0.0.1:9/otlp", "tok", "s-1", "dev-api") as unanswered:
        said["no project"] = post(f"{unanswered}/v1/logs", export)[0]

    assert said == {
        "protobuf": 415,
        "not json": 400,
        "no secret": 404,
        "no signal": 404,
        "gzip": 415,
        "no project": 502,
    }
    assert upstream.received == []
    with pytest.raises(urllib.error.URLError):
        post(f"{relay}/v1/logs", export)
