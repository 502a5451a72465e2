"""OpenTelemetry traces into the Psychologist: the SDK's own OTLP/HTTP exporters (protobuf
and JSON) send an agent run's GenAI spans, which become one session's events."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from functions.loop import store as loop_store
from functions.psychologist import store
from functions.psychologist.telemetry.spans import event_id
from shared.validation import issues_for
from tests.api import Configure, document, redeliver, wait_for
from tests.psychologist.conftest import Psychologist, hypothesis

CONVERSATION = "conv-trip-42"


def agent_run(failing: bool, conversation: str = CONVERSATION) -> list[ReadableSpan]:
    """An agent run as GenAI-instrumented code records it: the agent span, a model call
    and three calls of a tool that fails each time; the agent span ends in error when
    `failing`."""
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-service"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("agent")
    common = {"gen_ai.conversation.id": conversation, "gen_ai.agent.name": "trip-planner"}
    with tracer.start_as_current_span(
        "invoke_agent trip-planner",
        attributes={**common, "gen_ai.operation.name": "invoke_agent"},
        record_exception=False,
        set_status_on_exception=False,
    ) as root:
        with tracer.start_as_current_span(
            "chat gemini-3.8-flash",
            attributes={
                **common,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gemini-3.8-flash",
                "gen_ai.usage.input_tokens": 812,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Book Lisbon"}]}]
                ),
                "http.url": "https://example.invalid/chat",
            },
        ):
            pass
        for _ in range(3):
            with tracer.start_as_current_span(
                "execute_tool search_flights",
                attributes={
                    **common,
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search_flights",
                },
            ) as tool:
                tool.set_status(Status(StatusCode.ERROR, "upstream timeout"))
        if failing:
            root.set_status(Status(StatusCode.ERROR, "gave up after the tool failed"))
    provider.shutdown()
    return list(spans.get_finished_spans())


def exporter(psy: Psychologist, kind: str, token: str | None = None) -> SpanExporter:
    endpoint = f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces"
    headers = {"Authorization": f"Bearer {token or psy.member}"}
    if kind == "json":
        return JsonSpanExporter(endpoint=endpoint, headers=headers, timeout=10)
    compression = Compression.Gzip if kind == "protobuf+gzip" else Compression.NoCompression
    return OTLPSpanExporter(endpoint=endpoint, headers=headers, compression=compression, timeout=10)


def export(psy: Psychologist, spans: Sequence[ReadableSpan], kind: str) -> SpanExportResult:
    sender = exporter(psy, kind)
    try:
        return sender.export(spans)
    finally:
        sender.shutdown()


def stored_events(psy: Psychologist, session: str, ids: list[str]) -> list[dict[str, Any]]:
    reply = psy.api.call(
        "GET", psy.path(f"/sessions/{session}/events?ids={','.join(ids)}"), token=psy.viewer
    )
    assert reply.status_code == 200, reply.text
    events: list[dict[str, Any]] = reply.json()["events"]
    return events


def span_ids(spans: Sequence[ReadableSpan]) -> list[str]:
    ids = []
    for span in spans:
        assert span.context is not None
        assert span.end_time is not None
        # As the endpoint reads it: whole microseconds, truncated (a float division can
        # round across a millisecond and name another event).
        ended = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=span.end_time // 1000)
        ids.append(
            event_id(
                span.context.trace_id.to_bytes(16, "big"),
                span.context.span_id.to_bytes(8, "big"),
                ended,
            )
        )
    return ids


def tool_event_ids(spans: Sequence[ReadableSpan]) -> list[str]:
    """The event ids of the run's tool spans."""
    return [
        event
        for event, span in zip(span_ids(spans), spans, strict=True)
        if span.name.startswith("execute_tool")
    ]


@pytest.mark.parametrize("kind", ["protobuf", "protobuf+gzip", "json"])
def test_the_sdk_exporter_lands_every_span_of_a_run_as_events_of_one_session_once(
    psy: Psychologist, kind: str
) -> None:
    """The OpenTelemetry SDK's exporter, pointed at the endpoint with a bearer header,
    stores the five spans of a run as five events of the conversation's session, typed
    from their GenAI operation, with the span they came from; its root agent span closes
    the turn, not the session; the same export again stores nothing more."""
    spans = agent_run(failing=False)
    assert export(psy, spans, kind) == SpanExportResult.SUCCESS
    session = document(f"projects/{psy.project}/sessions/{CONVERSATION}")
    assert session["event_count"] == 5
    assert session["agents"] == ["trip-planner"]
    assert (session["state"], session["source"], session["tool_errors"]) == ("open", "genai", 3)
    trace = format(spans[0].context.trace_id, "032x") if spans[0].context else ""
    assert session["turns"] == {
        "open": [],
        "closed": [trace],
        "last": {"id": trace, "failed": False},
    }

    events = stored_events(psy, CONVERSATION, span_ids(spans))
    assert sorted(event["type"] for event in events) == [
        "agent.invoke",
        "model.chat",
        "tool.error",
        "tool.error",
        "tool.error",
    ]
    chat = next(event for event in events if event["type"] == "model.chat")
    assert chat["data"]["attributes"]["gen_ai.usage.input_tokens"] == 812
    assert "Book Lisbon" in chat["data"]["attributes"]["gen_ai.input.messages"]
    assert "http.url" not in chat["data"]["attributes"]
    assert chat["data"]["droppedAttributes"] == 1
    tool = next(event for event in events if event["type"] == "tool.error")
    assert (tool["data"]["tool"], tool["data"]["error"]) == ("search_flights", "upstream timeout")
    root = next(event for event in events if event["type"] == "agent.invoke")
    assert tool["data"]["span"]["parentSpanId"] == root["data"]["span"]["spanId"]
    assert {event["taskId"] for event in events} == {root["data"]["span"]["traceId"]}

    assert export(psy, spans, kind) == SpanExportResult.SUCCESS
    resent = _post(psy, encode_spans(spans).SerializeToString(), "application/x-protobuf")
    assert ExportTraceServiceResponse.FromString(resent.content) == ExportTraceServiceResponse()
    again = document(f"projects/{psy.project}/sessions/{CONVERSATION}")
    assert (again["event_count"], again["tool_errors"]) == (5, 3)


def test_a_last_turn_ended_in_error_ends_the_silent_session_abnormally_and_hypotheses_cite_it(
    psy: Psychologist, configure: Configure
) -> None:
    """A session whose last turn (its root agent span) ended in error ends abnormally once
    silent, which queues an analysis; the hypothesis citing the failing tool spans' events
    is stored and listed."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1")
    spans = agent_run(failing=True)
    tool_ids = tool_event_ids(spans)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("trip-planner", tool_ids)]})
    assert export(psy, spans, "protobuf") == SpanExportResult.SUCCESS
    assert document(f"projects/{psy.project}/sessions/{CONVERSATION}")["state"] == "open"
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]

    session = document(f"projects/{psy.project}/sessions/{CONVERSATION}")
    assert (session["state"], session["cause"]) == ("closed_abnormally", "last_turn_failed")
    analysis = psy.settled(session["analysis_id"])
    assert analysis["status"] == "completed", analysis
    listed = psy.hypotheses(sessionId=CONVERSATION).json()
    assert [item["evidenceEventIds"] for item in listed] == [tool_ids]


def _post(psy: Psychologist, body: bytes, content_type: str, **headers: str) -> requests.Response:
    return requests.post(
        f"{psy.api.base_url}/projects/{psy.project}/otlp/v1/traces",
        data=body,
        headers={"Content-Type": content_type, "Authorization": f"Bearer {psy.member}", **headers},
        timeout=30,
    )


def _sessions(psy: Psychologist) -> list[str]:
    return [ref.id for ref in store.session_ref(psy.project, "any").parent.list_documents()]


def test_a_body_that_does_not_decode_gets_400_in_its_encoding_and_stores_nothing(
    psy: Psychologist,
) -> None:
    """Garbage protobuf gets a 400 with a protobuf `google.rpc.Status`; broken JSON and
    a span id that is not hex get the JSON error body; nothing is stored."""
    garbage = _post(psy, b"\xff\xff\xff\xff", "application/x-protobuf")
    assert garbage.status_code == 400
    status = status_pb2.Status.FromString(garbage.content)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert "not an OTLP trace export" in status.message

    broken = _post(psy, b'{"resourceSpans": [', "application/json")
    assert broken.status_code == 400
    answer = broken.json()
    assert issues_for("psychologist/otlp_status", answer) == []
    assert answer["code"] == code_pb2.INVALID_ARGUMENT
    reason, request = answer["details"][:2]
    assert (reason["reason"], reason["domain"]) == ("invalid_request", "evidencia")
    assert request["requestId"] == broken.headers["x-request-id"]
    not_hex = b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"01"}]}]}]}'
    assert _post(psy, not_hex, "application/json").status_code == 400
    assert _post(psy, b"{}", "text/plain").status_code == 415
    assert _sessions(psy) == []


def test_an_oversized_or_bomb_body_gets_413_and_stores_nothing(psy: Psychologist) -> None:
    """A body over 1 MiB, and a gzip body that inflates past the limit, get 413."""
    assert _post(psy, b"\x00" * (1024 * 1024 + 1), "application/x-protobuf").status_code == 413
    bomb = gzip.compress(b"\x00" * (9 * 1024 * 1024))
    reply = _post(psy, bomb, "application/x-protobuf", **{"Content-Encoding": "gzip"})
    assert reply.status_code == 413
    assert status_pb2.Status.FromString(reply.content).code == code_pb2.RESOURCE_EXHAUSTED
    assert (
        _post(psy, b"not gzip", "application/json", **{"Content-Encoding": "gzip"}).status_code
        == 400
    )
    assert _sessions(psy) == []


def test_spans_that_cannot_be_events_are_reported_in_partial_success(psy: Psychologist) -> None:
    """A span without an agent name or service name (nor a span of its trace that names
    one), and one without an end time, are refused and counted in `partial_success` with
    why; the others are stored."""
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "6c8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "anonymous",
                                "startTimeUnixNano": "1764666000000000000",
                                "endTimeUnixNano": "1764666001000000000",
                            },
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b175",
                                "name": "named",
                                "attributes": [
                                    {"key": "gen_ai.agent.name", "value": {"stringValue": "a1"}}
                                ],
                                "startTimeUnixNano": "1764666000000000000",
                                "endTimeUnixNano": "1764666001000000000",
                            },
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b176",
                                "name": "unended",
                                "attributes": [
                                    {"key": "gen_ai.agent.name", "value": {"stringValue": "a1"}}
                                ],
                                "startTimeUnixNano": "1764666000000000000",
                            },
                        ]
                    }
                ],
            }
        ]
    }
    reply = _post(psy, json.dumps(body).encode(), "application/json")
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert issues_for("psychologist/otlp_traces.response", answer) == []
    assert answer["partialSuccess"]["rejectedSpans"] == "2"
    assert "no gen_ai.agent.name and no service.name" in answer["partialSuccess"]["errorMessage"]
    assert "no end time" in answer["partialSuccess"]["errorMessage"]
    session = document(f"projects/{psy.project}/sessions/5b8efff798038103d269b633813fc60c")
    assert session["event_count"] == 1

    as_protobuf = json_format.ParseDict({"resourceSpans": []}, ExportTraceServiceRequest())
    empty = _post(psy, as_protobuf.SerializeToString(), "application/x-protobuf")
    assert empty.status_code == 200
    assert empty.headers["Content-Type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(empty.content) == ExportTraceServiceResponse()


def test_a_bearer_header_whose_space_an_exporter_left_url_encoded_is_read(
    psy: Psychologist,
) -> None:
    """`Authorization=Bearer%20TOKEN` in OTEL_EXPORTER_OTLP_HEADERS reaches us as written
    from the JavaScript SDK (Claude Code, Gemini CLI), decoded from Python's."""
    body = encode_spans(agent_run(failing=False)).SerializeToString()
    reply = _post(psy, body, "application/x-protobuf", Authorization=f"Bearer%20{psy.member}")
    assert reply.status_code == 200, reply.content
    assert document(f"projects/{psy.project}/sessions/{CONVERSATION}")["event_count"] == 5


def test_an_export_without_a_valid_token_is_refused_and_stores_nothing(psy: Psychologist) -> None:
    """The exporter's bearer header is checked as on every operation: a viewer's token is
    403 and the SDK reports the export as failed."""
    sender = exporter(psy, "protobuf", token=psy.viewer)
    try:
        assert sender.export(agent_run(failing=False)) == SpanExportResult.FAILURE
    finally:
        sender.shutdown()
    assert _sessions(psy) == []


def test_a_session_silence_ended_takes_its_next_turn_and_is_judged_again_on_its_whole_log(
    psy: Psychologist, configure: Configure
) -> None:
    """An engineer back from a pause: the sweep ended the silent session, its next turn's
    spans are answered in full (no partial success), reopen it, and its next end is judged
    on both turns: the session, its outcome record and its summary are the second end's."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1", PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
    path = f"projects/{psy.project}/sessions/{CONVERSATION}"
    first = agent_run(failing=False)
    assert export(psy, first, "protobuf") == SpanExportResult.SUCCESS
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]
    ended = psy.session(CONVERSATION)
    assert (ended["state"], ended["cause"], ended["endedBySilence"]) == (
        "closed",
        "turns_closed",
        True,
    )
    first_analysis = psy.settled(ended["lastAnalysisId"])["id"]

    second = agent_run(failing=True)
    psy.world.gemini.answer_json({"hypotheses": []})
    answer = _post(psy, encode_spans(second).SerializeToString(), "application/x-protobuf")
    assert ExportTraceServiceResponse.FromString(answer.content) == ExportTraceServiceResponse()
    resumed = psy.session(CONVERSATION)
    assert (resumed["state"], resumed["endedAt"], resumed["resumedCount"]) == ("open", None, 1)
    assert resumed["eventCount"] == len(first) + len(second)

    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]
    again = psy.session(CONVERSATION)
    assert (again["state"], again["cause"]) == ("closed_abnormally", "last_turn_failed")
    assert again["lastAnalysisId"] != first_analysis
    assert psy.settled(again["lastAnalysisId"])["status"] == "completed"
    outcome = document(loop_store.outcome_ref(psy.project, CONVERSATION, "trip-planner").path)
    assert (outcome["analysis_id"], outcome["ended_as"], outcome["event_count"]) == (
        again["lastAnalysisId"],
        "closed_abnormally",
        len(first) + len(second),
    )
    summary = document(f"projects/{psy.project}/summaries/{CONVERSATION}")
    assert (summary["state"], summary["ended_at"]) == (
        "closed_abnormally",
        document(path)["ended_at"],
    )


def test_an_explicit_end_replaces_the_sweeps_and_then_takes_no_record_after_it(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1", PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
    assert export(psy, agent_run(failing=False), "protobuf") == SpanExportResult.SUCCESS
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]
    reply = psy.end(CONVERSATION, "closed_abnormally", "user_interrupted")
    assert reply.status_code == 200, reply.text
    assert (reply.json()["cause"], reply.json()["endedBySilence"]) == ("user_interrupted", False)
    late = _post(
        psy, encode_spans(agent_run(failing=False)).SerializeToString(), "application/x-protobuf"
    )
    rejected = ExportTraceServiceResponse.FromString(late.content).partial_success
    assert (rejected.rejected_spans, "has ended" in rejected.error_message) == (5, True)
    assert psy.session(CONVERSATION)["resumedCount"] == 0


def test_an_earlier_ends_analysis_settling_last_leaves_the_later_ends_outcome_and_summary(
    psy: Psychologist, configure: Configure
) -> None:
    """The first end's analysis is still asking Gemini when the session resumes and ends
    again; the second end's analysis settles first. The first, settling last, must not put
    its partial judgement back over the whole one."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1", PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
    path = f"projects/{psy.project}/sessions/{CONVERSATION}"
    first, second = agent_run(failing=True), agent_run(failing=False)
    held = psy.world.gemini.held_answer_json({"hypotheses": []})
    assert export(psy, first, "protobuf") == SpanExportResult.SUCCESS
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]
    first_analysis = document(path)["analysis_id"]
    assert held.wait_reached()

    assert export(psy, second, "protobuf") == SpanExportResult.SUCCESS
    assert wait_for(lambda: psy.sweep()["sessions"]) == [CONVERSATION]
    second_analysis = document(path)["analysis_id"]
    # the emulator delivers one event at a time to a trigger; Cloud Functions does not
    analysis_path = f"projects/{psy.project}/analyses/{second_analysis}"
    assert redeliver(psy.api, "psychologist_analysis_worker", analysis_path) < 300
    assert psy.settled(second_analysis)["status"] == "completed"
    outcome_path = loop_store.outcome_ref(psy.project, CONVERSATION, "trip-planner").path
    whole = (second_analysis, "closed", len(first) + len(second))

    held.open()
    assert psy.settled(first_analysis)["status"] == "completed"
    outcome = document(outcome_path)
    assert (outcome["analysis_id"], outcome["ended_as"], outcome["event_count"]) == whole
    assert document(f"projects/{psy.project}/summaries/{CONVERSATION}")["state"] == "closed"
