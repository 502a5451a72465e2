"""Settings are read once and refused when out of range, before anything runs: each test
reads an environment of its own, holding only what it sets."""

from __future__ import annotations

import re

import pytest

from shared.config import Settings, load_settings


def configured(**env: str) -> Settings:
    """The settings of an environment that holds `env` alone."""
    return load_settings(env)


def test_the_defaults_are_accepted() -> None:
    assert load_settings({}).psychologist_call_seconds == 60.0


@pytest.mark.parametrize("value", ["0", "1001"])
def test_an_active_run_limit_beyond_one_document_per_slot_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="RESEARCH_MAX_ACTIVE_RUNS must be 1 to 1000"):
        configured(RESEARCH_MAX_ACTIVE_RUNS=value)


def test_the_largest_active_run_limit_is_accepted() -> None:
    assert (
        configured(RESEARCH_MAX_ACTIVE_RUNS="1000").research_max_active_runs_per_workspace == 1000
    )


@pytest.mark.parametrize("value", ["0", "32769"])
def test_a_raw_text_limit_past_what_one_details_document_holds_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="AGENTCONNECT_RAW_TEXT_LIMIT must be 1 to 32768"):
        configured(AGENTCONNECT_RAW_TEXT_LIMIT=value)


def test_a_lease_shorter_than_one_planned_call_is_refused() -> None:
    refusal = (
        "PSYCHOLOGIST_CALL_SECONDS (60) must be less than PSYCHOLOGIST_LEASE_SECONDS (20) "
        "less the 5 s kept to settle (15 s): every analysis would fail input_too_large "
        "before one Gemini call, whatever the log's size"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(refusal)}$"):
        configured(PSYCHOLOGIST_LEASE_SECONDS="20")


def test_a_call_planned_for_all_the_lease_leaves_is_refused() -> None:
    """By the time the plan is made the claim and the log's read have taken some of it."""
    with pytest.raises(ValueError, match=r"^PSYCHOLOGIST_CALL_SECONDS \(15\) must be less"):
        configured(PSYCHOLOGIST_LEASE_SECONDS="20", PSYCHOLOGIST_CALL_SECONDS="15")


def test_a_call_planned_for_just_under_what_the_lease_leaves_is_accepted() -> None:
    config = configured(PSYCHOLOGIST_LEASE_SECONDS="20", PSYCHOLOGIST_CALL_SECONDS="14.999")
    assert (config.psychologist_lease_seconds, config.psychologist_call_seconds) == (20, 14.999)


LEASES = ["RESEARCH_LEASE_SECONDS", "PSYCHOLOGIST_LEASE_SECONDS", "AGENTCONNECT_LEASE_SECONDS"]


@pytest.mark.parametrize("name", LEASES)
@pytest.mark.parametrize("value", ["5", "511"])
def test_a_lease_within_its_margin_or_past_the_function_timeout_is_refused(
    name: str, value: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be 6 to 510 seconds \(.+\), got {value}$"):
        configured(PSYCHOLOGIST_CALL_SECONDS="0.5", **{name: value})


@pytest.mark.parametrize("name", LEASES)
@pytest.mark.parametrize("value", ["6", "510"])
def test_a_lease_from_one_second_past_its_margin_to_the_function_timeout_is_accepted(
    name: str, value: str
) -> None:
    config = configured(PSYCHOLOGIST_CALL_SECONDS="0.5", **{name: value})
    assert getattr(config, name.lower()) == int(value)


FLOORS = [
    ("GEMINI_TIMEOUT_MS", "gemini_timeout_ms", 1),
    ("GEMINI_ATTEMPTS", "gemini_attempts", 1),
    ("RESEARCH_MAX_RUNS_PER_CONVERSATION", "research_max_runs_per_conversation", 1),
    ("RESEARCH_INPUT_TOKEN_BUDGET", "research_input_token_budget", 1),
    ("RESEARCH_OUTPUT_TOKEN_LIMIT", "research_output_token_limit", 1),
    ("RESEARCH_THINKING_TOKENS", "research_thinking_tokens", 0),
    ("RESEARCH_WORKSPACE_TOKEN_BUDGET", "research_workspace_token_budget", 1),
    ("PSYCHOLOGIST_EVENT_RETENTION_HOURS", "psychologist_event_retention_hours", 1),
    ("PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S", "psychologist_heartbeat_timeout_s", 1),
    ("PSYCHOLOGIST_INPUT_TOKEN_BUDGET", "psychologist_input_token_budget", 1),
    ("PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT", "psychologist_output_token_limit", 1),
    ("PSYCHOLOGIST_THINKING_TOKENS", "psychologist_thinking_tokens", 0),
    ("PSYCHOLOGIST_CALL_CONCURRENCY", "psychologist_call_concurrency", 1),
    ("PSYCHOLOGIST_HYPOTHESIS_RETENTION_DAYS", "psychologist_hypothesis_retention_days", 1),
    ("PSYCHOLOGIST_PROJECT_TOKEN_BUDGET", "psychologist_project_token_budget", 1),
    ("PSYCHOLOGIST_EFFECT_WINDOW_DAYS", "psychologist_effect_window_days", 1),
    ("AGENTCONNECT_DETAILS_RETENTION_HOURS", "agentconnect_details_retention_hours", 1),
    ("AGENTCONNECT_SESSION_TOKEN_HOURS", "agentconnect_session_token_hours", 1),
    ("AGENTCONNECT_OUTPUT_TOKEN_LIMIT", "agentconnect_output_token_limit", 1),
    ("AGENTCONNECT_THINKING_TOKENS", "agentconnect_thinking_tokens", 0),
    ("AGENTCONNECT_ORG_TOKEN_BUDGET", "agentconnect_org_token_budget", 1),
]
FLOOR_IDS = [name for name, _, _ in FLOORS]


@pytest.mark.parametrize(("name", "field", "floor"), FLOORS, ids=FLOOR_IDS)
def test_a_count_below_the_least_that_can_work_is_refused(
    name: str, field: str, floor: int
) -> None:
    below = floor - 1
    with pytest.raises(ValueError, match=rf"^{name} must be at least {floor} \(.+\), got {below}$"):
        configured(**{name: str(below)})


@pytest.mark.parametrize(("name", "field", "floor"), FLOORS, ids=FLOOR_IDS)
def test_the_least_count_that_can_work_is_accepted(name: str, field: str, floor: int) -> None:
    assert getattr(configured(**{name: str(floor)}), field) == floor


DURATIONS = [
    ("PSYCHOLOGIST_CALL_SECONDS", "psychologist_call_seconds"),
    ("FIRESTORE_TIMEOUT_S", "firestore_timeout_s"),
    ("DELIVERY_PROBE_S", "delivery_probe_s"),
]


@pytest.mark.parametrize(("name", "field"), DURATIONS)
@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_duration_of_no_time_is_refused(name: str, field: str, value: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be more than 0 \(.+\), got {value}$"):
        configured(**{name: value})


@pytest.mark.parametrize(("name", "field"), DURATIONS)
def test_the_shortest_duration_is_accepted(name: str, field: str) -> None:
    assert getattr(configured(**{name: "0.001"}), field) == 0.001


FLOATS = [
    "GEMINI_INITIAL_DELAY_S",
    "AUTH_CACHE_SECONDS",
    "PSYCHOLOGIST_CALL_SECONDS",
    "SCHEDULE_INTERVAL_S",
    "FIRESTORE_TIMEOUT_S",
    "DELIVERY_PROBE_S",
]


@pytest.mark.parametrize("name", FLOATS)
def test_not_a_number_is_refused(name: str) -> None:
    """NaN compares false with everything: as PSYCHOLOGIST_CALL_SECONDS it would fail
    every analysis input_too_large while passing every range check."""
    with pytest.raises(ValueError, match=rf"^{name} must be a number, got 'nan'$"):
        configured(**{name: "nan"})


def test_zero_turns_off_the_backoff_the_auth_cache_and_the_schedule() -> None:
    config = configured(GEMINI_INITIAL_DELAY_S="0", AUTH_CACHE_SECONDS="0", SCHEDULE_INTERVAL_S="0")
    assert (config.gemini_initial_delay_s, config.auth_cache_seconds) == (0.0, 0.0)
    assert config.schedule_interval_s == 0.0


SUITE_SETTINGS = [
    {
        "GEMINI_API_KEY": "test-key",
        "GEMINI_ATTEMPTS": "3",
        "GEMINI_INITIAL_DELAY_S": "0.01",
        "GEMINI_TIMEOUT_MS": "3000",
        "AUTH_CACHE_SECONDS": "0",
    },
    {"GEMINI_TIMEOUT_MS": "300", "GEMINI_ATTEMPTS": "2"},
    {"AUTH_CACHE_SECONDS": "1"},
    {"AUTH_CACHE_SECONDS": "60"},
    {"FIRESTORE_TIMEOUT_S": "1"},
    {"FIRESTORE_TIMEOUT_S": "2"},
    {"JOB_QUEUE_SECONDS": "0"},
    {"SCHEDULE_INTERVAL_S": "0"},
    {"RESEARCH_MAX_RUNS_PER_CONVERSATION": "1"},
    {"RESEARCH_MAX_RUNS_PER_CONVERSATION": "1000000000"},
    {"RESEARCH_INPUT_TOKEN_BUDGET": "100"},
    {"RESEARCH_WORKSPACE_TOKEN_BUDGET": "150"},
    {"RESEARCH_MAX_EVIDENCE_ITEMS": "5"},
    {"PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S": "1"},
    {"PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S": "3000"},
    {"PSYCHOLOGIST_INPUT_TOKEN_BUDGET": "3000"},
    {"PSYCHOLOGIST_INPUT_TOKEN_BUDGET": "3000", "PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT": "60000"},
    {"PSYCHOLOGIST_THINKING_TOKENS": "0", "PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT": "100"},
    {"PSYCHOLOGIST_PROJECT_TOKEN_BUDGET": "150"},
    {
        "PSYCHOLOGIST_INPUT_TOKEN_BUDGET": "1200",
        "PSYCHOLOGIST_LEASE_SECONDS": "10",
        "PSYCHOLOGIST_CALL_CONCURRENCY": "8",
        "PSYCHOLOGIST_CALL_SECONDS": "0.5",
    },
    {
        "PSYCHOLOGIST_INPUT_TOKEN_BUDGET": "1200",
        "PSYCHOLOGIST_LEASE_SECONDS": "60",
        "PSYCHOLOGIST_CALL_CONCURRENCY": "8",
        "PSYCHOLOGIST_CALL_SECONDS": "30",
    },
    {"AGENTCONNECT_THINKING_TOKENS": "0", "AGENTCONNECT_OUTPUT_TOKEN_LIMIT": "100"},
    {"AGENTCONNECT_RAW_TEXT_LIMIT": "32768", "AGENTCONNECT_OUTPUT_TOKEN_LIMIT": "16384"},
    {"AGENTCONNECT_ORG_TOKEN_BUDGET": "100"},
]


@pytest.mark.parametrize("env", SUITE_SETTINGS, ids=[",".join(env) for env in SUITE_SETTINGS])
def test_every_combination_the_test_suite_and_benchmarks_set_is_accepted(
    env: dict[str, str],
) -> None:
    """Budgets below one call's output are among them: a budget is checked before a job,
    so the job that crosses it still runs."""
    assert configured(**env) is not None


def test_each_flow_asks_its_own_model_else_gemini_model_else_its_default() -> None:
    defaults = configured()
    assert (defaults.research_model, defaults.psychologist_model, defaults.agentconnect_model) == (
        "gemini-3.8-flash",
        "gemini-3.8-flash",
        "gemini-3.5-flash-lite",
    )
    chosen = configured(
        GEMINI_MODEL="gemini-3.7-flash", PSYCHOLOGIST_GEMINI_MODEL="gemini-3.6-flash"
    )
    assert (chosen.research_model, chosen.psychologist_model, chosen.agentconnect_model) == (
        "gemini-3.7-flash",
        "gemini-3.6-flash",
        "gemini-3.7-flash",
    )


def test_a_batch_mode_other_than_auto_or_off_is_refused() -> None:
    assert configured().psychologist_gemini_batch
    assert not configured(PSYCHOLOGIST_GEMINI_BATCH="off").psychologist_gemini_batch
    with pytest.raises(ValueError, match="PSYCHOLOGIST_GEMINI_BATCH must be auto or off"):
        configured(PSYCHOLOGIST_GEMINI_BATCH="always")


def test_a_batch_deadline_past_half_the_event_retention_is_refused() -> None:
    assert configured().psychologist_batch_deadline_s == 6 * 3600
    with pytest.raises(ValueError, match="could find its log expired"):
        configured(PSYCHOLOGIST_BATCH_DEADLINE_S=str(12 * 3600))
