"""An agent's standing instructions through HTTP: every change a new immutable version,
a rollback a new version with an earlier text, and the version in force served at each
session's start and kept with its frozen choice and outcome record."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from benchmarks.counting import CallCounter
from cli.host import LocalHost
from functions.loop import store as outcome_store
from tests.agentconnect.conftest import AGENT, Connect, answer
from tests.api import Configure, all_documents, document, wait_for

TEXT_LIMIT = 8_000
LINKED_AS = "dev-api"


def written(connect: Connect, text: str, reason: str | None = None) -> dict[str, Any]:
    body = {"text": text} if reason is None else {"text": text, "reason": reason}
    reply = connect.put_instructions(body)
    assert reply.status_code == 200, reply.text
    found: dict[str, Any] = reply.json()
    return found


def current(connect: Connect) -> Any:
    return connect.api.call("GET", connect.path("/instructions"), token=connect.viewer)


def versions(connect: Connect, query: str = "") -> Any:
    return connect.api.call(
        "GET", connect.path(f"/instructions/versions{query}"), token=connect.viewer
    )


def version_document(connect: Connect, version: int) -> dict[str, Any]:
    return document(f"orgs/{connect.org}/agents/{AGENT}/instructions/{version}")


def test_a_put_makes_version_one_and_the_read_serves_it(connect: Connect) -> None:
    assert current(connect).status_code == 404
    made = written(connect, "Run the tests before every commit.", reason="flaky merges")
    assert made["version"] == 1
    assert made["text"] == "Run the tests before every commit."
    assert (made["createdBy"], made["reason"], made["from"]) == ("ada", "flaky merges", None)
    assert current(connect).json() == made


def test_each_put_is_a_new_version_and_the_old_ones_stay(connect: Connect) -> None:
    first = written(connect, "one")
    second = written(connect, "two")
    assert (first["version"], second["version"]) == (1, 2)
    assert current(connect).json() == second
    assert version_document(connect, 1)["text"] == "one"


def test_the_versions_list_is_newest_first_and_paged(connect: Connect) -> None:
    """Each as its PUT answered it, with no sessions' rates: the agent is not linked."""
    made = [{**written(connect, f"text {n}"), "sessions": None} for n in range(1, 6)]
    first = versions(connect, "?limit=2")
    assert first.status_code == 200, first.text
    assert first.json() == [made[4], made[3]]
    token = first.headers["X-Next-Page-Token"]
    second = versions(connect, f"?limit=2&pageToken={token}")
    assert second.json() == [made[2], made[1]]
    last = versions(connect, f"?limit=2&pageToken={second.headers['X-Next-Page-Token']}")
    assert last.json() == [made[0]]
    assert "X-Next-Page-Token" not in last.headers
    assert versions(connect).json() == made[::-1]


def test_the_versions_of_an_agent_without_instructions_are_none(connect: Connect) -> None:
    reply = versions(connect)
    assert (reply.status_code, reply.json()) == (200, [])


def test_a_rollback_serves_the_old_text_again_as_a_new_version(connect: Connect) -> None:
    written(connect, "Keep answers short.")
    written(connect, "Explain every step at length.")
    reply = connect.put_instructions({"fromVersion": 1, "reason": "longer answers cost more"})
    assert reply.status_code == 200, reply.text
    rolled = reply.json()
    assert rolled["version"] == 3
    assert rolled["text"] == "Keep answers short."
    assert (rolled["reason"], rolled["from"]) == ("longer answers cost more", None)
    assert current(connect).json() == rolled
    assert [v["text"] for v in versions(connect).json()] == [
        "Keep answers short.",
        "Explain every step at length.",
        "Keep answers short.",
    ]
    assert version_document(connect, 3)["rolled_back_from"] == 1


def test_a_rollback_to_a_version_that_never_was_is_404_and_writes_nothing(
    connect: Connect,
) -> None:
    written(connect, "only")
    before = all_documents()
    reply = connect.put_instructions({"fromVersion": 2})
    assert reply.status_code == 404, reply.text
    assert all_documents() == before


@pytest.mark.parametrize(
    "body",
    [
        {"text": "x", "fromVersion": 1},
        {"reason": "no text"},
        {"text": ""},
        {"fromVersion": 0},
    ],
    ids=["both", "neither", "empty text", "version zero"],
)
def test_a_body_that_is_neither_a_text_nor_a_rollback_is_refused(
    connect: Connect, body: dict[str, Any]
) -> None:
    assert connect.put_instructions(body).status_code == 400


def test_text_up_to_the_limit_is_kept_and_beyond_it_refused_with_nothing_written(
    connect: Connect,
) -> None:
    at_limit = "é" * TEXT_LIMIT
    assert written(connect, at_limit)["text"] == at_limit
    before = all_documents()
    reply = connect.put_instructions({"text": "a" * (TEXT_LIMIT + 1)})
    assert reply.status_code == 400, reply.text
    assert all_documents() == before


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_only_an_admin_may_put(connect: Connect, role: str) -> None:
    before = all_documents()
    reply = connect.put_instructions({"text": "Be careful."}, token=getattr(connect, role))
    assert reply.status_code == 403, reply.text
    assert all_documents() == before


def test_puts_at_once_make_consecutive_versions_none_lost(connect: Connect) -> None:
    texts = [f"text {n}" for n in range(6)]
    with ThreadPoolExecutor(max_workers=len(texts)) as pool:
        replies = list(pool.map(lambda text: connect.put_instructions({"text": text}), texts))
    assert [r.status_code for r in replies] == [200] * len(texts), [r.text for r in replies]
    assert sorted(r.json()["version"] for r in replies) == list(range(1, len(texts) + 1))
    listed = versions(connect).json()
    assert [v["version"] for v in listed] == list(range(len(texts), 0, -1))
    assert sorted(v["text"] for v in listed) == texts
    assert {**current(connect).json(), "sessions": None} == listed[0]


def link(connect: Connect) -> str:
    """Link the agent to a new project its admin may view; the project's id."""
    project = connect.world.tenant("project")
    connect.world.member(project, "ada", "viewer")
    body = {"projectId": project, "agent": LINKED_AS}
    reply = connect.api.call("PUT", connect.path("/outcome-source"), body, connect.admin)
    assert reply.status_code == 200, reply.text
    return project


def outcome_choice(project: str, session_id: str) -> dict[str, Any]:
    path = outcome_store.outcome_ref(project, session_id, LINKED_AS).path
    record = wait_for(lambda: outcome_store.outcome_ref(project, session_id, LINKED_AS).get())
    assert record.exists, path
    choice: dict[str, Any] = wait_for(lambda: document(path).get(outcome_store.SELECTION))
    return choice


def test_a_start_serves_the_current_version_and_keeps_it_with_the_choice_and_outcome(
    configured: Connect,
) -> None:
    project = link(configured)
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    written(configured, "first")
    made = written(configured, "Run the linter before you push.")
    started = configured.start()
    assert started["instructions"] == {"version": 2, "text": "Run the linter before you push."}
    assert made["version"] == 2
    configured.frozen(started["seq"])
    agent = f"orgs/{configured.org}/agents/{AGENT}"
    assert document(f"{agent}/agent_sessions/{started['sessionId']}")["instructions_version"] == 2
    assert document(f"{agent}/evaluations/{started['seq']}")["instructions_version"] == 2
    assert outcome_choice(project, started["sessionId"])["instructions_version"] == 2


def test_a_start_of_an_agent_without_instructions_serves_none(configured: Connect) -> None:
    project = link(configured)
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    started = configured.start()
    assert started["instructions"] is None
    configured.frozen(started["seq"])
    evaluation = document(f"orgs/{configured.org}/agents/{AGENT}/evaluations/{started['seq']}")
    assert "instructions_version" not in evaluation
    assert outcome_choice(project, started["sessionId"])["instructions_version"] is None


def test_a_start_frozen_on_the_default_target_keeps_its_version_too(
    configured: Connect, configure: Configure
) -> None:
    configure(AGENTCONNECT_ORG_TOKEN_BUDGET="100")
    configured.world.gemini.answer_json(answer(True, 0.9), usage=(90, 10), thoughts=0)
    configured.frozen(configured.start()["seq"])
    project = link(configured)
    written(configured, "Ask before deleting files.")
    started = configured.start("Past the budget")
    assert started["instructions"]["version"] == 1
    assert configured.frozen(started["seq"])["outcome"] == "fallback"
    evaluation = document(f"orgs/{configured.org}/agents/{AGENT}/evaluations/{started['seq']}")
    assert evaluation["instructions_version"] == 1
    assert outcome_choice(project, started["sessionId"])["instructions_version"] == 1


def test_a_session_started_after_a_change_gets_the_new_version(configured: Connect) -> None:
    written(configured, "old")
    before = configured.start()
    written(configured, "new")
    after = configured.start()
    assert (before["instructions"]["text"], after["instructions"]["text"]) == ("old", "new")


def test_serving_instructions_costs_a_start_no_further_read(
    configured: Connect, counter: CallCounter, configure: Configure, host: LocalHost
) -> None:
    """A start and its evaluation read as many documents with instructions as without:
    the current version rides on the agent document the start reads anyway. Each start
    is counted until its worker has frozen it (the probe writes but reads nothing)."""
    configure(AUTH_CACHE_SECONDS="60")
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))

    def reads_of_a_start() -> int:
        counter.clear()
        configured.start()
        assert host.delivered_probe(timeout=10)
        assert host.in_flight.wait_idle(timeout=30)
        return counter.reads

    reads_of_a_start()
    without = reads_of_a_start()
    written(configured, "Run the tests first.")
    reads_of_a_start()
    assert reads_of_a_start() == without
