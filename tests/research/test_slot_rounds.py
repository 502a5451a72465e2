"""An ask's active-run slots, in rounds: only the first round's references are built
unless every slot in it is held."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from functions.research import service, store

pytestmark = pytest.mark.pure


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The slots whose reference was built, each a reference here."""
    made: list[str] = []

    def slot_ref(_workspace_id: str, slot: str) -> str:
        made.append(slot)
        return slot

    monkeypatch.setattr(store, "slot_ref", slot_ref)
    return made


def test_the_first_round_builds_8_references_of_a_limit_of_1000(built: list[str]) -> None:
    rounds = store.slot_rounds("w", 1000)
    assert len(rounds.first) == 8
    assert len(built) == 8


def test_the_later_rounds_hold_the_next_64_then_every_other_slot_once(built: list[str]) -> None:
    rounds = store.slot_rounds("w", 1000)
    later = list(rounds.later())
    assert [len(refs) for refs in later] == [64, 928]
    every: list[Any] = [*rounds.first, *later[0], *later[1]]
    assert sorted(every, key=int) == [str(k) for k in range(1000)]


def test_a_limit_within_the_first_round_has_no_later_round(built: list[str]) -> None:
    rounds = store.slot_rounds("w", 5)
    first: list[Any] = rounds.first
    assert sorted(first) == ["0", "1", "2", "3", "4"]
    assert list(rounds.later()) == []


def test_a_free_slot_in_the_first_round_leaves_the_later_rounds_unbuilt() -> None:
    def unbuilt() -> Iterator[list[Any]]:
        raise AssertionError("a later round was built")
        yield []

    released: Any = SimpleNamespace(exists=False)
    assert service._free_slot([released], unbuilt(), datetime.now(UTC)) is released
