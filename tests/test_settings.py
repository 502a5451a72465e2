"""Settings are read once and refused when out of range, before anything runs."""

from __future__ import annotations

import pytest

from shared.config import load_settings


@pytest.mark.parametrize("value", ["0", "1001"])
def test_an_active_run_limit_beyond_one_document_per_slot_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("RESEARCH_MAX_ACTIVE_RUNS", value)
    with pytest.raises(ValueError, match="RESEARCH_MAX_ACTIVE_RUNS must be 1 to 1000"):
        load_settings()


def test_the_largest_active_run_limit_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MAX_ACTIVE_RUNS", "1000")
    assert load_settings().research_max_active_runs_per_workspace == 1000


@pytest.mark.parametrize("value", ["0", "32769"])
def test_a_raw_text_limit_past_what_one_details_document_holds_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AGENTCONNECT_RAW_TEXT_LIMIT", value)
    with pytest.raises(ValueError, match="AGENTCONNECT_RAW_TEXT_LIMIT must be 1 to 32768"):
        load_settings()
