"""An agent's standing instructions: every change is a new, immutable version, and the
current one is copied onto the agent document, which a session start reads anyway, so
serving it there costs no read."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.agentconnect import store
from functions.agentconnect.documents import Agent
from functions.agentconnect.requests import AgentParams, InstructionsRequest, VersionsParams
from functions.agentconnect.views import author_can_view, instructions_view
from functions.loop import store as outcome_store
from functions.loop.documents import StoredInstructions
from functions.loop.estimators import Share, wilson
from functions.loop.instructions import Change, add_version, instructions, instructions_ref
from shared.errors import not_found
from shared.http import Call, Reply
from shared.store import counted, read_as, stream_as, transact

PAGE_SIZE = 20


def put_instructions(call: Call) -> Reply:
    """A new version with the text given, or, for a rollback, with `fromVersion`'s text.
    One transaction reads the agent's current version and writes the next: two PUTs at
    once make two consecutive versions."""
    params, body = call.params_as(AgentParams), call.body_as(InstructionsRequest)
    org_id, agent_id = params["orgId"], params["id"]
    agent = store.agent_ref(org_id, agent_id)

    def apply(transaction: firestore.Transaction) -> StoredInstructions:
        text, rolled_back_from = _text_asked(transaction, org_id, agent_id, body)
        current = (read_as(agent, Agent, transaction) or {}).get("instructions")
        change = Change(text, call.principal.user_id, body.get("reason"), None, rolled_back_from)
        return add_version(transaction, agent, current, change)

    return Reply(instructions_view(transact(apply)))


def _text_asked(
    transaction: firestore.Transaction, org_id: str, agent_id: str, body: InstructionsRequest
) -> tuple[str, int | None]:
    """The text the new version holds, and the version it was rolled back to (if any)."""
    if "fromVersion" not in body:
        return body["text"], None
    version = body["fromVersion"]
    earlier = read_as(instructions_ref(org_id, agent_id, version), StoredInstructions, transaction)
    if earlier is None:
        raise not_found(f"Instructions version {version}")
    return earlier["text"], version


def get_instructions(call: Call) -> Reply:
    """The current version, from the agent document alone."""
    params = call.params_as(AgentParams)
    agent = read_as(store.agent_ref(params["orgId"], params["id"]), Agent) or {}
    current = agent.get("instructions")
    if current is None:
        raise not_found("The agent's instructions")
    return Reply(instructions_view(current))


def list_versions(call: Call) -> Reply:
    """Every version, newest first: one query of at most `limit + 1` documents; the next
    page's token, the last version shown, travels in `X-Next-Page-Token`."""
    params = call.params_as(VersionsParams)
    limit = params.get("limit", PAGE_SIZE)
    query = instructions(params["orgId"], params["id"]).order_by(
        "version", direction=firestore.Query.DESCENDING
    )
    if "pageToken" in params:
        query = query.start_after({"version": int(params["pageToken"])})
    found = list(stream_as(query.limit(limit + 1), StoredInstructions).values())
    page = found[:limit]
    headers = {"X-Next-Page-Token": str(page[-1]["version"])} if len(found) > limit else {}
    rates = version_rates(params["orgId"], params["id"], [stored["version"] for stored in page])
    listed = [
        {**instructions_view(stored), "sessions": rates.get(stored["version"])} for stored in page
    ]
    return Reply(listed, headers=headers)


def version_rates(org_id: str, agent_id: str, versions: list[int]) -> dict[int, dict[str, Any]]:
    """Each version's sessions in the linked project: those joined (their log ended) and
    those that ended abnormally, with a 95% Wilson interval; none while the agent is not
    linked, or its link's author may no longer view the project. Two aggregations per
    version, all at once."""
    agent = read_as(store.agent_ref(org_id, agent_id), Agent) or {}
    source = agent.get("outcome_source")
    if not versions or source is None or not author_can_view(source):
        return {}
    sessions: Any = (
        outcome_store.outcomes(source["project_id"])
        .where(filter=FieldFilter("selection.org_id", "==", org_id))
        .where(filter=FieldFilter("selection.agent_id", "==", agent_id))
    )
    queries = [
        sessions.where(filter=FieldFilter("selection.instructions_version", "==", version)).where(
            filter=FieldFilter("abnormal_end", *test)
        )
        for version in versions
        for test in (("in", [0, 1]), ("==", 1))
    ]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        found = list(pool.map(counted, queries))
    return {
        version: _rate(wilson(abnormal, joined))
        for version, joined, abnormal in zip(versions, found[0::2], found[1::2], strict=True)
    }


def _rate(share: Share) -> dict[str, Any]:
    return {
        "joined": share.sessions,
        "abnormalEnds": share.count,
        "abnormalShare": share.share,
        "low": share.low,
        "high": share.high,
    }
