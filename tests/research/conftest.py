"""A workspace with a member, a viewer and a conversation holding three evidence items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from cli.gemini_stand_in import cited_research_answer
from shared.clients import db
from tests.api import Api, World, document, wait_for

TERMINAL = {"completed", "failed", "cancelled", "expired"}


@dataclass
class Research:
    world: World
    api: Api
    workspace: str
    member: str
    viewer: str
    conversation: str
    evidence: dict[str, int]

    def body(self, **extra: Any) -> dict[str, Any]:
        return {"workspace_id": self.workspace, "conversation_id": self.conversation, **extra}

    def ask(
        self, token: str | None = None, headers: dict[str, str] | None = None, **extra: Any
    ) -> Any:
        extra.setdefault("request_kind", "overview")
        return self.api.post(
            "/research-api/assistant/ask", self.body(**extra), token or self.member, headers=headers
        )

    def status(self, run_id: str, token: str | None = None) -> Any:
        return self.api.post(
            "/research-api/assistant/status", self.body(run_id=run_id), token or self.viewer
        )

    def settled(self, run_id: str) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            reply = self.status(run_id)
            assert reply.status_code == 200, reply.text
            body: dict[str, Any] = reply.json()
            return body if body["run"]["status"] in TERMINAL else None

        result: dict[str, Any] = wait_for(done)
        return result

    def stored_run(self, run_id: str) -> dict[str, Any]:
        """The run's document as stored."""
        return document(f"workspaces/{self.workspace}/runs/{run_id}")

    def tokens_used(self) -> int:
        """The workspace's Gemini tokens, summed over its usage shards as asks read them."""
        shards = db().collection(f"workspaces/{self.workspace}/usage").stream()
        return sum((shard.to_dict() or {}).get("tokens_used", 0) for shard in shards)

    def slot_holders(self) -> list[str]:
        """The runs holding the workspace's active-run slots."""
        slots = db().collection(f"workspaces/{self.workspace}/slots").stream()
        return [(slot.to_dict() or {})["run_id"] for slot in slots]

    def upsert(self, items: list[dict[str, Any]]) -> Any:
        return self.api.post("/research-api/evidence/upsert", self.body(items=items), self.member)

    def answer(
        self,
        statement: str = "Users find onboarding slow.",
        cite: list[tuple[str, int]] | None = None,
        **overrides: Any,
    ) -> dict[str, Any]:
        answer = cited_research_answer(cite or list(self.evidence.items())[:1], statement)
        answer.update(overrides)
        return answer


@pytest.fixture
def research(world: World, api: Api) -> Research:
    workspace = world.tenant("workspace")
    member = world.user(workspace, "ana", "member")
    viewer = world.user(workspace, "vic", "viewer")
    created = api.post(
        "/research-api/conversations/create",
        {"workspace_id": workspace, "title": "Onboarding"},
        member,
    )
    assert created.status_code == 201, created.text
    conversation = created.json()["id"]
    texts = [
        "Onboarding took me two days.",
        "The setup wizard is confusing.",
        "Support answered fast.",
    ]
    reply = api.post(
        "/research-api/evidence/upsert",
        {
            "workspace_id": workspace,
            "conversation_id": conversation,
            "items": [{"text": t} for t in texts],
        },
        member,
    )
    assert reply.status_code == 200, reply.text
    evidence = {item["evidence_id"]: item["revision"] for item in reply.json()["items"]}
    return Research(world, api, workspace, member, viewer, conversation, evidence)
