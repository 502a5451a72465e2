"""Event ingestion, listing with filters and pages, decisions, chunked analyses, the sweep."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from benchmarks.counting import CallCounter
from cli.emulator import Emulator, free_port
from cli.gemini_stand_in import Recorded, Reply
from cli.host import LocalHost
from functions.psychologist import store
from functions.psychologist.documents import Event
from functions.psychologist.telemetry.event_index import (
    GENERATION_EVENTS,
    Generation,
    entry,
    new_chunk_id,
)
from shared.clients import db
from shared.retention import from_micros, utcnow
from shared.validation import issues_for
from tests.api import Configure, all_documents, document, wait_for
from tests.psychologist.conftest import Log, Psychologist, expire_indexed, hypothesis

SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
OTHER = "01JC4Z8QK3M7YV2N5T9B0PXHRB"


def test_resending_events_counts_duplicates_and_tracks_the_session(psy: Psychologist) -> None:
    log = Log()
    first = [log.add("dev-api", "task.opened", task="T-1"), log.add("qa-bot", "message")]
    assert psy.ingest(SESSION, first).json() == {"accepted": 2, "duplicates": 0}
    second = [*first, log.add("dev-api", "task.done", task="T-1")]
    assert psy.ingest(SESSION, second).json() == {"accepted": 1, "duplicates": 2}
    session = document(f"projects/{psy.project}/sessions/{SESSION}")
    assert session["agents"] == ["dev-api", "qa-bot"]
    assert session["event_count"] == 3
    assert session["state"] == "open"
    assert from_micros(session["first_event_micros"]).isoformat().startswith("2026-11-01T09:00:00")
    assert from_micros(session["last_event_micros"]).isoformat().startswith("2026-11-01T09:00:02")


def test_an_expired_event_not_yet_deleted_is_received_again_not_counted_a_duplicate(
    psy: Psychologist,
) -> None:
    """Firestore's TTL deletes an expired event some time after `expires_at`; until then
    the event is gone for every reader, so sending it again stores it again."""
    event = Log().add("dev-api", "task.opened", task="T-1")
    psy.ingest(SESSION, [event])
    expire_indexed(psy.project, SESSION, utcnow())
    for snapshot in (
        db().collection(f"projects/{psy.project}/sessions/{SESSION}/event_chunks").stream()
    ):
        snapshot.reference.update({"expires_at": utcnow()})
    assert psy.ingest(SESSION, [event]).json() == {"accepted": 1, "duplicates": 0}
    audit = psy.api.call(
        "GET", psy.path(f"/sessions/{SESSION}/events?ids={event['id']}"), token=psy.viewer
    )
    assert audit.status_code == 200, audit.text
    assert [found["id"] for found in audit.json()["events"]] == [event["id"]]


def test_a_different_body_under_a_known_event_id_is_409_and_writes_nothing(
    psy: Psychologist,
) -> None:
    log = Log()
    event = log.add("dev-api", "task.opened", task="T-1")
    psy.ingest(SESSION, [event])
    before = all_documents()
    changed = {**event, "type": "task.done"}
    reply = psy.ingest(SESSION, [log.add("dev-api", "message"), changed])
    assert reply.status_code == 409
    assert all_documents() == before


def test_a_batch_over_500_events_is_refused(psy: Psychologist) -> None:
    log = Log()
    reply = psy.ingest(SESSION, [log.add("dev-api", "heartbeat") for _ in range(501)])
    assert reply.status_code == 400
    assert reply.json()["issues"][0]["path"] == ["events"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"id": "not-a-ulid"}, ["events", 0, "id"]),
        ({"at": "yesterday"}, ["events", 0, "at"]),
        ({"type": "Not A Type"}, ["events", 0, "type"]),
        ({"extra": 1}, ["events", 0]),
        ({"data": {"blob": "x" * 9000}}, ["events", 0, "data"]),
    ],
)
def test_a_malformed_event_is_refused_with_its_path(
    psy: Psychologist, change: dict[str, Any], path: list[Any]
) -> None:
    event = {**Log().add("dev-api", "message"), **change}
    reply = psy.ingest(SESSION, [event])
    assert reply.status_code == 400, reply.text
    assert path in [issue["path"] for issue in reply.json()["issues"]]


def test_an_ended_session_takes_no_event_after_its_end_but_keeps_a_late_flush(
    psy: Psychologist,
) -> None:
    """An event dated after an ended session's end is 409; one dated before it (an agent's
    last telemetry, flushed as it exits) is kept; a batch it already holds, sent again (an
    exporter's retry), is answered as duplicates."""
    log = Log()
    first = [log.add("dev-api", "message")]
    psy.ingest(SESSION, first)
    psy.end(SESSION, "closed")
    after = Log(start=datetime.now(UTC) + timedelta(hours=1)).add("dev-api", "message")
    assert psy.ingest(SESSION, [after]).status_code == 409
    late = psy.ingest(SESSION, [log.add("dev-api", "message")])
    assert late.json() == {"accepted": 1, "duplicates": 0}
    assert psy.ingest(SESSION, first).json() == {"accepted": 0, "duplicates": 1}


def test_ingest_needs_member_and_the_psychologist_capability(psy: Psychologist) -> None:
    event = Log().add("dev-api", "message")
    assert psy.ingest(SESSION, [event], token=psy.viewer).status_code == 403
    research_only = psy.world.user(psy.project, "rui", "admin")
    assert psy.ingest(SESSION, [event], token=research_only).status_code == 403


def _analyse_with(psy: Psychologist, session: str, log: Log, agents: list[str], count: int) -> None:
    by_agent = {agent: [e["id"] for e in log.events if e["agent"] == agent] for agent in agents}
    psy.world.gemini.answer_json(
        {
            "hypotheses": [
                hypothesis(
                    agents[i % len(agents)],
                    by_agent[agents[i % len(agents)]][:1],
                    observacao=f"finding {i}",
                )
                for i in range(count)
            ]
        }
    )
    analysis = psy.settled(psy.analyse(session))
    assert (analysis["status"], analysis["counts"]["hypotheses"]) == ("completed", count)


@pytest.fixture
def many(psy: Psychologist) -> Psychologist:
    """23 hypotheses: 10 and 5 in SESSION, 8 in OTHER, about dev-api and qa-bot."""
    for session, counts in ((SESSION, (10, 5)), (OTHER, (8,))):
        log = Log()
        log.add("dev-api", "task.opened", task="T-1")
        for count in counts:
            log.add("qa-bot", "message")
            psy.ingest(session, log.events)
            _analyse_with(psy, session, log, ["dev-api", "qa-bot"], count)
    return psy


def _all_pages(psy: Psychologist, **query: Any) -> list[list[dict[str, Any]]]:
    pages = []
    while True:
        reply = psy.hypotheses(**query)
        assert reply.status_code == 200, reply.text
        assert issues_for("psychologist/hypotheses.response", reply.json()) == []
        pages.append(reply.json())
        token = reply.headers.get("X-Next-Page-Token")
        if not token:
            return pages
        query["pageToken"] = token


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, 23),
        ({"sessionId": SESSION}, 15),
        ({"agenteAlvo": "qa-bot"}, 11),
        ({"sessionId": SESSION, "status": "proposed"}, 15),
        ({"sessionId": OTHER, "agenteAlvo": "dev-api"}, 4),
        ({"status": "proposed", "agenteAlvo": "qa-bot"}, 11),
        ({"sessionId": OTHER, "agenteAlvo": "dev-api", "status": "proposed"}, 4),
        ({"status": "accepted"}, 0),
    ],
)
def test_filters_and_pages_return_every_hypothesis_once_newest_first(
    many: Psychologist, query: dict[str, str], expected: int
) -> None:
    pages = _all_pages(many, limit=4, **query)
    listed = [h for page in pages for h in page]
    assert len(listed) == expected
    assert len({h["id"] for h in listed}) == expected
    assert all(len(page) <= 4 for page in pages)
    keys = [(h["createdAt"], h["id"]) for h in listed]
    assert keys == sorted(keys, reverse=True)
    for field, value in query.items():
        assert all(h[field] == value for h in listed)


def test_the_default_page_is_50_and_the_limit_at_most_200(many: Psychologist) -> None:
    assert len(many.hypotheses().json()) == 23
    assert many.hypotheses(limit=201).status_code == 400
    assert many.hypotheses(pageToken="bm90LWEtdG9rZW4").status_code == 400


def test_decisions_record_who_and_when_and_keep_their_history(many: Psychologist) -> None:
    target = many.hypotheses(limit=1).json()[0]
    path = many.path(f"/hypotheses/{target['id']}/decision")
    accepted = many.api.post(
        path, {"status": "accepted", "reason": "Matches what we saw."}, many.admin
    )
    assert accepted.status_code == 200, accepted.text
    body = accepted.json()
    assert issues_for("psychologist/hypothesis", body) == []
    assert body["status"] == "accepted"
    assert body["decidedBy"] == {
        "userId": "ada",
        "credentialClass": "personal_access_token",
        "displayName": None,
    }
    assert body["decidedAt"] is not None
    dismissed = many.api.post(path, {"status": "dismissed"}, many.admin).json()
    assert dismissed["status"] == "dismissed"
    history = (
        db()
        .collection(f"projects/{many.project}/hypotheses/{target['id']}/decisions")
        .order_by("decidedAt")
        .stream()
    )
    assert [(d.get("previousStatus"), d.get("status"), d.get("reason")) for d in history] == [
        ("proposed", "accepted", "Matches what we saw."),
        ("accepted", "dismissed", None),
    ]
    assert [h["id"] for h in _all_pages(many, status="dismissed")[0]] == [target["id"]]


def test_decisions_are_refused_to_a_viewer_and_without_the_capability(many: Psychologist) -> None:
    target = many.hypotheses(limit=1).json()[0]
    path = many.path(f"/hypotheses/{target['id']}/decision")
    assert many.api.post(path, {"status": "accepted"}, many.viewer).status_code == 403
    no_capability = many.world.user(many.project, "bob", "owner", capabilities=("agent:research",))
    assert many.api.post(path, {"status": "accepted"}, no_capability).status_code == 403
    assert (
        many.api.post(
            many.path("/hypotheses/01JC4Z8QK3M7YV2N5T9B0PXZZZ/decision"),
            {"status": "accepted"},
            many.admin,
        ).status_code
        == 404
    )


EVENT_ID = re.compile(r'"id":"([0-9A-Z]{26})","agent":"([\w.-]+)"')


def model_that_cites_what_it_reads(request: Recorded) -> Reply:
    """Cites the first event shown in the prompt, for the agent that emitted it."""
    first_id, agent = EVENT_ID.findall(request.prompt.split("<session_events>")[1])[0]
    return Reply(text=json.dumps({"hypotheses": [hypothesis(agent, [first_id])]}), usage=(1500, 60))


def test_a_log_larger_than_the_budget_is_analysed_in_chunks_citing_real_events(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_INPUT_TOKEN_BUDGET="3000")
    log = Log()
    for index in range(600):
        log.add(
            "dev-api" if index % 3 else "qa-bot",
            "tool.call",
            task=f"T-{index % 7}",
            tool="pytest",
            note="x" * 40,
        )
    for start in range(0, 600, 500):
        assert psy.ingest(SESSION, log.events[start : start + 500]).status_code == 200
    psy.world.gemini.respond_with(model_that_cites_what_it_reads)
    analysis = psy.settled(psy.analyse(SESSION))
    assert analysis["status"] == "completed", analysis
    chunks = analysis["counts"]["chunks"]
    assert chunks >= 5
    assert [c["phase"] for c in analysis["calls"]] == [
        f"chunk {i}/{chunks}" for i in range(1, chunks + 1)
    ] + ["combine"]
    assert all(c["estimatedInputTokens"] <= 3000 for c in analysis["calls"])
    assert all(
        len(r.prompt) + len(r.body["systemInstruction"]["parts"][0]["text"]) <= 4 * 3000
        for r in psy.world.gemini.requests
    )
    assert analysis["usage"]["inputTokens"] == 1500 * (chunks + 1)
    known = {event["id"] for event in log.events}
    for listed in psy.hypotheses().json():
        assert set(listed["evidenceEventIds"]) <= known


def test_the_local_host_runs_the_sweep_on_its_schedule(
    psy: Psychologist, emulator: Emulator, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1")
    psy.ingest(SESSION, [Log().add("dev-api", "message")])
    psy.world.gemini.answer_json({"hypotheses": []})
    session = db().document(f"projects/{psy.project}/sessions/{SESSION}")
    scheduled = LocalHost(free_port(), emulator, owns_emulator=False, schedule_interval_s=0.3)
    scheduled.scheduler.start()
    try:
        wait_for(lambda: session.get().get("state") != "open")
    finally:
        scheduled.scheduler.stop()
        scheduled.server.server_close()
    stored = session.get().to_dict() or {}
    assert (stored["state"], stored["cause"]) == ("closed_abnormally", "heartbeat_timeout")


def test_signals_stay_small_however_large_the_log(psy: Psychologist) -> None:
    log = Log()
    for task in range(30):
        for _ in range(3):
            log.add("dev-api", "task.reopened", task=f"T-{task}")
    for _ in range(40):
        log.add("dev-api", "tool.error", tool="pytest", error="exit 1")
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": []})
    analysis = psy.settled(psy.analyse(SESSION))
    signals = analysis["signals"]
    assert len(signals) == 20
    assert signals[0]["summary"] == "the same tool error 40 times (pytest: exit 1)"
    assert len(signals[0]["eventIds"]) == 10
    assert all(len(signal["eventIds"]) <= 10 for signal in signals)
    prompt = psy.world.gemini.requests[0].prompt
    assert len(prompt.split("<session_events>")[0]) < 8000


def test_the_decision_history_is_served_newest_first_to_a_viewer(many: Psychologist) -> None:
    target = many.hypotheses(limit=1).json()[0]
    decide = many.path(f"/hypotheses/{target['id']}/decision")
    many.api.post(decide, {"status": "accepted", "reason": "Seen twice."}, many.admin)
    many.api.post(decide, {"status": "dismissed", "reason": "Not again."}, many.admin)
    history = many.path(f"/hypotheses/{target['id']}/decisions")
    reply = many.api.call("GET", history, token=many.viewer)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert issues_for("psychologist/decisions.response", body) == []
    assert [(d["previousStatus"], d["status"], d["reason"]) for d in body["decisions"]] == [
        ("accepted", "dismissed", "Not again."),
        ("proposed", "accepted", "Seen twice."),
    ]
    assert {d["decidedBy"]["userId"] for d in body["decisions"]} == {"ada"}
    untouched = many.path(f"/hypotheses/{many.hypotheses(limit=2).json()[1]['id']}/decisions")
    assert many.api.call("GET", untouched, token=many.viewer).json()["decisions"] == []
    unknown = many.path("/hypotheses/01JC4Z8QK3M7YV2N5T9B0PXZZZ/decisions")
    assert many.api.call("GET", unknown, token=many.viewer).status_code == 404


def test_the_session_heartbeat_moves_at_most_once_per_interval(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="3000")
    log = Log()
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    session = db().document(f"projects/{psy.project}/sessions/{SESSION}")
    first_seen = session.get().get("last_seen_at")
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    assert session.get().get("last_seen_at") == first_seen
    session.update({"last_seen_at": first_seen - timedelta(seconds=301)})
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    assert session.get().get("last_seen_at") > first_seen
    assert session.get().get("event_count") == 3


def test_a_batch_of_new_events_reads_two_documents_and_writes_three(
    psy: Psychologist, counter: CallCounter, configure: Configure
) -> None:
    """The session and the index head are read; a chunk, the head and the session are
    written: no document per event (the caller's token is remembered, as in production)."""
    configure(AUTH_CACHE_SECONDS="60")
    log = Log()
    psy.ingest(SESSION, [log.add("dev-api", "message")])
    counter.clear()
    batch = [log.add("dev-api", "message") for _ in range(100)]
    assert psy.ingest(SESSION, batch).json() == {"accepted": 100, "duplicates": 0}
    assert (counter.reads, counter.writes) == (2, 3)
    counter.clear()
    assert psy.ingest(SESSION, batch).json() == {"accepted": 0, "duplicates": 100}
    assert (counter.reads, counter.writes) == (2, 0)
    stored = all_documents()
    assert not [path for path in stored if "/events/" in path]
    assert len([path for path in stored if "/event_index/" in path]) == 1


def test_events_sealed_into_an_older_generation_stay_duplicates_and_readable_by_id(
    psy: Psychologist,
) -> None:
    log = Log()
    first = [log.add("dev-api", "message") for _ in range(5)]
    psy.ingest(SESSION, first)
    head = store.index_head(psy.project, SESSION)
    filler = b"".join(
        entry(
            cast(Event, Log().add(f"filler-{n}", "message")),
            new_chunk_id(),
            0,
            utcnow() + timedelta(hours=1),
        )
        for n in range(GENERATION_EVENTS - 5 - 50)
    )
    head.update({"entries": head.get().get("entries") + filler})
    later = [log.add("dev-api", "message") for _ in range(100)]
    assert psy.ingest(SESSION, later).json() == {"accepted": 100, "duplicates": 0}
    sealed = store.index_generation(psy.project, SESSION, "0").get()
    assert len(Generation(sealed.get("entries"))) == GENERATION_EVENTS - 50
    assert len(Generation(head.get().get("entries"))) == 100
    assert psy.ingest(SESSION, [*first, later[0]]).json() == {"accepted": 0, "duplicates": 6}
    changed = {**first[1], "type": "error"}
    assert psy.ingest(SESSION, [changed]).status_code == 409
    ids = f"{first[0]['id']},{later[-1]['id']}"
    audit = psy.api.call("GET", psy.path(f"/sessions/{SESSION}/events?ids={ids}"), token=psy.viewer)
    assert audit.json() == {"events": [first[0], later[-1]], "missing": []}
