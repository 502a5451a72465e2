"""Past the size whose pairwise distances a worker can hold, sentences are grouped through
k-means micro-groups (scikit-learn asks the system for its cores: a subprocess, so this
test is not a pure one)."""

from __future__ import annotations

import pytest

from functions.psychologist.patterns.clustering import groups
from tests.patterns.vectors import planted


def test_past_the_exact_size_every_sentence_is_still_grouped_through_micro_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from functions.psychologist.patterns import clustering

    vectors = planted(families=6, each=40, spread=0.4)
    exact = [set(group.members) for group in groups(vectors)]
    monkeypatch.setattr(clustering, "EXACT_AT_MOST", 100)
    monkeypatch.setattr(clustering, "MICRO_GROUPS", 60)
    gathered = [set(group.members) for group in groups(vectors)]
    assert sorted(map(sorted, gathered)) == sorted(map(sorted, exact))
    assert sum(map(len, gathered)) == len(vectors)
