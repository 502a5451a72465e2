"""Randomised trials of an accepted suggestion, through the public API: accept, start a
trial, start sessions (arms returned and stable), log and end them, and read a randomized
verdict that matches what was sent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from functions.outcomes.trials import arm_of, verdict_of
from tests.agentconnect.conftest import AGENT, configured, connect
from tests.agentconnect.loop import AGENT_NAME, Loop, loop
from tests.api import assert_conforms, wait_for
from tests.psychologist.conftest import CAPABILITY as PSYCHOLOGIST
from tests.psychologist.conftest import Log, hypothesis

__all__ = ["configured", "connect", "loop"]


@dataclass
class Tried:
    """A linked agent, and an accepted hypothesis about it in the linked project."""

    loop: Loop
    admin: str
    """Admin of the project (and of the org, as `ada`)."""
    hypothesis: str

    def path(self, suffix: str = "") -> str:
        return f"/projects/{self.loop.project}/hypotheses/{self.hypothesis}{suffix}"

    def start_trial(self, token: str | None = None, **body: Any) -> Any:
        sent = {"orgId": self.loop.connect.org, "agentId": AGENT, **body}
        return self.loop.connect.api.post(self.path("/trials"), sent, token or self.admin)

    def effect(self) -> dict[str, Any]:
        reply = self.loop.connect.api.call("GET", self.path("/effect"), token=self.admin)
        assert reply.status_code == 200, reply.text
        assert_conforms("GET", "/projects/{projectId}/hypotheses/{hypothesisId}/effect", reply)
        body: dict[str, Any] = reply.json()
        return body


def accepted_hypothesis(loop: Loop, admin: str) -> str:
    """An analysed abnormal end whose hypothesis about the agent cites reopened tasks,
    accepted by the project's admin."""
    log = Log()
    log.add(AGENT_NAME, "task.opened", task="T-1")
    reopened = [log.add(AGENT_NAME, "task.reopened", task="T-1")["id"] for _ in range(2)]
    api, project = loop.connect.api, loop.project
    assert api.post(
        f"/projects/{project}/sessions/h-1/events", {"events": log.events}, loop.logger
    ).ok
    loop.connect.world.gemini.answer_json({"hypotheses": [hypothesis(AGENT_NAME, reopened)]})
    ended = api.post(
        f"/projects/{project}/sessions/h-1/end", {"state": "closed_abnormally"}, loop.logger
    )
    analysis = ended.json()["analysisId"]

    def settled() -> Any:
        body = api.call("GET", f"/projects/{project}/analyses/{analysis}", token=admin).json()
        return body if body["status"] in ("completed", "failed") else None

    assert wait_for(settled)["status"] == "completed"
    listed = api.call("GET", f"/projects/{project}/hypotheses", token=admin).json()
    hypothesis_id: str = listed[0]["id"]
    decided = api.post(
        f"/projects/{project}/hypotheses/{hypothesis_id}/decision",
        {"status": "accepted", "reason": "Worth a try."},
        admin,
    )
    assert decided.status_code == 200, decided.text
    return hypothesis_id


@pytest.fixture
def tried(loop: Loop) -> Tried:
    admin = loop.connect.world.user(loop.project, "ada", "admin", capabilities=PSYCHOLOGIST)
    assert loop.link().status_code == 200
    return Tried(loop, admin, accepted_hypothesis(loop, admin))


def test_a_trial_assigns_stable_arms_and_reads_a_verdict_matching_what_was_sent(
    tried: Tried,
) -> None:
    """Twenty sessions start under a running trial: each start answers its arm, the one
    a hash of (trial, session) gives, with the suggestion. Treatment sessions stop
    reopening tasks; control ones go on. The trial's arms count what was sent, and its
    verdict is the confidence sequence's over those counts."""
    started = tried.start_trial(share=0.5)
    assert started.status_code == 201, started.text
    trial = started.json()
    assert (trial["status"], trial["share"], trial["hypothesisId"]) == (
        "running",
        0.5,
        tried.hypothesis,
    )
    sent: dict[str, list[int]] = {"treatment": [0, 0], "control": [0, 0]}
    for index in range(20):
        session = f"t-{index}"
        reply = tried.loop.connect.start("plain task", sessionId=session)
        [assigned] = reply["trials"]
        arm = str(arm_of(trial["id"], session, 0.5))
        assert assigned == {
            "trialId": trial["id"],
            "hypothesisId": tried.hypothesis,
            "arm": arm,
            "sugestao": "Add an explicit definition-of-done criterion to the instruction.",
        }
        tried.loop.connect.frozen(reply["seq"])
        reopens = arm == "control"
        tried.loop.log_and_end(session, "closed_abnormally", reopened=reopens)
        sent[arm][0] += 1
        sent[arm][1] += int(reopens)
    never = tried.loop.connect.start("never logged", sessionId="t-never")
    tried.loop.connect.frozen(never["seq"])
    lost_arm = never["trials"][0]["arm"]
    path = tried.path(f"/trials/{trial['id']}")
    read = tried.loop.connect.api.call("GET", path, token=tried.loop.connect.viewer)
    assert read.status_code == 403
    body = tried.loop.connect.api.call("GET", path, token=tried.admin).json()
    for arm, (sessions, _) in sent.items():
        assert body["arms"][arm]["sessions"] == sessions
        assert body["arms"][arm]["lost"] == int(arm == lost_arm)
        assert body["arms"][arm]["abnormalEnds"] == sessions
    effect = body["effect"]
    reopened = effect["signalKinds"]["task_reopened"]
    expected, _ = verdict_of(
        sent["treatment"][1], sent["treatment"][0], sent["control"][1], sent["control"][0]
    )
    assert reopened["verdict"] == expected == effect["verdict"]
    assert effect["basis"] == ["task_reopened"]
    assert effect["signalKinds"]["last_events_before_abnormal_end"]["specific"] is False
    assert effect["sessionsNeeded"] is None or effect["sessionsNeeded"] > 0
    assert tried.effect()["randomized"]["trialId"] == trial["id"]


def test_only_one_trial_of_a_hypothesis_runs_and_a_stopped_one_stops_assigning(
    tried: Tried,
) -> None:
    first = tried.start_trial()
    assert first.status_code == 201
    again = tried.start_trial()
    assert again.status_code == 409
    trial = first.json()["id"]
    stopped = tried.loop.connect.api.post(tried.path(f"/trials/{trial}/stop"), {}, tried.admin)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "stopped"
    band = tried.loop.connect.api.call(
        "GET", f"/projects/{tried.loop.project}/calibration", token=tried.admin
    ).json()["bands"][3]
    assert (band["trials"]["stopped"], band["trials"]["helpful"]) == (1, 0)
    reply = tried.loop.connect.start("after the stop", sessionId="after-stop")
    assert reply["trials"] == []
    assert tried.start_trial().status_code == 201


def test_a_trial_needs_an_accepted_hypothesis_an_org_admin_and_the_agent_linked_here(
    tried: Tried,
) -> None:
    api = tried.loop.connect.api
    member = tried.loop.connect.world.user(
        tried.loop.project, "mel", "admin", capabilities=PSYCHOLOGIST
    )
    assert tried.start_trial(token=member).status_code == 403
    unlinked = api.call(
        "DELETE", tried.loop.connect.path("/outcome-source"), token=tried.loop.connect.admin
    )
    assert unlinked.status_code == 200
    refused = tried.start_trial()
    assert refused.status_code == 409
    assert "outcome source" in refused.json()["message"]
    assert tried.loop.link().status_code == 200
    dismissed = api.post(tried.path("/decision"), {"status": "dismissed"}, tried.admin)
    assert dismissed.status_code == 200
    assert tried.start_trial().status_code == 409


def test_a_trial_with_a_session_cap_stops_assigning_at_it(tried: Tried) -> None:
    assert tried.start_trial(maxSessions=2).status_code == 201
    arms = [tried.loop.connect.start("capped", sessionId=f"c-{n}")["trials"] for n in range(3)]
    assert [len(found) for found in arms] == [1, 1, 0]
