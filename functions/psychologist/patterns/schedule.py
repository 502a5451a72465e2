"""The refreshes the sweep queues: one for a project that has new summaries and no
refresh asked for in the last `EVERY` (a refresh regroups the whole window, so once a day
is enough; a person can ask for one at any time)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from google.cloud import firestore

from functions.psychologist.patterns import store
from functions.psychologist.patterns.lifecycle import new_refresh

EVERY = timedelta(hours=24)


def due(project_id: str, now: datetime) -> bool:
    latest = (
        store.refreshes(project_id)
        .order_by("created_at", direction=firestore.Query.DESCENDING)
        .limit(1)
        .stream()
    )
    last = next((snapshot.to_dict() or {} for snapshot in latest), None)
    return last is None or last["created_at"] <= now - EVERY


def schedule(project_ids: Iterable[str], now: datetime) -> list[str]:
    """Queue a refresh of each project that is due one; the refreshes' paths."""
    queued: list[str] = []
    for project_id in sorted(set(project_ids)):
        if due(project_id, now):
            refresh = new_refresh(project_id, None, None)
            ref = store.refresh_ref(project_id, refresh["id"])
            ref.create(refresh)
            queued.append(ref.path)
    return queued
