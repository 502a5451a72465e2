"""A batch's decision, from the session and event index it read to the writes it plans; and
the packed index itself: lookups, expiry, sealing and its bound."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.cloud import firestore

from functions.psychologist.documents import Event, Session, SessionState
from functions.psychologist.telemetry.event_index import Indexed, body_key
from functions.psychologist.telemetry.ingestion import RESUMED, plan_ingest
from shared.errors import ApiError, ErrorCode
from shared.retention import parse_instant, to_micros

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
INTERVAL = timedelta(seconds=30)


def event(event_id: str, agent: str = "dev", at: str = "2026-12-02T11:00:00Z") -> Event:
    return {"id": event_id, "agent": agent, "type": "tool_call", "at": at}


def stored(of: Event, expires_at: datetime = NOW + timedelta(hours=1)) -> Indexed:
    return Indexed(body_key(of), "c", 0, expires_at)


def open_session(last_seen_at: datetime = NOW) -> Session:
    return {
        "state": SessionState.OPEN,
        "agents": ["dev"],
        "event_count": 1,
        "created_at": NOW,
        "last_seen_at": last_seen_at,
    }


A, B = event("a", at="2026-12-02T11:00:00Z"), event("b", agent="qa", at="2026-12-02T11:00:05Z")


def test_the_first_batch_creates_the_session_with_its_agents_count_and_event_times() -> None:
    plan = plan_ingest(None, {"a": A, "b": B}, {}, 0, NOW, INTERVAL)
    assert (plan.fresh, plan.duplicates) == ([A, B], 0)
    assert plan.session is not None
    assert plan.session.create
    assert plan.session.changes == {
        "state": "open",
        "agents": ["dev", "qa"],
        "event_count": 2,
        "created_at": NOW,
        "last_seen_at": NOW,
        "tool_errors": 0,
        "first_event_micros": to_micros(parse_instant(A["at"])),
        "last_event_micros": to_micros(parse_instant(B["at"])),
    }


def test_a_later_batch_changes_the_session_only_by_transforms() -> None:
    plan = plan_ingest(open_session(), {"b": B}, {"b": None}, 0, NOW, INTERVAL)
    assert plan.session is not None
    assert not plan.session.create
    micros = to_micros(parse_instant(B["at"]))
    assert plan.session.changes == {
        "event_count": firestore.Increment(1),
        "agents": firestore.ArrayUnion(["qa"]),
        "first_event_micros": firestore.Minimum(micros),
        "last_event_micros": firestore.Maximum(micros),
    }


def test_last_seen_moves_once_a_heartbeat_interval_has_passed() -> None:
    stale = open_session(last_seen_at=NOW - INTERVAL)
    plan = plan_ingest(stale, {"b": B}, {}, 0, NOW, INTERVAL)
    assert plan.session is not None
    assert plan.session.changes["last_seen_at"] == NOW
    recent = open_session(last_seen_at=NOW - INTERVAL + timedelta(microseconds=1))
    plan = plan_ingest(recent, {"b": B}, {}, 0, NOW, INTERVAL)
    assert plan.session is not None
    assert "last_seen_at" not in plan.session.changes


def test_a_stored_event_sent_again_is_a_duplicate_and_changes_nothing() -> None:
    plan = plan_ingest(open_session(), {"a": A}, {"a": stored(A)}, 2, NOW, INTERVAL)
    assert (plan.fresh, plan.duplicates, plan.session) == ([], 3, None)


def test_an_expired_event_not_yet_deleted_is_received_anew() -> None:
    plan = plan_ingest(open_session(), {"a": A}, {"a": stored(A, expires_at=NOW)}, 0, NOW, INTERVAL)
    assert (plan.fresh, plan.duplicates) == ([A], 0)


def test_a_stored_event_sent_with_another_body_is_a_conflict() -> None:
    changed: Event = {**A, "type": "error"}
    with pytest.raises(ApiError, match="Event a was already received") as refused:
        plan_ingest(open_session(), {"a": changed}, {"a": stored(A)}, 0, NOW, INTERVAL)
    assert refused.value.code == ErrorCode.CONFLICT


@pytest.mark.parametrize("state", ["closed_normally", "closed_abnormally"])
def test_an_ended_session_takes_no_event_after_its_end(state: str) -> None:
    ended = {**open_session(), "state": state, "ended_at": NOW - timedelta(hours=2)}
    with pytest.raises(ApiError, match=f"has ended \\({state}\\)") as refused:
        plan_ingest(ended, {"a": A}, {}, 0, NOW, INTERVAL)  # type: ignore[arg-type]
    assert refused.value.code == ErrorCode.CONFLICT


def test_an_ended_session_keeps_what_arrives_late_but_happened_before_its_end() -> None:
    """An agent flushes its last telemetry as it exits, after its launcher ended the session."""
    ended: Session = {**open_session(), "state": SessionState.CLOSED, "ended_at": NOW}
    plan = plan_ingest(ended, {"a": A}, {}, 0, NOW, INTERVAL)
    assert plan.fresh == [A]


def test_a_session_silence_ended_is_reopened_by_a_record_after_its_end() -> None:
    ended: Session = {
        **open_session(),
        "state": SessionState.CLOSED,
        "cause": "turns_closed",
        "ended_at": NOW - timedelta(hours=2),
        "ended_by_silence": True,
    }
    plan = plan_ingest(ended, {"a": A}, {}, 0, NOW, INTERVAL)
    assert plan.fresh == [A]
    assert plan.session is not None
    assert {key: plan.session.changes[key] for key in RESUMED} == RESUMED
    assert plan.session.changes["last_seen_at"] == NOW
