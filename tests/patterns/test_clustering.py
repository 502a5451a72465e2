"""How failure sentences' vectors become groups (scikit-learn's clustering, which takes
two seconds to import: these run in `make test`, not in the inner loop's pure tests)."""

from __future__ import annotations

from collections import Counter

import pytest

from cli import meaning
from functions.psychologist.patterns import clustering
from functions.psychologist.patterns.clustering import cosine_distance, groups
from tests.patterns.vectors import planted

PARAPHRASES = [text for family in meaning.FAILURE_FAMILIES.values() for text in family]
FAMILY_OF = {text: name for name, family in meaning.FAILURE_FAMILIES.items() for text in family}


def purity_and_recall(labels: list[int]) -> tuple[float, float]:
    """Purity: the share of sentences in a cluster whose largest family is theirs. Recall:
    the share of sentences in the cluster that holds most of their family."""
    clusters: dict[int, Counter[str]] = {}
    for text, label in zip(PARAPHRASES, labels, strict=True):
        clusters.setdefault(label, Counter())[FAMILY_OF[text]] += 1
    pure = sum(max(families.values()) for families in clusters.values())
    held = sum(
        max(families[name] for families in clusters.values()) for name in meaning.FAILURE_FAMILIES
    )
    return pure / len(PARAPHRASES), held / len(PARAPHRASES)


def test_planted_families_come_back_as_groups_largest_first_each_within_its_radius() -> None:
    vectors = planted(families=4, each=6, spread=0.4)
    vectors += planted(families=1, each=9, spread=0.4, seed=8)
    found = groups(vectors)
    assert [len(group.members) for group in found] == [9, 6, 6, 6, 6]
    family_of = [index // 6 if index < 24 else 4 for index in range(len(vectors))]
    for group in found:
        assert len({family_of[member] for member in group.members}) == 1
        assert all(
            cosine_distance(vectors[member], group.centroid) <= group.radius
            for member in group.members
        )


def test_a_lone_failure_is_no_pattern() -> None:
    vectors = planted(families=3, each=1, spread=0.1)
    assert groups(vectors) == []
    assert groups(vectors[:1]) == []


def test_past_the_exact_size_every_sentence_is_still_grouped_through_micro_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = planted(families=6, each=40, spread=0.4)
    exact = [set(group.members) for group in groups(vectors)]
    monkeypatch.setattr(clustering, "EXACT_AT_MOST", 100)
    monkeypatch.setattr(clustering, "MICRO_GROUPS", 60)
    gathered = [set(group.members) for group in groups(vectors)]
    assert sorted(map(sorted, gathered)) == sorted(map(sorted, exact))
    assert sum(map(len, gathered)) == len(vectors)


def test_clustering_all_paraphrases_recovers_the_families() -> None:
    """The patterns' own grouping (`functions/psychologist/patterns/clustering.py`)."""
    vectors = [meaning.embedding(text, 768) for text in PARAPHRASES]
    labels = [-1 - index for index in range(len(vectors))]
    for number, group in enumerate(groups(vectors)):
        for member in group.members:
            labels[member] = number

    purity, recall = purity_and_recall(labels)

    assert purity >= 0.9
    assert recall >= 0.9
    assert len(set(labels)) == len(meaning.FAILURE_FAMILIES)
