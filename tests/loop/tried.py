"""A linked agent and an accepted hypothesis about it in the linked project: what a
randomised trial of its suggestion starts from; and a trial's arms seeded with the counts
that decide a verdict, as outcome records a session start and an analysis write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from functions.loop import store as outcome_store
from shared.clients import db
from tests.agentconnect.conftest import AGENT
from tests.api import assert_conforms, wait_for
from tests.loop.linked import AGENT_NAME, Loop
from tests.psychologist.conftest import CAPABILITY as PSYCHOLOGIST
from tests.psychologist.conftest import Log, hypothesis


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


IMPROVED = ((40, 0), (40, 20))
"""(sessions, showing the pattern) per arm, treatment then control: reads `improved`."""
WORSE = ((40, 24), (40, 2))
NO_CHANGE = ((40, 5), (40, 5))


def seed_arms(
    loop: Loop,
    trial: str,
    counts: tuple[tuple[int, int], tuple[int, int]],
    *,
    pattern: str | None = None,
) -> None:
    """Ended sessions of each arm, `showing` of them reopening their task (or, for a
    pattern's trial, joined to the pattern)."""
    batch = db().batch()
    for arm, (sessions, showing) in zip(("treatment", "control"), counts, strict=True):
        for index in range(sessions):
            shows = index < showing
            record: dict[str, Any] = {
                "selection": {"trial_arms": [f"{trial}:{arm}"]},
                "abnormal_end": int(shows),
                "signals": {"task_reopened": 2} if shows and pattern is None else {},
            }
            if shows and pattern is not None:
                record["pattern_id"] = pattern
            ref = outcome_store.outcome_ref(loop.project, f"{trial}-{arm}-{index}", AGENT_NAME)
            batch.set(ref, record)
    batch.commit()
