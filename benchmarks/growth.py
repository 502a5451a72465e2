"""How costs grow: the hypotheses list with 100 and 10,000 stored, analysis preparation
for 1,000 to 100,000 events, the research prompt for 100 to 5,000 items, and the trigger
pipeline from a document's creation to its worker's result."""

from __future__ import annotations

import time
import tracemalloc
from datetime import UTC, datetime
from typing import Any, cast

import requests

from benchmarks.measuring import INGEST_BATCH, timed
from benchmarks.processes import FLOOR, MAIN, served
from benchmarks.reporting import summary
from benchmarks.seeding import Seed, event_batch

PIPELINE_START = datetime(2026, 11, 4, tzinfo=UTC)
ITEM_TEXT = "I waited two days for onboarding; the setup wizard kept asking the same things. " * 2


def list_growth(seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    """Hypotheses list with 100 and 10,000 stored, beside the floor's same query at both
    sizes, all interleaved: the floor shows what the store itself adds with size."""
    samples: dict[str, list[float]] = {
        key: [] for key in ("100", "10000", "floor_100", "floor_10000")
    }
    headers = {"Authorization": f"Bearer {seed.token}"}
    session = requests.Session()
    with (
        served(MAIN, "psychologist_hypotheses_list", env) as url,
        served(FLOOR, "floor_hypotheses", env) as floor,
    ):
        for index in range(10 + rounds):
            for key, base, project in (
                ("100", url, seed.project_small),
                ("10000", url, seed.project_large),
                ("floor_100", floor, seed.project_small),
                ("floor_10000", floor, seed.project_large),
            ):
                elapsed = timed(
                    session, "GET", f"{base}/projects/{project}/hypotheses", None, headers
                )
                if index >= 10:
                    samples[key].append(elapsed)
    result: dict[str, Any] = {key: summary(values) for key, values in samples.items()}
    result["p50_ratio"] = round(result["10000"]["p50_ms"] / result["100"]["p50_ms"], 3)
    result["floor_p50_ratio"] = round(
        result["floor_10000"]["p50_ms"] / result["floor_100"]["p50_ms"], 3
    )
    return result


def growth(seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    from functions.research.documents import Evidence
    from functions.research.prompts import build_prompt
    from shared.gemini import estimate_tokens
    from shared.instance import settings

    results: dict[str, Any] = {}
    results["hypotheses_list"] = list_growth(seed, env, rounds)

    with served(MAIN, "psychologist_session_events", env) as url:
        session = requests.Session()
        for size in (1_000, 10_000):
            for offset in range(0, size, INGEST_BATCH):
                start = datetime(2026, 11, 3, tzinfo=UTC)
                timed(
                    session,
                    "POST",
                    f"{url}/projects/{seed.project_small}/sessions/PREP{size}/events",
                    {"events": event_batch(start, offset, INGEST_BATCH)},
                    {"Authorization": f"Bearer {seed.token}"},
                )
    results["analysis_preparation"] = {
        str(size): analysis_preparation(seed.project_small, session_id)
        for size, session_id in (
            (1_000, "PREP1000"),
            (10_000, "PREP10000"),
            (100_000, "BENCHPSYCA"),
        )
    }

    budget = settings().research_input_token_budget
    prompts = {}
    for count in (100, 1_000, 5_000):
        evidence: dict[str, Evidence] = {
            f"{i:08d}-0000-4000-8000-000000000000": {
                "revision": 1,
                "text": ITEM_TEXT,
                "source": None,
            }
            for i in range(count)
        }
        prompt = build_prompt("overview", None, evidence)
        tokens = estimate_tokens(prompt.system + prompt.text)
        prompts[str(count)] = {
            "chars": len(prompt.text),
            "estimated_tokens": tokens,
            "input_too_large": tokens > budget,
        }
    per_item = (prompts["5000"]["estimated_tokens"] - prompts["100"]["estimated_tokens"]) / 4_900
    overhead = prompts["100"]["estimated_tokens"] - 100 * per_item
    results["research_prompt"] = {
        "items": prompts,
        "budget_tokens": budget,
        "input_too_large_from_items": int((budget - overhead) // per_item) + 1,
    }
    return results


def analysis_preparation(project: str, session_id: str) -> dict[str, Any]:
    from functions.psychologist.documents import Analysis
    from functions.psychologist.prompts import analysis_calls
    from functions.psychologist.signals import find_signals
    from functions.psychologist.worker import load_log
    from shared.instance import settings

    def prepare() -> list[Any]:
        analysis = cast(Analysis, {"project_id": project, "session_id": session_id})
        session, events = load_log(analysis)
        if session is None:
            raise LookupError(f"session {session_id} was not seeded")
        prepared.append(len(events))
        return analysis_calls(
            session,
            find_signals(events, session),
            events,
            settings().psychologist_input_token_budget,
        )

    prepared: list[int] = []
    started = time.perf_counter()
    calls = prepare()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    prepare()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    events = prepared
    tokens = [call.estimated_tokens for call in calls]
    return {
        "events": events[0],
        "wall_s": round(elapsed, 2),
        "peak_mib": round(peak / 2**20, 1),
        "gemini_calls": len(calls) + (1 if len(calls) > 1 else 0),
        "max_tokens_per_call": max(tokens),
        "budget_tokens": settings().psychologist_input_token_budget,
    }


def pipeline(seed: Seed, host_url: str, rounds: int) -> dict[str, Any]:
    """Document created → worker finished, from the timestamps the code itself records."""
    from shared.clients import db

    session = requests.Session()
    headers = {"Authorization": f"Bearer {seed.token}"}
    research, analysis, evaluation = [], [], []
    repairs = 0
    for index in range(rounds):
        run = session.post(
            f"{host_url}/research-api/assistant/ask",
            headers=headers,
            timeout=30,
            json={
                "workspace_id": seed.workspace,
                "conversation_id": seed.conversation,
                "request_kind": "overview",
            },
        ).json()["run"]["id"]
        research.append(
            _settled_ms(
                run_doc := db().document(f"workspaces/{seed.workspace}/runs/{run}"),
                "created_at",
                run_doc,
                "finished_at",
            )
        )
        repairs += (run_doc.get().to_dict() or {}).get("quote_repairs", 0)

        session_id = f"PIPE{index}"
        session.post(
            f"{host_url}/projects/{seed.project_small}/sessions/{session_id}/events",
            headers=headers,
            timeout=30,
            json=cast(
                Any, {"events": event_batch(datetime(2026, 11, 4, tzinfo=UTC), index * 50, 50)}
            ),
        )
        created = session.post(
            f"{host_url}/projects/{seed.project_small}/analyses",
            headers=headers,
            timeout=30,
            json={"sessionId": session_id},
        ).json()["id"]
        analysis.append(
            _settled_ms(
                analysis_doc := db().document(f"projects/{seed.project_small}/analyses/{created}"),
                "created_at",
                analysis_doc,
                "finished_at",
            )
        )

        started = session.post(
            f"{host_url}/v1/orgs/{seed.org}/agents/{seed.agent}/sessions",
            headers=headers,
            timeout=30,
            json={"title": "t", "input": {}},
        ).json()
        evaluation.append(
            _settled_ms(
                db().document(
                    f"orgs/{seed.org}/agents/{seed.agent}/agent_sessions/{started['sessionId']}"
                ),
                "created_at",
                db().document(f"orgs/{seed.org}/agents/{seed.agent}/evaluations/{started['seq']}"),
                "at",
            )
        )
    return {
        "research_run": summary(research),
        "research_quote_repairs": repairs,
        "analysis": summary(analysis),
        "model_evaluation": summary(evaluation),
    }


def _settled_ms(start: Any, start_field: str, end: Any, end_field: str) -> float:
    """Milliseconds between two timestamps the code wrote, once the second exists."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        finished = (end.get().to_dict() or {}).get(end_field)
        if finished is not None:
            began = start.get().get(start_field)
            return float((finished - began).total_seconds() * 1000)
        time.sleep(0.01)
    raise RuntimeError(f"{end.path} did not settle")
