"""What one job costs Firestore and Gemini: each worker run in this process on a job its
HTTP operation created, counted at the client's channel (calls, documents read and
written) and at the Gemini stand-in (calls). The capacity model multiplies these."""

from __future__ import annotations

from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from benchmarks.counting import COUNTER
from benchmarks.processes import MAIN, function_client
from benchmarks.seeding import Seed, event_batch
from benchmarks.tokens import ANALYSED_EVENTS, ITEM_TEXT, PRICED_AGENT, SESSION_INPUT, TWO_STEPS

RESEARCH_ITEMS = 100


def _call(seed: Seed, target: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {seed.token}"}
    reply = function_client(MAIN, target).open(path, method=method, json=body, headers=headers)
    if reply.status_code >= HTTPStatus.MULTIPLE_CHOICES:
        raise RuntimeError(f"{target} answered {reply.get_data(as_text=True)}")
    return reply.get_json()


def _counted(gemini: Any, work: Any) -> dict[str, Any]:
    asked = len(gemini.requests)
    COUNTER.clear()
    work()
    return {
        "firestore_calls": len(COUNTER.calls),
        "reads": COUNTER.reads,
        "writes": COUNTER.writes,
        "deletes": COUNTER.expiring,
        "gemini_calls": len(gemini.requests) - asked,
    }


def _counted_call(seed: Seed, target: str, path: str, body: Any) -> tuple[Any, dict[str, int]]:
    """A POST's answer, and the documents it read and wrote."""
    COUNTER.clear()
    answer = _call(seed, target, "POST", path, body)
    return answer, {"reads": COUNTER.reads, "writes": COUNTER.writes, "deletes": COUNTER.expiring}


def _research_run(seed: Seed, gemini: Any) -> dict[str, Any]:
    from functions.research import worker
    from shared import jobs

    conversation = _call(
        seed,
        "research_conversation_create",
        "POST",
        "/research-api/conversations/create",
        {"workspace_id": seed.workspace},
    )["id"]
    items = [{"text": ITEM_TEXT.format(n=n)} for n in range(RESEARCH_ITEMS)]
    _call(
        seed,
        "research_evidence_upsert",
        "POST",
        "/research-api/evidence/upsert",
        {"workspace_id": seed.workspace, "conversation_id": conversation, "items": items},
    )
    body = {"workspace_id": seed.workspace, "conversation_id": conversation}
    run = _call(
        seed,
        "research_ask",
        "POST",
        "/research-api/assistant/ask",
        {**body, "request_kind": "question", "question": "Why do people give up?"},
    )["run"]["id"]
    params = {"workspaceId": seed.workspace, "runId": run}
    return {
        "evidence_items": RESEARCH_ITEMS,
        **_counted(gemini, lambda: jobs.process(worker.WORKER, params, "bench")),
    }


def _ingested(seed: Seed, session: str, start: datetime) -> None:
    """ANALYSED_EVENTS events into `session` of the small project, 500 a request."""
    for offset in range(0, ANALYSED_EVENTS, 500):
        _call(
            seed,
            "psychologist_session_events",
            "POST",
            f"/projects/{seed.project_small}/sessions/{session}/events",
            {"events": event_batch(start, offset, 500)},
        )


def _analysis(seed: Seed, gemini: Any) -> dict[str, Any]:
    from functions.psychologist import worker
    from shared import jobs

    project = seed.project_small
    _ingested(seed, "JOBCOST", datetime(2026, 11, 7, tzinfo=UTC))
    created, documents = _counted_call(
        seed,
        "psychologist_analysis_create",
        f"/projects/{project}/analyses",
        {"sessionId": "JOBCOST"},
    )
    params = {"projectId": project, "analysisId": created["id"]}
    return {
        "events": ANALYSED_EVENTS,
        **_counted(gemini, lambda: jobs.process(worker.WORKER, params, "bench")),
        "create_request": documents,
    }


def _ended(seed: Seed, session: str, day: int, body: Any) -> tuple[str, dict[str, int]]:
    """A 1,000-event session logged on day `day` of November and ended with `body`: the
    analysis its end queued, and what the end request read and wrote."""
    _ingested(seed, session, datetime(2026, 11, day, tzinfo=UTC))
    path = f"/projects/{seed.project_small}/sessions/{session}/end"
    ended, documents = _counted_call(seed, "psychologist_session_end", path, body)
    return ended["analysisId"], documents


def _session_end(seed: Seed, gemini: Any) -> dict[str, Any]:
    """A 1,000-event session ended normally: the end request, then its count of the log
    (signals into outcome records, no model)."""
    from functions.psychologist import worker
    from shared import jobs

    project = seed.project_small
    analysis_id, documents = _ended(seed, "JOBCOSTEND", 8, {"state": "closed"})
    params = {"projectId": project, "analysisId": analysis_id}
    return {
        "events": ANALYSED_EVENTS,
        **_counted(gemini, lambda: jobs.process(worker.WORKER, params, "bench")),
        "end_request": documents,
    }


def _batched_analysis(seed: Seed, gemini: Any) -> dict[str, Any]:
    """A 1,000-event session ended abnormally: the end request, then its analysis through
    the Batch API: the worker submits the batch, the sweep's poll finishes it."""
    from functions.psychologist import batch, store, worker
    from shared import jobs

    project = seed.project_small
    abnormal = {"state": "closed_abnormally", "cause": "crash"}
    analysis_id, documents = _ended(seed, "JOBCOSTBATCH", 9, abnormal)
    params = {"projectId": project, "analysisId": analysis_id}
    submitted = _counted(gemini, lambda: jobs.process(worker.WORKER, params, "bench"))
    analysis = store.analysis_ref(project, analysis_id)
    finished = _counted(gemini, lambda: batch.poll(analysis))
    return {
        "events": ANALYSED_EVENTS,
        **{key: submitted[key] + finished[key] for key in submitted},
        "batched_requests": sum(1 for r in gemini.requests if r.batch is not None),
        "end_request": documents,
    }


def _evaluation(seed: Seed, gemini: Any) -> dict[str, Any]:
    from functions.agentconnect import worker
    from shared import jobs

    agent = f"/v1/orgs/{seed.org}/agents/{PRICED_AGENT}"
    _call(seed, "agentconnect_selection_put", "PUT", f"{agent}/model-selection", TWO_STEPS)
    started, documents = _counted_call(
        seed,
        "agentconnect_session_start",
        f"{agent}/sessions",
        {"title": "Fix the sign-out bug", "input": SESSION_INPUT},
    )
    params = {"orgId": seed.org, "agentId": PRICED_AGENT, "sessionId": started["sessionId"]}
    job = _counted(gemini, lambda: jobs.process(worker.WORKER, params, "bench"))
    return {**job, "start_request": documents}


def job_costs(seed: Seed, gemini: Any) -> dict[str, Any]:
    return {
        "research_run": _research_run(seed, gemini),
        "analysis": _analysis(seed, gemini),
        "session_end": _session_end(seed, gemini),
        "batched_analysis": _batched_analysis(seed, gemini),
        "evaluation": _evaluation(seed, gemini),
    }
