"""Hostile input against every operation: a 4xx with the API's error body, never a 5xx,
and nothing stored.

Bodies are refused by the boundary's strict JSON reader before any token is looked at
(but on the OTLP paths, which answer a missing bearer header first), so these cases need
no credentials; the free-form fields (event `data`, session
`input`) are tried with a member's token, since they pass the reader and reach the
schema and the storage checks."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from functions.registry import public_operations
from shared.validation import issues_for
from tests.api import Api, World, all_documents

ID = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
UUID = "497f6eca-6276-4993-bfeb-53cbbbba6f08"


def filled(route: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: UUID if m.group(1) == "id" else ID, route)


BODY_OPERATIONS = [
    (op.method, filled(entry.route))
    for entry, op in public_operations()
    if op.method in ("POST", "PUT")
]

REQUEST_INFO = "type.googleapis.com/google.rpc.RequestInfo"

HOSTILE_BODIES: dict[str, tuple[bytes, str, int]] = {
    "nested-1000-deep": (b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}", "application/json", 400),
    "integer-5000-digits": (b'{"a":' + b"9" * 5000 + b"}", "application/json", 400),
    "integer-past-int64": (b'{"a": 9223372036854775808}', "application/json", 400),
    "nan": (b'{"a": NaN}', "application/json", 400),
    "infinity": (b'{"a": [-Infinity]}', "application/json", 400),
    "1e309": (b'{"a": 1e309}', "application/json", 400),
    "lone-surrogate-escape": (b'{"a": "\\ud800"}', "application/json", 400),
    "lone-surrogate-bytes": (b'{"a": "\xed\xa0\x80"}', "application/json", 400),
    "utf-8-bom": (b'\xef\xbb\xbf{"a": 1}', "application/json", 400),
    "utf-16": ('{"a": 1}'.encode("utf-16"), "application/json", 400),
    "charset-latin-1": (b'{"a": 1}', "application/json; charset=latin-1", 415),
    "array-in-array": (b'{"a": {"b": [[1]]}}', "application/json", 400),
    "empty-key": (b'{"a": {"": 1}}', "application/json", 400),
    "reserved-key": (b'{"a": {"__name__": 1}}', "application/json", 400),
}


def assert_api_error(reply: Any, status: int) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert issues_for("error", body) == []
    assert body["request_id"] == reply.headers["x-request-id"]
    return body


def assert_refused(reply: Any, status: int, path: str) -> None:
    """The error body, or for the OTLP endpoint the `google.rpc.Status` its protocol
    answers with, naming the request id."""
    if "/otlp/v1/" not in path:
        assert_api_error(reply, status)
        return
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert issues_for("psychologist/otlp_status", body) == []
    assert {"@type": REQUEST_INFO, "requestId": reply.headers["x-request-id"]} in body["details"]


@pytest.mark.parametrize("case", sorted(HOSTILE_BODIES))
def test_a_hostile_body_is_refused_by_every_operation_and_stores_nothing(
    api: Api, case: str
) -> None:
    raw, content_type, status = HOSTILE_BODIES[case]
    before = all_documents()
    for method, path in BODY_OPERATIONS:
        reply = api.call(method, path, raw=raw, headers={"Content-Type": content_type})
        # An OTLP exporter without its bearer header hears so before its body is judged.
        assert_refused(reply, 401 if "/otlp/v1/" in path else status, path)
    assert all_documents() == before


def test_a_refused_value_is_named_by_its_path(api: Api) -> None:
    reply = api.call(
        "POST",
        "/research-api/conversations/create",
        raw=b'{"workspace_id": "w", "items": [1, {"x": NaN}]}',
        headers={"Content-Type": "application/json"},
    )
    assert assert_api_error(reply, 400)["issues"] == [
        {"path": ["items", 1, "x"], "message": "'NaN' is not a JSON number", "code": "custom"}
    ]


@pytest.fixture
def project(world: World) -> tuple[str, str]:
    tenant = world.tenant("project")
    return tenant, world.user(tenant, "ana", "member", capabilities=("agent:psychologist",))


def event(**changes: Any) -> dict[str, Any]:
    return {"id": ID, "agent": "dev-api", "type": "tool.call", "at": "2026-11-30T09:00:00Z"} | (
        changes
    )


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"at": "9999-12-31T23:59:59-23:59"}, ["events", 0, "at"]),
        ({"data": {"big": "x" * 9000}}, ["events", 0, "data"]),
    ],
    ids=["date-at-the-edge", "data-over-8-KiB"],
)
def test_an_event_that_cannot_be_stored_is_refused_by_path(
    api: Api, project: tuple[str, str], changes: dict[str, Any], path: list[Any]
) -> None:
    tenant, token = project
    before = all_documents()
    reply = api.post(
        f"/projects/{tenant}/sessions/{ID}/events", {"events": [event(**changes)]}, token
    )
    body = assert_api_error(reply, 400)
    assert path in [issue["path"] for issue in body["issues"]]
    assert all_documents() == before


@pytest.mark.parametrize(
    "token_value",
    [
        base64.urlsafe_b64encode(json.dumps([1, "x"]).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps(["not a time", "x"]).encode()).decode(),
        base64.urlsafe_b64encode(b"not json").decode(),
    ],
    ids=["wrong-types", "not-a-time", "not-json"],
)
def test_a_crafted_page_token_is_refused(api: Api, world: World, token_value: str) -> None:
    tenant = world.tenant("project")
    viewer = world.user(tenant, "vic", "viewer", capabilities=("agent:psychologist",))
    reply = api.call("GET", f"/projects/{tenant}/hypotheses?pageToken={token_value}", token=viewer)
    assert assert_api_error(reply, 400)["issues"][0]["path"] == ["pageToken"]


def test_a_session_input_too_large_to_store_is_refused(api: Api, world: World) -> None:
    org = world.tenant("org")
    member = world.user(org, "ana", "member", capabilities=("agent:connect",))
    before = all_documents()
    reply = api.post(
        f"/v1/orgs/{org}/agents/{UUID}/sessions",
        {"title": "Big", "input": {"blob": "x" * 900_000}},
        member,
    )
    assert assert_api_error(reply, 400)["issues"][0]["path"] == ["input"]
    assert all_documents() == before


def test_nan_and_infinity_cannot_be_stored_through_any_free_form_field(
    api: Api, world: World
) -> None:
    """`NaN` and `Infinity` are not JSON: sent in each field that takes free-form data,
    every request is refused with 400 naming the field, and nothing is stored."""
    project = world.tenant("project")
    writer = world.user(project, "ana", "member", capabilities=("agent:psychologist",))
    org = world.tenant("org")
    owner = world.user(org, "ada", "admin", capabilities=("agent:connect",))
    selection = json.dumps(
        {
            "decision": {
                "decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
                "question": {"type": "boolean", "instructions": "Deep?"},
                "rules": [{"model": "m", "when": {"type": "boolean", "thresholds": {"true": 0.5}}}],
            },
            "steps": [],
            "default": {
                "runtime": "local",
                "model": "m",
                "effort": "low",
                "permissionMode": "default",
                "fastMode": True,
            },
        }
    )
    cases = [
        (
            "POST",
            f"/projects/{project}/sessions/{ID}/events",
            json.dumps({"events": [event(data={"x": 1.5})]}).replace("1.5", "NaN"),
            writer,
            ["events", 0, "data", "x"],
        ),
        (
            "POST",
            f"/v1/orgs/{org}/agents/{UUID}/sessions",
            '{"title": "t", "input": {"x": Infinity}}',
            owner,
            ["input", "x"],
        ),
        (
            "PUT",
            f"/v1/orgs/{org}/agents/{UUID}/model-selection",
            selection.replace('"true": 0.5', '"true": NaN'),
            owner,
            ["decision", "rules", 0, "when", "thresholds", "true"],
        ),
    ]
    before = all_documents()
    for method, path, raw, token, where in cases:
        reply = api.call(
            method,
            path,
            raw=raw.encode(),
            token=token,
            headers={"Content-Type": "application/json"},
        )
        assert [issue["path"] for issue in assert_api_error(reply, 400)["issues"]] == [where]
    assert all_documents() == before


RESERVED = "__reserved__"
"""Firestore refuses a document id of this form; the schemas refuse it first."""


@pytest.mark.parametrize(
    "path",
    [
        "/projects/{p}/analyses/__reserved__",
        "/projects/{p}/sessions/__reserved__/events?ids=" + ID,
        "/projects/{p}/hypotheses/__reserved__/decisions",
        "/projects/{p}/hypotheses/__reserved__/effect",
        "/projects/__reserved__/hypotheses",
        "/v1/orgs/__reserved__/agents/" + UUID + "/model-evaluations",
    ],
)
def test_a_reserved_document_id_in_a_path_is_refused_before_any_read(
    api: Api, world: World, path: str
) -> None:
    project = world.tenant("project")
    token = world.user(
        project, "ada", "admin", capabilities=("agent:psychologist", "agent:connect")
    )
    reply = api.call("GET", path.format(p=project), token=token)
    assert assert_api_error(reply, 400)["code"] == "invalid_request"
