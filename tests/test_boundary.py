"""The HTTP boundary: transport errors, validation issues, request ids — and no writes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import requests

from shared.validation import issues_for
from tests.api import Api, World, all_documents

STATUS = "/research-api/assistant/status"
CREATE = "/research-api/conversations/create"


@pytest.fixture
def member(world: World) -> tuple[str, str]:
    workspace = world.tenant()
    return workspace, world.user(workspace, "ana", "member")


def assert_error(reply: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert issues_for("error", body) == []
    assert body["code"] == code
    assert body["request_id"] == reply.headers["x-request-id"]
    return body


@pytest.mark.parametrize(
    ("raw", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "invalid_request"),
        (b"[1, 2]", "application/json", 400, "invalid_request"),
        (b'"text"', "application/json", 400, "invalid_request"),
        (b'{"workspace_id": "x"}', "text/plain", 415, "unsupported_media_type"),
        (b"x" * (1024 * 1024 + 1), "application/json", 413, "payload_too_large"),
    ],
    ids=["malformed-json", "array-body", "string-body", "wrong-content-type", "oversized"],
)
def test_transport_faults_get_their_status_and_write_nothing(
    api: Api, member: tuple[str, str], raw: bytes, content_type: str, status: int, code: str
) -> None:
    before = all_documents()
    reply = api.call(
        "POST", CREATE, token=member[1], raw=raw, headers={"Content-Type": content_type}
    )
    assert_error(reply, status, code)
    assert all_documents() == before


def test_a_non_object_body_reports_the_issue(api: Api, member: tuple[str, str]) -> None:
    reply = api.call(
        "POST", CREATE, token=member[1], raw=b"[]", headers={"Content-Type": "application/json"}
    )
    body = assert_error(reply, 400, "invalid_request")
    assert body["issues"] == [{"path": [], "message": "Expected object", "code": "invalid_type"}]


def test_wrong_method_is_405_with_allow_header(api: Api, member: tuple[str, str]) -> None:
    reply = api.call("GET", CREATE, token=member[1])
    assert_error(reply, 405, "method_not_allowed")
    assert reply.headers["Allow"] == "POST"


def test_every_violated_rule_is_reported_and_nothing_is_written(
    api: Api, member: tuple[str, str]
) -> None:
    before = all_documents()
    reply = api.post(CREATE, {"workspace_id": "not-a-uuid", "title": 5, "colour": "red"}, member[1])
    body = assert_error(reply, 400, "invalid_request")
    by_path = {(tuple(issue["path"]), issue["code"]) for issue in body["issues"]}
    assert (("workspace_id",), "invalid_string") in by_path
    assert (("title",), "invalid_type") in by_path
    assert ((), "unrecognized_keys") in by_path
    assert all_documents() == before


def test_a_missing_required_field_names_the_field(api: Api, member: tuple[str, str]) -> None:
    reply = api.post(
        STATUS, {"workspace_id": member[0], "conversation_id": str(uuid.uuid4())}, member[1]
    )
    body = assert_error(reply, 400, "invalid_request")
    assert body["issues"] == [
        {"path": ["run_id"], "message": "'run_id' is a required property", "code": "invalid_type"}
    ]


def test_a_sane_caller_request_id_is_echoed_and_an_insane_one_replaced(
    api: Api, member: tuple[str, str]
) -> None:
    body = {"workspace_id": member[0]}
    echoed = api.post(CREATE, body, member[1], headers={"x-request-id": "trace-123"})
    assert echoed.headers["x-request-id"] == "trace-123"
    replaced = api.post(CREATE, body, member[1], headers={"x-request-id": "x" * 129})
    assert replaced.headers["x-request-id"] != "x" * 129
    assert len(replaced.headers["x-request-id"]) == 36


def test_an_unknown_path_is_a_json_404(api: Api) -> None:
    assert_error(api.call("GET", "/no/such/thing"), 404, "not_found")


def test_a_repeated_query_parameter_is_refused_by_name(api: Api, world: World) -> None:
    project = world.tenant("project")
    token = world.user(project, "vic", "viewer", capabilities=("agent:psychologist",))
    reply = api.call(
        "GET", f"/projects/{project}/hypotheses?status=proposed&status=accepted", token=token
    )
    body = assert_error(reply, 400, "invalid_request")
    assert body["issues"] == [
        {"path": ["status"], "message": "Repeated parameter", "code": "custom"}
    ]


def test_query_parameters_are_refused_where_an_operation_takes_none(
    api: Api, member: tuple[str, str]
) -> None:
    workspace, token = member
    before = all_documents()
    reply = api.post(f"{CREATE}?title=x", {"workspace_id": workspace}, token)
    body = assert_error(reply, 400, "invalid_request")
    assert "takes no query parameters" in body["message"]
    assert all_documents() == before
