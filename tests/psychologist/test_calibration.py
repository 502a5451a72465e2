"""Calibration: acceptance at each band of the model's self-reported confidence, counted
with aggregation queries, for one agent or all, within a time window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.counting import CallCounter
from shared.clients import db
from shared.retention import iso
from tests.psychologist.conftest import Psychologist

NOW = datetime.now(UTC)


def stored(psy: Psychologist, *hypotheses: tuple[float, str, str, int]) -> None:
    """(confiancaPercent, status, agent, days ago) each, written as the worker stores them."""
    batch = db().batch()
    for index, (confidence, status, agent, days) in enumerate(hypotheses):
        created = NOW - timedelta(days=days, seconds=index)
        batch.set(
            db().document(f"projects/{psy.project}/hypotheses/H{index:03d}"),
            {
                "id": f"H{index:03d}",
                "projectId": psy.project,
                "agenteAlvo": agent,
                "confiancaPercent": confidence,
                "status": status,
                "createdAt": created,
                "updatedAt": created,
            },
        )
    batch.commit()


def calibration(psy: Psychologist, **query: str) -> Any:
    suffix = "&".join(f"{key}={value}" for key, value in query.items())
    reply = psy.api.call("GET", psy.path(f"/calibration?{suffix}"), token=psy.viewer)
    assert reply.status_code == 200, reply.text
    return reply.json()


def rows(body: Any) -> list[tuple[int, int, int, int, float | None]]:
    return [
        (b["hypotheses"], b["accepted"], b["dismissed"], b["proposed"], b["acceptedRate"])
        for b in body["bands"]
    ]


LOG = (
    (10, "accepted", "dev-api", 1),
    (15, "dismissed", "dev-api", 1),
    (30, "proposed", "dev-api", 2),
    (50, "accepted", "dev-api", 3),
    (55, "accepted", "qa-bot", 3),
    (59.5, "dismissed", "dev-api", 4),
    (79.9, "dismissed", "dev-api", 5),
    (90, "accepted", "dev-api", 6),
    (100, "accepted", "dev-api", 7),
    (95, "accepted", "dev-api", 200),
)


def test_each_band_counts_its_hypotheses_and_how_often_they_were_accepted(
    psy: Psychologist,
) -> None:
    stored(psy, *LOG)
    body = calibration(psy)
    assert [(b["fromPercent"], b["toPercent"]) for b in body["bands"]] == [
        (0, 20),
        (20, 40),
        (40, 60),
        (60, 80),
        (80, 100),
    ]
    assert rows(body) == [
        (2, 1, 1, 0, 0.5),
        (1, 0, 0, 1, None),
        (3, 2, 1, 0, 0.6667),
        (1, 0, 1, 0, 0.0),
        (2, 2, 0, 0, 1.0),
    ]
    assert body["agenteAlvo"] is None


def test_one_agent_and_a_window_narrow_what_is_counted(psy: Psychologist) -> None:
    stored(psy, *LOG)
    one = calibration(psy, agenteAlvo="dev-api")
    assert [b["hypotheses"] for b in one["bands"]] == [2, 1, 2, 1, 2]
    since = iso(NOW - timedelta(days=3, hours=12)).replace("+", "%2B")
    recent = calibration(psy, **{"from": since})
    assert [b["hypotheses"] for b in recent["bands"]] == [2, 1, 2, 0, 0]
    whole = calibration(psy, **{"from": iso(NOW - timedelta(days=365))})
    retained = [h for h in LOG if h[3] < 90]
    assert sum(b["hypotheses"] for b in whole["bands"]) == len(retained) == len(LOG) - 1


def test_each_band_counts_the_stopped_trials_and_those_that_found_the_change_helpful(
    psy: Psychologist,
) -> None:
    """Trials carry their hypothesis's confidence, agent and creation: a band counts its
    stopped trials and the improved ones among them; a running trial is not counted."""
    trials = (
        (72, "stopped", "improved", "dev-api"),
        (75, "stopped", "no_clear_change", "dev-api"),
        (65, "running", None, "dev-api"),
        (90, "stopped", "improved", "qa-bot"),
    )
    batch = db().batch()
    for index, (confidence, status, verdict, agent) in enumerate(trials):
        batch.set(
            db().document(f"projects/{psy.project}/trials/T{index}"),
            {
                "confiancaPercent": confidence,
                "status": status,
                "verdict": verdict,
                "agenteAlvo": agent,
                "createdAt": NOW - timedelta(days=1),
            },
        )
    batch.commit()
    found = [b["trials"] for b in calibration(psy)["bands"]]
    assert found[3] == {"stopped": 2, "helpful": 1, "helpfulRate": 0.5}
    assert found[4] == {"stopped": 1, "helpful": 1, "helpfulRate": 1.0}
    assert found[0] == {"stopped": 0, "helpful": 0, "helpfulRate": None}
    only = [b["trials"]["stopped"] for b in calibration(psy, agenteAlvo="qa-bot")["bands"]]
    assert only == [0, 0, 0, 0, 1]


def test_the_counts_come_from_aggregation_queries_not_from_reading_hypotheses(
    psy: Psychologist, counter: CallCounter
) -> None:
    stored(psy, *LOG)
    counter.calls.clear()
    calibration(psy)
    assert "RunQuery" not in counter.calls
    assert counter.calls.count("RunAggregationQuery") == 25


def test_a_window_that_ends_before_it_starts_is_refused(psy: Psychologist) -> None:
    reply = psy.api.call(
        "GET",
        psy.path("/calibration?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"),
        token=psy.viewer,
    )
    assert reply.status_code == 400
    assert reply.json()["code"] == "invalid_request"


def test_a_hypothesis_past_its_retention_is_not_counted_before_firestore_deletes_it(
    psy: Psychologist,
) -> None:
    """Firestore's TTL deletes an expired document hours or days later; until then the
    count must not see it, even in a window that reaches back that far."""
    stored(psy, (90, "accepted", "dev-api", 1), (90, "accepted", "dev-api", 91))
    body = calibration(psy, **{"from": iso(NOW - timedelta(days=120))})
    assert rows(body)[4][:2] == (1, 1)
    assert body["from"] >= iso(NOW - timedelta(days=90))
