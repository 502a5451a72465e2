"""OTLP/HTTP exports of traces, logs and metrics
(https://opentelemetry.io/docs/specs/otlp/#otlphttp), each taking one path: the body
decoded with the OpenTelemetry project's own protobuf definitions (protobuf or JSON),
its records mapped through the table of sources (`spans`, `log_records`,
`metric_points`), stored through the events' ingestion path, and answered in the
request's encoding with what could not be used in `partial_success`."""

from __future__ import annotations

import base64
import binascii
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from functions.psychologist.documents import Event
from functions.psychologist.requests import ProjectParams
from functions.psychologist.telemetry.ingestion import Telemetry, ingest
from functions.psychologist.telemetry.log_records import map_logs
from functions.psychologist.telemetry.metric_points import map_metrics
from functions.psychologist.telemetry.reports import Reports
from functions.psychologist.telemetry.spans import map_spans
from shared import jsonbody, logs
from shared.errors import ApiError, ErrorCode
from shared.http import Call, Reply
from shared.store import store_fault

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_RECORDS = 2_000
"""Spans, log records or metric points per export; the SDKs' batch processors send at
most 512 by default."""
BATCH = 500
"""Events per ingestion commit, as for the events endpoint."""
RETRY_AFTER_S = "1"
DOMAIN = "evidencia"
"""`ErrorInfo.domain` of every error this endpoint answers."""

_RPC_CODES = {
    ErrorCode.INVALID_REQUEST: code_pb2.INVALID_ARGUMENT,
    ErrorCode.UNAUTHENTICATED: code_pb2.UNAUTHENTICATED,
    ErrorCode.FORBIDDEN: code_pb2.PERMISSION_DENIED,
    ErrorCode.NOT_FOUND: code_pb2.NOT_FOUND,
    ErrorCode.METHOD_NOT_ALLOWED: code_pb2.UNIMPLEMENTED,
    ErrorCode.CONFLICT: code_pb2.ABORTED,
    ErrorCode.PAYLOAD_TOO_LARGE: code_pb2.RESOURCE_EXHAUSTED,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: code_pb2.INVALID_ARGUMENT,
    ErrorCode.RATE_LIMITED: code_pb2.RESOURCE_EXHAUSTED,
    ErrorCode.INTERNAL: code_pb2.INTERNAL,
    ErrorCode.UNAVAILABLE: code_pb2.UNAVAILABLE,
}
_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class _UndecodableError(ValueError):
    """Why a body is not the export it should be."""


def _ids_as_base64(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping wants
    base64; every other field is the standard mapping."""
    if isinstance(node, list):
        return [_ids_as_base64(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: _hex_as_base64(key, value)
        if key in _ID_FIELDS and isinstance(value, str)
        else _ids_as_base64(value)
        for key, value in node.items()
    }


def _hex_as_base64(key: str, value: str) -> str:
    try:
        return base64.b64encode(bytes.fromhex(value)).decode()
    except ValueError:
        raise _UndecodableError(f"{key} {value[:40]!r} is not hex") from None


def _json_object(raw: bytes) -> dict[str, Any]:
    """OTLP/JSON as protobuf's JSON mapping reads it."""
    parsed = jsonbody.parse(raw)
    if not isinstance(parsed, dict):
        raise _UndecodableError("a JSON object is expected")
    converted: dict[str, Any] = _ids_as_base64(parsed)
    return converted


class OtlpExport:
    """The `shared.http.Codec` of one signal's export."""

    media_types = (PROTOBUF, JSON)
    max_decoded_bytes = 8 * 1024 * 1024

    def __init__(
        self, signal: str, noun: str, request: type[Message], response: type[Message]
    ) -> None:
        self.signal = signal
        self.noun = noun
        self.request = request
        self.response = response

    def decode(self, raw: bytes, media_type: str) -> Message:
        request = self.request()
        try:
            if media_type == PROTOBUF:
                request.ParseFromString(raw)
            else:
                json_format.ParseDict(_json_object(raw), request, ignore_unknown_fields=True)
        except (
            _UndecodableError,
            DecodeError,
            json_format.ParseError,
            jsonbody.JsonBodyError,
        ) as error:
            raise self._invalid(str(error)[:300]) from None
        except (binascii.Error, RecursionError, ValueError, TypeError):
            raise self._invalid("a field does not have its type") from None
        records = _records(request)
        if records > MAX_RECORDS:
            raise ApiError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"The export holds {records} {self.noun}; send at most {MAX_RECORDS} per request.",
            )
        return request

    def _invalid(self, why: str) -> ApiError:
        message = f"The body is not an OTLP {self.signal} export: {why}"
        return ApiError(ErrorCode.INVALID_REQUEST, message)

    def encode(self, body: Any, media_type: str) -> bytes:
        if media_type == JSON:
            return jsonbody.dumps(body).encode()
        return bytes(json_format.ParseDict(body, self.response()).SerializeToString())

    def encode_error(self, error: ApiError, request_id: str, media_type: str) -> bytes:
        """The `google.rpc.Status` OTLP/HTTP answers every failure with, in the request's
        encoding: the message, the API's code as an `ErrorInfo` reason, the request id as
        a `RequestInfo`, and the broken rules as a `BadRequest`."""
        status = rpc_status(error, request_id)
        if media_type == JSON:
            return jsonbody.dumps(json_format.MessageToDict(status)).encode()
        return bytes(status.SerializeToString())


def _records(request: Message) -> int:
    if isinstance(request, ExportTraceServiceRequest):
        return sum(
            len(scope.spans) for found in request.resource_spans for scope in found.scope_spans
        )
    if isinstance(request, ExportLogsServiceRequest):
        return sum(
            len(scope.log_records) for found in request.resource_logs for scope in found.scope_logs
        )
    metrics = cast(ExportMetricsServiceRequest, request)
    return sum(
        max(1, len(_data_points(metric)))
        for found in metrics.resource_metrics
        for scope in found.scope_metrics
        for metric in scope.metrics
    )


def _data_points(metric: Any) -> Any:
    kind = metric.WhichOneof("data")
    return getattr(metric, kind).data_points if kind is not None else []


def rpc_status(error: ApiError, request_id: str) -> status_pb2.Status:
    status = status_pb2.Status(code=_RPC_CODES[error.code], message=error.message)
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason=error.code, domain=DOMAIN))
    status.details.add().Pack(error_details_pb2.RequestInfo(request_id=request_id))
    if error.issues:
        violations = [
            error_details_pb2.BadRequest.FieldViolation(
                field=".".join(str(part) for part in issue["path"]),
                description=issue["message"],
                reason=issue["code"],
            )
            for issue in error.issues
        ]
        status.details.add().Pack(error_details_pb2.BadRequest(field_violations=violations))
    return status


OTLP_TRACES = OtlpExport("trace", "spans", ExportTraceServiceRequest, ExportTraceServiceResponse)
OTLP_LOGS = OtlpExport("log", "log records", ExportLogsServiceRequest, ExportLogsServiceResponse)
OTLP_METRICS = OtlpExport(
    "metric", "data points", ExportMetricsServiceRequest, ExportMetricsServiceResponse
)


def _store(project_id: str, reports: Reports) -> int:
    """Ingest each session's events in batches, with what the export says of its turns;
    the records refused by a session (ended, or an id re-sent with another body) are
    counted as rejected. How many events were stored or merged."""
    accepted = 0
    for session_id, events in reports.by_session().items():
        for start in range(0, len(events), BATCH):
            batch: list[Event] = events[start : start + BATCH]
            telemetry = Telemetry(
                reports.sources[session_id],
                frozenset(event["id"] for event in batch) & reports.mergeable,
                tuple(reports.turns.get(session_id, ())),
            )
            try:
                stored, _ = ingest(project_id, session_id, batch, telemetry)
            except ApiError as refused:
                if refused.code != ErrorCode.CONFLICT:
                    raise
                reports.reject(refused.message, len(batch))
                continue
            accepted += stored
    return accepted


def _export(call: Call, reports: Reports, rejected_field: str) -> Reply:
    project_id = call.params_as(ProjectParams)["projectId"]
    try:
        accepted = _store(project_id, reports)
    except Exception as error:
        known = store_fault(error)
        if known is None or known.code != ErrorCode.CONFLICT:
            raise
        raise ApiError(
            ErrorCode.UNAVAILABLE,
            "The export met a concurrent change to the same session; send it again.",
            headers={"Retry-After": RETRY_AFTER_S},
        ) from None
    rejected = sum(reports.rejected.values())
    logs.bind(records_accepted=str(accepted), records_rejected=str(rejected))
    if not rejected:
        return Reply({})
    reasons = "; ".join(f"{count} {why}" for why, count in reports.rejected.most_common())
    return Reply({"partialSuccess": {rejected_field: str(rejected), "errorMessage": reasons}})


def export_traces(call: Call) -> Reply:
    return _export(call, map_spans(cast(ExportTraceServiceRequest, call.decoded)), "rejectedSpans")


def export_logs(call: Call) -> Reply:
    request = cast(ExportLogsServiceRequest, call.decoded)
    return _export(call, map_logs(request), "rejectedLogRecords")


def export_metrics(call: Call) -> Reply:
    request = cast(ExportMetricsServiceRequest, call.decoded)
    return _export(call, map_metrics(request), "rejectedDataPoints")
