"""The data every measurement reads: tenants, one all-capability token, a research run
with its answer, 100 and 10,000 stored hypotheses, and a frozen model evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from benchmarks.processes import MAIN, function_client
from cli.gemini_stand_in import GeminiTestServer, cited_research_answer

if TYPE_CHECKING:
    from functions.psychologist.documents import Event

BENCH_ENV = {
    "AUTH_CACHE_SECONDS": "30",
    "RESEARCH_MAX_ACTIVE_RUNS": "1000",
    "RESEARCH_MAX_RUNS_PER_CONVERSATION": "1000000000",
    "GEMINI_API_KEY": "bench-key",
    "GEMINI_INITIAL_DELAY_S": "0.01",
    "SCHEDULE_INTERVAL_S": "0",
}


DEFAULT_TARGET = {
    "runtime": "local",
    "model": "flash",
    "effort": "low",
    "permissionMode": "default",
    "fastMode": True,
}
"""The default target of every selection the bench puts."""


@dataclass
class Seed:
    token: str
    workspace: str
    conversation: str
    run: str
    project_small: str
    project_large: str
    org: str
    agent: str = "497f6eca-6276-4993-bfeb-53cbbbba6f08"
    sessions: dict[str, str] = field(default_factory=dict)


def event_batch(start: datetime, offset: int, count: int, agent: str = "dev-api") -> list[Event]:
    from ulid import ULID

    events: list[Event] = []
    for index in range(offset, offset + count):
        moment = start + timedelta(milliseconds=index)
        kind = ("task.opened", "tool.call", "tool.error", "task.reopened", "message")[index % 5]
        events.append(
            {
                "id": str(ULID.from_datetime(moment)),
                "agent": agent,
                "type": kind,
                "at": moment.isoformat().replace("+00:00", "Z"),
                "taskId": f"T-{index % 50}",
                "data": {"tool": "pytest", "error": "exit 1"}
                if kind == "tool.error"
                else {"n": index},
            }
        )
    return events


def stored_hypotheses(project: str, count: int) -> None:
    from shared.clients import db
    from shared.ids import new_ulid

    base = datetime(2026, 11, 1, tzinfo=UTC)
    batch = db().batch()
    for index in range(count):
        hypothesis_id = new_ulid()
        created = base + timedelta(seconds=index)
        batch.set(
            db().document(f"projects/{project}/hypotheses/{hypothesis_id}"),
            {
                "id": hypothesis_id,
                "projectId": project,
                "sessionId": f"S{index % 20}",
                "analysisId": "A",
                "agenteAlvo": ("dev-api", "qa-bot")[index % 2],
                "observacao": "o",
                "hipotese": "h",
                "sugestao": "s",
                "confiancaPercent": 50,
                "evidenceEventIds": ["E"],
                "terminationAnalysis": None,
                "status": "proposed",
                "decidedBy": None,
                "decidedAt": None,
                "createdAt": created,
                "updatedAt": created,
                "evidence_events": [],
            },
        )
        if index % 400 == 399:
            batch.commit()
            batch = db().batch()
    batch.commit()


def seed(gemini: GeminiTestServer) -> Seed:
    from functions.agentconnect import worker as connect_worker
    from functions.research import worker as research_worker
    from shared import auth, jobs
    from shared.clients import db
    from shared.ids import new_ulid, new_uuid

    client = db()
    workspace, project_small, project_large, org = new_uuid(), new_ulid(), new_ulid(), new_ulid()
    for kind, tenant in (
        ("workspace", workspace),
        ("project", project_small),
        ("project", project_large),
        ("org", org),
    ):
        auth.tenant_ref(client, kind, tenant).set({"kind": kind})
        auth.member_ref(client, kind, tenant, "bench").set({"role": "owner", "user_id": "bench"})
    token, _ = auth.create_token(
        client,
        user_id="bench",
        credential_class=auth.CredentialClass.PERSONAL_ACCESS_TOKEN,
        capabilities=list(auth.CAPABILITIES),
        tenants=None,
        expires_in=None,
    )
    headers = {"Authorization": f"Bearer {token}"}

    def call(target: str, method: str, path: str, body: Any = None) -> Any:
        reply = function_client(MAIN, target).open(path, method=method, json=body, headers=headers)
        if reply.status_code >= HTTPStatus.MULTIPLE_CHOICES:
            raise RuntimeError(f"{target} answered {reply.get_data(as_text=True)}")
        return reply.get_json()

    conversation = call(
        "research_conversation_create",
        "POST",
        "/research-api/conversations/create",
        {"workspace_id": workspace},
    )["id"]
    items = call(
        "research_evidence_upsert",
        "POST",
        "/research-api/evidence/upsert",
        {
            "workspace_id": workspace,
            "conversation_id": conversation,
            "items": [
                {"text": f"Interview {i}: onboarding took long and the wizard confused me."}
                for i in range(20)
            ],
        },
    )["items"]
    run = call(
        "research_ask",
        "POST",
        "/research-api/assistant/ask",
        {"workspace_id": workspace, "conversation_id": conversation, "request_kind": "overview"},
    )["run"]["id"]
    gemini.answer_json(cited_research_answer([(items[0]["evidence_id"], items[0]["revision"])]))
    jobs.process(research_worker.WORKER, {"workspaceId": workspace, "runId": run}, "seed")

    stored_hypotheses(project_small, 100)
    stored_hypotheses(project_large, 10_000)

    seeded = Seed(token, workspace, conversation, run, project_small, project_large, org)
    selection = {
        "decision": {
            "decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
            "question": {"type": "boolean", "instructions": "Deep reasoning?"},
            "rules": [{"model": "pro", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}],
        },
        "steps": [],
        "default": DEFAULT_TARGET,
    }
    call(
        "agentconnect_selection_put",
        "PUT",
        f"/v1/orgs/{org}/agents/{seeded.agent}/model-selection",
        selection,
    )
    started = call(
        "agentconnect_session_start",
        "POST",
        f"/v1/orgs/{org}/agents/{seeded.agent}/sessions",
        {"title": "t", "input": {}},
    )
    gemini.answer_json({"value": True, "probability": 0.9})
    session = {"orgId": org, "agentId": seeded.agent, "sessionId": started["sessionId"]}
    jobs.process(connect_worker.WORKER, session, "seed")
    return seeded
