"""Documents a session start reads (POST /v1/orgs/{o}/agents/{id}/sessions), for an agent
with standing instructions and for one without, counted at the Firestore client's channel
(`benchmarks.counting`): the current instructions are copied onto the agent document,
which the start reads anyway (`functions/agentconnect/instructions.py`), so serving them
should cost no read; the goal allows one."""

from __future__ import annotations

import statistics
import uuid
from http import HTTPStatus
from typing import Any

from benchmarks.counting import COUNTER
from benchmarks.processes import MAIN, function_client
from benchmarks.seeding import DEFAULT_TARGET, Seed

STARTS = 6
"""Starts per agent, each of a new session; the first of each instance is also counted
apart (the token and membership are read then, and remembered after)."""
GOAL_MORE_READS = 1
INSTRUCTIONS = "Run the test suite before you report a task done, and quote its last line."
SELECTION = {
    "decision": {
        "decisionId": "5d0c2a4e-6f3b-4a51-9a63-1b8f2f1d8a10",
        "question": {"type": "boolean", "instructions": "Deep reasoning?"},
        "rules": [{"model": "pro", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}],
    },
    "steps": [],
    "default": DEFAULT_TARGET,
}


def _agent(seed: Seed, instructions: str | None) -> str:
    """A new agent of the seeded org with the bench's selection, and `instructions` set."""
    agent = str(uuid.uuid4())
    headers = {"Authorization": f"Bearer {seed.token}"}
    base = f"/v1/orgs/{seed.org}/agents/{agent}"
    puts = [("agentconnect_selection_put", "/model-selection", SELECTION)]
    if instructions is not None:
        puts.append(("agentconnect_instructions", "/instructions", {"text": instructions}))
    for target, path, body in puts:
        reply = function_client(MAIN, target).open(
            base + path, method="PUT", json=body, headers=headers
        )
        if reply.status_code >= HTTPStatus.MULTIPLE_CHOICES:
            raise RuntimeError(f"{target} answered {reply.get_data(as_text=True)}")
    return agent


def _starts(seed: Seed, agent: str, instructions: str | None) -> dict[str, Any]:
    """`STARTS` session starts in a new instance, each counted on its own."""
    from shared.instance import instance, renew

    renew(instance().environ)
    client = function_client(MAIN, "agentconnect_session_start")
    headers = {"Authorization": f"Bearer {seed.token}"}
    reads, calls = [], []
    for index in range(STARTS):
        COUNTER.clear()
        reply = client.open(
            f"/v1/orgs/{seed.org}/agents/{agent}/sessions",
            method="POST",
            json={"title": f"bench start {index}", "input": {}},
            headers=headers,
        )
        if reply.status_code != HTTPStatus.ACCEPTED:
            raise RuntimeError(f"the start answered {reply.get_data(as_text=True)}")
        served = reply.get_json()["instructions"]
        if (served or {}).get("text") != instructions:
            raise RuntimeError(f"the start served {served}, not the agent's instructions")
        reads.append(COUNTER.reads)
        calls.append(len(COUNTER.calls))
    return {
        "reads": reads,
        "calls": calls,
        "first_reads": reads[0],
        "warm_reads": statistics.median(reads[1:]),
        "warm_calls": statistics.median(calls[1:]),
    }


def session_start_reads(seed: Seed) -> dict[str, Any]:
    rows = {
        name: _starts(seed, _agent(seed, text), text)
        for name, text in (("without", None), ("with", INSTRUCTIONS))
    }
    more = max(rows["with"][key] - rows["without"][key] for key in ("first_reads", "warm_reads"))
    return {
        "starts": STARTS,
        **rows,
        "more_reads": more,
        "goal_more_reads": GOAL_MORE_READS,
        "met": more <= GOAL_MORE_READS,
    }
