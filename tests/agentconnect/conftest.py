"""An org with an admin, a member and a viewer, and a two-step model selection."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from tests.api import Api, World, wait_for

CAPABILITY = ("agent:connect",)
AGENT = "497f6eca-6276-4993-bfeb-53cbbbba6f08"
FIRST = "caa985ad-f12f-4ef1-943f-c1812738ec7a"
SECOND = "3f2b8a4e-1c9d-4e7f-8a6b-2d5c9e0f1a3b"
DEFAULT = {
    "runtime": "local",
    "model": "gemini-2.5-flash",
    "effort": "low",
    "permissionMode": "default",
    "fastMode": True,
}
SELECTION: dict[str, Any] = {
    "decision": {
        "decisionId": FIRST,
        "question": {"type": "boolean", "instructions": "Does the task need deep reasoning?"},
        "rules": [
            {
                "model": "gemini-2.5-pro",
                "effort": "high",
                "when": {"type": "boolean", "thresholds": {"true": 0.8}},
            }
        ],
    },
    "steps": [
        {
            "id": "size",
            "decisionId": SECOND,
            "question": {
                "type": "choice",
                "instructions": "How large is the change?",
                "criteria": {"small": "one file", "large": "many files"},
            },
            "rules": [
                {
                    "runtime": "container",
                    "effort": "medium",
                    "permissionMode": "plan",
                    "when": {"type": "choice", "thresholds": {"large": 0.6}},
                }
            ],
        }
    ],
    "default": DEFAULT,
}


@dataclass
class Connect:
    world: World
    api: Api
    org: str
    admin: str
    member: str
    viewer: str

    def path(self, suffix: str = "") -> str:
        return f"/v1/orgs/{self.org}/agents/{AGENT}{suffix}"

    def configure(self, selection: dict[str, Any] | None = None) -> Any:
        return self.api.call(
            "PUT", self.path("/model-selection"), selection or SELECTION, self.admin
        )

    def put_instructions(self, body: dict[str, Any], token: str | None = None) -> Any:
        return self.api.call("PUT", self.path("/instructions"), body, token or self.admin)

    def start(self, title: str = "Fix the login bug", **body: Any) -> dict[str, Any]:
        reply = self.api.post(
            self.path("/sessions"),
            {"title": title, "input": {"repo": "web", "files": 12}, **body},
            self.member,
        )
        assert reply.status_code == 202, reply.text
        started: dict[str, Any] = reply.json()
        return started

    def get(self, seq: int, token: str | None = None) -> Any:
        return self.api.call(
            "GET", self.path(f"/model-evaluations/{seq}"), token=token or self.viewer
        )

    def frozen(self, seq: int) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            reply = self.get(seq)
            return reply.json() if reply.status_code == 200 else None

        result: dict[str, Any] = wait_for(done)
        return result


def answer(value: object, probability: float) -> dict[str, Any]:
    return {"value": value, "probability": probability}


def selection_with(**changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(SELECTION)
    changed.update(changes)
    return changed


@pytest.fixture
def connect(world: World, api: Api) -> Connect:
    org = world.tenant("org")
    return Connect(
        world,
        api,
        org,
        admin=world.user(org, "ada", "admin", capabilities=CAPABILITY),
        member=world.user(org, "ana", "member", capabilities=CAPABILITY),
        viewer=world.user(org, "vic", "viewer", capabilities=CAPABILITY),
    )


@pytest.fixture
def configured(connect: Connect) -> Connect:
    reply = connect.configure()
    assert reply.status_code == 201, reply.text
    return connect
