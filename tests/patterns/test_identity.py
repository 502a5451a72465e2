"""How groups keep their patterns' ids across refreshes."""

from __future__ import annotations

import itertools

import pytest

from functions.psychologist.patterns.identity import matched

pytestmark = pytest.mark.pure


def ids() -> itertools.count[int]:
    return itertools.count(1)


def test_a_refreshed_group_keeps_the_id_of_the_pattern_it_shares_most_sessions_with() -> None:
    counter = ids()
    known = {"p-a": frozenset({"s1", "s2", "s3"}), "p-b": frozenset({"s4", "s5"})}
    found = [
        frozenset({"s4", "s5", "s6"}),
        frozenset({"s1", "s2", "s3", "s7"}),
        frozenset({"s8", "s9"}),
    ]
    result = matched(known, found, lambda: f"new-{next(counter)}")
    assert result.ids == ["p-b", "p-a", "new-1"]
    assert (result.created, result.split, result.merged) == (["new-1"], {}, {})


def test_a_pattern_that_splits_keeps_its_id_on_its_larger_part_and_records_the_split() -> None:
    counter = ids()
    known = {"p-a": frozenset({"s1", "s2", "s3", "s4", "s5"})}
    found = [frozenset({"s4", "s5"}), frozenset({"s1", "s2", "s3"})]
    result = matched(known, found, lambda: f"new-{next(counter)}")
    assert result.ids == ["new-1", "p-a"]
    assert result.split == {"p-a": ["new-1"]}


def test_two_patterns_that_merge_become_the_one_that_shares_most_and_the_other_is_recorded() -> (
    None
):
    counter = ids()
    known = {"p-a": frozenset({"s1", "s2", "s3"}), "p-b": frozenset({"s4", "s5"})}
    found = [frozenset({"s1", "s2", "s3", "s4", "s5"})]
    result = matched(known, found, lambda: f"new-{next(counter)}")
    assert result.ids == ["p-a"]
    assert result.merged == {"p-b": "p-a"}


def test_identity_holds_when_the_same_sessions_are_grouped_again_in_any_order() -> None:
    known = {f"p-{n}": frozenset(f"s{n}-{k}" for k in range(3)) for n in range(5)}
    found = list(known.values())
    found.reverse()
    result = matched(known, found, lambda: "never")
    assert [known[pattern_id] for pattern_id in result.ids] == found
    assert (result.created, result.split, result.merged) == ([], {}, {})
