"""A project with a member, a viewer and an admin, and helpers to write agent logs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ulid import ULID

from functions.psychologist import store
from functions.psychologist.telemetry.event_index import ENTRY, Generation, Indexed, id_key
from shared.retention import to_micros
from tests.api import Api, Configure, World, wait_for

CAPABILITY = ("agent:psychologist",)


def event_id(moment: datetime) -> str:
    return str(ULID.from_datetime(moment))


def indexed(project: str, session: str, event: str) -> Indexed:
    """What the session's index head holds of one event."""
    found = Generation(store.index_head(project, session).get().get("entries")).find(event)
    assert found is not None, f"event {event} is not in the index head"
    return found


def expire_indexed(project: str, session: str, at: datetime, ids: list[str] | None = None) -> None:
    """Make the session's index entries (of `ids`, else every one) expire at `at`."""
    ref = store.index_head(project, session)
    packed = ref.get().get("entries")
    keys = {id_key(event) for event in ids} if ids is not None else None
    changed = bytearray(packed)
    for offset in range(0, len(packed), ENTRY.size):
        key, body, chunk, position, _ = ENTRY.unpack_from(packed, offset)
        if keys is None or key in keys:
            ENTRY.pack_into(changed, offset, key, body, chunk, position, to_micros(at))
    ref.update({"entries": bytes(changed)})


@dataclass
class Log:
    """Events of one session, stamped a second apart from a fixed start."""

    start: datetime = field(default_factory=lambda: datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, agent: str, kind: str, task: str | None = None, **data: Any) -> dict[str, Any]:
        moment = self.start + timedelta(seconds=len(self.events))
        event: dict[str, Any] = {
            "id": event_id(moment),
            "agent": agent,
            "type": kind,
            "at": moment.isoformat().replace("+00:00", "Z"),
        }
        if task:
            event["taskId"] = task
        if data:
            event["data"] = data
        self.events.append(event)
        return event


@dataclass
class Psychologist:
    world: World
    api: Api
    project: str
    member: str
    viewer: str
    admin: str

    def path(self, suffix: str) -> str:
        return f"/projects/{self.project}{suffix}"

    def patterns(self, **query: str) -> dict[str, Any]:
        """The pattern list as a viewer reads it."""
        reply = self.api.session.get(
            self.api.base_url + self.path("/patterns"),
            params=query,
            headers={"Authorization": f"Bearer {self.viewer}"},
            timeout=30,
        )
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body

    def current_events(self, session_id: str) -> list[dict[str, Any]]:
        """Each stored event as it stands now (a call's merged reports), through the audit
        read: the chunks keep every version, in no order that says which is the latest."""
        ids = sorted({event["id"] for event in self.stored_events(session_id)})
        found: list[dict[str, Any]] = []
        for start in range(0, len(ids), 100):
            query = ",".join(ids[start : start + 100])
            path = self.path(f"/sessions/{session_id}/events?ids={query}")
            reply = self.api.call("GET", path, token=self.viewer)
            assert reply.status_code == 200, reply.text
            found += reply.json()["events"]
        return found

    def stored_events(self, session_id: str) -> list[dict[str, Any]]:
        """Every stored version of the session's events, from its chunks."""
        events: list[dict[str, Any]] = []
        for chunk in store.event_chunks(self.project, session_id).stream():
            events.extend(json.loads((chunk.to_dict() or {})["events_json"]))
        return events

    def ingest(self, session: str, events: list[dict[str, Any]], token: str | None = None) -> Any:
        return self.api.post(
            self.path(f"/sessions/{session}/events"), {"events": events}, token or self.member
        )

    def end(self, session: str, state: str, cause: str | None = None) -> Any:
        body = {"state": state} | ({"cause": cause} if cause else {})
        return self.api.post(self.path(f"/sessions/{session}/end"), body, self.member)

    def session(self, session_id: str) -> dict[str, Any]:
        """The session as the sessions list shows it."""
        reply = self.api.call("GET", self.path("/sessions"), token=self.viewer)
        assert reply.status_code == 200, reply.text
        listed = [item for item in reply.json() if item["sessionId"] == session_id]
        assert len(listed) == 1, reply.json()
        found: dict[str, Any] = listed[0]
        return found

    def analyse(self, session: str) -> str:
        reply = self.api.post(self.path("/analyses"), {"sessionId": session}, self.member)
        assert reply.status_code == 202, reply.text
        analysis_id: str = reply.json()["id"]
        return analysis_id

    def analysis(self, analysis_id: str) -> dict[str, Any]:
        reply = self.api.call("GET", self.path(f"/analyses/{analysis_id}"), token=self.viewer)
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body

    def settled(self, analysis_id: str) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            body = self.analysis(analysis_id)
            return body if body["status"] in ("completed", "failed") else None

        result: dict[str, Any] = wait_for(done)
        return result

    def hypotheses(self, token: str | None = None, **query: Any) -> Any:
        return self.api.session.get(
            self.api.base_url + self.path("/hypotheses"),
            params=query,
            headers={"Authorization": f"Bearer {token or self.viewer}"},
            timeout=30,
        )

    def sweep(self) -> dict[str, Any]:
        reply = self.api.private("/internal/psychologist/sweep")
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body


def hypothesis(
    agent: str, cited: list[str], termination: str | None = None, **overrides: Any
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "agenteAlvo": agent,
        "observacao": "The agent reopened the same task three times.",
        "hipotese": "The instructions don't say when to consider the task done.",
        "sugestao": "Add an explicit definition-of-done criterion to the instruction.",
        "confiancaPercent": 72,
        "evidenceEventIds": cited,
        "terminationAnalysis": {"analise": termination} if termination else None,
    }
    value.update(overrides)
    return value


@pytest.fixture
def psy(world: World, api: Api) -> Psychologist:
    project = world.tenant("project")
    return Psychologist(
        world,
        api,
        project,
        member=world.user(project, "ana", "member", capabilities=CAPABILITY),
        viewer=world.user(project, "vic", "viewer", capabilities=CAPABILITY),
        admin=world.user(project, "ada", "admin", capabilities=CAPABILITY),
    )


@pytest.fixture(autouse=True)
def normal_ends_unsummarised(configure: Configure) -> None:
    """A normal end asks the summary model nothing here, so that each test counts only
    the Gemini calls it is about; `tests/psychologist/test_summaries.py` turns it on."""
    configure(PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
