"""What the agents' own telemetry costs Firestore, through the OTLP endpoints.

Per record, each signal measured as `measuring.ingest_per_event` measures events: ten
exports of 100 records into one session, each re-sending the previous export's last 20.
The log records are Claude Code's, built from its real capture
(`tests/telemetry_samples/claude_code/logs.json`): `tool_decision`, `api_request` and
`tool_result`, a call's result sent 30 records after its decision, so that about one call
in three is decided in one export and finished in a later one, and its second report is
merged into the stored event (one more read, of the chunk holding it). The metric points
are Claude Code's delta token and cost points; the spans are `measuring.ingest_per_span`'s.

A realistic session: the capture of one Claude Code prompt (its logs, metrics and
traces: three failing Bash calls, four model requests) replayed as a session of
`PROMPTS` prompts over `MINUTES` minutes, each prompt with fresh ids (prompt, tool calls,
requests, trace and spans) and stretched to a seeded 20 to 50 seconds, exported as
Claude Code exports it by default (logs every 5 s, the span batch every 5 s, delta
metrics every 60 s; https://code.claude.com/docs/en/monitoring-usage), each export sent
as OTLP/JSON through the endpoint's own function, in time order.

A Codex session: the capture of one Codex CLI turn
(`tests/telemetry_samples/codex`: three failing shell calls, four model requests) replayed
as `CODEX_TURNS` turns of one conversation, each turn with fresh trace, span, call and turn
ids and its times a turn later, sent as Codex sent it: the first span batch (512 spans)
mid-turn, then at exit its logs, its last span batch (270) and its metrics. Most of what
Codex sends is rejected (most of its stream events, 778 of 782 spans, every metric point),
so the documents are counted per record kept as well as per record sent."""

from __future__ import annotations

import copy
import json
import random
import re
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.counting import COUNTER
from benchmarks.measuring import PER_EVENT_BATCH, PER_EVENT_BATCHES, PER_EVENT_OVERLAP
from benchmarks.measuring import ingest_per_span as _ingest_per_span
from benchmarks.processes import MAIN, ROOT, function_client
from benchmarks.seeding import Seed

SAMPLES = ROOT / "tests" / "telemetry_samples" / "claude_code"
GOAL_PER_RECORD = 0.05
"""Documents read, and documents written, per new log record and per new span (#45)."""
CALL_LAG = 10
"""Steps of three records between a call's decision and its result (30 records, more
than the 20 an export re-sends)."""
PROMPTS, MINUTES = 30, 30
LOGS_EVERY_S, TRACES_EVERY_S, METRICS_EVERY_S = 5, 5, 60
"""Claude Code's default export intervals (`OTEL_LOGS_EXPORT_INTERVAL`, the span batch's
schedule delay, `OTEL_METRIC_EXPORT_INTERVAL`)."""
SEED = 45
NANOS = 1_000_000_000
JSON_HEADERS = {"Content-Type": "application/json"}
ENTRIES = {
    "logs": "psychologist_otlp_logs",
    "traces": "psychologist_otlp_traces",
    "metrics": "psychologist_otlp_metrics",
}
ID_KEYS = frozenset(
    {
        "session.id",
        "gen_ai.conversation.id",
        "prompt.id",
        "tool_use_id",
        "gen_ai.tool.call.id",
        "request_id",
        "gen_ai.response.id",
        "message.uuid",
    }
)
"""Attributes whose values are ids a new prompt takes fresh (the session's is kept)."""
CODEX_SAMPLES = ROOT / "tests" / "telemetry_samples" / "codex"
CODEX_CONVERSATION = "01a2437c-61b2-7ab2-b15d-3385bd131b8c"
"""The captured session's id, Codex's `conversation.id`."""
CODEX_TURNS = 20
CODEX_TURN_EVERY_S = 60
CODEX_ID_KEYS = frozenset({"call_id", "turn.id", "turn_id", "submission.id"})
"""Codex's attributes whose values are ids a new turn takes fresh; its `conversation.id`
(the session) is kept."""
CODEX_TURN_USAGE = {"input_tokens": 5400, "cached_tokens": 1200, "output_tokens": 190}
"""What one captured turn's four requests used (`codex.sse_event` `response.completed`)."""
CODEX_TURN_TOOL_ERRORS = 3
CODEX_SEED = 53
"""Not `SEED`: the Claude Code session's first fresh id would be the Codex session's."""
TOKEN_TYPES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cacheRead": "cache_read_tokens",
    "cacheCreation": "cache_creation_tokens",
}
"""`claude_code.token.usage` point type → the `api_request` attribute it sums."""


def _sample(signal: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SAMPLES / f"{signal}.json").read_text("utf-8"))
    return loaded


def _attributes(node: dict[str, Any]) -> dict[str, Any]:
    """A record's attributes as plain values."""
    found: dict[str, Any] = {}
    for pair in node.get("attributes", []):
        value = pair["value"]
        found[pair["key"]] = next(iter(value.values())) if value else None
    return found


def _set(node: dict[str, Any], values: dict[str, Any]) -> None:
    """Give the attributes already on `node` the `values` named (a string, an int or a
    float, in the attribute's own kind)."""
    for pair in node.get("attributes", []):
        if pair["key"] in values:
            kind = next(iter(pair["value"]), "stringValue")
            pair["value"] = {kind: values[pair["key"]]}


def _iso(nanos: int) -> str:
    moment = datetime.fromtimestamp(nanos / NANOS, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _timed_record(record: dict[str, Any], nanos: int, sequence: int) -> dict[str, Any]:
    record["timeUnixNano"] = record["observedTimeUnixNano"] = str(nanos)
    _set(record, {"event.timestamp": _iso(nanos), "event.sequence": sequence})
    return record


def _logs_export(records: list[dict[str, Any]]) -> dict[str, Any]:
    """An OTLP/JSON logs export of `records` under the capture's resource and scope."""
    export = copy.deepcopy(_sample("logs"))
    export["resourceLogs"][0]["scopeLogs"][0]["logRecords"] = records
    return export


def _metrics_export(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    export = copy.deepcopy(_sample("metrics"))
    export["resourceMetrics"][0]["scopeMetrics"][0]["metrics"] = metrics
    return export


def _traces_export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    export = copy.deepcopy(_sample("traces"))
    export["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    return export


def _log_templates() -> dict[str, dict[str, Any]]:
    """The capture's first record of each event name."""
    records = _sample("logs")["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        found.setdefault(str(_attributes(record)["event.name"]), record)
    return found


def _tool_record_stream(session: str, start: int, count: int) -> tuple[list[dict[str, Any]], int]:
    """`count` Claude Code log records of one session, a step of three at a time: a
    call's `tool_decision`, its request's `api_request`, and the `tool_result` of the
    call decided `CALL_LAG` steps before (an `assistant_response` before there is one).
    With the number of calls whose two reports are sent in different exports."""
    templates = _log_templates()
    records: list[dict[str, Any]] = []
    step = 0
    while len(records) < count:
        call, request, prompt = f"toolu_bench_{step:05d}", f"req_bench_{step:05d}", f"p-{step // 4}"
        finished = step - CALL_LAG
        shapes = [
            ("tool_decision", {"tool_use_id": call, "request_id": request}),
            ("api_request", {"request_id": request}),
            (
                ("tool_result", {"tool_use_id": f"toolu_bench_{finished:05d}"})
                if finished >= 0
                else ("assistant_response", {"request_id": request})
            ),
        ]
        for name, values in shapes:
            record = copy.deepcopy(templates[name])
            _set(record, {"session.id": session, "prompt.id": prompt, **values})
            index = len(records)
            records.append(_timed_record(record, start + index * 100_000_000, index))
        step += 1
    return records[:count], _split_calls(records[:count])


def _split_calls(records: list[dict[str, Any]]) -> int:
    """Calls whose decision is first sent in one export and result in a later one."""
    stride = PER_EVENT_BATCH - PER_EVENT_OVERLAP
    first: dict[str, dict[str, int]] = defaultdict(dict)
    for index, record in enumerate(records):
        attributes = _attributes(record)
        call = attributes.get("tool_use_id")
        if call is not None:
            first[str(call)].setdefault(str(attributes["event.name"]), index // stride)
    return sum(
        1
        for reports in first.values()
        if len(reports) == 2 and reports["tool_result"] > reports["tool_decision"]
    )


def _per_record(seed: Seed, signal: str, exports: list[dict[str, Any]], new: int) -> dict[str, Any]:
    from shared.instance import instance, renew

    renew(instance().environ)
    client = function_client(MAIN, ENTRIES[signal])
    headers = {"Authorization": f"Bearer {seed.token}", **JSON_HEADERS}
    path = f"/projects/{seed.project_small}/otlp/v1/{signal}"
    COUNTER.clear()
    calls = 0
    for body in exports:
        reply = client.open(path, method="POST", json=body, headers=headers)
        if reply.status_code >= 300 or reply.get_json():
            raise RuntimeError(f"{reply.status_code}: {reply.get_data()!r}")
        calls += len(COUNTER.calls)
        COUNTER.calls.clear()
    return {
        "exports": len(exports),
        "sent": len(exports) * PER_EVENT_BATCH,
        "new": new,
        "firestore_calls_per_export": round(calls / len(exports), 2),
        "reads": round(COUNTER.reads / new, 4),
        "writes": round(COUNTER.writes / new, 4),
        "deletes": round(COUNTER.expiring / new, 4),
    }


def _overlapping(items: list[Any]) -> list[list[Any]]:
    """Ten exports of 100, each re-sending the previous one's last 20."""
    stride = PER_EVENT_BATCH - PER_EVENT_OVERLAP
    return [
        items[index * stride : index * stride + PER_EVENT_BATCH]
        for index in range(PER_EVENT_BATCHES)
    ]


def _new_records() -> int:
    return (PER_EVENT_BATCH - PER_EVENT_OVERLAP) * (PER_EVENT_BATCHES - 1) + PER_EVENT_BATCH


def ingest_per_log_record(seed: Seed) -> dict[str, Any]:
    """Documents per new Claude Code log record, merges of a call's two reports included."""
    start = int(datetime(2026, 11, 7, tzinfo=UTC).timestamp()) * NANOS
    session = "0f6f7e4c-45a1-4b8e-9d2c-5e0c1a2b3c4d"
    records, split = _tool_record_stream(session, start, _new_records())
    exports = [_logs_export(chunk) for chunk in _overlapping(records)]
    row = _per_record(seed, "logs", exports, len(records))
    calls = {_attributes(r).get("tool_use_id") for r in records} - {None}
    return {**row, "calls": len(calls), "calls_merged_across_exports": split}


def _metric_points(session: str, start: int, count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` delta points of Claude Code's token and cost metrics, one a second, each
    its own event: (metric name, point)."""
    metrics = {
        m["name"]: m for m in _sample("metrics")["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    }
    token_point = metrics["claude_code.token.usage"]["sum"]["dataPoints"][0]
    cost_point = metrics["claude_code.cost.usage"]["sum"]["dataPoints"][0]
    types = ("input", "output", "cacheRead", "cacheCreation", None)
    points: list[tuple[str, dict[str, Any]]] = []
    for index in range(count):
        kind = types[index % len(types)]
        point = copy.deepcopy(cost_point if kind is None else token_point)
        _set(point, {"session.id": session, **({} if kind is None else {"type": kind})})
        point["startTimeUnixNano"] = str(start + index * NANOS)
        point["timeUnixNano"] = str(start + (index + 1) * NANOS)
        point.pop("asInt", None)
        point.pop("asDouble", None)
        if kind is None:
            point["asDouble"] = 0.01 * (index + 1)
        else:
            point["asInt"] = str(100 + index)
        points.append(
            ("claude_code.cost.usage" if kind is None else "claude_code.token.usage", point)
        )
    return points


def _grouped_metrics(points: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The points as the export's metrics, one per name, in the capture's shape."""
    shapes = {
        m["name"]: m for m in _sample("metrics")["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    }
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, point in points:
        by_name[name].append(point)
    metrics = []
    for name, found in by_name.items():
        metric = copy.deepcopy(shapes[name])
        metric["sum"]["dataPoints"] = found
        metrics.append(metric)
    return metrics


def ingest_per_metric_point(seed: Seed) -> dict[str, Any]:
    """Documents per new metric point Evidencia keeps (a delta token or cost point)."""
    start = int(datetime(2026, 11, 8, tzinfo=UTC).timestamp()) * NANOS
    points = _metric_points("5a1d2c3b-45a1-4b8e-9d2c-5e0c1a2b3c4d", start, _new_records())
    exports = [_metrics_export(_grouped_metrics(chunk)) for chunk in _overlapping(points)]
    return _per_record(seed, "metrics", exports, len(points))


# The realistic session.


@dataclass
class _Fresh:
    """Fresh ids shaped like the ones they replace, from a seeded generator."""

    rng: random.Random
    kept: dict[str, str] = field(default_factory=dict)

    def like(self, value: str) -> str:
        if value in self.kept:
            return self.kept[value]
        if all(c in "0123456789abcdef" for c in value) and len(value) in (16, 32):
            return f"{self.rng.getrandbits(len(value) * 4):0{len(value)}x}"
        if len(value) == 36 and value.count("-") == 4:
            return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        prefix = value.rsplit("_", 1)[0] if "_" in value else value[:4]
        return f"{prefix}_{self.rng.getrandbits(96):024x}"


def _ids_in(node: Any, found: set[str], keys: frozenset[str] = ID_KEYS) -> set[str]:
    """Every id in a captured export: trace and span ids, and the attributes `keys` name."""
    if isinstance(node, list):
        for item in node:
            _ids_in(item, found, keys)
    elif isinstance(node, dict):
        for key in ("traceId", "spanId", "parentSpanId"):
            if node.get(key):
                found.add(node[key])
        if node.get("key") in keys:
            found.update(str(v) for v in node["value"].values())
        for value in node.values():
            if isinstance(value, list | dict):
                _ids_in(value, found, keys)
    return found


def _renamed(template: Any, ids: dict[str, str]) -> Any:
    text = json.dumps(template)
    for old, new in ids.items():
        text = text.replace(old, new)
    return json.loads(text)


@dataclass(frozen=True)
class _Export:
    at: int
    signal: str
    body: dict[str, Any]
    records: int


def _prompt_shape() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], int]:
    """The capture: its start-up log records (once a session), one prompt's log records,
    its spans, and the prompt's origin (its interaction span's start)."""
    records = _sample("logs")["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    spans = _sample("traces")["resourceSpans"][0]["scopeSpans"][0]["spans"]
    origin = min(int(span["startTimeUnixNano"]) for span in spans)
    startup = [r for r in records if "prompt.id" not in _attributes(r)]
    prompt = [r for r in records if "prompt.id" in _attributes(r)]
    return startup, prompt, spans, origin


def _windows(
    items: list[tuple[int, dict[str, Any]]], every_s: int, base: int
) -> dict[int, list[dict[str, Any]]]:
    """Items by the export that carries them: the first export at or after their time."""
    exports: dict[int, list[dict[str, Any]]] = defaultdict(list)
    step = every_s * NANOS
    for nanos, item in sorted(items, key=lambda pair: pair[0]):
        exports[base + ((nanos - base) // step + 1) * step].append(item)
    return exports


def session_telemetry(
    prompts: int = PROMPTS, minutes: int = MINUTES
) -> tuple[list[_Export], dict[str, Any]]:
    """The exports of one Claude Code session of `prompts` prompts over `minutes`, in time
    order, and what they hold (records sent, calls, requests and their usage)."""
    rng = random.Random(SEED)  # noqa: S311 - a seeded simulation
    fresh = _Fresh(rng)
    startup, prompt_records, prompt_spans, origin = _prompt_shape()
    captured = _ids_in({"logs": prompt_records, "spans": prompt_spans, "startup": startup}, set())
    session_id = str(_attributes(prompt_records[0])["session.id"])
    fresh.kept[session_id] = fresh.like(session_id)
    base = int(datetime(2026, 11, 9, 9, tzinfo=UTC).timestamp()) * NANOS
    spacing = minutes * 60 / prompts
    logs: list[tuple[int, dict[str, Any]]] = []
    spans: list[tuple[int, dict[str, Any]]] = []
    active: list[tuple[int, float]] = []

    def placed(start: int, stretch: float) -> Callable[[int], int]:
        return lambda nanos: start + int((nanos - origin) * stretch)

    first = base + 10 * NANOS
    at = placed(first, 1.0)
    logs += [(at(int(record["timeUnixNano"])), record) for record in _renamed(startup, fresh.kept)]
    for number in range(prompts):
        ids = {old: fresh.like(old) for old in sorted(captured)}
        start = first + int((number * spacing + rng.uniform(0, spacing / 4)) * NANOS)
        duration = rng.uniform(20, 50)
        span_ends = [int(s["endTimeUnixNano"]) for s in prompt_spans]
        at = placed(start, duration * NANOS / (max(span_ends) - origin))
        logs += [
            (at(int(record["timeUnixNano"])), record) for record in _renamed(prompt_records, ids)
        ]
        for span in _renamed(prompt_spans, ids):
            span["startTimeUnixNano"] = str(at(int(span["startTimeUnixNano"])))
            span["endTimeUnixNano"] = str(at(int(span["endTimeUnixNano"])))
            spans.append((int(span["endTimeUnixNano"]), span))
        active.append((start + int(duration * NANOS), duration))
    logs.sort(key=lambda pair: pair[0])
    for sequence, (nanos, record) in enumerate(logs):
        _timed_record(record, nanos, sequence)
    exports = [
        _Export(at, "logs", _logs_export(records), len(records))
        for at, records in _windows(logs, LOGS_EVERY_S, base).items()
    ]
    exports += [
        _Export(at, "traces", _traces_export(found), len(found))
        for at, found in _windows(spans, TRACES_EVERY_S, base).items()
    ]
    exports += _metric_exports(logs, active, base, session_id=fresh.kept[session_id])
    exports.sort(key=lambda export: (export.at, list(ENTRIES).index(export.signal)))
    requests = [_attributes(r) for _, r in logs if _attributes(r)["event.name"] == "api_request"]
    held = {
        "prompts": prompts,
        "minutes": round((max(e.at for e in exports) - base) / NANOS / 60, 1),
        "tool_errors_sent": sum(
            1
            for _, r in logs
            if _attributes(r)["event.name"] == "tool_result"
            and str(_attributes(r).get("success")) == "false"
        ),
        "requests": len(requests),
        "cost_usd": round(sum(float(r["cost_usd"]) for r in requests), 6),
        "session_id": fresh.kept[session_id],
    }
    return exports, held


def _metric_exports(
    logs: list[tuple[int, dict[str, Any]]],
    active: list[tuple[int, float]],
    base: int,
    session_id: str,
) -> list[_Export]:
    """Claude Code's delta metrics, one export a minute from the session's start: each
    series that recorded in the minute, its cost and tokens summed from the minute's
    `api_request` records; `session.count` in the first; `active_time.total`."""
    shapes = {
        m["name"]: m for m in _sample("metrics")["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    }
    step = METRICS_EVERY_S * NANOS
    sums: dict[int, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    for nanos, record in logs:
        attributes = _attributes(record)
        end = base + ((nanos - base) // step + 1) * step
        if attributes["event.name"] == "api_request":
            sums[end][("claude_code.cost.usage", "")] += float(attributes["cost_usd"])
            for kind, attribute in TOKEN_TYPES.items():
                sums[end][("claude_code.token.usage", kind)] += float(attributes[attribute])
    for nanos, seconds in active:
        sums[base + ((nanos - base) // step + 1) * step][
            ("claude_code.active_time.total", "cli")
        ] += seconds
    sums[base + step][("claude_code.session.count", "")] += 1
    exports = []
    for end, figures in sorted(sums.items()):
        points: list[tuple[str, dict[str, Any]]] = []
        for (name, kind), value in figures.items():
            template = shapes[name]["sum"]["dataPoints"][0]
            point = copy.deepcopy(template)
            _set(point, {"session.id": session_id, **({"type": kind} if kind else {})})
            point["startTimeUnixNano"], point["timeUnixNano"] = str(end - step), str(end)
            if "asInt" in template:
                point["asInt"] = str(round(value))
            else:
                point["asDouble"] = value
            points.append((name, point))
        exports.append(
            _Export(end, "metrics", _metrics_export(_grouped_metrics(points)), len(points))
        )
    return exports


def realistic_session(seed: Seed, prompts: int = PROMPTS, minutes: int = MINUTES) -> dict[str, Any]:
    """One Claude Code session's telemetry, replayed through the three endpoints: records
    and exports a minute per signal, documents read and written per export and per
    session, and what the session holds afterwards."""
    from functions.psychologist import store
    from shared.clients import db
    from shared.instance import instance, renew

    exports, held = session_telemetry(prompts, minutes)
    renew(instance().environ)
    clients = {signal: function_client(MAIN, entry) for signal, entry in ENTRIES.items()}
    headers = {"Authorization": f"Bearer {seed.token}", **JSON_HEADERS}
    totals: dict[str, dict[str, float]] = {signal: defaultdict(float) for signal in ENTRIES}
    for export in exports:
        COUNTER.clear()
        reply = clients[export.signal].open(
            f"/projects/{seed.project_small}/otlp/v1/{export.signal}",
            method="POST",
            json=export.body,
            headers=headers,
        )
        if reply.status_code >= 300:
            raise RuntimeError(f"{export.signal}: {reply.status_code}: {reply.get_data()!r}")
        rejected = next(iter((reply.get_json() or {}).get("partialSuccess", {}).values()), "0")
        row = totals[export.signal]
        row["exports"] += 1
        row["records"] += export.records
        row["rejected"] += int(rejected)
        row["firestore_calls"] += len(COUNTER.calls)
        row["reads"] += COUNTER.reads
        row["writes"] += COUNTER.writes
        row["deletes"] += COUNTER.expiring
    stored = db().document(store.session_ref(seed.project_small, held["session_id"]).path).get()
    session = stored.to_dict() or {}
    minutes_long = held["minutes"]
    signals = {signal: _signal_row(row, minutes_long) for signal, row in totals.items()}
    every = {
        key: sum(row[key] for row in totals.values())
        for key in ("exports", "records", "reads", "writes", "deletes")
    }
    return {
        "prompts": prompts,
        "minutes": minutes_long,
        "intervals_s": {"logs": LOGS_EVERY_S, "traces": TRACES_EVERY_S, "metrics": METRICS_EVERY_S},
        "signals": signals,
        "session": {
            "exports": int(every["exports"]),
            "records": int(every["records"]),
            "records_per_minute": round(every["records"] / minutes_long, 1),
            "exports_per_minute": round(every["exports"] / minutes_long, 2),
            "reads": int(every["reads"]),
            "writes": int(every["writes"]),
            "deletes": int(every["deletes"]),
            "reads_per_export": round(every["reads"] / every["exports"], 2),
            "writes_per_export": round(every["writes"] / every["exports"], 2),
            "reads_per_record": round(every["reads"] / every["records"], 4),
            "writes_per_record": round(every["writes"] / every["records"], 4),
            "reads_per_prompt": round(every["reads"] / prompts, 1),
            "writes_per_prompt": round(every["writes"] / prompts, 1),
        },
        "stored": {
            "events": session.get("event_count"),
            "tool_errors": session.get("tool_errors"),
            "tool_errors_sent": held["tool_errors_sent"],
            "requests_sent": held["requests"],
            "cost_usd_sent": held["cost_usd"],
            "cost_usd_kept": (session.get("usage") or {}).get("cost_usd"),
            "cost_usd_metered": (session.get("metered") or {}).get("cost_usd"),
            "turns_closed": len((session.get("turns") or {}).get("closed", [])),
            "state": session.get("state"),
        },
    }


def _signal_row(row: dict[str, float], minutes: float) -> dict[str, Any]:
    exports, records = row["exports"], row["records"]
    return {
        "exports": int(exports),
        "records": int(records),
        "rejected": int(row["rejected"]),
        "exports_per_minute": round(exports / minutes, 2),
        "records_per_minute": round(records / minutes, 1),
        "records_per_export": round(records / exports, 1),
        "firestore_calls_per_export": round(row["firestore_calls"] / exports, 2),
        "reads_per_export": round(row["reads"] / exports, 2),
        "writes_per_export": round(row["writes"] / exports, 2),
        "deletes_per_export": round(row["deletes"] / exports, 2),
        "reads_per_record": round(row["reads"] / records, 4),
        "writes_per_record": round(row["writes"] / records, 4),
        "reads": int(row["reads"]),
        "writes": int(row["writes"]),
        "deletes": int(row["deletes"]),
    }


# A Codex session.


def _codex_turn_exports() -> list[tuple[str, dict[str, Any]]]:
    """The captured turn's four exports in the order Codex sent them: the first span
    batch mid-turn (the batch processor's 512), then at exit the logs, the remaining spans
    and the metrics."""
    traces = json.loads((CODEX_SAMPLES / "traces.json").read_text("utf-8"))
    first, last = traces["resourceSpans"]
    logs, metrics = (
        json.loads((CODEX_SAMPLES / f"{signal}.json").read_text("utf-8"))
        for signal in ("logs", "metrics")
    )
    return [
        ("traces", {"resourceSpans": [first]}),
        ("logs", logs),
        ("traces", {"resourceSpans": [last]}),
        ("metrics", metrics),
    ]


_WORD = re.compile(r"[\w-]+")


def _replaced(template: str, ids: dict[str, str]) -> str:
    """`template` with every id in `ids` replaced where it stands as a whole word (ids are
    letters, digits, `_` and `-`), also inside a longer string."""
    return _WORD.sub(lambda found: ids.get(found.group(), found.group()), template)


def _shifted(node: Any, by: int) -> Any:
    """`node` with every time in it `by` nanoseconds later: the `*UnixNano` fields (a
    zero stays zero, as Codex sends a log record's time) and the `event.timestamp`
    attributes."""
    if isinstance(node, list):
        return [_shifted(item, by) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("key") == "event.timestamp":
        later = datetime.fromisoformat(node["value"]["stringValue"]) + timedelta(
            microseconds=by // 1000
        )
        stamp = later.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {**node, "value": {"stringValue": stamp}}
    return {
        key: str(int(value) + by)
        if key.endswith("UnixNano") and value not in ("0", 0)
        else _shifted(value, by)
        for key, value in node.items()
    }


def codex_turns(turns: int = CODEX_TURNS) -> tuple[list[list[tuple[str, dict[str, Any]]]], str]:
    """The exports of one Codex session of `turns` turns, `CODEX_TURN_EVERY_S` apart: per
    turn the capture's four exports with fresh ids and times shifted. With the session's
    id (a fresh conversation id, the same in every turn)."""
    fresh = _Fresh(random.Random(CODEX_SEED))  # noqa: S311 - a seeded simulation
    captured = _codex_turn_exports()
    template = json.dumps(captured)
    ids = _ids_in([body for _, body in captured], set(), CODEX_ID_KEYS)
    fresh.kept[CODEX_CONVERSATION] = fresh.like(CODEX_CONVERSATION)
    origin = min(
        int(span["startTimeUnixNano"])
        for export in captured
        if export[0] == "traces"
        for span in export[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    )
    base = int(datetime(2026, 11, 10, 9, tzinfo=UTC).timestamp()) * NANOS
    session = []
    for number in range(turns):
        renamed = {old: fresh.like(old) for old in sorted(ids)} | fresh.kept
        shift = base + number * CODEX_TURN_EVERY_S * NANOS - origin
        exports = json.loads(_replaced(template, renamed))
        session.append([(signal, _shifted(body, shift)) for signal, body in exports])
    return session, fresh.kept[CODEX_CONVERSATION]


def _records_in(signal: str, body: dict[str, Any]) -> int:
    """The records an OTLP/JSON export carries: log records, spans or metric points."""
    if signal == "logs":
        return sum(len(s["logRecords"]) for r in body["resourceLogs"] for s in r["scopeLogs"])
    if signal == "traces":
        return sum(len(s["spans"]) for r in body["resourceSpans"] for s in r["scopeSpans"])
    return sum(
        len(data["dataPoints"])
        for r in body["resourceMetrics"]
        for s in r["scopeMetrics"]
        for metric in s["metrics"]
        for kind, data in metric.items()
        if kind in ("sum", "gauge", "histogram", "exponentialHistogram", "summary")
    )


def _rejected(answer: dict[str, Any] | None) -> int:
    """The records an export's answer says were rejected (its `partialSuccess`)."""
    partial = (answer or {}).get("partialSuccess", {})
    return sum(int(value) for key, value in partial.items() if key.startswith("rejected"))


def codex_session(seed: Seed, turns: int = CODEX_TURNS) -> dict[str, Any]:
    """One Codex session's telemetry, replayed through the three endpoints turn after
    turn: per turn and per export signal the records sent, kept and rejected and the
    documents read, written and to be deleted; per record kept and sent; and what the
    session holds afterwards."""
    from functions.psychologist import store
    from shared.clients import db
    from shared.instance import instance, renew

    session_turns, session_id = codex_turns(turns)
    renew(instance().environ)
    clients = {signal: function_client(MAIN, entry) for signal, entry in ENTRIES.items()}
    headers = {"Authorization": f"Bearer {seed.token}", **JSON_HEADERS}
    totals: dict[str, dict[str, float]] = {signal: defaultdict(float) for signal in ENTRIES}
    for exports in session_turns:
        for signal, body in exports:
            COUNTER.clear()
            reply = clients[signal].open(
                f"/projects/{seed.project_small}/otlp/v1/{signal}",
                method="POST",
                json=body,
                headers=headers,
            )
            if reply.status_code >= 300:
                raise RuntimeError(f"{signal}: {reply.status_code}: {reply.get_data()!r}")
            row = totals[signal]
            row["exports"] += 1
            row["sent"] += _records_in(signal, body)
            row["rejected"] += _rejected(reply.get_json())
            row["firestore_calls"] += len(COUNTER.calls)
            row["reads"] += COUNTER.reads
            row["writes"] += COUNTER.writes
            row["deletes"] += COUNTER.expiring
    stored = db().document(store.session_ref(seed.project_small, session_id).path).get()
    every = {
        key: sum(row[key] for row in totals.values())
        for key in ("exports", "sent", "rejected", "firestore_calls", "reads", "writes", "deletes")
    }
    return {
        "turns": turns,
        "turn_every_s": CODEX_TURN_EVERY_S,
        "signals": {signal: _codex_row(row, turns) for signal, row in totals.items()},
        "per_turn": _codex_row(every, turns),
        "stored": _codex_stored(stored.to_dict() or {}, turns),
    }


def _codex_row(row: dict[str, float], turns: int) -> dict[str, Any]:
    """A signal's (or every signal's) figures per turn, and per record kept and sent."""
    kept = row["sent"] - row["rejected"]
    return {
        "exports": round(row["exports"] / turns, 2),
        "sent": round(row["sent"] / turns, 1),
        "kept": round(kept / turns, 1),
        "rejected": round(row["rejected"] / turns, 1),
        "firestore_calls": round(row["firestore_calls"] / turns, 2),
        "reads": round(row["reads"] / turns, 2),
        "writes": round(row["writes"] / turns, 2),
        "deletes": round(row["deletes"] / turns, 2),
        "reads_per_kept": round(row["reads"] / kept, 4) if kept else None,
        "writes_per_kept": round(row["writes"] / kept, 4) if kept else None,
        "reads_per_sent": round(row["reads"] / row["sent"], 4),
        "writes_per_sent": round(row["writes"] / row["sent"], 4),
    }


def _codex_stored(session: dict[str, Any], turns: int) -> dict[str, Any]:
    """What the session document holds after the replay, beside what the turns sent."""
    kept_turns = session.get("turns") or {}
    return {
        "events": session.get("event_count"),
        "tool_errors": session.get("tool_errors"),
        "tool_errors_sent": CODEX_TURN_TOOL_ERRORS * turns,
        "usage": session.get("usage"),
        "usage_sent": {name: value * turns for name, value in CODEX_TURN_USAGE.items()},
        "turns_closed": len(kept_turns.get("closed", [])),
        "turns_open": len(kept_turns.get("open", [])),
        "source": session.get("source"),
        "state": session.get("state"),
    }


def telemetry(seed: Seed) -> dict[str, Any]:
    results: dict[str, Any] = {
        "goal_per_record": GOAL_PER_RECORD,
        "per_log_record": ingest_per_log_record(seed),
        "per_span": _ingest_per_span(seed),
        "per_metric_point": ingest_per_metric_point(seed),
        "claude_code_session": realistic_session(seed),
        "codex_session": codex_session(seed),
    }
    for name in ("per_log_record", "per_span", "per_metric_point"):
        row = results[name]
        print(
            f"  {name}: {row['reads']:g} read, {row['writes']:g} written, "
            f"{row['deletes']:g} deleted per new record",
            flush=True,
        )
    codex = results["codex_session"]
    turn, stored = codex["per_turn"], codex["stored"]
    print(
        f"  codex_session: {codex['turns']} turns, per turn {turn['sent']:g} records sent, "
        f"{turn['kept']:g} kept, {turn['reads']:g} read, {turn['writes']:g} written, "
        f"{turn['deletes']:g} deleted; per kept record {turn['reads_per_kept']:g} read, "
        f"{turn['writes_per_kept']:g} written; {stored['tool_errors']} tool errors, "
        f"{stored['turns_closed']} turns closed",
        flush=True,
    )
    return results
