"""Gemini tokens per analysis, and the share of prompt tokens the implicit cache serves
when questions repeat over one unchanged conversation (the Gemini stand-in reports the
prefix each prompt shares with an earlier one, as Gemini's usage metadata does)."""

from __future__ import annotations

from typing import Any

import requests

from benchmarks.growth import _settled_ms
from benchmarks.seeding import Seed

QUESTIONS = (
    "Why is onboarding slow?",
    "What do people like about support?",
    "Which step confuses people most?",
)
ITEM_TEXT = "Interview {n}: the setup wizard asked for details I did not have, so I gave up twice."


def _stored(path: str) -> dict[str, Any]:
    from shared.clients import db

    return db().document(path).get().to_dict() or {}


def research_tokens(seed: Seed, host_url: str, items: int) -> dict[str, Any]:
    """Three questions over one conversation of `items` evidence items, one after another."""
    from shared.clients import db

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {seed.token}"
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
        path = f"workspaces/{seed.workspace}/runs/{run}"
        _settled_ms(db().document(path), "created_at", db().document(path), "finished_at")
        usages.append(_stored(path)["usage"])
    repeated = usages[1:]
    prompt = sum(u["input_tokens"] for u in repeated)
    return {
        "items": items,
        "tokens_per_run": round(sum(u["input_tokens"] + u["output_tokens"] for u in usages) / 3),
        "input_tokens_per_run": round(sum(u["input_tokens"] for u in usages) / 3),
        "cached_share_repeated": round(sum(u["cached_tokens"] for u in repeated) / prompt, 3),
    }


def token_use(seed: Seed, host_url: str) -> dict[str, Any]:
    """Research runs by evidence size, and the analyses and evaluations the pipeline made."""
    from shared.clients import db

    analyses = [
        usage
        for snapshot in db().collection(f"projects/{seed.project_small}/analyses").stream()
        if (usage := (snapshot.to_dict() or {}).get("usage"))
    ]
    evaluations = [
        (snapshot.to_dict() or {})["usage"]
        for snapshot in db().collection(f"orgs/{seed.org}/agents/{seed.agent}/evaluations").stream()
    ]
    return {
        "research": [research_tokens(seed, host_url, items) for items in (10, 100, 1_000)],
        "analysis_50_events": round(
            sum(u["input_tokens"] + u["output_tokens"] for u in analyses) / max(len(analyses), 1)
        ),
        "evaluation": round(
            sum(u["inputTokens"] + u["outputTokens"] for u in evaluations)
            / max(len(evaluations), 1)
        ),
    }
