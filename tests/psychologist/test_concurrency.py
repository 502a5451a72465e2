"""Event batches and decisions racing each other, with real threads against the local host.

Event batches into one session take turns on its index head without a lock: each lands,
with every event stored once. Decisions on one hypothesis contend on it; the emulator
serialises such transactions poorly, so a loser may answer `409` with `Retry-After`.
Nothing may answer `500`, store an event twice or lose a decision.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from functions.psychologist import store
from functions.psychologist.telemetry.event_index import Generation
from shared.clients import db
from tests.api import document
from tests.psychologist.conftest import Log, Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import SESSION, reopening_log

RETRY_LATER = {409, 503}


def at_once(calls: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def test_20_overlapping_batches_at_once_all_land_and_store_each_event_once(
    psy: Psychologist,
) -> None:
    log = Log()
    for index in range(105):
        log.add("dev-api" if index % 2 else "qa-bot", "tool.call", task=f"T-{index}")
    batches = [log.events[start : start + 10] for start in range(0, 100, 5)]
    replies = at_once([lambda b=batch: psy.ingest(SESSION, b) for batch in batches])
    assert [reply.status_code for reply in replies] == [200] * 20, [r.text for r in replies]
    counts = [reply.json() for reply in replies]
    assert sum(c["accepted"] for c in counts) == 105
    assert sum(c["duplicates"] for c in counts) == 200 - 105
    chunks = db().collection(f"projects/{psy.project}/sessions/{SESSION}/event_chunks").stream()
    stored = [event["id"] for c in chunks for event in json.loads(c.get("events_json"))]
    assert sorted(stored) == sorted(event["id"] for event in log.events)
    assert len(Generation(store.index_head(psy.project, SESSION).get().get("entries"))) == 105
    session = document(f"projects/{psy.project}/sessions/{SESSION}")
    assert (session["event_count"], session["agents"]) == (105, ["dev-api", "qa-bot"])
    ended = psy.end(SESSION, "closed").json()
    assert (ended["firstEventAt"], ended["lastEventAt"]) == (
        "2026-11-01T09:00:00.000Z",
        "2026-11-01T09:01:44.000Z",
    )


def test_decisions_at_once_on_one_hypothesis_all_stay_in_its_history(psy: Psychologist) -> None:
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    psy.settled(psy.analyse(SESSION))
    target = psy.hypotheses().json()[0]["id"]
    path = psy.path(f"/hypotheses/{target}/decision")
    statuses = ["accepted", "dismissed"] * 5
    replies = at_once(
        [
            lambda s=status, i=index: psy.api.post(
                path, {"status": s, "reason": f"decision {i}"}, psy.admin
            )
            for index, status in enumerate(statuses)
        ]
    )
    sent = [f"decision {index}" for index in range(len(statuses))]
    for reply in replies:
        assert reply.status_code == 200 or (
            reply.status_code in RETRY_LATER and "Retry-After" in reply.headers
        ), reply.text
    decided = sorted(
        reason for reason, reply in zip(sent, replies, strict=True) if reply.status_code == 200
    )
    assert decided
    decisions = db().collection(f"projects/{psy.project}/hypotheses/{target}/decisions")
    history = [snapshot.to_dict() or {} for snapshot in decisions.order_by("decidedAt").stream()]
    assert sorted(entry["reason"] for entry in history) == decided
    previous = ["proposed"] + [entry["status"] for entry in history[:-1]]
    assert [entry["previousStatus"] for entry in history] == previous
