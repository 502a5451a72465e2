"""OpenTelemetry metrics, of which the Psychologist takes what it uses: the tokens and
cost a session spent, from the token and cost metrics the sources send. A point becomes a
`usage.metered` event of its session; a cumulative series' points are one event whose
figures grow (merged), a delta series' points one event each. Every other point is
counted as rejected in `partial_success`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, Metric
from ulid import ULID

from functions.psychologist.documents import Event
from functions.psychologist.telemetry.records import (
    LATEST,
    agent_of,
    attributes_of,
    instant,
    rfc3339,
)
from functions.psychologist.telemetry.reports import Report, Reports, call_event_id
from functions.psychologist.telemetry.sources import session_id_of, source_of

FIGURES = {
    ("claude_code.token.usage", "input"): ("input_tokens",),
    ("claude_code.token.usage", "output"): ("output_tokens",),
    ("claude_code.token.usage", "cacheRead"): ("input_tokens", "cached_tokens"),
    ("claude_code.token.usage", "cacheCreation"): ("input_tokens",),
    ("claude_code.cost.usage", ""): ("cost_usd",),
    ("gemini_cli.token.usage", "input"): ("input_tokens",),
    ("gemini_cli.token.usage", "output"): ("output_tokens",),
    ("gemini_cli.token.usage", "cache"): ("cached_tokens",),
    ("gen_ai.client.token.usage", "input"): ("input_tokens",),
    ("gen_ai.client.token.usage", "output"): ("output_tokens",),
}
"""(metric, its `type` or `gen_ai.token.type`) → the usage figures a point adds to, so that
they mean what a request's usage means: input counts every input token (Claude Code's
cache reads and writes included; Gemini CLI's input already holds its cached tokens)."""
NOT_USED = "a metric Evidencia does not use (only token and cost metrics are kept)"


def _figures(metric: Metric, attributes: dict[str, Any]) -> tuple[str, ...]:
    kind = str(attributes.get("type") or attributes.get("gen_ai.token.type") or "")
    return FIGURES.get((metric.name, kind)) or FIGURES.get((metric.name, ""), ())


def _points(metric: Metric) -> tuple[list[Any], int]:
    if metric.HasField("sum"):
        return list(metric.sum.data_points), metric.sum.aggregation_temporality
    if metric.HasField("histogram"):
        return list(metric.histogram.data_points), metric.histogram.aggregation_temporality
    return [], 0


def _value(point: Any) -> float:
    if hasattr(point, "as_double") and point.WhichOneof("value") == "as_double":
        return float(point.as_double)
    if hasattr(point, "as_int") and point.WhichOneof("value") == "as_int":
        return float(point.as_int)
    return float(getattr(point, "sum", 0.0))


def _report(
    metric: Metric, point: Any, temporality: int, resource: dict[str, Any], scope: str
) -> tuple[Report, str] | str:
    attributes = attributes_of(point.attributes)
    figures = _figures(metric, attributes)
    if not figures:
        return NOT_USED
    if point.time_unix_nano == 0 or instant(point.time_unix_nano) > LATEST:
        return "no time, or a time after 2999"
    source = source_of(resource, scope, attributes)
    session = session_id_of(source, attributes)
    agent = agent_of(attributes, resource)
    if session is None or agent is None:
        return "no session.id, or no agent or service name"
    series = json.dumps([metric.name, sorted(attributes.items(), key=str)], default=str)
    cumulative = temporality == AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    value = _value(point)
    metered = {name: round(value, 6) if name == "cost_usd" else int(value) for name in figures}
    event: Event = {
        "id": call_event_id("metric", f"{series}|{point.start_time_unix_nano}")
        if cumulative
        else _point_id(series, point),
        "agent": agent,
        "type": "usage.metered",
        "at": rfc3339(instant(point.time_unix_nano)),
        "data": {"metric": metric.name[:200], "metered": metered},
    }
    return Report(session, event, mergeable=cumulative), source.name


def _point_id(series: str, point: Any) -> str:
    key = f"{series}|{point.start_time_unix_nano}|{point.time_unix_nano}"
    digest = hashlib.blake2b(key.encode(), digest_size=10).digest()
    return str(ULID.from_bytes((point.time_unix_nano // 1_000_000).to_bytes(6, "big") + digest))


def map_metrics(request: ExportMetricsServiceRequest) -> Reports:
    reports = Reports()
    for resource_metrics in request.resource_metrics:
        resource = attributes_of(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                points, temporality = _points(metric)
                if not points:
                    reports.reject(NOT_USED)
                for point in points:
                    found = _report(metric, point, temporality, resource, scope_metrics.scope.name)
                    if isinstance(found, str):
                        reports.reject(found)
                    else:
                        reports.add(*found)
    return reports
