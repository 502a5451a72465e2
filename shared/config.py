"""Typed settings, read from the environment once per instance."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

from shared.models import DEFAULT_MODEL, Backend

T = TypeVar("T", int, float)


def _number(name: str, default: T, parse: Callable[[str], T], kind: str) -> T:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ValueError(f"{name} must be {kind}, got {raw!r}") from None


def _int(name: str, default: int) -> int:
    return _number(name, default, int, "an integer")


def _float(name: str, default: float) -> float:
    return _number(name, default, float, "a number")


MAX_ACTIVE_RUNS = 1_000
MAX_EVIDENCE_ITEMS = 20_000
"""The conversation document keeps every item's revision: 20,000 of them take about
900 KB of its 1 MiB (a UUID key and an integer, 45 bytes an item)."""


MAX_RAW_TEXT_BYTES = 32_768
"""An evaluation's details keep two raw texts a step, up to 11 steps, beside a 64 KiB
input: 22 texts of 32 KiB and the input take about 770 KB of the document's 1 MiB."""


def _bounded(name: str, default: int, ceiling: int, why: str) -> int:
    limit = _int(name, default)
    if not 1 <= limit <= ceiling:
        raise ValueError(f"{name} must be 1 to {ceiling} ({why}), got {limit}")
    return limit


WORKER_TIMEOUT_S = 540
"""The deployed timeout of every trigger function (the most an event function may have)."""
SETTLE_MARGIN_S = 30
"""Time a worker keeps after its lease to write the outcome before its function times out."""


def _lease(name: str, default: int) -> int:
    """A worker lease: every Gemini call of the job ends inside it, and the lease ends
    inside the function's timeout, so a job always settles before its function stops."""
    lease = _int(name, default)
    if not 1 <= lease <= WORKER_TIMEOUT_S - SETTLE_MARGIN_S:
        raise ValueError(
            f"{name} must be 1 to {WORKER_TIMEOUT_S - SETTLE_MARGIN_S} seconds "
            f"(the worker function's {WORKER_TIMEOUT_S} s timeout less {SETTLE_MARGIN_S} s "
            f"to settle), got {lease}"
        )
    return lease


@dataclass(frozen=True)
class Settings:
    project_id: str | None
    gemini_api_key: str | None
    gemini_use_vertex: bool
    gemini_location: str
    gemini_model: str
    gemini_base_url: str | None
    gemini_timeout_ms: int
    gemini_attempts: int
    gemini_initial_delay_s: float
    auth_cache_seconds: float
    research_max_runs_per_conversation: int
    research_max_evidence_items: int
    research_max_active_runs_per_workspace: int
    research_input_token_budget: int
    research_output_token_limit: int
    research_thinking_tokens: int
    research_workspace_token_budget: int
    research_lease_seconds: int
    retention_hours: int
    psychologist_event_retention_hours: int
    psychologist_heartbeat_timeout_s: int
    psychologist_input_token_budget: int
    psychologist_output_token_limit: int
    psychologist_thinking_tokens: int
    psychologist_call_concurrency: int
    psychologist_call_seconds: float
    psychologist_lease_seconds: int
    psychologist_hypothesis_retention_days: int
    psychologist_project_token_budget: int
    psychologist_effect_window_days: int
    schedule_interval_s: float
    agentconnect_raw_text_limit: int
    agentconnect_details_retention_hours: int
    agentconnect_session_token_hours: int
    agentconnect_lease_seconds: int
    agentconnect_output_token_limit: int
    agentconnect_thinking_tokens: int
    agentconnect_org_token_budget: int
    job_queue_seconds: int
    firestore_timeout_s: float

    @property
    def gemini_configured(self) -> bool:
        return bool(self.gemini_api_key) or self.gemini_use_vertex

    @property
    def gemini_backend(self) -> Backend:
        return Backend.VERTEX if self.gemini_use_vertex else Backend.DEVELOPER


def _project_id() -> str | None:
    """The configured project; against the emulator `demo-evidencia`, the emulator's own;
    otherwise None, so that the client finds it from the environment it runs in."""
    for name in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GCP_PROJECT"):
        value = os.environ.get(name)
        if value:
            return value
    return "demo-evidencia" if os.environ.get("FIRESTORE_EMULATOR_HOST") else None


def load_settings() -> Settings:
    return Settings(
        project_id=_project_id(),
        gemini_api_key=os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"),
        gemini_use_vertex=os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true"),
        gemini_location=os.environ.get("GOOGLE_CLOUD_LOCATION") or "global",
        gemini_model=os.environ.get("GEMINI_MODEL") or DEFAULT_MODEL,
        gemini_base_url=os.environ.get("GEMINI_BASE_URL") or None,
        gemini_timeout_ms=_int("GEMINI_TIMEOUT_MS", 60_000),
        gemini_attempts=_int("GEMINI_ATTEMPTS", 3),
        gemini_initial_delay_s=_float("GEMINI_INITIAL_DELAY_S", 1.0),
        auth_cache_seconds=_float("AUTH_CACHE_SECONDS", 30.0),
        research_max_runs_per_conversation=_int("RESEARCH_MAX_RUNS_PER_CONVERSATION", 50),
        research_max_evidence_items=_bounded(
            "RESEARCH_MAX_EVIDENCE_ITEMS",
            MAX_EVIDENCE_ITEMS,
            MAX_EVIDENCE_ITEMS,
            "the conversation document keeps each item's revision",
        ),
        research_max_active_runs_per_workspace=_bounded(
            "RESEARCH_MAX_ACTIVE_RUNS", 5, MAX_ACTIVE_RUNS, "one document per slot"
        ),
        research_input_token_budget=_int("RESEARCH_INPUT_TOKEN_BUDGET", 200_000),
        research_output_token_limit=_int("RESEARCH_OUTPUT_TOKEN_LIMIT", 8_192),
        research_thinking_tokens=_int("RESEARCH_THINKING_TOKENS", 4_096),
        research_workspace_token_budget=_int("RESEARCH_WORKSPACE_TOKEN_BUDGET", 2_000_000),
        research_lease_seconds=_lease("RESEARCH_LEASE_SECONDS", 300),
        retention_hours=24,
        psychologist_event_retention_hours=_int("PSYCHOLOGIST_EVENT_RETENTION_HOURS", 24),
        psychologist_heartbeat_timeout_s=_int("PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S", 300),
        psychologist_input_token_budget=_int("PSYCHOLOGIST_INPUT_TOKEN_BUDGET", 100_000),
        psychologist_output_token_limit=_int("PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT", 8_192),
        psychologist_thinking_tokens=_int("PSYCHOLOGIST_THINKING_TOKENS", 4_096),
        psychologist_call_concurrency=max(_int("PSYCHOLOGIST_CALL_CONCURRENCY", 8), 1),
        psychologist_call_seconds=_float("PSYCHOLOGIST_CALL_SECONDS", 60.0),
        psychologist_lease_seconds=_lease("PSYCHOLOGIST_LEASE_SECONDS", 480),
        psychologist_hypothesis_retention_days=_int("PSYCHOLOGIST_HYPOTHESIS_RETENTION_DAYS", 90),
        psychologist_project_token_budget=_int("PSYCHOLOGIST_PROJECT_TOKEN_BUDGET", 20_000_000),
        psychologist_effect_window_days=max(_int("PSYCHOLOGIST_EFFECT_WINDOW_DAYS", 14), 1),
        schedule_interval_s=_float("SCHEDULE_INTERVAL_S", 30.0),
        agentconnect_raw_text_limit=_bounded(
            "AGENTCONNECT_RAW_TEXT_LIMIT",
            16_384,
            MAX_RAW_TEXT_BYTES,
            "an evaluation's raw texts share one document",
        ),
        agentconnect_details_retention_hours=_int("AGENTCONNECT_DETAILS_RETENTION_HOURS", 24),
        agentconnect_session_token_hours=_int("AGENTCONNECT_SESSION_TOKEN_HOURS", 24),
        agentconnect_lease_seconds=_lease("AGENTCONNECT_LEASE_SECONDS", 180),
        agentconnect_output_token_limit=_int("AGENTCONNECT_OUTPUT_TOKEN_LIMIT", 256),
        agentconnect_thinking_tokens=_int("AGENTCONNECT_THINKING_TOKENS", 512),
        agentconnect_org_token_budget=_int("AGENTCONNECT_ORG_TOKEN_BUDGET", 5_000_000),
        job_queue_seconds=_int("JOB_QUEUE_SECONDS", 600),
        firestore_timeout_s=_float("FIRESTORE_TIMEOUT_S", 5.0),
    )


@cache
def settings() -> Settings:
    """The instance's settings; tests call `settings.cache_clear()` after changing env."""
    return load_settings()
