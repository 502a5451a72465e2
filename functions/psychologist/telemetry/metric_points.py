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
    Placed,
    agent_of,
    attributes_of,
    instant,
    rfc3339,
    walk,
)
from functions.psychologist.telemetry.reports import Report, Reports, call_event_id
from functions.psychologist.telemetry.sources import Signal, figures_of, session_id_of, source_of

NOT_USED = "a metric Evidencia does not use (only token and cost metrics are kept)"


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
    metric: Metric, point: Any, temporality: int, placed: Placed
) -> tuple[Report, str] | str:
    attributes = attributes_of(point.attributes)
    source = source_of(placed.resource, placed.scope, attributes)
    figures = figures_of(source, metric.name, attributes)
    if not figures:
        return NOT_USED
    if point.time_unix_nano == 0 or instant(point.time_unix_nano) > LATEST:
        return "no time, or a time after 2999"
    session = session_id_of(source, attributes)
    agent = agent_of(source, attributes, placed.resource)
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
    for placed in walk(request, Signal.METRICS):
        metric: Metric = placed.record
        points, temporality = _points(metric)
        if not points:
            reports.reject(NOT_USED)
        for point in points:
            found = _report(metric, point, temporality, placed)
            if isinstance(found, str):
                reports.reject(found)
            else:
                reports.add(*found)
    return reports
