"""Spans as events: the session, agent and type a span maps to, what is kept of it, and
the turns a trace's spans open and its root span closes (the table in docs/otlp.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from functions.psychologist.telemetry.reports import MAX_DATA_BYTES, Turn
from functions.psychologist.telemetry.spans import map_spans
from shared.validation import issues_for

pytestmark = pytest.mark.pure

TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")
START = 1_764_666_000_000_000_000


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    return AnyValue(string_value=str(value))


def span(
    number: int,
    parent: int | None = None,
    error: bool = False,
    trace: bytes = TRACE,
    **attributes: Any,
) -> Span:
    return Span(
        trace_id=trace,
        span_id=number.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        name=f"span {number}",
        start_time_unix_nano=START + number * 1_000_000_000,
        end_time_unix_nano=START + number * 1_000_000_000 + 500_000_000,
        attributes=[
            KeyValue(key=name.replace("__", "."), value=_value(value))
            for name, value in attributes.items()
        ],
        status=Status(code=Status.STATUS_CODE_ERROR if error else Status.STATUS_CODE_OK),
    )


def export(*spans: Span, service: str | None = "svc") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    if service is not None:
        resource_spans.resource.attributes.add(key="service.name").value.string_value = service
    resource_spans.scope_spans.add().spans.extend(spans)
    return request


def test_spans_of_one_trace_share_the_conversation_any_of_them_carries() -> None:
    mapped = map_spans(
        export(
            span(1, gen_ai__conversation__id="conv-1", gen_ai__operation__name="invoke_agent"),
            span(2, parent=1, gen_ai__operation__name="chat"),
            span(3, trace=b"\x01" * 16),
        )
    )
    sessions = mapped.by_session()
    assert sorted(sessions) == ["01" * 16, "conv-1"]
    assert [event["type"] for event in sessions["conv-1"]] == ["agent.invoke", "model.chat"]
    for events in sessions.values():
        for event in events:
            assert issues_for("psychologist/event", event) == []


def test_a_conversation_id_that_is_no_session_id_is_hashed_the_same_way_each_time() -> None:
    first = map_spans(export(span(1, gen_ai__conversation__id="a/b c")))
    again = map_spans(export(span(2, gen_ai__conversation__id="a/b c")))
    (session,) = first.events
    assert session.startswith("c-")
    assert len(session) == 42
    assert list(again.events) == [session]


@pytest.mark.parametrize(
    ("operation", "error", "expected"),
    [
        ("execute_tool", False, "tool.call"),
        ("execute_tool", True, "tool.error"),
        ("chat", True, "model.error"),
        ("invoke_agent", True, "agent.error"),
        ("Retrieve Docs", False, "span.retrieve_docs"),
        (None, False, "span.ended"),
        (None, True, "span.error"),
    ],
)
def test_the_event_type_comes_from_the_operation_and_the_status(
    operation: str | None, error: bool, expected: str
) -> None:
    attributes: dict[str, Any] = {"gen_ai__operation__name": operation} if operation else {}
    mapped = map_spans(export(span(1, parent=9, error=error, **attributes)))
    assert [event["type"] for event in mapped.by_session()[TRACE.hex()]] == [expected]


def test_the_agent_is_the_agent_name_else_the_service_cleaned_else_the_span_is_refused() -> None:
    named = map_spans(export(span(1, gen_ai__agent__name="Trip Planner/v2")))
    assert named.by_session()[TRACE.hex()][0]["agent"] == "Trip_Planner_v2"
    served = map_spans(export(span(1), service="-svc"))
    assert served.by_session()[TRACE.hex()][0]["agent"] == "a-svc"
    refused = map_spans(export(span(1), service=None))
    assert dict(refused.rejected) == {"no gen_ai.agent.name and no service.name": 1}
    assert not refused.events


def test_the_same_span_maps_to_the_same_event_id_and_another_span_to_another() -> None:
    first = map_spans(export(span(1), span(2)))
    again = map_spans(export(span(1)))
    ids = [event["id"] for event in first.by_session()[TRACE.hex()]]
    assert again.by_session()[TRACE.hex()][0]["id"] == ids[0]
    assert len(set(ids)) == 2


def test_a_trace_is_a_turn_that_its_root_span_closes_failed_when_it_ended_in_error() -> None:
    root: dict[str, Any] = {"gen_ai__operation__name": "invoke_agent"}
    turn = TRACE.hex()
    assert map_spans(export(span(2, parent=1))).turns == {turn: [Turn(turn)]}
    assert map_spans(export(span(1, **root))).turns == {turn: [Turn(turn, ends=True)]}
    failed = map_spans(export(span(1, error=True, **root))).turns
    assert failed == {turn: [Turn(turn, ends=True, failed=True)]}


def test_message_contents_are_cut_to_keep_the_event_within_its_size_limit() -> None:
    long = "x" * (3 * MAX_DATA_BYTES)
    mapped = map_spans(
        export(
            span(
                1,
                gen_ai__input__messages=long,
                gen_ai__output__messages="short answer",
                gen_ai__request__model="m" * 5_000,
                http__method="GET",
            )
        )
    )
    (event,) = mapped.by_session()[TRACE.hex()]
    data = event["data"]
    assert len(json.dumps(data)) <= MAX_DATA_BYTES
    assert data["contentCut"] is True
    assert data["attributes"]["gen_ai.output.messages"] == "short answer"
    assert data["attributes"]["gen_ai.input.messages"].startswith("xxx")
    assert len(data["attributes"]["gen_ai.request.model"]) == 1_000
    assert data["droppedAttributes"] == 1


def test_a_span_without_an_end_or_ids_is_refused_with_its_reason() -> None:
    unended = span(1)
    unended.end_time_unix_nano = 0
    no_id = span(2)
    no_id.span_id = b""
    mapped = map_spans(export(unended, no_id))
    assert dict(mapped.rejected) == {
        "no end time, or an end before the start": 1,
        "no valid span id": 1,
    }
