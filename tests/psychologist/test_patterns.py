"""Patterns over summaries as the analysis worker stores them: a seeded corpus of sessions
with planted failures (several failures, each said in different words, and clean sessions),
regrouped by a refresh through HTTP, with the refresh worker, the Gemini test server's
embeddings (a stand-in for meaning, `cli/meaning.py`) and its label answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cli.gemini_stand_in import PATTERN_LABEL, Recorded, Reply, psychologist_summary
from cli.meaning import FAILURE_FAMILIES
from functions.loop import store as outcome_store
from functions.psychologist import store
from functions.psychologist.patterns import store as patterns_store
from tests.api import Configure, wait_for
from tests.psychologist.conftest import Log, Psychologist

AGENT = "builder"
FAMILIES = ("timeout", "permission", "failing_tests", "missing_file")
EACH = 5
CLEAN = 6


def seed_summary(
    psy: Psychologist, session_id: str, failure: str | None, ended_at: datetime, **extra: Any
) -> None:
    """A summary as the worker writes one: its claims cite events of the session."""
    cites = [f"{session_id}-e1", f"{session_id}-e2"]
    store.summary_ref(psy.project, session_id).set(
        {
            "session_id": session_id,
            "agent": AGENT,
            "ended_at": ended_at,
            "state": "closed_abnormally" if failure else "closed",
            "status": "summarised",
            "reason": None,
            "task": {"text": "Fix the build.", "event_ids": cites[:1]},
            "ending": {"text": "It ended.", "event_ids": cites[1:]},
            "failure": {"text": failure, "event_ids": cites} if failure else None,
            "refused": [],
            "model": "gemini-stand-in",
            "source": "analysis",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "created_at": ended_at,
            **extra,
        }
    )


def corpus(psy: Psychologist, now: datetime) -> dict[str, str]:
    """Planted sessions: session id → its family (None for a clean session)."""
    planted: dict[str, str] = {}
    for family in FAMILIES:
        for n, sentence in enumerate(FAILURE_FAMILIES[family][:EACH]):
            session_id = f"{family}-{n}"
            seed_summary(psy, session_id, sentence, now - timedelta(days=n + 1, hours=1))
            planted[session_id] = family
    for n in range(CLEAN):
        seed_summary(psy, f"clean-{n}", None, now - timedelta(days=n + 1))
    return planted


def refreshed(psy: Psychologist, **body: str) -> dict[str, Any]:
    started = psy.api.call("POST", psy.path("/patterns/refresh"), body, token=psy.member)
    assert started.status_code == 202, started.text
    refresh_id = started.json()["id"]

    def done() -> dict[str, Any] | None:
        read = psy.api.call("GET", psy.path(f"/patterns/refreshes/{refresh_id}"), token=psy.viewer)
        body: dict[str, Any] = read.json()
        return body if body["status"] in ("completed", "failed") else None

    settled: dict[str, Any] = wait_for(done, timeout=60)
    assert settled["status"] == "completed", settled
    return settled


def pattern_of_record(psy: Psychologist, session_id: str) -> str | None:
    """The pattern the session's outcome record keeps (a pattern's trial counts by it)."""
    snapshot = outcome_store.outcome_ref(psy.project, session_id, AGENT).get()
    return (snapshot.to_dict() or {}).get("pattern_id")


def members(psy: Psychologist, pattern_id: str) -> set[str]:
    reply = psy.api.call("GET", psy.path(f"/patterns/{pattern_id}"), token=psy.viewer)
    assert reply.status_code == 200, reply.text
    return {member["sessionId"] for member in reply.json()["members"]}


def test_a_refresh_recovers_the_planted_failures_counted_over_every_ended_session(
    psy: Psychologist,
) -> None:
    now = datetime.now(UTC)
    planted = corpus(psy, now)
    settled = refreshed(psy)
    assert settled["changes"]["sessionsEnded"] == len(planted) + CLEAN
    assert len(settled["changes"]["created"]) == len(FAMILIES)
    body = psy.patterns()
    assert body["coverage"] == {
        "sessionsEnded": len(planted) + CLEAN,
        "sessionsSummarised": len(planted) + CLEAN,
    }
    patterns = body["patterns"]
    assert len(patterns) == len(FAMILIES)
    for pattern in patterns:
        families = [planted[session] for session in members(psy, pattern["id"])]
        family = max(set(families), key=families.count)
        purity = families.count(family) / len(families)
        recall = families.count(family) / EACH
        assert purity >= 0.9
        assert recall >= 0.9
        sessions = pattern["sessions"]
        assert sessions["total"] == len(planted) + CLEAN
        assert sessions["low"] <= EACH / (len(planted) + CLEAN) <= sessions["high"]
        assert pattern["title"]
        assert {claim["sessionId"] for claim in pattern["evidence"]} <= set(
            members(psy, pattern["id"])
        )


def test_a_new_batch_of_one_failure_grows_its_pattern_and_keeps_its_id(psy: Psychologist) -> None:
    now = datetime.now(UTC)
    corpus(psy, now)
    refreshed(psy)
    before = {p["id"]: members(psy, p["id"]) for p in psy.patterns()["patterns"]}
    timeout_id = next(i for i, sessions in before.items() if "timeout-0" in sessions)
    later = ("The deploy timed out before it finished", "The request took too long and hung")
    for n, sentence in enumerate(later):
        seed_summary(psy, f"timeout-late-{n}", sentence, now - timedelta(hours=n + 1))
    settled = refreshed(psy)
    assert timeout_id in settled["changes"]["kept"]
    assert settled["changes"]["created"] == []
    grown = members(psy, timeout_id)
    assert grown == before[timeout_id] | {"timeout-late-0", "timeout-late-1"}
    assert pattern_of_record(psy, "timeout-late-0") == timeout_id
    assert pattern_of_record(psy, "clean-0") is None, "a clean session joins no pattern"


def test_a_label_citing_an_event_outside_the_pattern_is_refused_and_kept_with_its_reason(
    psy: Psychologist,
) -> None:
    now = datetime.now(UTC)
    for n, sentence in enumerate(FAILURE_FAMILIES["timeout"][:3]):
        seed_summary(psy, f"timeout-{n}", sentence, now - timedelta(days=n + 1))
    outside = {
        "title": "Timeouts",
        "description": "Runs time out.",
        "sugestao": "Set a shorter timeout.",
        "evidence": [{"sessionId": "timeout-0", "eventIds": ["not-cited"], "claim": "It hung."}],
    }
    psy.world.gemini.answer_side(PATTERN_LABEL, outside)
    psy.world.gemini.answer_side(PATTERN_LABEL, outside)
    refreshed(psy, agent=AGENT)
    (pattern,) = psy.patterns()["patterns"]
    assert pattern["title"] is None, "twice refused, the pattern is served untitled"
    assert pattern["description"] in FAILURE_FAMILIES["timeout"]
    read = psy.api.call("GET", psy.path(f"/patterns/{pattern['id']}"), token=psy.viewer).json()
    assert [claim["reason"] for claim in read["refused"]] == [
        "events not-cited are not cited by timeout-0's summary"
    ] * 2


def test_a_pattern_counts_its_sessions_cost_hypotheses_and_share_per_chosen_target(
    psy: Psychologist,
) -> None:
    now = datetime.now(UTC)
    for n, sentence in enumerate(FAILURE_FAMILIES["permission"][:4]):
        session_id = f"permission-{n}"
        seed_summary(psy, session_id, sentence, now - timedelta(days=1, minutes=n))
        store.session_ref(psy.project, session_id).set(
            {"usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.25}}
        )
        model = "claude-opus" if n < 3 else "claude-haiku"
        outcome_store.outcome_ref(psy.project, session_id, AGENT).set(
            {"selection": {"target": {"runtime": "claude-code", "model": model}}}
        )
    seed_summary(psy, "clean-0", None, now - timedelta(days=2))
    for session_id in ("permission-1", "clean-0"):
        store.hypotheses(psy.project).document(f"h-{session_id}").set(
            {"sessionId": session_id, "agenteAlvo": AGENT}
        )
    refreshed(psy)
    (pattern,) = psy.patterns()["patterns"]
    assert pattern["hypothesisIds"] == ["h-permission-1"], "a member session's, not another's"
    assert pattern["cost"] == {"inputTokens": 400, "outputTokens": 40, "usd": 1.0}
    rows = {(row["runtime"], row["model"]): row["sessions"] for row in pattern["byTarget"]}
    assert {key: (row["matching"], row["total"]) for key, row in rows.items()} == {
        ("claude-code", "claude-haiku"): (1, 1),
        ("claude-code", "claude-opus"): (3, 3),
        (None, None): (0, 1),
    }


def test_between_refreshes_a_new_session_joins_its_nearest_pattern_within_its_radius(
    psy: Psychologist,
) -> None:
    now = datetime.now(UTC)
    corpus(psy, now)
    refreshed(psy)
    before = {p["id"]: p["sessions"]["matching"] for p in psy.patterns()["patterns"]}
    seed_summary(psy, "timeout-new", "The job timed out and never finished", now)
    seed_summary(psy, "unlike-new", "The colour of the logo is wrong", now)
    swept = psy.sweep()
    path = f"projects/{psy.project}/summaries/timeout-new"
    assert swept["joined"] == [path]
    assert swept["refreshes"] == [], "a refresh was asked for within the day"
    after = {p["id"]: p["sessions"]["matching"] for p in psy.patterns()["patterns"]}
    grown = [pattern_id for pattern_id in after if after[pattern_id] == before[pattern_id] + 1]
    assert len(grown) == 1
    assert "timeout-new" in members(psy, grown[0])
    assert pattern_of_record(psy, "timeout-new") == grown[0]
    assert psy.sweep()["joined"] == [], "a joined session is not joined again"


def test_sessions_ended_through_http_are_summarised_by_the_worker_and_grouped_by_failure(
    psy: Psychologist, configure: Configure
) -> None:
    """The whole path: sessions logged and ended through HTTP, normal and abnormal ends
    alike, summarised by the analysis worker (an abnormal end in its analysis call, a
    normal one by the summary model; the Gemini test server's summary names the first tool
    error in its own words), then grouped by a refresh."""
    configure(PSYCHOLOGIST_NORMAL_END_SUMMARIES="on")
    psy.world.gemini.respond_with(analysis_with_summary)
    planted: dict[str, str] = {}
    for family in ("timeout", "missing_file"):
        for n, sentence in enumerate(FAILURE_FAMILIES[family][:4]):
            session_id = f"{family}-{n}"
            planted[session_id] = family
            log = Log()
            log.add(AGENT, "task.started", "t1")
            log.add(AGENT, "tool.error", "t1", tool="bash", error=sentence)
            log.add(AGENT, "task.finished", "t1")
            assert psy.ingest(session_id, log.events).status_code == 200
            state = "closed_abnormally" if n % 2 else "closed"
            assert psy.end(session_id, state).status_code == 200
    clean = Log()
    clean.add(AGENT, "task.started", "t1")
    clean.add(AGENT, "task.finished", "t1")
    assert psy.ingest("clean-0", clean.events).status_code == 200
    assert psy.end("clean-0", "closed").status_code == 200

    def summarised() -> bool:
        found = list(store.summaries(psy.project).stream())
        return len(found) == len(planted) + 1

    wait_for(summarised, timeout=60)
    states = {
        snapshot.id: (snapshot.to_dict() or {})["state"]
        for snapshot in store.summaries(psy.project).stream()
    }
    assert set(states.values()) == {"closed", "closed_abnormally"}
    refreshed(psy)
    body = psy.patterns()
    assert body["coverage"] == {"sessionsEnded": 9, "sessionsSummarised": 9}
    grouped = [
        sorted(planted[session] for session in members(psy, p["id"])) for p in body["patterns"]
    ]
    assert sorted(grouped) == [["missing_file"] * 4, ["timeout"] * 4]


def analysis_with_summary(recorded: Recorded) -> Reply:
    """An abnormal end's analysis: no hypothesis, and the session's summary as the summary
    model would give it."""
    summary = json.loads(psychologist_summary(recorded).text or "{}")
    return Reply(text=json.dumps({"hypotheses": [], "summary": summary}))


def test_an_admin_accepts_a_pattern_and_its_decisions_are_kept(psy: Psychologist) -> None:
    now = datetime.now(UTC)
    for n, sentence in enumerate(FAILURE_FAMILIES["timeout"][:3]):
        seed_summary(psy, f"timeout-{n}", sentence, now - timedelta(days=n + 1))
    refreshed(psy)
    (pattern,) = psy.patterns()["patterns"]
    path = psy.path(f"/patterns/{pattern['id']}/decision")
    refused = psy.api.call("POST", path, {"status": "accepted"}, token=psy.member)
    assert refused.status_code == 403
    accepted = psy.api.call(
        "POST", path, {"status": "accepted", "reason": "It recurs."}, token=psy.admin
    )
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["status"] == "accepted"
    assert [p["status"] for p in psy.patterns()["patterns"]] == ["accepted"]
    history = (
        patterns_store.pattern_ref(psy.project, pattern["id"]).collection("decisions").stream()
    )
    assert [(d.to_dict() or {})["reason"] for d in history] == ["It recurs."]
    refreshed(psy)
    assert [p["status"] for p in psy.patterns()["patterns"]] == ["accepted"], "a refresh keeps it"


def test_a_window_larger_than_a_page_is_read_whole(
    psy: Psychologist, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.psychologist.patterns import refresh

    monkeypatch.setattr(refresh, "SUMMARIES_PER_PAGE", 4)
    now = datetime.now(UTC)
    planted = corpus(psy, now)
    settled = refreshed(psy)
    assert settled["changes"]["sessionsEnded"] == len(planted) + CLEAN
    assert len(psy.patterns()["patterns"]) == len(FAMILIES)


def test_a_refresh_whose_embeddings_fail_settles_failed_and_changes_no_pattern(
    psy: Psychologist,
) -> None:
    """Gemini refuses the embedding request: the refresh settles `failed` with the cause,
    no pattern is written and no summary is grouped."""
    corpus(psy, datetime.now(UTC))
    psy.world.gemini.fail_embedding(400, message="the embedding request is refused")
    started = psy.api.call("POST", psy.path("/patterns/refresh"), {}, token=psy.member)
    refresh_id = started.json()["id"]

    def settled() -> dict[str, Any] | None:
        read = psy.api.call("GET", psy.path(f"/patterns/refreshes/{refresh_id}"), token=psy.viewer)
        body: dict[str, Any] = read.json()
        return body if body["status"] in ("completed", "failed") else None

    failed: dict[str, Any] = wait_for(settled, timeout=60)
    assert failed["status"] == "failed"
    assert failed["failure"]["code"]
    assert "refused" in (failed["failure"]["detail"] or "")
    assert psy.patterns()["patterns"] == []
    assert pattern_of_record(psy, "timeout-0") is None


def test_a_sweep_whose_embeddings_fail_joins_nothing_and_the_next_sweep_joins_them(
    psy: Psychologist,
) -> None:
    now = datetime.now(UTC)
    corpus(psy, now)
    refreshed(psy)
    seed_summary(psy, "timeout-new", "The job timed out and never finished", now)
    psy.world.gemini.fail_embedding(503, times=5)
    assert psy.sweep()["joined"] == []
    path = f"projects/{psy.project}/summaries/timeout-new"
    assert psy.sweep()["joined"] == [path]
