"""An org's agent linked to the Psychologist project its sessions are logged in: start,
log and end sessions under the same ids, and read the selection report."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from cli.gemini_stand_in import Recorded, Reply
from functions.loop.randomization import unit_hash
from tests.agentconnect.conftest import DEFAULT, Connect, selection_with
from tests.api import Configure, assert_conforms, wait_for
from tests.psychologist.conftest import CAPABILITY as PSYCHOLOGIST
from tests.psychologist.conftest import Log

AGENT_NAME = "dev-api"
PRO = {**DEFAULT, "model": "gemini-2.5-pro", "effort": "high"}
CONTAINER = {**DEFAULT, "runtime": "container", "effort": "medium", "permissionMode": "plan"}


def key(target: dict[str, Any]) -> str:
    fast = "fast" if target["fastMode"] else "standard"
    return "|".join(
        (target["runtime"], target["model"], target["effort"], target["permissionMode"], fast)
    )


@dataclass
class Loop:
    """An org's agent linked to a project whose member logs its sessions."""

    connect: Connect
    project: str
    logger: str

    def link(self, token: str | None = None, project: str | None = None) -> Any:
        body = {"projectId": project or self.project, "agent": AGENT_NAME}
        return self.connect.api.call(
            "PUT", self.connect.path("/outcome-source"), body, token or self.connect.admin
        )

    def report(self, token: str | None = None, **query: str) -> dict[str, Any]:
        suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
        reply = self.connect.api.call(
            "GET",
            self.connect.path(f"/selection-report{suffix}"),
            token=token or self.connect.viewer,
        )
        assert reply.status_code == 200, reply.text
        assert_conforms("GET", "/v1/orgs/{orgId}/agents/{id}/selection-report", reply)
        body: dict[str, Any] = reply.json()
        return body

    def report_usage(self, session: str, tokens: tuple[int, int], cost_usd: float | None) -> None:
        """One model request's tokens and cost, as Claude Code's `api_request` log says it
        (with no cost when `cost_usd` is None)."""
        attributes: dict[str, Any] = {
            "session.id": session,
            "event.name": "api_request",
            "request_id": f"req-{session}",
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
        }
        if cost_usd is not None:
            attributes["cost_usd"] = cost_usd
        record: dict[str, Any] = {
            "timeUnixNano": "1796264848447000000",
            "body": {"stringValue": "claude_code.api_request"},
            "attributes": [
                {"key": name, "value": {"stringValue": str(value)}}
                for name, value in attributes.items()
            ],
        }
        resource = [
            {"key": "service.name", "value": {"stringValue": "claude-code"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": AGENT_NAME}},
        ]
        body: dict[str, Any] = {
            "resourceLogs": [
                {"resource": {"attributes": resource}, "scopeLogs": [{"logRecords": [record]}]}
            ]
        }
        reply = self.connect.api.session.post(
            f"{self.connect.api.base_url}/projects/{self.project}/otlp/v1/logs",
            json=body,
            headers={"Authorization": f"Bearer {self.logger}"},
            timeout=30,
        )
        assert reply.status_code == 200, reply.text
        assert reply.json() == {}, reply.text

    def log_and_end(
        self, session: str, state: str, agent: str = AGENT_NAME, reopened: bool = False
    ) -> None:
        log = Log()
        log.add(agent, "task.opened", task="T-1")
        for _ in range(2 if reopened else 0):
            log.add(agent, "task.reopened", task="T-1")
        api = self.connect.api
        base = f"/projects/{self.project}/sessions/{session}"
        assert api.post(f"{base}/events", {"events": log.events}, self.logger).status_code == 200
        ended = api.post(f"{base}/end", {"state": state}, self.logger)
        assert ended.status_code == 200, ended.text
        analysis = ended.json()["analysisId"]

        def settled() -> bool:
            reply = api.call(
                "GET", f"/projects/{self.project}/analyses/{analysis}", token=self.logger
            )
            return reply.json()["status"] in ("completed", "failed")

        wait_for(settled)


def answering(step_answers: Callable[[str, str], tuple[Any, float]]) -> Callable[[Recorded], Reply]:
    """A Gemini stand-in responder: each AgentConnect question answered from the session's
    title and the question by `step_answers`, every analysis with no hypothesis."""

    def respond(recorded: Recorded) -> Reply:
        properties = recorded.body["generationConfig"]["responseJsonSchema"]["properties"]
        if "hypotheses" in properties:
            return Reply(text=json.dumps({"hypotheses": []}))
        title = json.loads(recorded.prompt.split("\n")[1])["title"]
        value, probability = step_answers(title, recorded.prompt)
        return Reply(text=json.dumps({"value": value, "probability": probability}))

    return respond


def by_title(title: str, prompt: str) -> tuple[Any, float]:
    if "deep reasoning" in prompt:
        return ("deep" in title, 0.9)
    return ("small", 0.9)


@pytest.fixture
def loop(configured: Connect, configure: Configure) -> Loop:
    """A project linked to the agent; its sessions' ends ask no summary of the summary
    model (the loop's tests count sessions and choices, not summaries, and dozens of ends
    each making one more call slowed them past their waits under a full run)."""
    configure(PSYCHOLOGIST_GEMINI_BATCH="off", PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
    world = configured.world
    project = world.tenant("project")
    world.member(project, "ada", "viewer")
    logger = world.user(project, "lou", "member", capabilities=PSYCHOLOGIST)
    world.gemini.respond_with(answering(by_title))
    return Loop(configured, project, logger)


def exploring_ids(count: int, share: float) -> list[str]:
    """Session ids whose hash puts them in the exploration share."""
    found: list[str] = []
    n = 0
    while len(found) < count:
        candidate = f"x-{n}"
        if unit_hash("explore", candidate) < share:
            found.append(candidate)
        n += 1
    return found


def run_explored(loop: Loop, count: int) -> None:
    """Exploration at 0.1 and `count` exploring sessions whose first answer is `true` at
    0.65 (under the rule's 0.8): those drawn the strong target end well, the others
    abnormally."""
    explored = selection_with(exploration={"share": 0.1})
    assert loop.connect.configure(explored).status_code == 201
    assert loop.link().status_code == 200
    loop.connect.world.gemini.respond_with(
        answering(lambda _t, p: (True, 0.65) if "deep reasoning" in p else ("small", 0.9))
    )
    for session in exploring_ids(count, 0.1):
        started = loop.connect.start("task", sessionId=session)
        target = loop.connect.frozen(started["seq"])["target"]
        good = target["model"] == PRO["model"]
        loop.log_and_end(session, "closed" if good else "closed_abnormally")
