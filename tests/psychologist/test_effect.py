"""The effect of an accepted hypothesis, from real ingested sessions: the agent's sessions
that ended before and after the decision, the shares of them that show the signal kinds
the hypothesis cites and that ended abnormally, the risk ratio with its 95 % interval, and
a verdict."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.counting import CallCounter
from cli.gemini_stand_in import Reply
from functions.loop.estimators import rounded
from functions.loop.safe import Table, confidence_sequence
from functions.psychologist.effects import EFFECT_MIN_SESSIONS, METHOD, compare
from shared.validation import issues_for
from tests.psychologist.conftest import Log, Psychologist, hypothesis
from tests.test_mcp import call

AGENT = "dev-api"


def reopening_log(tasks: int) -> tuple[Log, list[str]]:
    """`tasks` tasks, each reopened twice: one `task_reopened` signal apiece."""
    log = Log()
    reopened = []
    for task in range(tasks):
        log.add(AGENT, "task.opened", task=f"T-{task}")
        reopened += [log.add(AGENT, "task.reopened", task=f"T-{task}")["id"] for _ in range(2)]
    log.add(AGENT, "tool.call", tool="pytest")
    return log, reopened


def ended_sessions(psy: Psychologist, prefix: str, reopens: list[int]) -> list[str]:
    """One session per entry, ended normally, with that many reopened tasks; returns their
    ids once each end's count of the log has settled."""
    sessions = []
    for index, tasks in enumerate(reopens):
        session = f"{prefix}{index:02}"
        log, _ = reopening_log(tasks)
        assert psy.ingest(session, log.events).status_code == 200
        ended = psy.end(session, "closed").json()
        assert psy.settled(ended["analysisId"])["status"] in ("completed", "failed")
        sessions.append(session)
    return sessions


def accepted_hypothesis(psy: Psychologist, tasks: int = 1) -> str:
    """A hypothesis about AGENT citing reopened tasks of an ended session, accepted."""
    session = "CITED"
    log, reopened = reopening_log(tasks)
    assert psy.ingest(session, log.events).status_code == 200
    psy.settled(psy.end(session, "closed").json()["analysisId"])
    psy.world.gemini.answer_json({"hypotheses": [hypothesis(AGENT, reopened[:2])]})
    analysis = psy.settled(psy.analyse(session))
    [hypothesis_id] = analysis["hypothesisIds"]
    assert isinstance(hypothesis_id, str)
    decided = psy.api.post(
        psy.path(f"/hypotheses/{hypothesis_id}/decision"), {"status": "accepted"}, psy.admin
    )
    assert decided.status_code == 200, decided.text
    return hypothesis_id


def effect(psy: Psychologist, hypothesis_id: str) -> dict[str, Any]:
    reply = psy.api.call("GET", psy.path(f"/hypotheses/{hypothesis_id}/effect"), token=psy.viewer)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert issues_for("psychologist/effect.response", body) == []
    return body


def measured(psy: Psychologist, before: list[int], after: list[int]) -> dict[str, Any]:
    """`before` sessions end, a hypothesis citing one more is accepted, `after` sessions end."""
    ended_sessions(psy, "B", before[1:])
    hypothesis_id = accepted_hypothesis(psy, before[0])
    ended_sessions(psy, "A", after)
    return effect(psy, hypothesis_id)


MIN = EFFECT_MIN_SESSIONS


def test_fewer_sessions_reopening_tasks_after_acceptance_read_improved(psy: Psychologist) -> None:
    body = measured(psy, before=[2] * MIN, after=[0] * MIN)
    assert body["signalKinds"] == ["task_reopened"]
    assert (body["before"]["sessions"], body["before"]["withSignals"]) == (MIN, MIN)
    assert (body["after"]["sessions"], body["after"]["withSignals"]) == (MIN, 0)
    assert (body["before"]["abnormalEnds"], body["after"]["abnormalEnds"]) == (0, 0)
    assert body["after"]["open"] is True
    assert (body["signals"]["shareBefore"], body["signals"]["shareAfter"]) == (1.0, 0.0)
    assert body["signals"]["high"] < 1
    assert (body["basis"], body["verdict"]) == ("signals", "improved")


def test_more_sessions_reopening_tasks_after_acceptance_read_worse(psy: Psychologist) -> None:
    body = measured(psy, before=[1] + [0] * (MIN - 1), after=[1] * MIN)
    assert (body["before"]["withSignals"], body["after"]["withSignals"]) == (1, MIN)
    assert body["signals"]["low"] > 1
    assert body["verdict"] == "worse"


def test_the_same_share_before_and_after_reads_no_clear_change(psy: Psychologist) -> None:
    half = [1, 0] * (MIN // 2)
    body = measured(psy, before=half, after=half)
    assert body["signals"]["ratio"] == 1.0
    assert body["signals"]["low"] < 1 < body["signals"]["high"]
    assert body["verdict"] == "no_clear_change"


def test_fewer_sessions_than_the_minimum_in_a_window_read_too_few_sessions(
    psy: Psychologist,
) -> None:
    body = measured(psy, before=[2] * MIN, after=[0] * (MIN - 1))
    assert body["after"]["sessions"] == MIN - 1
    assert body["signals"]["high"] < 1
    assert (body["minimumSessions"], body["verdict"]) == (MIN, "too_few_sessions")


def test_the_mcp_tool_answers_what_the_http_read_does(psy: Psychologist) -> None:
    hypothesis_id = accepted_hypothesis(psy)
    over_http = effect(psy, hypothesis_id)
    arguments = {"projectId": psy.project, "hypothesisId": hypothesis_id}
    result = call(psy.api, psy.viewer, "psychologist_effect_read", arguments)
    assert not result.isError, result.content
    assert result.structuredContent == over_http


def test_a_hypothesis_not_accepted_has_no_effect_to_measure(psy: Psychologist) -> None:
    hypothesis_id = accepted_hypothesis(psy)
    dismissed = psy.api.post(
        psy.path(f"/hypotheses/{hypothesis_id}/decision"), {"status": "dismissed"}, psy.admin
    )
    assert dismissed.status_code == 200
    reply = psy.api.call("GET", psy.path(f"/hypotheses/{hypothesis_id}/effect"), token=psy.viewer)
    assert (reply.status_code, reply.json()["code"]) == (409, "conflict")
    missing = psy.api.call("GET", psy.path("/hypotheses/NOPE/effect"), token=psy.viewer)
    assert missing.status_code == 404


def test_the_effect_reads_the_hypothesis_then_counts_and_reads_no_other_document(
    psy: Psychologist, counter: CallCounter
) -> None:
    """The caller's token and membership (read on every request here: the suite caches no
    grant), the hypothesis, then at once three counts per window and each of the three
    signal kinds' per window."""
    hypothesis_id = accepted_hypothesis(psy)
    counter.clear()
    effect(psy, hypothesis_id)
    assert counter.calls == ["BatchGetDocuments"] * 2 + ["RunAggregationQuery"] * 12


@pytest.mark.parametrize("counts", [(5, 10, 5, 10), (8, 10, 2, 10), (0, 10, 4, 12), (10, 10, 0, 9)])
@pytest.mark.pure
def test_the_interval_is_the_exact_one_at_the_windows_sizes_with_no_zero_cell_correction(
    counts: tuple[int, int, int, int],
) -> None:
    """The before/after interval is the trial's exact safe-test interval with the windows'
    sizes taken as given (the block the e-variable is for); a zero cell
    is not corrected: no pattern before leaves the ratio undefined, none after makes it 0.
    The method says it is an association."""
    before, before_n, after, after_n = counts
    compared = compare(*counts)
    found = confidence_sequence(Table(after, after_n, before, before_n))
    assert (compared["ratio"], compared["low"], compared["high"]) == (
        rounded(found.ratio),
        rounded(found.low),
        rounded(found.high),
    )
    if before == 0:
        assert compared["ratio"] is None
    if after == 0:
        assert compared["ratio"] == 0.0
    assert METHOD.startswith("An association over time")


@pytest.mark.pure
def test_the_minimum_is_above_the_smallest_windows_that_can_show_a_change() -> None:
    """Every session before showing the pattern and none after: six a side cannot exclude
    no change, seven can, and the minimum keeps a margin over seven."""
    assert compare(6, 6, 0, 6)["high"] > 1  # type: ignore[operator]
    assert compare(7, 7, 0, 7)["high"] < 1  # type: ignore[operator]
    assert EFFECT_MIN_SESSIONS > 7


def test_a_hypothesis_is_judged_on_its_own_pattern_not_on_every_abnormal_ends_last_events(
    psy: Psychologist,
) -> None:
    """The reopened-tasks case: a hypothesis citing reopened tasks at an abnormal end (so
    its events also stand behind `last_events_before_abnormal_end`) is accepted; before it
    every session reopened tasks and ended abnormally, after it none reopens but all
    still end abnormally. The verdict rests on reopened tasks alone and reads improved;
    each kind is reported on its own, the generic one unchanged."""
    psy.world.gemini.respond_with(lambda _recorded: Reply(text='{"hypotheses": []}'))
    before, after = MIN + 2, MIN + 2
    for index in range(before):
        log, _ = reopening_log(1)
        assert psy.ingest(f"B{index:02}", log.events).status_code == 200
        psy.settled(psy.end(f"B{index:02}", "closed_abnormally", "crash").json()["analysisId"])
    log, reopened = reopening_log(1)
    log.events = log.events[:-1]
    assert psy.ingest("CITED", log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": [hypothesis(AGENT, reopened)]})
    cited = psy.settled(psy.end("CITED", "closed_abnormally", "crash").json()["analysisId"])
    [hypothesis_id] = cited["hypothesisIds"]
    decided = psy.api.post(
        psy.path(f"/hypotheses/{hypothesis_id}/decision"), {"status": "accepted"}, psy.admin
    )
    assert decided.status_code == 200
    for index in range(after):
        log, _ = reopening_log(0)
        assert psy.ingest(f"A{index:02}", log.events).status_code == 200
        psy.settled(psy.end(f"A{index:02}", "closed_abnormally", "crash").json()["analysisId"])
    body = effect(psy, hypothesis_id)
    assert body["signalKinds"] == ["task_reopened"]
    kinds = body["perKind"]
    assert (kinds["task_reopened"]["shareBefore"], kinds["task_reopened"]["shareAfter"]) == (
        1.0,
        0.0,
    )
    generic = kinds["last_events_before_abnormal_end"]
    assert (generic["specific"], generic["shareBefore"], generic["shareAfter"]) == (
        False,
        1.0,
        1.0,
    )
    assert (body["abnormalEnds"]["shareBefore"], body["abnormalEnds"]["shareAfter"]) == (1.0, 1.0)
    assert (body["basis"], body["verdict"]) == ("signals", "improved")
    assert body["randomized"] is None
