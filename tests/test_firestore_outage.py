"""Firestore stopping mid-run: every request path answers 503 with Retry-After, never 500.

A private emulator is started, used, then stopped while the host keeps serving; the
closed-port case is in tests/research/test_firestore_faults.py."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from google.rpc import code_pb2, status_pb2

from cli import emulator as emulator_module
from tests.api import Api, Configure, World
from tests.psychologist.test_spans import export, span

WARMING_S = "30"
"""The bound while a newly started emulator answers its first requests: its JVM's first
calls took over 2 s beside three busy workers (twice in a row, fresh clones of de2cb83)."""


@pytest.fixture
def private_emulator(configure: Configure) -> Iterator[emulator_module.Emulator]:
    """An emulator of the test's own, which the host uses until the test ends, whatever
    happens in it (the teardown's delivery probe needs the worker's own)."""
    reachable = os.environ["FIRESTORE_EMULATOR_HOST"]
    started = emulator_module.start()
    configure(FIRESTORE_EMULATOR_HOST=started.host, FIRESTORE_TIMEOUT_S=WARMING_S)
    try:
        yield started
    finally:
        configure(FIRESTORE_EMULATOR_HOST=reachable, FIRESTORE_TIMEOUT_S=None)
        started.stop()


def test_stopping_the_emulator_mid_run_answers_503_on_every_request_path(
    world: World, api: Api, configure: Configure, private_emulator: emulator_module.Emulator
) -> None:
    workspace = world.tenant("workspace")
    member = world.user(workspace, "ana", "member")
    project = world.tenant("project")
    writer = world.user(project, "pia", "member", capabilities=("agent:psychologist",))
    created = api.post("/research-api/conversations/create", {"workspace_id": workspace}, member)
    assert created.status_code == 201, created.text
    conversation = created.json()["id"]
    body = {"workspace_id": workspace, "conversation_id": conversation}
    event = {
        "id": "01JC4Z8QK3M7YV2N5T9B0PXHRA",
        "agent": "dev-api",
        "type": "message",
        "at": "2026-11-01T09:00:00Z",
    }
    calls = [
        ("/research-api/conversations/create", {"workspace_id": workspace}, member),
        ("/research-api/evidence/upsert", {**body, "items": [{"text": "Slow."}]}, member),
        ("/research-api/assistant/ask", {**body, "request_kind": "overview"}, member),
        (f"/projects/{project}/sessions/s-1/events", {"events": [event]}, writer),
    ]
    for path, sent, token in calls:
        assert api.post(path, sent, token).status_code < 300, path
    configure(FIRESTORE_TIMEOUT_S="2")  # the short bound once the emulator has answered
    private_emulator.stop()
    for path, sent, token in calls:
        reply = api.post(path, sent, token)
        assert reply.status_code == 503, (path, reply.text)
        assert reply.headers["Retry-After"] == "5"
        assert reply.json()["code"] == "unavailable"


def test_an_otlp_export_while_firestore_is_down_is_503_with_retry_after_in_protobuf(
    world: World, api: Api, configure: Configure, private_emulator: emulator_module.Emulator
) -> None:
    """The exporter retries a 503 after `Retry-After`; the body is a `google.rpc.Status`."""
    project = world.tenant("project")
    writer = world.user(project, "pia", "member", capabilities=("agent:psychologist",))
    body = export(span(1, gen_ai__agent__name="dev-api")).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    path = f"/projects/{project}/otlp/v1/traces"
    assert api.call("POST", path, token=writer, raw=body, headers=headers).status_code == 200
    configure(FIRESTORE_TIMEOUT_S="5")
    private_emulator.stop()
    reply = api.call("POST", path, token=writer, raw=body, headers=headers)
    assert reply.status_code == 503, reply.content
    assert reply.headers["Retry-After"] == "5"
    assert status_pb2.Status.FromString(reply.content).code == code_pb2.UNAVAILABLE
