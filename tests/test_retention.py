"""Everything user- or model-written expires: each flow of the three APIs runs, then every
document in the database is walked.

Each collection group the code writes is classified below: either it holds user or model
text, and then every document in it must carry `expires_at` and the group must have a
TTL policy in `firestore.indexes.json`; or it holds none. A group the walk finds that
is in neither list fails the test, so a new collection must be classified. The same walk
holds the rule for stored names (docs/architecture.md): a camelCase field is one the
contract names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.agentconnect.conftest import Connect, answer, configured, connect
from tests.api import all_documents
from tests.psychologist.conftest import Psychologist, hypothesis, psy
from tests.psychologist.test_analysis_flow import SESSION, reopening_log
from tests.research.conftest import Research, research

FIXTURES = (configured, connect, psy, research)
"""The three APIs' fixtures, used together here."""

ROOT = Path(__file__).resolve().parent.parent
HOLDS_TEXT = {
    "conversations",
    "evidence",
    "runs",
    "idempotency",
    "event_chunks",
    "analyses",
    "hypotheses",
    "decisions",
    "agent_sessions",
    "evaluation_details",
    "summaries",
}
"""Titles, evidence, questions, answers, event data, model hypotheses and rejected output,
decision reasons, session inputs and raw provider texts."""
NO_TEXT = {
    "workspaces": "a tenant's operator-given name",
    "slots": "which run holds an active-run slot, and until when",
    "usage": "a shard of a workspace's Gemini token count",
    "projects": "a tenant's operator-given name",
    "orgs": "a tenant's operator-given name",
    "members": "roles",
    "tokens": "hashes, grants and expiries",
    "tenant_ids": "which kind holds an id",
    "sessions": "state, counts and times of a Psychologist session",
    "event_index": "hashes of a session's event ids and bodies, and where each event is kept",
    "outcomes": "how an analysed session ended, per agent: counts, ids and model versions",
    "agents": "the current selection version and sequence counter",
    "selections": "operator configuration, kept to audit what decided",
    "evaluations": "the frozen decision: target, outcome, usage (the title lives in details)",
    "evidencia_delivery_probes": "the local host's delivery probes",
}


def ttl_groups() -> set[str]:
    indexes = json.loads((ROOT / "firestore.indexes.json").read_text())
    return {
        override["collectionGroup"]
        for override in indexes["fieldOverrides"]
        if override["fieldPath"] == "expires_at" and override.get("ttl")
    }


def group_of(path: str) -> str:
    return path.split("/")[-2]


API_OF_TENANT = {"workspaces": "research", "projects": "psychologist", "orgs": "agentconnect"}
CAMEL = re.compile(r"[a-z][A-Z]")


def property_names(schema: Any) -> Iterator[str]:
    """Every property name a published schema defines, at any depth."""
    if isinstance(schema, dict):
        yield from schema.get("properties", {})
        for value in schema.values():
            yield from property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from property_names(value)


def contract_names(api: str) -> set[str]:
    return {
        name
        for path in (ROOT / "schemas" / api).glob("*.json")
        for name in property_names(json.loads(path.read_text()))
    }


def names_off_the_rule(documents: dict[str, dict[str, Any]]) -> list[str]:
    """`path.field` for each camelCase field that no published schema of its API names."""
    named = {api: contract_names(api) for api in API_OF_TENANT.values()}
    return [
        f"{path}.{field}"
        for path, data in documents.items()
        for field in data
        if CAMEL.search(field)
        and field not in named.get(API_OF_TENANT.get(path.split("/")[0], ""), set())
    ]


LINKED_SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRC"
"""A session AgentConnect starts and the Psychologist logs: its outcome record joins both."""


def every_flow(
    research: Research, psy: Psychologist, configured: Connect
) -> dict[str, dict[str, Any]]:
    """Run an ask, an analysis with a decision and a session start; every document then."""
    research.world.gemini.answer_json(research.answer())
    run_id = research.ask(headers={"Idempotency-Key": "retention"}).json()["run"]["id"]
    research.settled(run_id)
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json(
        {"hypotheses": [hypothesis("dev-api", reopened), hypothesis("ghost", reopened)]}
    )
    psy.settled(psy.analyse(SESSION))
    target = psy.hypotheses().json()[0]["id"]
    decided = psy.api.post(
        psy.path(f"/hypotheses/{target}/decision"),
        {"status": "accepted", "reason": "Yes."},
        psy.admin,
    )
    assert decided.status_code == 200, decided.text
    linked = psy.api.call(
        "PUT",
        configured.path("/outcome-source"),
        {"projectId": psy.project, "agent": "dev-api"},
        configured.admin,
    )
    assert linked.status_code == 200, linked.text
    configured.world.gemini.answer_json(answer(value=True, probability=0.9))
    started = configured.start(sessionId=LINKED_SESSION)
    configured.frozen(started["seq"])
    psy.ingest(LINKED_SESSION, reopening_log()[0].events)
    psy.settled(psy.end(LINKED_SESSION, "closed").json()["analysisId"])
    return all_documents()


def test_every_document_holding_user_or_model_text_expires(
    research: Research, psy: Psychologist, configured: Connect
) -> None:
    documents = every_flow(research, psy, configured)
    found = {group_of(path) for path in documents}
    assert found - HOLDS_TEXT - set(NO_TEXT) == set(), "classify every collection group"
    assert found >= HOLDS_TEXT, "every text-holding group is written by the flows above"
    assert ttl_groups() >= HOLDS_TEXT, "a TTL policy on expires_at for each"
    lacking = [
        path
        for path, data in documents.items()
        if group_of(path) in HOLDS_TEXT and data.get("expires_at") is None
    ]
    assert lacking == []
    summary = next(data for path, data in documents.items() if group_of(path) == "evaluations")
    assert "title" not in summary


def test_every_stored_camel_case_name_is_one_the_contract_publishes(
    research: Research, psy: Psychologist, configured: Connect
) -> None:
    assert names_off_the_rule(every_flow(research, psy, configured)) == []
