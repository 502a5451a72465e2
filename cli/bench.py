"""`python -m cli.bench`: what each function costs against the floor of its own stack.

It starts its own Firestore emulator and Gemini protocol stand-in, seeds data, and
measures: warm latency against floor functions (interleaved A/B), Firestore round trips
per request (counted at the client's gRPC channel), cold starts and heavy imports,
growth (list size, ingest volume, analysis preparation, research prompt size) and the
trigger pipeline. It prints a table and writes the same figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import requests

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK = str(Path(sys.executable).with_name("functions-framework"))
HEAVY = (
    "google.genai",
    "grpc",
    "google.cloud.firestore",
    "jsonschema",
    "referencing",
    "pydantic",
    "google.events",
    "cloudevents",
    "flask",
    "httpx2",
    "ulid",
)
ITEM_TEXT = "I waited two days for onboarding; the setup wizard kept asking the same things. " * 2
READ_ONLY = (
    "research_status",
    "psychologist_hypotheses_list",
    "psychologist_analysis_get",
    "agentconnect_evaluation_get",
    "agentconnect_evaluations_list",
)
CREATED = "google.cloud.firestore.document.v1.created"
CONTRACT = ("research_status", "psychologist_hypotheses_list", "agentconnect_evaluation_get")
BENCH_ENV = {
    "AUTH_CACHE_SECONDS": "30",
    "RESEARCH_MAX_ACTIVE_RUNS": "1000000000",
    "RESEARCH_MAX_RUNS_PER_CONVERSATION": "1000000000",
    "GEMINI_API_KEY": "bench-key",
    "GEMINI_MODEL": "gemini-bench",
    "GEMINI_INITIAL_DELAY_S": "0.01",
    "SCHEDULE_INTERVAL_S": "0",
}


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(samples_ms: list[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "p50_ms": round(pct(samples_ms, 0.5), 3),
        "p95_ms": round(pct(samples_ms, 0.95), 3),
    }


# -- round trips at the gRPC channel ---------------------------------------------------------


class CallCounter(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def _count(self, details: Any) -> None:
        self.calls.append(details.method.rsplit("/", 1)[-1])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details)
        return continuation(details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self._count(details)
        return continuation(details, request)

    def intercept_stream_unary(self, continuation: Any, details: Any, iterator: Any) -> Any:
        self._count(details)
        return continuation(details, iterator)

    def intercept_stream_stream(self, continuation: Any, details: Any, iterator: Any) -> Any:
        self._count(details)
        return continuation(details, iterator)


COUNTER = CallCounter()


def count_at_the_channel() -> None:
    """Every Firestore client made from now on sends its calls through COUNTER."""
    from google.cloud.firestore_v1.base_client import BaseClient

    original = BaseClient._emulator_channel

    def counted(self: Any, transport: Any) -> Any:
        return grpc.intercept_channel(original(self, transport), COUNTER)

    BaseClient._emulator_channel = counted  # type: ignore[method-assign]


# -- processes ------------------------------------------------------------------------------


@contextmanager
def served(source: str, target: str, env: dict[str, str]) -> Iterator[str]:
    from cli.emulator import free_port

    port = free_port()
    process = subprocess.Popen(
        [FRAMEWORK, "--source", source, "--target", target, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answer(lambda: requests.get(url + "/", timeout=5))
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_answer(call: Callable[[], requests.Response], timeout: float = 60) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


# -- seeding --------------------------------------------------------------------------------


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


def _event_batch(
    start: datetime, offset: int, count: int, agent: str = "dev-api"
) -> list[dict[str, Any]]:
    from ulid import ULID

    events = []
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


def _stored_hypotheses(project: str, count: int) -> None:
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
                "evidenceEvents": [],
            },
        )
        if index % 400 == 399:
            batch.commit()
            batch = db().batch()
    batch.commit()


def seed(gemini: Any) -> Seed:
    import functions_framework

    from functions.agentconnect import worker as connect_worker
    from functions.research import worker as research_worker
    from shared import auth
    from shared.clients import db
    from shared.events import DocumentEvent
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
        auth.member_ref(client, kind, tenant, "bench").set({"role": "owner"})
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
        app = functions_framework.create_app(target=target, source=str(ROOT / "main.py"))
        reply = app.test_client().open(path, method=method, json=body, headers=headers)
        assert reply.status_code < 300, (target, reply.get_data(as_text=True))
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
    gemini.answer_json(research_answer(items[0]["evidence_id"], items[0]["revision"]))
    research_worker.process(DocumentEvent("seed", CREATED, f"workspaces/{workspace}/runs/{run}"))

    _stored_hypotheses(project_small, 100)
    _stored_hypotheses(project_large, 10_000)

    seeded = Seed(token, workspace, conversation, run, project_small, project_large, org)
    selection = {
        "decision": {
            "decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
            "question": {"type": "boolean", "instructions": "Deep reasoning?"},
            "rules": [{"model": "pro", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}],
        },
        "steps": [],
        "default": {
            "runtime": "local",
            "model": "flash",
            "effort": "low",
            "permissionMode": "default",
            "fastMode": True,
        },
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
    connect_worker.process(
        DocumentEvent(
            "seed",
            CREATED,
            f"orgs/{org}/agents/{seeded.agent}/agent_sessions/{started['sessionId']}",
        )
    )
    return seeded


def research_answer(evidence_id: str, revision: int) -> dict[str, Any]:
    return {
        "answer": {
            "statement": "Onboarding is slow.",
            "basis": "observed",
            "evidence": [{"evidence_id": evidence_id, "revision": revision}],
            "uncertainty": "Small sample.",
        },
        "findings": [],
        "sentiment": [],
        "query_suggestions": [],
        "limitations": ["One survey."],
        "quantitative_claims": False,
        "method_version": "research-cited/v1",
    }


# -- measurements ---------------------------------------------------------------------------


@dataclass
class Case:
    """One endpoint measured against its floor."""

    name: str
    floor: str
    method: str
    path: Callable[[Seed, str], str]
    body: Callable[[Seed, int, str], Any]


def _events_body(_seed: Seed, index: int, side: str) -> Any:
    start = datetime(2026, 11, 2, tzinfo=UTC) + timedelta(hours=1 if side == "floor" else 0)
    return {"events": _event_batch(start, index * 500, 500)}


CASES = (
    Case(
        "research_status",
        "floor_status",
        "POST",
        lambda _s, _side: "/research-api/assistant/status",
        lambda s, _i, _side: {
            "workspace_id": s.workspace,
            "conversation_id": s.conversation,
            "run_id": s.run,
        },
    ),
    Case(
        "psychologist_hypotheses_list",
        "floor_hypotheses",
        "GET",
        lambda s, _side: f"/projects/{s.project_small}/hypotheses",
        lambda _s, _i, _side: None,
    ),
    Case(
        "agentconnect_evaluation_get",
        "floor_evaluation",
        "GET",
        lambda s, _side: f"/v1/orgs/{s.org}/agents/{s.agent}/model-evaluations/1",
        lambda _s, _i, _side: None,
    ),
    Case(
        "research_ask",
        "floor_ask",
        "POST",
        lambda _s, _side: "/research-api/assistant/ask",
        lambda s, _i, _side: {
            "workspace_id": s.workspace,
            "conversation_id": s.conversation,
            "request_kind": "overview",
        },
    ),
    Case(
        "psychologist_session_events",
        "floor_ingest",
        "POST",
        lambda s, side: f"/projects/{s.project_small}/sessions/{s.sessions[side]}/events",
        _events_body,
    ),
)


def _timed(
    session: requests.Session, method: str, url: str, body: Any, headers: dict[str, str]
) -> float:
    started = time.perf_counter()
    reply = session.request(method, url, json=body, headers=headers, timeout=60)
    elapsed = (time.perf_counter() - started) * 1000
    if reply.status_code >= 300:
        raise RuntimeError(f"{method} {url} answered {reply.status_code}: {reply.text[:300]}")
    return elapsed


def warm_latency(seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {seed.token}"}
    for case in CASES:
        seed.sessions = {
            "project": f"BENCH{case.name[:4].upper()}A",
            "floor": f"BENCH{case.name[:4].upper()}F",
        }
        count = rounds
        with (
            served("main.py", case.name, env) as real,
            served("cli/bench_floor.py", case.floor, env) as floor,
        ):
            session = requests.Session()
            sides = {"project": real, "floor": floor}
            times: dict[str, list[float]] = {"project": [], "floor": []}
            warm = 0 if case.name == "psychologist_session_events" else 20
            for index in range(warm + count):
                order = ("project", "floor") if index % 2 == 0 else ("floor", "project")
                for side in order:
                    url = sides[side] + case.path(seed, side)
                    elapsed = _timed(
                        session, case.method, url, case.body(seed, index, side), headers
                    )
                    if index >= warm:
                        times[side].append(elapsed)
        project, floor_stats = summary(times["project"]), summary(times["floor"])
        results[case.name] = {
            "function": project,
            "floor": floor_stats,
            "p50_ratio": round(project["p50_ms"] / floor_stats["p50_ms"], 3),
        }
        if case.name == "psychologist_session_events":
            total_s = sum(times["project"]) / 1000
            results[case.name]["events"] = 500 * count
            results[case.name]["events_per_s"] = round(500 * count / total_s)
    return results


def round_trips(seed: Seed) -> dict[str, Any]:
    import functions_framework

    from shared.clients import reset_clients

    headers = {"Authorization": f"Bearer {seed.token}"}
    seed.sessions = {"project": "RTRIPSA", "floor": "RTRIPSF"}
    results = {}
    for case in CASES:
        counts: dict[str, list[list[str]]] = {}
        for side, source, target in (
            ("project", "main.py", case.name),
            ("floor", "cli/bench_floor.py", case.floor),
        ):
            reset_clients()
            client = functions_framework.create_app(
                target=target, source=str(ROOT / source)
            ).test_client()
            counts[side] = []
            for index in range(2):
                COUNTER.calls.clear()
                reply = client.open(
                    case.path(seed, side),
                    method=case.method,
                    json=case.body(seed, 1000 + index, side),
                    headers=headers,
                )
                assert reply.status_code < 300, reply.get_data(as_text=True)
                counts[side].append(list(COUNTER.calls))
        results[case.name] = {
            "cold": len(counts["project"][0]),
            "warm": len(counts["project"][1]),
            "floor": len(counts["floor"][1]),
            "warm_calls": counts["project"][1],
            "floor_calls": counts["floor"][1],
        }
    return results


def _first_request(entry: Any, seed: Seed) -> Callable[[str], requests.Response]:
    headers = {"Authorization": f"Bearer {seed.token}"}
    case = next((c for c in CASES if c.name == entry.name), None)
    if case is not None and entry.name in CONTRACT:
        return lambda url: requests.request(
            case.method,
            url + case.path(seed, "project"),
            json=case.body(seed, 0, "project"),
            headers=headers,
            timeout=30,
        )
    if entry.kind == "trigger":
        event = {
            "ce-id": "1",
            "ce-specversion": "1.0",
            "ce-source": "bench",
            "ce-document": "elsewhere/x",
            "ce-type": "google.cloud.firestore.document.v1.created",
            "Content-Type": "application/protobuf",
        }
        return lambda url: requests.post(url, data=b"", headers=event, timeout=30)
    operation = entry.operations[0]
    path = re.sub(r"\{\w+\}", "01JC4Z8QK3M7YV2N5T9B0PXHRA", entry.route)
    return lambda url: requests.request(
        operation.method,
        url + path,
        json={} if operation.method in ("POST", "PUT") else None,
        timeout=30,
    )


def _cold_ms(
    source: str, target: str, env: dict[str, str], first: Callable[[str], requests.Response]
) -> float:
    from cli.emulator import free_port

    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [FRAMEWORK, "--source", source, "--target", target, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        reply = wait_answer(lambda: first(f"http://127.0.0.1:{port}"))
        elapsed = (time.perf_counter() - started) * 1000
        if reply.status_code >= 500:
            raise RuntimeError(f"{target} failed its first request: {reply.text[:200]}")
        return elapsed
    finally:
        process.terminate()
        process.wait(timeout=10)


def heavy_imports(name: str) -> dict[str, Any]:
    code = (
        f"import sys, time; t = time.perf_counter(); import main; main.{name}; "
        "print(round((time.perf_counter() - t) * 1000, 1)); print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    import_ms, modules = done.stdout.splitlines()
    loaded = set(modules.split())
    return {"import_ms": float(import_ms), "heavy": [m for m in HEAVY if m in loaded]}


def cold_starts(seed: Seed, env: dict[str, str], repeats: int) -> dict[str, Any]:
    from functions.registry import ENTRIES

    floor_first = lambda url: requests.get(url + "/", timeout=30)  # noqa: E731 - one line, read once
    floors: list[float] = []
    results: dict[str, Any] = {}
    for entry in ENTRIES:
        times = []
        for _ in range(repeats if entry.name in READ_ONLY else 1):
            floors.append(_cold_ms("cli/bench_floor.py", "floor_read", env, floor_first))
            times.append(_cold_ms("main.py", entry.name, env, _first_request(entry, seed)))
        results[entry.name] = {
            "cold_ms": round(statistics.median(times), 1),
            **heavy_imports(entry.name),
        }
    floor = statistics.median(floors)
    for value in results.values():
        value["ratio"] = round(value["cold_ms"] / floor, 3)
    return {"floor_ms": round(floor, 1), "functions": results}


def list_growth(seed: Seed, env: dict[str, str], rounds: int) -> dict[str, Any]:
    """Hypotheses list with 100 and 10,000 stored, beside the floor's same query at both
    sizes, all interleaved: the floor shows what the store itself adds with size."""
    samples: dict[str, list[float]] = {
        key: [] for key in ("100", "10000", "floor_100", "floor_10000")
    }
    headers = {"Authorization": f"Bearer {seed.token}"}
    session = requests.Session()
    with (
        served("main.py", "psychologist_hypotheses_list", env) as url,
        served("cli/bench_floor.py", "floor_hypotheses", env) as floor,
    ):
        for index in range(10 + rounds):
            for key, base, project in (
                ("100", url, seed.project_small),
                ("10000", url, seed.project_large),
                ("floor_100", floor, seed.project_small),
                ("floor_10000", floor, seed.project_large),
            ):
                elapsed = _timed(
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
    from functions.research.prompts import build_prompt
    from shared.config import settings
    from shared.gemini import estimate_tokens

    results: dict[str, Any] = {}
    results["hypotheses_list"] = list_growth(seed, env, rounds)

    with served("main.py", "psychologist_session_events", env) as url:
        session = requests.Session()
        for size in (1_000, 10_000):
            for offset in range(0, size, 500):
                start = datetime(2026, 11, 3, tzinfo=UTC)
                _timed(
                    session,
                    "POST",
                    f"{url}/projects/{seed.project_small}/sessions/PREP{size}/events",
                    {"events": _event_batch(start, offset, 500)},
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
        evidence = {
            f"{i:08d}-0000-4000-8000-000000000000": {
                "revision": 1,
                "text": ITEM_TEXT,
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
    from functions.psychologist.prompts import analysis_calls
    from functions.psychologist.signals import find_signals
    from functions.psychologist.worker import load_log
    from shared.config import settings

    def prepare() -> list[Any]:
        session, events = load_log({"project_id": project, "session_id": session_id})
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

        session_id = f"PIPE{index}"
        session.post(
            f"{host_url}/projects/{seed.project_small}/sessions/{session_id}/events",
            headers=headers,
            timeout=30,
            json={"events": _event_batch(datetime(2026, 11, 4, tzinfo=UTC), index * 50, 50)},
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


def stand_in_model(request: Any) -> Any:
    """Answers each kind of call at once, citing what the prompt shows."""
    from cli.gemini_stand_in import Reply

    schema = request.body["generationConfig"]["responseJsonSchema"]["properties"]
    if "hypotheses" in schema:
        return Reply(text=json.dumps({"hypotheses": []}))
    if "value" in schema:
        return Reply(text=json.dumps({"value": True, "probability": 0.9}))
    found = re.search(r'"evidence_id": "([^"]+)", "revision": (\d+)', request.prompt)
    assert found is not None
    return Reply(text=json.dumps(research_answer(found.group(1), int(found.group(2)))))


# -- report ---------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    lines = [
        "Warm latency (ms), function vs floor, interleaved:",
        f"  {'endpoint':34} {'p50':>8} {'p95':>8} {'floor p50':>10} {'floor p95':>10} {'ratio':>6}",
    ]
    for name, row in results["warm_latency"].items():
        lines.append(
            f"  {name:34} {row['function']['p50_ms']:8.2f} {row['function']['p95_ms']:8.2f} "
            f"{row['floor']['p50_ms']:10.2f} {row['floor']['p95_ms']:10.2f} {row['p50_ratio']:6.2f}"
        )
    lines.append("Firestore round trips per request (cold / warm / floor):")
    for name, row in results["round_trips"].items():
        calls = " ".join(row["warm_calls"])
        lines.append(f"  {name:34} {row['cold']:3} / {row['warm']:3} / {row['floor']:3}   {calls}")
    cold = results["cold_start"]
    lines.append(f"Cold start (ms, first request answered); floor {cold['floor_ms']:.0f} ms:")
    for name, row in cold["functions"].items():
        heavy = " ".join(row["heavy"])
        lines.append(
            f"  {name:34} {row['cold_ms']:8.0f} x{row['ratio']:.2f}"
            f"  import {row['import_ms']:6.0f} ms  {heavy}"
        )
    growth_ = results["growth"]
    hl = growth_["hypotheses_list"]
    lines.append(
        f"Hypotheses list p50: 100 stored {hl['100']['p50_ms']:.2f} ms, "
        f"10,000 stored {hl['10000']['p50_ms']:.2f} ms (x{hl['p50_ratio']:.2f}); "
        f"floor x{hl['floor_p50_ratio']:.2f}"
    )
    ingest = results["warm_latency"]["psychologist_session_events"]
    lines.append(
        f"Ingest: {ingest['events']} events in batches of 500 at {ingest['events_per_s']} events/s"
    )
    for size, row in growth_["analysis_preparation"].items():
        lines.append(
            f"Analysis preparation, {size} events: {row['wall_s']} s, peak {row['peak_mib']} MiB, "
            f"{row['gemini_calls']} Gemini calls, at most {row['max_tokens_per_call']} "
            f"tokens a call (budget {row['budget_tokens']})"
        )
    prompt = growth_["research_prompt"]
    for count, row in prompt["items"].items():
        lines.append(
            f"Research prompt, {count} items: {row['chars']} chars, "
            f"~{row['estimated_tokens']} tokens, input_too_large={row['input_too_large']}"
        )
    lines.append(
        f"  input_too_large from {prompt['input_too_large_from_items']} such items "
        f"(budget {prompt['budget_tokens']} tokens)"
    )
    lines.append("Trigger pipeline, document created -> worker finished (ms):")
    for name, row in results["pipeline"].items():
        lines.append(
            f"  {name:34} p50 {row['p50_ms']:8.1f}  p95 {row['p95_ms']:8.1f}  n={row['n']}"
        )
    return "\n".join(lines)


def _stop(_signum: int, _frame: object) -> None:
    """Turn SIGTERM into an exception so that every started process is stopped."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.bench", description=__doc__)
    parser.add_argument(
        "--rounds", type=int, default=200, help="requests per side (at least 200 for the record)"
    )
    parser.add_argument("--cold-repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results.json")
    args = parser.parse_args(argv)

    from cli import emulator as emulator_module
    from cli.gemini_stand_in import GeminiTestServer
    from cli.host import LocalHost
    from shared.clients import reset_clients

    signal.signal(signal.SIGTERM, _stop)
    host_port = emulator_module.free_port()
    emulator = emulator_module.start(functions_port=host_port)
    gemini = GeminiTestServer().start()
    os.environ.update(BENCH_ENV)
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
    os.environ["GEMINI_BASE_URL"] = gemini.url
    env = {**os.environ}
    count_at_the_channel()
    reset_clients()
    host = LocalHost(host_port, emulator, owns_emulator=False)
    try:
        seeded = seed(gemini)
        gemini.respond_with(stand_in_model)
        results: dict[str, Any] = {
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
            },
            "round_trips": round_trips(seeded),
            "warm_latency": warm_latency(seeded, env, args.rounds),
        }
        results["cold_start"] = cold_starts(seeded, env, args.cold_repeats)
        results["growth"] = growth(seeded, env, args.rounds)
        host.start()
        results["pipeline"] = pipeline(seeded, host.url, 20)
    finally:
        if host.thread.is_alive():
            host.stop()
        gemini.stop()
        emulator.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
