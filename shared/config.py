"""Typed settings, read from an environment (the instance keeps them: `shared.instance`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from shared.models import ANSWER_MODEL, DEFAULT_MODEL, Backend

T = TypeVar("T", int, float)
Environ = Mapping[str, str]


def _number(env: Environ, name: str, default: T, parse: Callable[[str], T], kind: str) -> T:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ValueError(f"{name} must be {kind}, got {raw!r}") from None


def _int(env: Environ, name: str, default: int) -> int:
    return _number(env, name, default, int, "an integer")


def _real(raw: str) -> float:
    value = float(raw)
    # NaN compares false with everything, so it would pass every range check below.
    if math.isnan(value):
        raise ValueError(raw)
    return value


def _float(env: Environ, name: str, default: float) -> float:
    return _number(env, name, default, _real, "a number")


def _at_least(env: Environ, name: str, default: int, floor: int, why: str) -> int:
    value = _int(env, name, default)
    if value < floor:
        raise ValueError(f"{name} must be at least {floor} ({why}), got {value}")
    return value


def _positive(env: Environ, name: str, default: float, why: str) -> float:
    value = _float(env, name, default)
    if value <= 0:
        raise ValueError(f"{name} must be more than 0 ({why}), got {value:g}")
    return value


SUMMARY_MODEL = "gemini-2.5-flash-lite"
"""A normal end's summary model: the cheapest Gemini text model served, $0.10 input and
$0.40 output per million tokens (half that through the Batch API), against $0.25 and $1.50
for Gemini 3.1 Flash-Lite and $0.30 and $2.50 for 3.5 Flash-Lite. It takes structured
output, and it was kept when 2.5 Flash and Pro were shut down (available "until further
notice"). Prices: https://ai.google.dev/gemini-api/docs/pricing (read 2026-10-07);
shutdowns: https://ai.google.dev/gemini-api/docs/deprecations."""

EMBEDDING_MODEL = "gemini-embedding-001"
"""The patterns' embedding model: Google's text embedding model, which takes a task type
(CLUSTERING here) as a parameter; gemini-embedding-2, the newer multimodal one, wants the
task written into the text instead. Read 2026-12-05:
https://ai.google.dev/gemini-api/docs/embeddings ("for text-only use cases,
gemini-embedding-001 remains available") and
https://ai.google.dev/gemini-api/docs/models/gemini-embedding-001 (128 to 3,072 values,
768, 1,536 and 3,072 recommended)."""
EMBEDDING_SIZES = range(128, 3072 + 1)

MAX_ACTIVE_RUNS = 1_000
MAX_EVIDENCE_ITEMS = 20_000
"""The conversation document keeps every item's revision: 20,000 of them take about
900 KB of its 1 MiB (a UUID key and an integer, 45 bytes an item)."""


MAX_RAW_TEXT_BYTES = 32_768
"""An evaluation's details keep two raw texts a step, up to 11 steps, beside a 64 KiB
input: in the worst case (`tests/agentconnect/test_worst_case_sizes.py`) about 990 KB of
the document's 1 MiB, the selection's texts kept once in its version instead."""


def _bounded(env: Environ, name: str, default: int, ceiling: int, why: str) -> int:
    limit = _int(env, name, default)
    if not 1 <= limit <= ceiling:
        raise ValueError(f"{name} must be 1 to {ceiling} ({why}), got {limit}")
    return limit


WORKER_TIMEOUT_S = 540
"""The deployed timeout of every trigger function (the most an event function may have)."""
SETTLE_MARGIN_S = 30
"""Time a worker keeps after its lease to write the outcome before its function times out."""
LEASE_MARGIN_S = 5.0
"""The end of a lease kept to settle: a job's Gemini calls must end this long before it
(the claim's deadline in `shared.jobs`)."""


def _lease(env: Environ, name: str, default: int) -> int:
    """A worker lease: every Gemini call of the job ends inside it, and the lease ends
    inside the function's timeout, so a job always settles before its function stops.
    A lease no longer than its margin leaves a deadline already passed at the claim."""
    lease = _int(env, name, default)
    floor, ceiling = math.floor(LEASE_MARGIN_S) + 1, WORKER_TIMEOUT_S - SETTLE_MARGIN_S
    if not floor <= lease <= ceiling:
        raise ValueError(
            f"{name} must be {floor} to {ceiling} seconds (its last {LEASE_MARGIN_S:g} s "
            f"are kept to settle, and it ends {SETTLE_MARGIN_S} s before the worker "
            f"function's {WORKER_TIMEOUT_S} s timeout), got {lease}"
        )
    return lease


@dataclass(frozen=True)
class Settings:
    project_id: str | None
    gemini_api_key: str | None
    gemini_use_vertex: bool
    gemini_location: str
    gemini_model: str
    """`GEMINI_MODEL`: every flow's model unless the flow names its own."""
    research_model: str
    psychologist_model: str
    agentconnect_model: str
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
    research_support_check: bool
    """`RESEARCH_SUPPORT_CHECK`: `on` (True) asks Gemini, after every quote is found, whether
    each statement's quotes support it; `off` keeps the verbatim check alone."""
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
    psychologist_embedding_model: str
    """`PSYCHOLOGIST_EMBEDDING_MODEL`: the model that embeds ended sessions' failure
    sentences for the patterns (`EMBEDDING_MODEL` by default)."""
    psychologist_embedding_dimensions: int
    """`PSYCHOLOGIST_EMBEDDING_DIMENSIONS`: how many values each of those vectors keeps
    (768 by default: Google recommends it, a quarter of the 3,072 to store and compare)."""
    psychologist_project_token_budget: int
    psychologist_effect_window_days: int
    psychologist_gemini_batch: bool
    """`PSYCHOLOGIST_GEMINI_BATCH`: `auto` (True) sends an abnormal end's analysis and a
    normal end's summary to Gemini's Batch API where the backend takes one; `off` always
    asks the standard way."""
    psychologist_batch_deadline_s: int
    psychologist_summary_model: str
    """`PSYCHOLOGIST_SUMMARY_MODEL`: the model a normal end's summary is asked of
    (`SUMMARY_MODEL` by default); `GEMINI_MODEL` does not set it, since it is chosen for
    its price."""
    psychologist_normal_end_summaries: bool
    """`PSYCHOLOGIST_NORMAL_END_SUMMARIES`: `on` (True) asks the summary model to summarise
    every normal end; `off` stores its summary as not summarised (`summaries_off`)."""
    schedule_interval_s: float
    """How often the local host runs the sweeps (Cloud Scheduler's job in production): often
    enough that an abnormal end's analysis, collected from the Batch API by the sweep, is
    seen within seconds of its batch ending."""
    delivery_probe_s: float
    """How long the local host waits for the emulator to deliver its probe document's
    event before it refuses an emulator that does not deliver triggers."""
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


def _project_id(env: Environ) -> str | None:
    """The configured project; against the emulator `demo-evidencia`, the emulator's own;
    otherwise None, so that the client finds it from the environment it runs in."""
    for name in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GCP_PROJECT"):
        value = env.get(name)
        if value:
            return value
    return "demo-evidencia" if env.get("FIRESTORE_EMULATOR_HOST") else None


def _one_analysis_call_fits_its_lease(config: Settings) -> None:
    """The psychologist fails a log `input_too_large` when its planned calls need more
    than the lease has left after its margin; the claim and the log's read have already
    taken some of it, so a one-call log fits only if its call needs less than all of it."""
    room = config.psychologist_lease_seconds - LEASE_MARGIN_S
    if config.psychologist_call_seconds >= room:
        raise ValueError(
            f"PSYCHOLOGIST_CALL_SECONDS ({config.psychologist_call_seconds:g}) must be less "
            f"than PSYCHOLOGIST_LEASE_SECONDS ({config.psychologist_lease_seconds}) less the "
            f"{LEASE_MARGIN_S:g} s kept to settle ({room:g} s): every analysis would fail "
            f"input_too_large before one Gemini call, whatever the log's size"
        )


def _batch_fallback_fits_the_retention(config: Settings) -> None:
    """A batch past its deadline is asked the standard way, over the events it was asked
    about: the deadline and that call's lease must end well inside the events' retention."""
    retention_s = config.psychologist_event_retention_hours * 3600
    if config.psychologist_batch_deadline_s + config.psychologist_lease_seconds > retention_s / 2:
        raise ValueError(
            f"PSYCHOLOGIST_BATCH_DEADLINE_S ({config.psychologist_batch_deadline_s}) with "
            f"PSYCHOLOGIST_LEASE_SECONDS ({config.psychologist_lease_seconds}) must stay within "
            f"half of PSYCHOLOGIST_EVENT_RETENTION_HOURS ({retention_s // 2} s): an analysis "
            "that waited on its batch that long could find its log expired"
        )


def _check_combinations(config: Settings) -> None:
    """Refuse settings each valid alone that cannot work together."""
    _one_analysis_call_fits_its_lease(config)
    _batch_fallback_fits_the_retention(config)


def _batch_deadline_default(retention_hours: int) -> int:
    """Six hours (Gemini's batches mostly finish far sooner than their 24-hour target),
    or a quarter of a shorter event retention."""
    return min(6 * 3600, retention_hours * 3600 // 4)


def _batch_mode(env: Environ, name: str) -> bool:
    value = env.get(name, "auto").strip().lower()
    if value not in ("auto", "off"):
        raise ValueError(f"{name} must be auto or off, not {value!r}")
    return value == "auto"


def _switch(env: Environ, name: str) -> bool:
    value = env.get(name, "on").strip().lower()
    if value not in ("on", "off"):
        raise ValueError(f"{name} must be on or off, not {value!r}")
    return value == "on"


def _answer_tokens(env: Environ, name: str, default: int) -> int:
    return _at_least(env, name, default, 1, "the answer needs at least one token of its own")


def _thinking_tokens(env: Environ, name: str, default: int) -> int:
    # `max_output_tokens` is the answer's limit plus this allowance.
    return _at_least(env, name, default, 0, "a negative allowance would take the answer's tokens")


def _at_least_one(env: Environ, name: str, default: int, otherwise: str) -> int:
    return _at_least(env, name, default, 1, f"below it every {otherwise}")


def _kept(env: Environ, name: str, default: int) -> int:
    return _at_least(env, name, default, 1, "below it what is written has expired already")


def _embedding_dimensions(env: Environ, name: str, default: int) -> int:
    size = _int(env, name, default)
    if size not in EMBEDDING_SIZES:
        raise ValueError(
            f"{name} must be {EMBEDDING_SIZES.start} to {EMBEDDING_SIZES.stop - 1} (what "
            f"{EMBEDDING_MODEL} answers), got {size}"
        )
    return size


def _flow_model(env: Environ, name: str, default: str) -> str:
    """A flow's model: its own setting, else `GEMINI_MODEL`, else the flow's default."""
    return env.get(name) or env.get("GEMINI_MODEL") or default


def _read(env: Environ) -> Settings:
    return Settings(
        project_id=_project_id(env),
        gemini_api_key=env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY"),
        gemini_use_vertex=env.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true"),
        gemini_location=env.get("GOOGLE_CLOUD_LOCATION") or "global",
        gemini_model=env.get("GEMINI_MODEL") or DEFAULT_MODEL,
        research_model=_flow_model(env, "RESEARCH_GEMINI_MODEL", DEFAULT_MODEL),
        psychologist_model=_flow_model(env, "PSYCHOLOGIST_GEMINI_MODEL", DEFAULT_MODEL),
        agentconnect_model=_flow_model(env, "AGENTCONNECT_GEMINI_MODEL", ANSWER_MODEL),
        gemini_base_url=env.get("GEMINI_BASE_URL") or None,
        gemini_timeout_ms=_at_least(env, "GEMINI_TIMEOUT_MS", 60_000, 1, "a try needs time"),
        gemini_attempts=_at_least(env, "GEMINI_ATTEMPTS", 3, 1, "it counts the first try"),
        gemini_initial_delay_s=_float(env, "GEMINI_INITIAL_DELAY_S", 1.0),
        auth_cache_seconds=_float(env, "AUTH_CACHE_SECONDS", 30.0),
        research_max_runs_per_conversation=_at_least_one(
            env, "RESEARCH_MAX_RUNS_PER_CONVERSATION", 50, "run fails conversation_full"
        ),
        research_max_evidence_items=_bounded(
            env,
            "RESEARCH_MAX_EVIDENCE_ITEMS",
            MAX_EVIDENCE_ITEMS,
            MAX_EVIDENCE_ITEMS,
            "the conversation document keeps each item's revision",
        ),
        research_max_active_runs_per_workspace=_bounded(
            env, "RESEARCH_MAX_ACTIVE_RUNS", 5, MAX_ACTIVE_RUNS, "one document per slot"
        ),
        research_input_token_budget=_at_least_one(
            env, "RESEARCH_INPUT_TOKEN_BUDGET", 200_000, "run fails input_too_large"
        ),
        research_output_token_limit=_answer_tokens(env, "RESEARCH_OUTPUT_TOKEN_LIMIT", 8_192),
        research_thinking_tokens=_thinking_tokens(env, "RESEARCH_THINKING_TOKENS", 4_096),
        research_workspace_token_budget=_at_least_one(
            env, "RESEARCH_WORKSPACE_TOKEN_BUDGET", 2_000_000, "run fails budget_exhausted"
        ),
        research_lease_seconds=_lease(env, "RESEARCH_LEASE_SECONDS", 300),
        research_support_check=_switch(env, "RESEARCH_SUPPORT_CHECK"),
        retention_hours=24,
        psychologist_event_retention_hours=_kept(env, "PSYCHOLOGIST_EVENT_RETENTION_HOURS", 24),
        psychologist_heartbeat_timeout_s=_at_least_one(
            env, "PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S", 300, "open session ends at the next sweep"
        ),
        psychologist_input_token_budget=_at_least_one(
            env, "PSYCHOLOGIST_INPUT_TOKEN_BUDGET", 100_000, "analysis fails input_too_large"
        ),
        psychologist_output_token_limit=_answer_tokens(
            env, "PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT", 8_192
        ),
        psychologist_thinking_tokens=_thinking_tokens(env, "PSYCHOLOGIST_THINKING_TOKENS", 4_096),
        psychologist_call_concurrency=_at_least(
            env, "PSYCHOLOGIST_CALL_CONCURRENCY", 8, 1, "it counts the calls in flight at once"
        ),
        psychologist_call_seconds=_positive(
            env, "PSYCHOLOGIST_CALL_SECONDS", 60.0, "a call takes time, and 0 plans any log to fit"
        ),
        psychologist_lease_seconds=_lease(env, "PSYCHOLOGIST_LEASE_SECONDS", 480),
        psychologist_hypothesis_retention_days=_kept(
            env, "PSYCHOLOGIST_HYPOTHESIS_RETENTION_DAYS", 90
        ),
        psychologist_embedding_model=env.get("PSYCHOLOGIST_EMBEDDING_MODEL") or EMBEDDING_MODEL,
        psychologist_embedding_dimensions=_embedding_dimensions(
            env, "PSYCHOLOGIST_EMBEDDING_DIMENSIONS", 768
        ),
        psychologist_project_token_budget=_at_least_one(
            env, "PSYCHOLOGIST_PROJECT_TOKEN_BUDGET", 20_000_000, "analysis fails budget_exhausted"
        ),
        psychologist_effect_window_days=_at_least(
            env, "PSYCHOLOGIST_EFFECT_WINDOW_DAYS", 14, 1, "an empty window has no sessions"
        ),
        psychologist_gemini_batch=_batch_mode(env, "PSYCHOLOGIST_GEMINI_BATCH"),
        psychologist_batch_deadline_s=_at_least_one(
            env,
            "PSYCHOLOGIST_BATCH_DEADLINE_S",
            _batch_deadline_default(_kept(env, "PSYCHOLOGIST_EVENT_RETENTION_HOURS", 24)),
            "batch falls back before it is read",
        ),
        psychologist_summary_model=env.get("PSYCHOLOGIST_SUMMARY_MODEL") or SUMMARY_MODEL,
        psychologist_normal_end_summaries=_switch(env, "PSYCHOLOGIST_NORMAL_END_SUMMARIES"),
        schedule_interval_s=_float(env, "SCHEDULE_INTERVAL_S", 5.0),
        delivery_probe_s=_positive(env, "DELIVERY_PROBE_S", 10.0, "the probe's event needs time"),
        agentconnect_raw_text_limit=_bounded(
            env,
            "AGENTCONNECT_RAW_TEXT_LIMIT",
            16_384,
            MAX_RAW_TEXT_BYTES,
            "an evaluation's raw texts share one document",
        ),
        agentconnect_details_retention_hours=_kept(env, "AGENTCONNECT_DETAILS_RETENTION_HOURS", 24),
        agentconnect_session_token_hours=_kept(env, "AGENTCONNECT_SESSION_TOKEN_HOURS", 24),
        agentconnect_lease_seconds=_lease(env, "AGENTCONNECT_LEASE_SECONDS", 180),
        agentconnect_output_token_limit=_answer_tokens(env, "AGENTCONNECT_OUTPUT_TOKEN_LIMIT", 256),
        agentconnect_thinking_tokens=_thinking_tokens(env, "AGENTCONNECT_THINKING_TOKENS", 512),
        agentconnect_org_token_budget=_at_least_one(
            env, "AGENTCONNECT_ORG_TOKEN_BUDGET", 5_000_000, "start freezes its default target"
        ),
        job_queue_seconds=_int(env, "JOB_QUEUE_SECONDS", 600),
        firestore_timeout_s=_positive(env, "FIRESTORE_TIMEOUT_S", 5.0, "a call needs time"),
    )


def load_settings(environ: Environ | None = None) -> Settings:
    """The settings `environ` gives (the process's environment when None), or a
    `ValueError` saying in one sentence which cannot work and why."""
    config = _read(os.environ if environ is None else environ)
    _check_combinations(config)
    return config
