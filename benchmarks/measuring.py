"""Each endpoint against its floor: warm latency (interleaved A/B), Firestore round trips
per request, and cold starts interleaved with the floor's."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import requests

from benchmarks.counting import COUNTER
from benchmarks.processes import (
    FLOOR,
    MAIN,
    ROOT,
    FirstRequest,
    cold_ms,
    function_client,
    served,
)
from benchmarks.reporting import spread, summary
from benchmarks.seeding import Seed, event_batch

HEAVY = (
    "google.genai",
    "grpc",
    "google.cloud.firestore",
    "jsonschema",
    "referencing",
    "pydantic",
    "google.events",
    "cloudevents",
    "flask",
    "httpx2",
    "ulid",
)
READ_ONLY = (
    "research_status",
    "psychologist_hypotheses_list",
    "psychologist_analysis_get",
    "agentconnect_evaluation_get",
    "agentconnect_evaluations_list",
)
CONTRACT = ("research_status", "psychologist_hypotheses_list", "agentconnect_evaluation_get")
INGEST_BATCH = 500


@dataclass
class Case:
    """One endpoint measured against its floor. `route` is formatted with the seed's
    fields and `session`, the side's own session id."""

    name: str
    floor: str
    method: str
    route: str
    body: Callable[[Seed, int, str], Any] = lambda _seed, _index, _side: None

    def path(self, seed: Seed, side: str) -> str:
        return self.route.format(**vars(seed), session=seed.sessions.get(side))


def _run_of(seed: Seed, _index: int, _side: str) -> Any:
    return {
        "workspace_id": seed.workspace,
        "conversation_id": seed.conversation,
        "run_id": seed.run,
    }


def _overview(seed: Seed, _index: int, _side: str) -> Any:
    return {
        "workspace_id": seed.workspace,
        "conversation_id": seed.conversation,
        "request_kind": "overview",
    }


def _events(_seed: Seed, index: int, side: str) -> Any:
    start = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(hours=1 if side == "floor" else 0)
    return {"events": event_batch(start, index * INGEST_BATCH, INGEST_BATCH)}


EVALUATION = "/v1/orgs/{org}/agents/{agent}/model-evaluations/1"
CASES = (
    Case("research_status", "floor_status", "POST", "/research-api/assistant/status", _run_of),
    Case(
        "psychologist_hypotheses_list",
        "floor_hypotheses",
        "GET",
        "/projects/{project_small}/hypotheses",
    ),
    Case("agentconnect_evaluation_get", "floor_evaluation", "GET", EVALUATION),
    Case("research_ask", "floor_ask", "POST", "/research-api/assistant/ask", _overview),
    Case(
        "psychologist_session_events",
        "floor_ingest",
        "POST",
        "/projects/{project_small}/sessions/{session}/events",
        _events,
    ),
)


def timed(
    client: requests.Session, method: str, url: str, body: Any, headers: dict[str, str]
) -> float:
    started = time.perf_counter()
    reply = client.request(method, url, json=body, headers=headers, timeout=60)
    elapsed = (time.perf_counter() - started) * 1000
    if reply.status_code >= 300:
        raise RuntimeError(f"{method} {url} answered {reply.status_code}: {reply.text[:300]}")
    return elapsed


def _interleaved(case: Case, seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {seed.token}"}
    times: dict[str, list[float]] = {"project": [], "floor": []}
    warm = 0 if case.name == "psychologist_session_events" else 20
    with (
        served(MAIN, case.name, env) as real,
        served(FLOOR, case.floor, env) as floor,
        requests.Session() as client,
    ):
        sides = {"project": real, "floor": floor}
        for index in range(warm + rounds):
            order = ("project", "floor") if index % 2 == 0 else ("floor", "project")
            for side in order:
                url = sides[side] + case.path(seed, side)
                elapsed = timed(client, case.method, url, case.body(seed, index, side), headers)
                if index >= warm:
                    times[side].append(elapsed)
    project, floor_stats = summary(times["project"]), summary(times["floor"])
    result: dict[str, Any] = {
        "function": project,
        "floor": floor_stats,
        "p50_ratio": round(project["p50_ms"] / floor_stats["p50_ms"], 3),
    }
    if case.name == "psychologist_session_events":
        result["events"] = INGEST_BATCH * rounds
        result["events_per_s"] = round(INGEST_BATCH * rounds / (sum(times["project"]) / 1000))
    return result


def warm_latency(seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for case in CASES:
        seed.sessions = {
            "project": f"BENCH{case.name[:4].upper()}A",
            "floor": f"BENCH{case.name[:4].upper()}F",
        }
        results[case.name] = _interleaved(case, seed, env, rounds)
        print(f"  warm latency: {case.name} x{results[case.name]['p50_ratio']:.2f}", flush=True)
    return results


PER_EVENT_BATCHES, PER_EVENT_BATCH, PER_EVENT_OVERLAP = 10, 100, 20


def ingest_per_event(seed: Seed) -> dict[str, Any]:
    """Documents read, written and later deleted (TTL) per new event, over one session
    of ten 100-event batches each re-sending the previous batch's last 20 events (a
    client's retries): what ingestion costs Firestore per event, replays included."""
    from shared.instance import instance, renew

    renew(instance().environ)
    client = function_client(MAIN, "psychologist_session_events")
    headers = {"Authorization": f"Bearer {seed.token}"}
    path = f"/projects/{seed.project_small}/sessions/PEREVENT/events"
    start = datetime(2026, 11, 5, tzinfo=UTC)
    step = PER_EVENT_BATCH - PER_EVENT_OVERLAP
    events = event_batch(start, 0, step * (PER_EVENT_BATCHES - 1) + PER_EVENT_BATCH)
    new = 0
    COUNTER.clear()
    for index in range(PER_EVENT_BATCHES):
        body = {"events": events[index * step : index * step + PER_EVENT_BATCH]}
        reply = client.open(path, method="POST", json=body, headers=headers)
        if reply.status_code >= 300:
            raise RuntimeError(reply.get_data(as_text=True))
        new += reply.get_json()["accepted"]
    return {
        "batches": PER_EVENT_BATCHES,
        "sent": PER_EVENT_BATCHES * PER_EVENT_BATCH,
        "new": new,
        "reads": round(COUNTER.reads / new, 4),
        "writes": round(COUNTER.writes / new, 4),
        "deletes": round(COUNTER.expiring / new, 4),
    }


def _span_export(start: datetime, first: int, count: int) -> bytes:
    """An OTLP protobuf export of `count` tool spans of one conversation, from `first`."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    spans = resource_spans.scope_spans.add().spans
    base = int(start.timestamp() * 1e9)
    attributes = {
        "gen_ai.conversation.id": "PERSPAN",
        "gen_ai.agent.name": "bench-agent",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
    }
    for number in range(first, first + count):
        spans.add(
            trace_id=b"\x01" * 16,
            span_id=(number + 1).to_bytes(8, "big"),
            parent_span_id=b"\x02" * 8,
            name="execute_tool search",
            start_time_unix_nano=base + number * 1_000_000_000,
            end_time_unix_nano=base + number * 1_000_000_000 + 400_000_000,
            attributes=[
                KeyValue(key=key, value=AnyValue(string_value=value))
                for key, value in attributes.items()
            ],
        )
    return bytes(request.SerializeToString())


def ingest_per_span(seed: Seed) -> dict[str, Any]:
    """The same as `ingest_per_event` through the OTLP endpoint: ten exports of 100 spans
    into one session, each re-sending the previous export's last 20."""
    from shared.instance import instance, renew

    renew(instance().environ)
    client = function_client(MAIN, "psychologist_otlp_traces")
    headers = {"Authorization": f"Bearer {seed.token}", "Content-Type": "application/x-protobuf"}
    path = f"/projects/{seed.project_small}/otlp/v1/traces"
    start = datetime(2026, 11, 5, tzinfo=UTC)
    step = PER_EVENT_BATCH - PER_EVENT_OVERLAP
    COUNTER.clear()
    for index in range(PER_EVENT_BATCHES):
        body = _span_export(start, index * step, PER_EVENT_BATCH)
        reply = client.open(path, method="POST", data=body, headers=headers)
        if reply.status_code >= 300 or reply.get_data():
            raise RuntimeError(f"{reply.status_code}: {reply.get_data()!r}")
    new = step * (PER_EVENT_BATCHES - 1) + PER_EVENT_BATCH
    return {
        "exports": PER_EVENT_BATCHES,
        "sent": PER_EVENT_BATCHES * PER_EVENT_BATCH,
        "new": new,
        "reads": round(COUNTER.reads / new, 4),
        "writes": round(COUNTER.writes / new, 4),
        "deletes": round(COUNTER.expiring / new, 4),
    }


def round_trips(seed: Seed) -> dict[str, Any]:
    """Calls each request makes to Firestore, cold (first request of an instance) and
    warm, beside the floor's, counted by the interceptor on the client's channel."""
    from shared.instance import instance, renew

    headers = {"Authorization": f"Bearer {seed.token}"}
    seed.sessions = {"project": "RTRIPSA", "floor": "RTRIPSF"}
    results = {}
    for case in CASES:
        counts: dict[str, list[list[str]]] = {}
        documents: dict[str, Any] = {}
        for side, source, target in (("project", MAIN, case.name), ("floor", FLOOR, case.floor)):
            renew(instance().environ)
            client = function_client(source, target)
            counts[side] = []
            for index in range(2):
                COUNTER.clear()
                reply = client.open(
                    case.path(seed, side),
                    method=case.method,
                    json=case.body(seed, 1000 + index, side),
                    headers=headers,
                )
                if reply.status_code >= 300:
                    raise RuntimeError(reply.get_data(as_text=True))
                counts[side].append(list(COUNTER.calls))
            if side == "project":
                documents = {
                    "reads": COUNTER.reads,
                    "writes": COUNTER.writes,
                    "deletes": COUNTER.expiring,
                }
        if case.name == "psychologist_session_events":
            documents["batch_events"] = INGEST_BATCH
            documents["per_new_event"] = ingest_per_event(seed)
        if not counts["floor"][1]:
            raise RuntimeError(f"{case.floor} made no counted Firestore call: counting is off")
        results[case.name] = {
            "cold": len(counts["project"][0]),
            "warm": len(counts["project"][1]),
            "floor": len(counts["floor"][1]),
            "warm_calls": counts["project"][1],
            **documents,
            "floor_calls": counts["floor"][1],
        }
    return results


def _case_request(case: Case, seed: Seed, side: str) -> FirstRequest:
    headers = {"Authorization": f"Bearer {seed.token}"}
    return lambda url: requests.request(
        case.method,
        url + case.path(seed, side),
        json=case.body(seed, 0, side),
        headers=headers,
        timeout=30,
    )


def _first_request(entry: Any, seed: Seed) -> FirstRequest:
    case = next((c for c in CASES if c.name == entry.name), None)
    if case is not None and entry.name in CONTRACT:
        return _case_request(case, seed, "project")
    if entry.kind == "trigger":
        event = {
            "ce-id": "1",
            "ce-specversion": "1.0",
            "ce-source": "bench",
            "ce-document": "elsewhere/x",
            "ce-type": "google.cloud.firestore.document.v1.created",
            "Content-Type": "application/protobuf",
        }
        return lambda url: requests.post(url, data=b"", headers=event, timeout=30)
    operation = entry.operations[0]
    path = re.sub(r"\{\w+\}", "01JC4Z8QK3M7YV2N5T9B0PXHRA", entry.route)
    return lambda url: requests.request(
        operation.method,
        url + path,
        json={} if operation.method in ("POST", "PUT") else None,
        timeout=30,
    )


def heavy_imports(name: str) -> dict[str, Any]:
    code = (
        f"import sys, time; t = time.perf_counter(); import main; main.{name}; "
        "print(round((time.perf_counter() - t) * 1000, 1)); print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    import_ms, modules = done.stdout.splitlines()
    loaded = set(modules.split())
    return {"import_ms": float(import_ms), "heavy": [m for m in HEAVY if m in loaded]}


def _floor_of(entry: Any, seed: Seed) -> tuple[str, FirstRequest]:
    """The floor a function's cold start is held against: for an endpoint with a floor of
    its own, that floor answering the same first request (the same query, the same
    documents); for the others, the floor's one document read."""
    case = next((c for c in CASES if c.name == entry.name), None)
    if case is not None and entry.name in CONTRACT:
        return case.floor, _case_request(case, seed, "floor")
    return "floor_read", lambda url: requests.get(url + "/", timeout=30)


def cold_starts(seed: Seed, env: dict[str, str], repeats: int) -> dict[str, Any]:
    """Each function's cold start beside its floor's, started alternately, so that a
    machine that slows down slows both sides: the ratio is of medians taken together."""
    from functions.registry import ENTRIES

    every_floor: list[float] = []
    results: dict[str, Any] = {}
    for entry in ENTRIES:
        floor_target, floor_first = _floor_of(entry, seed)
        own: list[float] = []
        floor: list[float] = []
        for _ in range(repeats if entry.name in READ_ONLY else 1):
            floor.append(cold_ms(FLOOR, floor_target, env, floor_first))
            own.append(cold_ms(MAIN, entry.name, env, _first_request(entry, seed)))
        every_floor += floor
        ratio = statistics.median(own) / statistics.median(floor)
        results[entry.name] = {
            "function": spread(own),
            "floor": {"target": floor_target, **spread(floor)},
            "ratio": round(ratio, 3),
            **heavy_imports(entry.name),
        }
        print(f"  cold start: {entry.name} x{ratio:.2f} against {floor_target}", flush=True)
    return {"floor": spread(every_floor), "functions": results}


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _mcp_status(seed: Seed) -> dict[str, Any]:
    """The status tool's JSON-RPC call: the same run as the HTTP status case."""
    status = next(c for c in CASES if c.name == "research_status")
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "sosoapi_research_assistant_status",
            "arguments": status.body(seed, 0, "project"),
        },
    }


def mcp_overhead(seed: Seed, env: dict[str, str], rounds: int, repeats: int) -> dict[str, Any]:
    """The MCP status tool against the HTTP status endpoint: warm calls interleaved, and
    cold starts interleaved, both as ratios to the HTTP call."""
    headers = {"Authorization": f"Bearer {seed.token}"}
    status = next(c for c in CASES if c.name == "research_status")
    times: dict[str, list[float]] = {"mcp": [], "http": []}
    with (
        served(MAIN, "mcp_server", env) as mcp,
        served(MAIN, "research_status", env) as http,
        requests.Session() as client,
    ):
        for index in range(20 + rounds):
            sides = (
                ("mcp", mcp + "/mcp", _mcp_status(seed), {**headers, **MCP_HEADERS}),
                ("http", http + status.path(seed, "project"), status.body(seed, 0, ""), headers),
            )
            for side, url, body, sent in sides:
                elapsed = timed(client, "POST", url, body, sent)
                if index >= 20:
                    times[side].append(elapsed)

    def mcp_first(url: str) -> requests.Response:
        return requests.post(
            url + "/mcp", json=_mcp_status(seed), headers={**headers, **MCP_HEADERS}, timeout=30
        )

    cold: dict[str, list[float]] = {"mcp": [], "http": []}
    for _ in range(repeats):
        cold["http"].append(cold_ms(MAIN, "research_status", env, _case_request(status, seed, "")))
        cold["mcp"].append(cold_ms(MAIN, "mcp_server", env, mcp_first))
    warm_mcp, warm_http = summary(times["mcp"]), summary(times["http"])
    return {
        "warm": {"mcp": warm_mcp, "http": warm_http},
        "warm_p50_ratio": round(warm_mcp["p50_ms"] / warm_http["p50_ms"], 3),
        "cold": {"mcp": spread(cold["mcp"]), "http": spread(cold["http"])},
        "cold_ratio": round(statistics.median(cold["mcp"]) / statistics.median(cold["http"]), 3),
    }
