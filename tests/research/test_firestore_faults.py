"""Firestore faults on the request path answer 503 or 409 with Retry-After, never 500."""

from __future__ import annotations

import os
import time

import pytest

from cli import local_model
from shared.clients import build_firestore
from shared.instance import instance
from tests.api import Configure
from tests.research.conftest import Research


def test_with_firestore_unreachable_a_read_answers_503_within_seconds_and_the_host_survives(
    research: Research, configure: Configure
) -> None:
    reachable = os.environ["FIRESTORE_EMULATOR_HOST"]
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    research.settled(run_id)
    configure(FIRESTORE_EMULATOR_HOST="127.0.0.1:9", FIRESTORE_TIMEOUT_S="2")
    started = time.monotonic()
    reply = research.status(run_id)
    assert time.monotonic() - started < 10
    assert reply.status_code == 503, reply.text
    assert reply.json()["code"] == "unavailable"
    assert reply.headers["Retry-After"] == "5"
    assert reply.json()["request_id"] == reply.headers["x-request-id"]
    configure(FIRESTORE_EMULATOR_HOST=reachable)
    assert research.status(run_id).status_code == 200


def test_a_transaction_that_cannot_even_begin_answers_503(
    research: Research, configure: Configure, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the caller's grant remembered, an evidence upsert's first call to an
    unreachable database is BeginTransaction; the library's rollback of a transaction that
    never began raises ValueError, which must not hide that the database is unreachable."""
    reachable = os.environ["FIRESTORE_EMULATOR_HOST"]
    configure(AUTH_CACHE_SECONDS="60", FIRESTORE_TIMEOUT_S="1")
    research.world.gemini.respond_with(local_model.answer)
    assert research.ask().status_code == 202
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:9")
    instance().forget(build_firestore)
    for _ in range(3):
        reply = research.upsert([{"text": "Onboarding is slow."}])
        assert reply.status_code == 503, reply.text
        assert reply.headers["Retry-After"] == "5"
    configure(FIRESTORE_EMULATOR_HOST=reachable)
