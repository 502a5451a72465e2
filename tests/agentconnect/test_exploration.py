"""Exploration's draw and the report's threshold changes, decided in pure functions."""

from __future__ import annotations

from collections import Counter
from typing import cast

import pytest

from functions.agentconnect.documents import Answer, Selection, Target
from functions.agentconnect.selection import (
    changed,
    choice_of,
    draw_candidates,
    drawn,
    explores,
    target_key,
    threshold_changes,
)
from tests.agentconnect.conftest import DEFAULT, selection_with

pytestmark = pytest.mark.pure

SELECTION = cast(Selection, selection_with(exploration={"share": 0.2}))
BASE = cast(Target, DEFAULT)
PRO = cast(Target, {**DEFAULT, "model": "gemini-2.5-pro", "effort": "high"})
CONTAINER = cast(
    Target, {**DEFAULT, "runtime": "container", "effort": "medium", "permissionMode": "plan"}
)


def keys(found: list[Target]) -> set[str]:
    return {target_key(t) for t in found}


def test_the_draw_is_among_targets_whose_permission_does_not_exceed_the_rules_choice() -> None:
    assert keys(draw_candidates(SELECTION, BASE)) == keys([PRO, CONTAINER, BASE])
    assert keys(draw_candidates(SELECTION, CONTAINER)) == keys([CONTAINER])


def test_about_the_share_of_sessions_explore_and_the_same_session_always_draws_the_same() -> None:
    ids = [f"s-{n}" for n in range(20_000)]
    exploring = [i for i in ids if explores(SELECTION, i)]
    assert 0.19 < len(exploring) / len(ids) < 0.21
    draws = Counter(target_key(drawn(SELECTION, i, BASE, True).target) for i in exploring)
    assert len(draws) == 3
    assert min(draws.values()) > 0.3 * len(exploring)
    again = drawn(SELECTION, exploring[0], BASE, True)
    assert again == drawn(SELECTION, exploring[0], BASE, True)


def test_the_probabilities_of_every_target_a_session_may_get_add_up_to_one() -> None:
    """The rules' choice is kept with 0.8 and drawn with 0.2 / 3; each other candidate is
    drawn with 0.2 / 3."""
    exploring = [f"s-{n}" for n in range(200) if explores(SELECTION, f"s-{n}")]
    by_target = {}
    for session in exploring:
        draw = drawn(SELECTION, session, BASE, True)
        by_target[target_key(draw.target)] = draw.propensity
    assert len(by_target) == 3
    assert by_target[target_key(BASE)] == pytest.approx(0.8 + 0.2 / 3)
    assert sum(by_target.values()) == pytest.approx(1.0)
    assert drawn(SELECTION, "any", BASE, False).propensity == pytest.approx(0.8 + 0.2 / 3)


def answers(first: float, size: str = "small") -> dict[str, Answer]:
    return {
        "initial": {"type": "boolean", "value": True, "probability": first},
        "size": {"type": "choice", "value": size, "probability": 0.9},
    }


def test_the_rules_choose_from_recorded_answers_and_cannot_without_a_step() -> None:
    found = choice_of(SELECTION, answers(0.9))
    assert found is not None
    assert (found.route, target_key(found.target)) == ("initial/1:true", target_key(PRO))
    defaulted = choice_of(SELECTION, answers(0.7))
    assert defaulted is not None
    assert defaulted.route == "default"
    assert choice_of(SELECTION, {"initial": answers(0.7)["initial"]}) is None


def test_threshold_changes_stay_within_zero_and_one_and_change_one_threshold() -> None:
    changes = threshold_changes(SELECTION)
    assert [(c.step_id, c.after) for c in changes] == [
        ("initial", 0.6),
        ("initial", 0.7),
        ("initial", 0.9),
        ("initial", 1.0),
        ("size", 0.4),
        ("size", 0.5),
        ("size", 0.7),
        ("size", 0.8),
    ]
    lowered = changed(SELECTION, changes[0])
    assert lowered["decision"]["rules"][0]["when"]["thresholds"] == {"true": 0.6}
    assert SELECTION["decision"]["rules"][0]["when"]["thresholds"] == {"true": 0.8}
    found = choice_of(lowered, answers(0.65))
    assert found is not None
    assert found.route == "initial/1:true"
