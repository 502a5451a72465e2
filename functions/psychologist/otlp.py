"""OTLP/HTTP trace export (https://opentelemetry.io/docs/specs/otlp/#otlphttp): the body
decoded with the OpenTelemetry project's own protobuf definitions, protobuf or JSON,
answered in the request's encoding; the spans stored through the events' ingestion path."""

from __future__ import annotations

import base64
import binascii
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from functions.psychologist import service
from functions.psychologist.documents import Event, SessionState
from functions.psychologist.requests import ProjectParams
from functions.psychologist.spans import ABNORMAL_CAUSE, Mapped, map_export
from shared import jsonbody, logs
from shared.errors import ApiError, ErrorCode
from shared.http import Call, Reply
from shared.store import store_fault

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_SPANS = 2_000
"""Per export; the SDKs' batch processors send at most 512 by default."""
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


def _invalid(why: str) -> ApiError:
    return ApiError(ErrorCode.INVALID_REQUEST, f"The body is not an OTLP trace export: {why}")


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
        raise _invalid(f"{key} {value[:40]!r} is not hex") from None


class OtlpTraces:
    """The `shared.http.Codec` of the trace export."""

    media_types = (PROTOBUF, JSON)
    max_decoded_bytes = 8 * 1024 * 1024

    def decode(self, raw: bytes, media_type: str) -> ExportTraceServiceRequest:
        request = ExportTraceServiceRequest()
        try:
            if media_type == PROTOBUF:
                request.ParseFromString(raw)
            else:
                parsed = jsonbody.parse(raw)
                if not isinstance(parsed, dict):
                    raise _invalid("a JSON object is expected")
                json_format.ParseDict(_ids_as_base64(parsed), request, ignore_unknown_fields=True)
        except (DecodeError, json_format.ParseError, jsonbody.JsonBodyError) as error:
            raise _invalid(str(error)[:300]) from None
        except (binascii.Error, RecursionError, ValueError, TypeError):
            raise _invalid("a field does not have its type") from None
        spans = sum(
            len(scope.spans)
            for resource in request.resource_spans
            for scope in resource.scope_spans
        )
        if spans > MAX_SPANS:
            raise ApiError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"The export holds {spans} spans; send at most {MAX_SPANS} per request.",
            )
        return request

    def encode(self, body: Any, media_type: str) -> bytes:
        if media_type == JSON:
            return jsonbody.dumps(body).encode()
        return bytes(json_format.ParseDict(body, ExportTraceServiceResponse()).SerializeToString())

    def encode_error(self, error: ApiError, request_id: str, media_type: str) -> bytes:
        """The `google.rpc.Status` OTLP/HTTP answers every failure with, in the request's
        encoding: the message, the API's code as an `ErrorInfo` reason, the request id as
        a `RequestInfo`, and the broken rules as a `BadRequest`."""
        status = rpc_status(error, request_id)
        if media_type == JSON:
            return jsonbody.dumps(json_format.MessageToDict(status)).encode()
        return bytes(status.SerializeToString())


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


OTLP_TRACES = OtlpTraces()


def _store(project_id: str, mapped: Mapped) -> int:
    """Ingest each session's events in batches, then apply its root span's end; the
    spans refused by a session (ended, or an id re-sent with another body) are counted
    as rejected. How many spans were stored as new."""
    accepted = 0
    for session_id, events in mapped.events.items():
        for start in range(0, len(events), BATCH):
            batch: list[Event] = events[start : start + BATCH]
            try:
                stored, _ = service.ingest(project_id, session_id, batch)
            except ApiError as refused:
                if refused.code != ErrorCode.CONFLICT:
                    raise
                mapped.reject(refused.message, len(batch))
                continue
            accepted += stored
        _end(project_id, session_id, mapped.endings.get(session_id))
    return accepted


def _end(project_id: str, session_id: str, ending: str | None) -> None:
    """End the session as its root span says, unless no event of it was ever stored."""
    if ending is None:
        return
    cause = ABNORMAL_CAUSE if ending == SessionState.CLOSED_ABNORMALLY else None
    try:
        service.end(project_id, session_id, ending, cause)
    except ApiError as missing:
        if missing.code != ErrorCode.NOT_FOUND:
            raise


def export_traces(call: Call) -> Reply:
    project_id = call.params_as(ProjectParams)["projectId"]
    mapped = map_export(cast(ExportTraceServiceRequest, call.decoded))
    try:
        accepted = _store(project_id, mapped)
    except Exception as error:
        known = store_fault(error)
        if known is None or known.code != ErrorCode.CONFLICT:
            raise
        raise ApiError(
            ErrorCode.UNAVAILABLE,
            "The export met a concurrent change to the same session; send it again.",
            headers={"Retry-After": RETRY_AFTER_S},
        ) from None
    rejected = sum(mapped.rejected.values())
    logs.bind(spans_accepted=str(accepted), spans_rejected=str(rejected))
    if not rejected:
        return Reply({})
    reasons = "; ".join(f"{count} {why}" for why, count in mapped.rejected.most_common())
    return Reply({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": reasons}})
