"""One deployed instance serves eight requests at once (`cli/sizing.py PUBLIC_SIZING`):
every public operation, driven through its own functions-framework app with eight
concurrent requests, answers each exactly as it answers one alone, with the caller's own
request id on the response and on the request's log line (shared caches, clients and the
request log included)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

import pytest

from cli.sizing import PUBLIC_SIZING
from functions.registry import Operation, RestEntry, public_operations
from tests.api import World, function_client

ID = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
UUID = "497f6eca-6276-4993-bfeb-53cbbbba6f08"
AT_ONCE = PUBLIC_SIZING.concurrency


def path_for(route: str, tenants: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return tenants.get(name) or (UUID if name == "id" else ID)

    return re.sub(r"\{(\w+)\}", value, route)


def answer_of(reply: Any) -> tuple[int, Any]:
    """What a reply says, without what differs between any two calls (ids and times made
    for each): an error's code and message; a success's fields."""
    body = reply.get_json(silent=True)
    if reply.status_code >= HTTPStatus.BAD_REQUEST and isinstance(body, dict):
        return reply.status_code, (body.get("code"), body.get("message"))
    return reply.status_code, sorted(body) if isinstance(body, dict) else type(body).__name__


@pytest.mark.parametrize(
    ("entry", "operation"),
    public_operations(),
    ids=[f"{entry.name}-{operation.method}" for entry, operation in public_operations()],
)
def test_eight_requests_at_once_on_one_instance_answer_as_one_alone(
    world: World, entry: RestEntry, operation: Operation, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, project, org = world.tenant(), world.tenant("project"), world.tenant("org")
    tokens = {
        "research": world.user(workspace, "ana", "admin"),
        "psychologist": world.user(project, "ana", "admin", capabilities=("agent:psychologist",)),
        "agentconnect": world.user(org, "ana", "admin", capabilities=("agent:connect",)),
    }
    tokens["account"] = tokens["research"]
    path = path_for(entry.route, {"projectId": project, "orgId": org})
    body = {"workspace_id": workspace} if operation.method in ("POST", "PUT") else None
    client = function_client(entry.name)

    def send(index: int) -> Any:
        headers = {"Authorization": f"Bearer {tokens[entry.tag]}", "x-request-id": f"req-{index}"}
        return client.open(path, method=operation.method, json=body, headers=headers)

    alone = answer_of(send(0))
    capsys.readouterr()
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        replies = list(pool.map(send, range(1, AT_ONCE + 1)))
    assert [answer_of(reply) for reply in replies] == [alone] * AT_ONCE
    assert [reply.headers["x-request-id"] for reply in replies] == [
        f"req-{index}" for index in range(1, AT_ONCE + 1)
    ]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    logged = sorted(
        line["logging.googleapis.com/labels"]["request_id"]
        for line in lines
        if "httpRequest" in line
    )
    assert logged == sorted(f"req-{index}" for index in range(1, AT_ONCE + 1))
