"""Failure sentences grouped by meaning: average-linkage agglomerative clustering of their
embeddings under cosine distance (scikit-learn's `AgglomerativeClustering`), the tree cut
where groups would join sentences further apart than `DISTANCE` on average. A group of
fewer than `MIN_SESSIONS` sessions is no pattern: one session's failure is its analysis's
business. Each group keeps its centroid and its radius, the distance within which a new
session joins it between refreshes.

Average linkage holds every pairwise distance: 10,000 sentences take 400 MB, and the
linkage a copy more. Past `EXACT_AT_MOST` sentences they are first gathered into
`MICRO_GROUPS` tight groups by k-means (scikit-learn's `MiniBatchKMeans`, on unit vectors,
where Euclidean distance orders as cosine distance does), the tree is built over those
groups' centres, and every sentence takes its micro-group's place in it: each sentence is
still grouped, none is sampled away."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EXACT_AT_MOST = 3_000
MICRO_GROUPS = 1_000
SEED = 54
DISTANCE = 0.35
"""Cosine distance at which the tree is cut: an average pairwise distance within a group
of at most this much (a cosine similarity of at least 0.65)."""
MIN_SESSIONS = 2
RADIUS_MARGIN = 0.05
"""Added to a group's farthest member, so that a paraphrase as near as its members joins."""


@dataclass(frozen=True)
class Group:
    members: tuple[int, ...]
    """Indices into the vectors clustered, nearest the centroid first."""
    centroid: tuple[float, ...]
    """The members' mean direction, of unit length."""
    radius: float
    """The cosine distance within which a new session joins it."""


def groups(
    vectors: Sequence[Sequence[float]],
    distance: float = DISTANCE,
    minimum: int = MIN_SESSIONS,
) -> list[Group]:
    """The groups of at least `minimum` members, largest first."""
    if len(vectors) < max(minimum, 2):
        return []
    matrix = _unit(np.asarray(vectors, dtype=np.float64))
    labels = _labels(matrix, distance)
    found = [
        _group(matrix, np.flatnonzero(labels == label))
        for label in np.unique(labels)
        if np.count_nonzero(labels == label) >= minimum
    ]
    return sorted(found, key=lambda group: (-len(group.members), group.members[0]))


def _tree_cut(matrix: np.ndarray, distance: float) -> np.ndarray:
    # scikit-learn takes two seconds to import: only a refresh that groups pays for it.
    from sklearn.cluster import AgglomerativeClustering

    return np.asarray(
        AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=distance
        ).fit_predict(matrix)
    )


def _labels(matrix: np.ndarray, distance: float) -> np.ndarray:
    """Each sentence's group label: the tree cut over the sentences, or over their
    micro-groups' centres when there are too many to hold every pairwise distance."""
    if len(matrix) <= EXACT_AT_MOST:
        return _tree_cut(matrix, distance)
    from sklearn.cluster import MiniBatchKMeans

    micro = MiniBatchKMeans(
        n_clusters=MICRO_GROUPS, random_state=SEED, n_init=1, batch_size=4_096
    ).fit(matrix)
    centres = _unit(micro.cluster_centers_)
    return np.asarray(_tree_cut(centres, distance)[micro.labels_])


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _group(matrix: np.ndarray, indices: np.ndarray) -> Group:
    centroid = _unit(matrix[indices].mean(axis=0, keepdims=True))[0]
    distances = 1.0 - matrix[indices] @ centroid
    order = np.argsort(distances, kind="stable")
    radius = float(distances.max()) + RADIUS_MARGIN
    return Group(
        members=tuple(int(indices[i]) for i in order),
        centroid=tuple(float(x) for x in centroid),
        radius=round(min(radius, 1.0), 6),
    )


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    one, two = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = float(np.linalg.norm(one) * np.linalg.norm(two))
    return 1.0 - float(one @ two) / norms if norms else 1.0
