"""Between refreshes, a newly summarised session joins its nearest pattern.

The sweep reads the summaries written since its last look that name a failure and have no
vector yet, embeds their sentences, and for each asks Firestore for the nearest summaries of
the same agent (a nearest-neighbour query on their `embedding` vector field). The first of
them that belongs to a pattern names the candidate; the session joins it when its sentence
lies within the pattern's radius of the pattern's centroid. The pattern's counts grow by one
in the same transaction, matching and total alike (the sessions that ended since without
joining are counted by the next refresh). A session that joins none waits for the next
refresh, which regroups every sentence of the window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter
from google.cloud.firestore_v1.base_vector_query import DistanceMeasure
from google.cloud.firestore_v1.vector import Vector

from functions.loop import outcomes as outcome_records
from functions.psychologist import store as psychologist_store
from functions.psychologist.patterns import store
from functions.psychologist.patterns.clustering import cosine_distance
from functions.psychologist.patterns.documents import StoredPattern, Week
from functions.psychologist.patterns.refresh import Summary, member_record, summary_of, week_of
from shared.clients import db
from shared.instance import settings
from shared.retention import utcnow
from shared.store import Changes, read_as, transact

NEIGHBOURS = 5
"""Nearest summaries read per joining session."""
JOINS_PER_SWEEP = 200
LOOK_BACK = timedelta(minutes=30)
"""How far back the sweep looks for new summaries: several sweeps, so that one that fails
leaves none behind (the next refresh regroups the rest anyway)."""


def new_summaries(now: datetime) -> list[tuple[str, Summary]]:
    """(project, summary) of each summary written lately that names a failure and was never
    embedded."""
    query = (
        db()
        .collection_group("summaries")
        .where(filter=FieldFilter("status", "==", "summarised"))
        .where(filter=FieldFilter("created_at", ">=", now - LOOK_BACK))
        .limit(JOINS_PER_SWEEP * 5)
    )
    found: list[tuple[str, Summary]] = []
    for snapshot in query.stream():
        data = snapshot.to_dict() or {}
        summary = summary_of(snapshot.id, data)
        if summary.summarised and summary.failure and summary.vector is None:
            found.append((snapshot.reference.parent.parent.id, summary))
    return found[:JOINS_PER_SWEEP]


def nearest_pattern(
    project_id: str, summary: Summary, vector: Sequence[float]
) -> tuple[str, float] | None:
    """The pattern the session joins, with its distance from the pattern's centroid."""
    query: Any = (
        psychologist_store.summaries(project_id)
        .where(filter=FieldFilter("agent", "==", summary.agent))
        .find_nearest(
            vector_field="embedding",
            query_vector=Vector(list(vector)),
            distance_measure=DistanceMeasure.COSINE,
            limit=NEIGHBOURS,
        )
    )
    for snapshot in query.stream():
        pattern_id = (snapshot.to_dict() or {}).get("pattern_id")
        if not pattern_id or snapshot.id == summary.session_id:
            continue
        pattern = store.pattern_ref(project_id, pattern_id).get().to_dict() or {}
        if pattern.get("merged_into") or "centroid" not in pattern:
            return None
        distance = cosine_distance(vector, list(pattern["centroid"]))
        return (pattern_id, round(distance, 6)) if distance <= pattern["radius"] else None
    return None


def join(project_id: str, summary: Summary, vector: Sequence[float]) -> str | None:
    """Keep the session's vector; join it to its nearest pattern if it lies within. Returns
    the pattern joined."""
    ref = psychologist_store.summary_ref(project_id, summary.session_id)
    found = nearest_pattern(project_id, summary, vector)
    if found is None:
        ref.set({"embedding": Vector(list(vector))}, merge=True)
        return None
    pattern_id, distance = found
    pattern_ref = store.pattern_ref(project_id, pattern_id)

    def apply(transaction: firestore.Transaction) -> None:
        current = (ref.get(transaction=transaction).to_dict() or {}).get("pattern_id")
        pattern = read_as(pattern_ref, StoredPattern, transaction)
        changes: Changes = {"embedding": Vector(list(vector))}
        if current is None:
            now = utcnow()
            changes.update(pattern_id=pattern_id, distance=distance, joined_at=now)
            transaction.update(pattern_ref, grown(pattern, summary.ended_at))
            outcome_records.merge(transaction, member_record(project_id, summary, pattern_id))
        transaction.set(ref, changes, merge=True)

    transact(apply)
    return pattern_id


def grown(pattern: StoredPattern | None, ended_at: datetime) -> Changes:
    """A pattern's counts with one more session that ended at `ended_at`."""
    week = week_of(ended_at)
    weekly = [Week(**row) for row in (pattern["weekly"] if pattern else [])]
    row = next((row for row in weekly if row["week"] == week), None)
    if row is None:
        weekly.append({"week": week, "matching": 1, "total": 1})
        weekly.sort(key=lambda each: each["week"])
    else:
        row["matching"] += 1
        row["total"] += 1
    last_seen = max(pattern["last_seen"] if pattern else ended_at, ended_at)
    kept = timedelta(days=settings().psychologist_hypothesis_retention_days)
    return {
        "matching": firestore.Increment(1),
        "total": firestore.Increment(1),
        "weekly": weekly,
        "last_seen": last_seen,
        "expires_at": last_seen + kept,
    }


def join_new(now: datetime) -> tuple[list[str], set[str]]:
    """Embed the sweep's new failure sentences and join each to its pattern, if any: the
    paths of the summaries that joined one, and the projects that had new ones."""
    from shared.gemini import embed

    found = new_summaries(now)
    if not found:
        return [], set()
    vectors = embed([summary.failure or "" for _, summary in found]).vectors
    joined: list[str] = []
    for (project_id, summary), vector in zip(found, vectors, strict=True):
        if join(project_id, summary, vector) is not None:
            joined.append(f"projects/{project_id}/summaries/{summary.session_id}")
    return joined, {project_id for project_id, _ in found}
