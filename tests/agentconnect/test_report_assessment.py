"""The selection report's judgment over explored sessions, pure: the window's average
when its halves agree, the recent half alone when a target's halves disagree beyond
chance, and nothing when the recent half is too small to say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from functions.agentconnect.report import RECENT_HALF, WHOLE_WINDOW, Explored, assess, recommended
from functions.agentconnect.selection import target_key
from functions.loop.estimators import Logged
from tests.agentconnect.conftest import DEFAULT, selection_with

pytestmark = pytest.mark.pure

PRO = {**DEFAULT, "model": "gemini-2.5-pro", "effort": "high"}
CONTAINER = {**DEFAULT, "runtime": "container", "effort": "medium", "permissionMode": "plan"}
SINCE = datetime(2026, 11, 1, tzinfo=UTC)
SPLIT = SINCE + timedelta(days=15)
DRAWN = tuple(target_key(cast(Any, t)) for t in (PRO, CONTAINER, DEFAULT))
KEY_PRO, KEY_CONTAINER, KEY_DEFAULT = DRAWN
SELECTION = cast(Any, selection_with(exploration={"share": 0.1}))
LOWERED = ("initial", 1, "true", 0.8, 0.6)
"""The first threshold lowered to 0.6: the strong target for every session below, whose
first answer is `true` at 0.65."""


def explored(
    count: int, day: float, abnormal: dict[str, int], drawn: tuple[str, ...] = DRAWN
) -> list[Explored]:
    """`count` sessions started on `day` of the window, each drawn in turn among the three
    targets (or having drawn those of `drawn` in turn) and ending as `abnormal` says for
    its target."""
    answers: Any = {
        "initial": {"type": "boolean", "value": True, "probability": 0.65},
        "size": {"type": "choice", "value": "small", "probability": 0.9},
    }
    found = []
    for index in range(count):
        target = drawn[index % len(drawn)]
        found.append(
            Explored(
                Logged(target, 0.1 / 3, abnormal[target], 0.1),
                answers,
                frozenset(DRAWN),
                1,
                SINCE + timedelta(days=day, minutes=index),
            )
        )
    return found


def changed_to(found: Any) -> tuple[str, int, str, float, float] | None:
    if found is None:
        return None
    change = found.change
    return (change.step_id, change.rule, change.value, change.before, change.after)


STRONG_FAILING = {KEY_PRO: 1, KEY_CONTAINER: 0, KEY_DEFAULT: 0}
STRONG_FIXED = {KEY_PRO: 0, KEY_CONTAINER: 1, KEY_DEFAULT: 1}


def test_halves_that_agree_are_judged_on_the_whole_window() -> None:
    sessions = explored(60, 3, STRONG_FIXED) + explored(60, 20, STRONG_FIXED)
    found = assess(SELECTION, sessions, SPLIT)
    assert found.drift is not None
    assert not found.drift.drifted
    assert (found.drift.older, found.drift.newer) == (60, 60)
    assert (found.basis, found.recent) == (WHOLE_WINDOW, None)
    assert changed_to(found.recommended) == LOWERED


def test_a_target_whose_halves_disagree_is_judged_on_the_recent_half_alone() -> None:
    """The strong target ended every session abnormally in the older half and none in
    the newer: on the window's average it ties with the default, so nothing would be
    recommended; the halves disagree beyond chance, and on the recent half alone lowering
    the threshold (the strong target for all) is better."""
    sessions = explored(60, 3, STRONG_FAILING) + explored(60, 20, STRONG_FIXED)
    found = assess(SELECTION, sessions, SPLIT)
    assert found.drift is not None
    assert found.drift.drifted
    strong = next(s for s in found.drift.shifts if s.target_key == KEY_PRO)
    assert strong.beyond_chance
    assert (strong.older.value, strong.newer.value) == (1.0, 0.0)
    assert recommended(found.whole) is None
    assert found.basis == RECENT_HALF
    assert found.recent is not None
    assert found.recent.explored == 60
    assert changed_to(found.recommended) == LOWERED


def test_a_drift_with_too_few_recent_sessions_recommends_nothing() -> None:
    """The same disagreement, with 24 explored sessions in the recent half (under the 30
    an estimate needs: 12 drew the strong target and 12 the default)."""
    recent = explored(24, 20, STRONG_FIXED, (KEY_PRO, KEY_DEFAULT))
    sessions = explored(90, 3, STRONG_FAILING) + recent
    found = assess(SELECTION, sessions, SPLIT)
    assert found.drift is not None
    assert found.drift.drifted
    assert (found.basis, found.recent, found.recommended) == (None, None, None)
