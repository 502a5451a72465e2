"""Model selection judged by how its sessions end: an agent linked to the project its
sessions are logged in, sessions started, logged and ended under the same ids, and a
report whose counts are what was sent; exploration whose estimates a person can act on."""

from __future__ import annotations

import pytest

from functions.loop.randomization import unit_hash
from shared.clients import db
from shared.validation import issues_for
from tests.agentconnect.conftest import DEFAULT, selection_with
from tests.api import Configure
from tests.loop.linked import (
    AGENT_NAME,
    CONTAINER,
    PRO,
    Loop,
    answering,
    exploring_ids,
    key,
    run_explored,
)


def test_a_linked_agents_report_counts_exactly_what_was_sent(loop: Loop) -> None:
    """Six sessions are started, logged and ended under the same ids in the linked
    project; one more is never logged and one is logged under another agent name. The
    report counts each target's sessions, abnormal ends and reopened tasks as sent, says
    which rule led there, and counts the two it could not join."""
    assert loop.link().status_code == 200
    sent = [
        ("deep-1", "closed", True),
        ("deep-2", "closed_abnormally", False),
        ("deep-3", "closed", False),
        ("plain-1", "closed_abnormally", True),
        ("plain-2", "closed_abnormally", False),
        ("plain-3", "closed", False),
    ]
    for title, state, reopened in sent:
        started = loop.connect.start(title, sessionId=f"s-{title}")
        loop.connect.frozen(started["seq"])
        loop.log_and_end(started["sessionId"], state, reopened=reopened)
    never = loop.connect.start("plain-never", sessionId="s-never")
    elsewhere = loop.connect.start("plain-elsewhere", sessionId="s-elsewhere")
    for started in (never, elsewhere):
        loop.connect.frozen(started["seq"])
    loop.log_and_end("s-elsewhere", "closed", agent="reviewer")

    report = loop.report()
    assert report["source"] == {"status": "linked", "projectId": loop.project, "agent": AGENT_NAME}
    assert report["sessions"] == {
        "started": 8,
        "recorded": 8,
        "joined": 6,
        "notRecorded": 0,
        "notJoined": 2,
        "handStarted": 0,
    }
    targets = {t["targetKey"]: t for t in report["targets"]}
    assert set(targets) == {key(PRO), key(DEFAULT)}
    pro, default = targets[key(PRO)], targets[key(DEFAULT)]
    assert (pro["recorded"], pro["sessions"]) == (3, 3)
    assert (default["recorded"], default["sessions"]) == (5, 3)
    assert pro["abnormalEnds"]["count"] == 1
    assert default["abnormalEnds"]["count"] == 2
    assert pro["signals"]["task_reopened"]["count"] == 1
    assert default["signals"]["task_reopened"]["count"] == 1
    assert default["signals"]["last_events_before_abnormal_end"]["count"] == 2
    share = default["abnormalEnds"]
    assert share["share"] == pytest.approx(2 / 3, abs=1e-4)
    assert share["low"] < share["share"] < share["high"]
    assert pro["routes"] == [{"route": "initial/1:true", "sessions": 3}]
    assert default["routes"] == [{"route": "default", "sessions": 5}]
    assert "2 recorded sessions have no ended log" in " ".join(report["notJoined"])
    assert report["exploration"]["status"] == "off"
    assert report["recommendation"] is None


def test_the_report_says_what_a_targets_sessions_cost_on_average_with_an_interval(
    loop: Loop,
) -> None:
    """Three sessions on one target report their tokens and cost through their telemetry
    (Claude Code's api_request log), a fourth its tokens but no cost; one on the other
    target reports none. The report serves each target's mean tokens per reporting session
    and mean cost per session that reported a cost, the missing cost left out rather than
    counted as $0 (their intervals come from 30 sessions: tests/test_means.py), and says
    that the other has none to show."""
    assert loop.link().status_code == 200
    spent = [(1000, 100, 0.01), (2000, 200, 0.02), (3000, 300, 0.03), (4000, 400, None)]
    for number, (tokens_in, tokens_out, cost) in enumerate(spent, start=1):
        started = loop.connect.start(f"deep-{number}", sessionId=f"s-deep-{number}")
        loop.connect.frozen(started["seq"])
        loop.report_usage(started["sessionId"], (tokens_in, tokens_out), cost)
        loop.log_and_end(started["sessionId"], "closed")
    plain = loop.connect.start("plain-1", sessionId="s-plain-1")
    loop.connect.frozen(plain["seq"])
    loop.log_and_end(plain["sessionId"], "closed")

    targets = {t["targetKey"]: t for t in loop.report()["targets"]}
    pro, default = targets[key(PRO)]["spent"], targets[key(DEFAULT)]["spent"]
    assert (pro["sessions"], pro["costSessions"]) == (4, 3)
    below_the_minimum = {"low": None, "high": None}
    assert pro["tokens"] == {"mean": pytest.approx(2750), **below_the_minimum}
    assert pro["costUsd"] == {"mean": pytest.approx(0.02), **below_the_minimum}
    assert default == {
        "sessions": 0,
        "costSessions": 0,
        "tokens": {"mean": None, "low": None, "high": None},
        "costUsd": {"mean": None, "low": None, "high": None},
    }


def test_an_agent_cannot_be_linked_to_a_project_its_admin_cannot_view(loop: Loop) -> None:
    foreign = loop.connect.world.tenant("project")
    refused = loop.link(project=foreign)
    assert refused.status_code == 403, refused.text
    missing = loop.connect.api.call(
        "GET", loop.connect.path("/outcome-source"), token=loop.connect.viewer
    )
    assert missing.status_code == 404


def test_a_link_whose_author_lost_the_project_reads_nothing_through_it(loop: Loop) -> None:
    assert loop.link().status_code == 200
    started = loop.connect.start("deep-1", sessionId="s-deep-1")
    loop.connect.frozen(started["seq"])
    loop.log_and_end("s-deep-1", "closed_abnormally")
    assert loop.report()["sessions"]["joined"] == 1
    db().document(f"projects/{loop.project}/members/ada").delete()
    report = loop.report()
    assert report["source"]["status"] == "access_lost"
    assert report["targets"] == []
    assert report["sessions"]["joined"] == 0
    link = loop.connect.api.call(
        "GET", loop.connect.path("/outcome-source"), token=loop.connect.viewer
    )
    assert link.json()["authorCanView"] is False


def test_an_unlinked_agents_sessions_are_counted_as_recorded_nowhere(loop: Loop) -> None:
    started = loop.connect.start("deep-1", sessionId="s-deep-1")
    loop.connect.frozen(started["seq"])
    loop.log_and_end("s-deep-1", "closed")
    report = loop.report()
    assert report["source"] == {"status": "not_linked", "projectId": None, "agent": None}
    assert report["sessions"] == {
        "started": 1,
        "recorded": 0,
        "joined": 0,
        "notRecorded": 1,
        "notJoined": 0,
        "handStarted": 0,
    }


def test_a_session_started_after_the_link_is_removed_is_not_recorded(loop: Loop) -> None:
    assert loop.link().status_code == 200
    removed = loop.connect.api.call(
        "DELETE", loop.connect.path("/outcome-source"), token=loop.connect.admin
    )
    assert removed.status_code == 200
    assert removed.json()["projectId"] == loop.project
    started = loop.connect.start("deep-1", sessionId="s-deep-1")
    loop.connect.frozen(started["seq"])
    loop.log_and_end("s-deep-1", "closed")
    assert loop.report()["sessions"]["notRecorded"] == 1


def test_a_viewer_may_read_the_report_but_not_link(loop: Loop) -> None:
    assert loop.link(token=loop.connect.viewer).status_code == 403
    assert loop.report(token=loop.connect.viewer)["source"]["status"] == "not_linked"


def test_exploration_draws_a_target_the_evaluation_read_states_and_the_contract_holds(
    loop: Loop,
) -> None:
    """An exploring session's target is drawn among the targets whose permission mode is
    at most the rules' choice; the published evaluation passes its contract and its
    reason says the choice was explored."""
    assert loop.connect.configure(selection_with(exploration={"share": 0.1})).status_code == 201
    assert loop.link().status_code == 200
    seen: set[str] = set()
    for session in exploring_ids(6, 0.1):
        started = loop.connect.start("plain task", sessionId=session)
        body = loop.connect.frozen(started["seq"])
        assert issues_for("agentconnect/evaluation", body) == []
        assert body["reason"].startswith("explored (share 0.1)")
        assert body["outcome"] == "defaulted"
        seen.add(key(body["target"]))
    assert seen <= {key(PRO), key(DEFAULT), key(CONTAINER)}
    assert len(seen) > 1


def test_with_exploration_the_report_estimates_and_recommends_a_threshold_a_person_puts(
    loop: Loop,
) -> None:
    """Every session answers the first question `true` at 0.65, under the rule's 0.8, so
    the rules always give the default; 45 exploring sessions draw among the three
    targets, and those given the strong target end well while the others end abnormally.
    The report estimates the current rules and each threshold change off-policy, finds
    lowering the threshold better at the interval level, and proposes it as a body that,
    once PUT, records the report it came from."""
    run_explored(loop, 45)
    report = loop.report()
    section = report["exploration"]
    assert (section["status"], section["explored"], section["share"]) == ("estimated", 45, 0.1)
    assert section["current"]["abnormalShare"] == 1.0
    lowered = next(
        c
        for c in section["candidates"]
        if c["change"] == {"stepId": "initial", "rule": 1, "value": "true", "from": 0.8, "to": 0.6}
    )
    assert lowered["better"] is True, lowered
    assert lowered["estimate"]["abnormalShare"] == 0.0
    assert lowered["difference"]["high"] < 0
    raised = next(c for c in section["candidates"] if c["change"]["to"] == 0.9)
    assert raised["better"] is False
    recommended = report["recommendation"]
    assert recommended is not None
    body = recommended["selection"]
    assert body["decision"]["rules"][0]["when"]["thresholds"] == {"true": 0.6}
    assert body["fromReport"]["reportId"] == report["reportId"]
    put = loop.connect.configure(body)
    assert put.status_code == 201, put.text
    assert put.json()["selection"]["fromReport"]["reportId"] == report["reportId"]


def test_below_the_minimum_of_explored_sessions_the_report_says_it_cannot_tell(
    loop: Loop,
) -> None:
    assert loop.connect.configure(selection_with(exploration={"share": 0.2})).status_code == 201
    assert loop.link().status_code == 200
    for session in exploring_ids(3, 0.2):
        started = loop.connect.start("task", sessionId=session)
        loop.connect.frozen(started["seq"])
        loop.log_and_end(session, "closed")
    section = loop.report()["exploration"]
    assert (section["status"], section["explored"], section["current"]) == (
        "too_few_explored",
        3,
        None,
    )


def test_a_report_window_with_since_after_until_is_refused(loop: Loop) -> None:
    reply = loop.connect.api.call(
        "GET",
        loop.connect.path(
            "/selection-report?since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z"
        ),
        token=loop.connect.viewer,
    )
    assert reply.status_code == 400


def test_a_start_past_the_budget_is_recorded_as_its_fallback_and_joined(
    loop: Loop, configure: Configure
) -> None:
    """A start frozen on the default target for want of budget still records its choice,
    so its session is joined like any other."""
    configure(AGENTCONNECT_ORG_TOKEN_BUDGET="1")
    assert loop.link().status_code == 200
    first = loop.connect.start("deep-1", sessionId="s-deep-1")
    loop.connect.frozen(first["seq"])
    second = loop.connect.start("deep-2", sessionId="s-deep-2")
    assert loop.connect.frozen(second["seq"])["outcome"] == "fallback"
    for session in ("s-deep-1", "s-deep-2"):
        loop.log_and_end(session, "closed")
    report = loop.report()
    assert report["sessions"]["joined"] == 2
    default = next(t for t in report["targets"] if t["targetKey"] == key(DEFAULT))
    assert default["routes"] == [{"route": "fallback", "sessions": 1}]


def test_a_session_logged_and_ended_before_its_choice_is_recorded_is_joined_all_the_same(
    loop: Loop,
) -> None:
    """The Psychologist's half of the outcome record lands first (the session was logged
    and ended under its id before AgentConnect froze its choice): the choice merges into
    the same record, and the report joins them."""
    assert loop.link().status_code == 200
    loop.log_and_end("s-early", "closed", reopened=True)
    [outcome] = [
        s.to_dict() or {} for s in db().collection(f"projects/{loop.project}/outcomes").stream()
    ]
    assert "selection" not in outcome
    started = loop.connect.start("deep-early", sessionId="s-early")
    assert loop.connect.frozen(started["seq"])["target"] == PRO
    report = loop.report()
    assert report["sessions"]["joined"] == 1
    pro = next(t for t in report["targets"] if t["targetKey"] == key(PRO))
    assert (pro["sessions"], pro["signals"]["task_reopened"]["count"]) == (1, 1)


def _exploring(prefix: str, count: int, share: float) -> list[str]:
    """Session ids, unused elsewhere, whose hash puts them in the exploration share."""
    found = (f"{prefix}-{n}" for n in range(10_000))
    return [s for s in found if unit_hash("explore", s) < share][:count]


def test_a_share_and_rules_changed_mid_window_weight_each_session_by_its_own_version(
    loop: Loop,
) -> None:
    """24 sessions explore under a version at share 0.2, whose strong target then ends
    every session abnormally; the selection is then put again at share 0.1 with a rule
    that adds a target (effort high on small changes), and 24 more explore, all ending
    well. The report counts the explored sessions per version; the current rules choose
    the added target, which no session of the first version could draw, so those are
    counted as unsupported and left out of its estimate; and lowering the first threshold
    (the strong target for all) is estimated with each session weighted by its own
    version's share and number of candidates: 3 / 0.2 before, 4 / 0.1 after, not
    alike."""
    answers = answering(lambda _t, p: (True, 0.65) if "deep reasoning" in p else ("small", 0.9))
    loop.connect.world.gemini.respond_with(answers)
    assert loop.link().status_code == 200
    first = selection_with(exploration={"share": 0.2})
    assert loop.connect.configure(first).status_code == 201
    ran: list[tuple[int, str]] = []
    for session in _exploring("v1", 24, 0.2):
        started = loop.connect.start("task", sessionId=session)
        target = loop.connect.frozen(started["seq"])["target"]
        strong = target["model"] == PRO["model"]
        loop.log_and_end(session, "closed_abnormally" if strong else "closed")
        ran.append((1, key(target)))
    added = {**DEFAULT, "effort": "high"}
    second = selection_with(exploration={"share": 0.1})
    second["steps"][0]["rules"].append(
        {"effort": "high", "when": {"type": "choice", "thresholds": {"small": 0.85}}}
    )
    put = loop.connect.configure(second)
    assert put.status_code == 201, put.text
    for session in _exploring("v2", 24, 0.1):
        started = loop.connect.start("task", sessionId=session)
        target = loop.connect.frozen(started["seq"])["target"]
        loop.log_and_end(session, "closed")
        ran.append((2, key(target)))

    report = loop.report()
    section = report["exploration"]
    versions = [(v["version"], v["share"], v["explored"]) for v in section["versions"]]
    first_version = put.json()["version"] - 1
    assert versions == [(first_version, 0.2, 24), (first_version + 1, 0.1, 24)]
    assert (section["status"], section["explored"], section["share"]) == ("estimated", 48, 0.1)
    assert section["unsupported"] == 24
    assert section["current"]["matched"] == sum(1 for v, k in ran if v == 2 and k == key(added))
    assert any("24 of 48 explored sessions could not have drawn" in c for c in report["caveats"])

    strong_before = sum(1 for v, k in ran if v == 1 and k == key(PRO))
    strong_after = sum(1 for v, k in ran if v == 2 and k == key(PRO))
    assert strong_before + strong_after >= 10, "the lowered threshold's estimate is served"
    weighted = strong_before * 3 / 0.2 / (strong_before * 3 / 0.2 + strong_after * 4 / 0.1)
    alike = strong_before / (strong_before + strong_after)
    assert abs(weighted - alike) > 0.1
    lowered = next(
        c
        for c in section["candidates"]
        if c["change"] == {"stepId": "initial", "rule": 1, "value": "true", "from": 0.8, "to": 0.6}
    )
    assert lowered["unsupported"] == 0
    assert lowered["estimate"]["matched"] == strong_before + strong_after
    assert lowered["estimate"]["abnormalShare"] == pytest.approx(weighted, abs=1e-4)
