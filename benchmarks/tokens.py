"""Gemini tokens and their cost per analysis, the first time and when the implicit cache
serves the repeated prefix: a research run by evidence size, a Psychologist analysis of
1,000 events, an AgentConnect evaluation per step. The Gemini stand-in reports the prefix
each prompt shares with an earlier one as Gemini's usage metadata does, and counts about
four characters a token; prices come from `benchmarks/prices.json`."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from typing import Any, cast

import requests

from benchmarks.processes import ROOT
from benchmarks.seeding import BENCH_ENV, DEFAULT_TARGET, Seed, event_batch
from cli.capacity import cost_usd

PRICES = ROOT / "benchmarks" / "prices.json"
QUESTIONS = (
    "Why is onboarding slow?",
    "What do people like about support?",
    "Which step confuses people most?",
)
ITEM_TEXT = "Interview {n}: the setup wizard asked for details I did not have, so I gave up twice."
ANALYSED_EVENTS = 1_000
PRICED_AGENT = "6d0c3f0e-2b7a-4c1e-9f5d-8a4b3c2d1e0f"
STARTS = 4


def price_table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(PRICES.read_text())
    return table


def _mean(usages: list[dict[str, int]]) -> dict[str, int]:
    keys = ("input_tokens", "cached_tokens", "output_tokens")
    return {key: round(sum(u.get(key, 0) for u in usages) / len(usages)) for key in keys}


def _priced(usage: dict[str, int], price: dict[str, float]) -> dict[str, Any]:
    return {
        **usage,
        "tokens": usage["input_tokens"] + usage["output_tokens"],
        "cost_usd": cost_usd(usage, price),
    }


def _first_and_repeated(
    usages: list[dict[str, int]], price: dict[str, float]
) -> dict[str, dict[str, Any]]:
    return {
        "first": _priced(_mean(usages[:1]), price),
        "repeated": _priced(_mean(usages[1:]), price),
    }


def _client(seed: Seed) -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {seed.token}"
    return session


def _stored(path: str) -> dict[str, Any]:
    from shared.clients import db

    return db().document(path).get().to_dict() or {}


def _settled(path: str, field: str) -> dict[str, Any]:
    """The document once the worker has written `field` to it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stored = _stored(path)
        if stored.get(field) is not None:
            return stored
        time.sleep(0.01)
    raise RuntimeError(f"{path} did not settle")


def research_tokens(
    seed: Seed, host_url: str, items: int, price: dict[str, float]
) -> dict[str, Any]:
    """Three questions over one conversation of `items` evidence items, one after another:
    the first pays for the whole prompt, the next two find the evidence cached."""
    session = _client(seed)
    conversation = session.post(
        f"{host_url}/research-api/conversations/create",
        json={"workspace_id": seed.workspace, "title": f"tokens {items}"},
        timeout=30,
    ).json()["id"]
    for start in range(0, items, 100):
        batch = [{"text": ITEM_TEXT.format(n=n)} for n in range(start, min(start + 100, items))]
        session.post(
            f"{host_url}/research-api/evidence/upsert",
            json={"workspace_id": seed.workspace, "conversation_id": conversation, "items": batch},
            timeout=60,
        ).raise_for_status()
    usages = []
    for question in QUESTIONS:
        run = session.post(
            f"{host_url}/research-api/assistant/ask",
            json={
                "workspace_id": seed.workspace,
                "conversation_id": conversation,
                "request_kind": "question",
                "question": question,
            },
            timeout=30,
        ).json()["run"]["id"]
        usages.append(_settled(f"workspaces/{seed.workspace}/runs/{run}", "finished_at")["usage"])
    return {"items": items, **_first_and_repeated(usages, price)}


def analysis_tokens(seed: Seed, host_url: str, price: dict[str, float]) -> dict[str, Any]:
    """A 1,000-event session analysed, then analysed again after one more event arrived:
    the log comes first in the prompt, so the second finds it cached."""
    session = _client(seed)
    base = f"{host_url}/projects/{seed.project_small}"
    start = datetime(2026, 11, 6, tzinfo=UTC)
    for offset in range(0, ANALYSED_EVENTS, 500):
        session.post(
            f"{base}/sessions/TOKENS/events",
            json=cast(Any, {"events": event_batch(start, offset, 500)}),
            timeout=60,
        ).raise_for_status()
    usages = []
    for extra in range(2):
        if extra:
            event = event_batch(start, ANALYSED_EVENTS, 1)
            session.post(
                f"{base}/sessions/TOKENS/events", json=cast(Any, {"events": event}), timeout=30
            ).raise_for_status()
        created = session.post(f"{base}/analyses", json={"sessionId": "TOKENS"}, timeout=30)
        path = f"projects/{seed.project_small}/analyses/{created.json()['id']}"
        usages.append(_settled(path, "finished_at")["usage"])
    return {"events": ANALYSED_EVENTS, **_first_and_repeated(usages, price)}


TWO_STEPS: Any = {
    "decision": {
        "decisionId": "0b6f1d2e-3c4a-4b5c-8d6e-7f8091a2b3c4",
        "question": {"type": "boolean", "instructions": "Does the task need deep reasoning?"},
        "rules": [{"model": "pro", "when": {"type": "boolean", "thresholds": {"true": 0.99}}}],
    },
    "steps": [
        {
            "id": "size",
            "decisionId": "1c7f2e3d-4b5a-4c6d-9e7f-8091a2b3c4d5",
            "question": {
                "type": "choice",
                "instructions": "How large is the change?",
                "criteria": {"small": "one or two files", "large": "many files or modules"},
            },
            "rules": [
                {"effort": "high", "when": {"type": "choice", "thresholds": {"large": 0.99}}}
            ],
        }
    ],
    "default": DEFAULT_TARGET,
}
SESSION_INPUT = {
    "repo": "web",
    "files": ["src/login.ts", "src/session.ts", "tests/login.test.ts"],
    "issue": "Users are signed out after a page reload when the remember-me box is ticked.",
}


def evaluation_tokens(seed: Seed, host_url: str, price: dict[str, float]) -> dict[str, Any]:
    """Session starts of an agent with a two-step selection: tokens per step asked. The
    prompt of a step stays far below the implicit cache's minimum, so no start is served
    from the cache."""
    from shared.models import DEFAULT_MODEL, profile_of

    session = _client(seed)
    agent = f"{host_url}/v1/orgs/{seed.org}/agents/{PRICED_AGENT}"
    session.put(f"{agent}/model-selection", json=TWO_STEPS, timeout=30).raise_for_status()
    usages, steps = [], 0
    for index in range(STARTS):
        started = session.post(
            f"{agent}/sessions",
            json={"title": f"Fix the sign-out bug {index}", "input": SESSION_INPUT},
            timeout=30,
        ).json()
        path = f"orgs/{seed.org}/agents/{PRICED_AGENT}"
        summary = _settled(f"{path}/evaluations/{started['seq']}", "at")
        steps += len(_stored(f"{path}/evaluation_details/{started['seq']}")["chain"])
        usages.append(
            {
                "input_tokens": summary["usage"]["inputTokens"],
                "output_tokens": summary["usage"]["outputTokens"],
                "cached_tokens": 0,
            }
        )
    total = {key: sum(u[key] for u in usages) for key in usages[0]}
    per_step = {key: round(value / steps) for key, value in total.items()}
    return {
        "starts": STARTS,
        "steps": steps,
        "per_step": _priced(per_step, price),
        "cache_min_tokens": profile_of(DEFAULT_MODEL).cache_min_tokens,
    }


def token_use(seed: Seed, host_url: str) -> dict[str, Any]:
    """Each flow's tokens on the model it asks (the bench's settings), priced on it."""
    from cli.host import flow_models
    from shared.config import load_settings

    table = price_table()
    models = flow_models(load_settings({**os.environ, **BENCH_ENV}))
    research, psychologist, agentconnect = (
        table["models"][models[flow]] for flow in ("research", "psychologist", "agentconnect")
    )
    return {
        "models": models,
        "prices_read": table["read"],
        "research": [research_tokens(seed, host_url, n, research) for n in (10, 100, 1_000)],
        "analysis": analysis_tokens(seed, host_url, psychologist),
        "evaluation": evaluation_tokens(seed, host_url, agentconnect),
    }
