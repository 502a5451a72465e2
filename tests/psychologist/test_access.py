"""What a caller may do in a project: the boundary's own checks, answered ahead of time."""

from __future__ import annotations

from typing import Any

from benchmarks.counting import CallCounter
from shared.validation import issues_for
from tests.psychologist.conftest import Psychologist

DECIDE = ("POST", "/projects/{projectId}/hypotheses/{hypothesisId}/decision")
INGEST = ("POST", "/projects/{projectId}/sessions/{sessionId}/events")
LIST = ("GET", "/projects/{projectId}/hypotheses")


def access(psy: Psychologist, token: str) -> dict[str, Any]:
    reply = psy.api.call("GET", psy.path("/access"), token=token)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert issues_for("psychologist/access.response", body) == []
    return body


def allowed(body: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {(op["method"], op["path"]): op["reason"] for op in body["operations"]}


def test_a_viewer_learns_it_may_read_but_not_decide_and_why(psy: Psychologist) -> None:
    body = access(psy, psy.viewer)
    assert (body["userId"], body["role"]) == ("vic", "viewer")
    reasons = allowed(body)
    assert reasons[LIST] is None
    assert reasons[DECIDE] == "This operation needs the admin role or higher."
    assert reasons[INGEST] == "This operation needs the member role or higher."


def test_an_admin_may_do_everything_it_would_be_admitted_to(psy: Psychologist) -> None:
    body = access(psy, psy.admin)
    assert body["role"] == "admin"
    assert all(op["allowed"] and op["reason"] is None for op in body["operations"])
    assert DECIDE in allowed(body)


def test_what_access_allows_is_what_the_decision_endpoint_admits(psy: Psychologist) -> None:
    for token in (psy.viewer, psy.member, psy.admin):
        may_decide = allowed(access(psy, token))[DECIDE] is None
        reply = psy.api.post(
            psy.path("/hypotheses/01JC4Z8QK3M7YV2N5T9B0PXZZZ/decision"),
            {"status": "accepted"},
            token,
        )
        assert reply.status_code == (404 if may_decide else 403)


def test_a_stranger_gets_403_not_a_list_of_refusals(psy: Psychologist) -> None:
    stranger = psy.world.user(
        psy.world.tenant("project"), "eve", "owner", capabilities=("agent:psychologist",)
    )
    assert psy.api.call("GET", psy.path("/access"), token=stranger).status_code == 403


def test_access_makes_no_read_beyond_the_token_and_membership(
    psy: Psychologist, counter: CallCounter
) -> None:
    counter.calls.clear()
    access(psy, psy.member)
    assert counter.calls == ["BatchGetDocuments"]
