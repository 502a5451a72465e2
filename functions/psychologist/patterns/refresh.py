"""A refresh: an agent's failure sentences in the window grouped again, the groups matched
to the known patterns (ids kept, splits and merges recorded), each pattern's counts
written, and the new or changed ones labelled.

It reads every summary of the window (every ended session has one, summarised or not: the
denominator), embeds the failure sentences that have no vector yet and keeps the vector on
the summary, groups those of each agent (`clustering`), and writes each summary's
`pattern_id` and distance. What it writes is a function of the summaries it read, so a
refresh run twice writes the same; the refresh document settles last."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter
from google.cloud.firestore_v1.vector import Vector

from functions.loop import outcomes as outcome_records
from functions.loop import store as outcome_store
from functions.loop.documents import OutcomeRecord
from functions.loop.outcomes import Merge
from functions.psychologist import store as psychologist_store
from functions.psychologist.documents import Session
from functions.psychologist.patterns import store
from functions.psychologist.patterns.clustering import Group, cosine_distance, groups
from functions.psychologist.patterns.documents import (
    Cost,
    Labelling,
    Placed,
    Refreshed,
    StoredPattern,
    TargetRow,
    Week,
)
from functions.psychologist.patterns.identity import Matched, matched
from functions.psychologist.patterns.labels import SHOWN, Labelled, Shown, label
from functions.psychologist.patterns.window import Window
from shared.clients import db
from shared.ids import new_ulid
from shared.instance import settings
from shared.retention import utcnow
from shared.store import Changes, Stored, as_stored, writable

WRITES_PER_BATCH = 400
"""Under Firestore's 500 writes per batch."""
KEPT_IDS = 500
"""Session and hypothesis ids a pattern keeps (nearest its centre first), so that a pattern
of ten thousand sessions stays a small document."""
CHANGED_SHARE = 0.5
"""A kept pattern is labelled again when fewer than this share of its members were its
members when it was last labelled."""


@dataclass(frozen=True)
class Summary:
    """What a refresh reads of one ended session's summary."""

    session_id: str
    agent: str
    ended_at: datetime
    summarised: bool
    failure: str | None
    failure_events: tuple[str, ...]
    task: str
    cited: frozenset[str]
    """Every event its summary cites (task, ending, failure)."""
    vector: tuple[float, ...] | None
    pattern_id: str | None
    distance: float | None


@dataclass
class Spent:
    embedded: int = 0
    embedding_tokens: int = 0
    label_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Changed:
    """What a refresh changed, over every agent it grouped."""

    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    split: dict[str, list[str]] = field(default_factory=dict)
    merged: dict[str, str] = field(default_factory=dict)
    labelled: list[str] = field(default_factory=list)
    sessions_ended: int = 0
    sessions_summarised: int = 0
    by_agent: dict[str, list[int]] = field(default_factory=dict)
    """Agent → [sessions ended, sessions summarised] in the window."""

    def absorb(self, matching: Matched) -> None:
        self.created += matching.created
        self.kept += matching.kept
        self.split.update(matching.split)
        self.merged.update(matching.merged)


def summary_of(session_id: str, data: Mapping[str, Any]) -> Summary:
    failure = data.get("failure") or None
    cited: set[str] = set()
    for claim in ("task", "ending", "failure"):
        cited.update((data.get(claim) or {}).get("event_ids") or [])
    vector = data.get("embedding")
    return Summary(
        session_id=session_id,
        agent=str(data.get("agent") or ""),
        ended_at=data["ended_at"],
        summarised=data.get("status") == "summarised",
        failure=failure["text"] if failure else None,
        failure_events=tuple(failure["event_ids"]) if failure else (),
        task=str((data.get("task") or {}).get("text") or ""),
        cited=frozenset(cited),
        vector=tuple(vector) if vector is not None else None,
        pattern_id=data.get("pattern_id"),
        distance=data.get("distance"),
    )


SUMMARIES_PER_PAGE = 1_000
"""Summaries read per query: a window of ten thousand, with their vectors, is read in pages
so that no one call runs past the client's deadline."""


def read_summaries(project_id: str, window: Window, agent: str | None) -> list[Summary]:
    """Every summary of a session that ended in the window (of one agent, if named), read
    in pages of `SUMMARIES_PER_PAGE` in the order they ended."""
    query: Any = psychologist_store.summaries(project_id)
    if agent is not None:
        query = query.where(filter=FieldFilter("agent", "==", agent))
    query = (
        query.where(filter=FieldFilter("ended_at", ">=", window.since))
        .where(filter=FieldFilter("ended_at", "<", window.until))
        .order_by("ended_at")
        .limit(SUMMARIES_PER_PAGE)
    )
    found: list[Summary] = []
    page = list(query.stream())
    while page:
        found += [summary_of(snapshot.id, snapshot.to_dict() or {}) for snapshot in page]
        if len(page) < SUMMARIES_PER_PAGE:
            break
        page = list(query.start_after(page[-1]).stream())
    return found


def with_vectors(project_id: str, summaries: Sequence[Summary], spent: Spent) -> list[Summary]:
    """The summaries that name a failure, each with its sentence's vector: those without one
    are embedded now and the vector kept on the summary."""
    from shared.gemini import embed

    failing = [summary for summary in summaries if summary.summarised and summary.failure]
    missing = [summary for summary in failing if summary.vector is None]
    if not missing:
        return failing
    embedded = embed([summary.failure or "" for summary in missing])
    spent.embedded += len(missing)
    spent.embedding_tokens += embedded.tokens
    vectors = {s.session_id: tuple(v) for s, v in zip(missing, embedded.vectors, strict=True)}
    write_all(
        (
            psychologist_store.summary_ref(project_id, session_id),
            {"embedding": Vector(list(vector))},
        )
        for session_id, vector in vectors.items()
    )
    return [
        summary if summary.vector is not None else _with(summary, vectors[summary.session_id])
        for summary in failing
    ]


def _with(summary: Summary, vector: tuple[float, ...]) -> Summary:
    return Summary(**{**summary.__dict__, "vector": vector})


def write_all(writes: Iterable[tuple[firestore.DocumentReference, Changes]]) -> int:
    """Merge each change into its document, in batches; how many were written."""
    client, batch, pending, written = db(), None, 0, 0
    for ref, changes in writes:
        batch = batch or client.batch()
        batch.set(ref, changes, merge=True)
        pending += 1
        if pending == WRITES_PER_BATCH:
            batch.commit()
            written, batch, pending = written + pending, None, 0
    if batch is not None and pending:
        batch.commit()
        written += pending
    return written


def refresh_agent(
    project_id: str,
    agent: str,
    summaries: Sequence[Summary],
    window: Window,
    changed: Changed,
    spent: Spent,
) -> None:
    """Group one agent's failing sessions again and write what follows."""
    failing = with_vectors(project_id, summaries, spent)
    found = groups([summary.vector or () for summary in failing])
    known = _known(failing)
    matching = matched(
        known, [frozenset(failing[i].session_id for i in g.members) for g in found], new_ulid
    )
    changed.absorb(matching)
    now = utcnow()
    targets = targets_of(project_id, agent, summaries)
    earlier = _earlier_patterns(project_id, matching.ids)
    writes: list[tuple[firestore.DocumentReference, Changes]] = []
    grouped: dict[str, tuple[str, float]] = {}
    for group, pattern_id in zip(found, matching.ids, strict=True):
        members = [failing[i] for i in group.members]
        for member in members:
            grouped[member.session_id] = (
                pattern_id,
                round(cosine_distance(member.vector or (), group.centroid), 6),
            )
        refreshed: Refreshed = {
            **_placed(project_id, agent, pattern_id, group, members, summaries),
            "cost": cost_of(project_id, members),
            "by_target": by_target(members, summaries, targets),
            "hypothesis_ids": hypotheses_of(project_id, members),
            "window": {"since": window.since, "until": window.until},
            "refreshed_at": now,
        }
        document = writable(refreshed)
        split_from = _split_from(pattern_id, matching)
        if split_from is not None:
            document["split_from"] = split_from
        previous = earlier.get(pattern_id)
        if _needs_label(previous, members):
            labelled = label(_shown(members))
            spent.label_calls += 1
            spent.input_tokens += labelled.usage.input_tokens
            spent.output_tokens += labelled.usage.output_tokens
            document.update(_label_fields(labelled, members, now))
            changed.labelled.append(pattern_id)
        if previous is None:
            document.update({"status": "open", "created_at": now, "trial_id": None})
        writes.append((store.pattern_ref(project_id, pattern_id), document))
    for pattern_id, into in matching.merged.items():
        writes.append((store.pattern_ref(project_id, pattern_id), {"merged_into": into}))
    writes += _memberships(project_id, failing, grouped, now)
    write_all(writes)


READS_PER_CALL = 300
"""Documents per batched read."""


def _read(refs: Sequence[firestore.DocumentReference], kind: type[Stored]) -> dict[str, Stored]:
    """Each existing document's data by path, read in batches."""
    found: dict[str, Stored] = {}
    for start in range(0, len(refs), READS_PER_CALL):
        for snapshot in db().get_all(list(refs[start : start + READS_PER_CALL])):
            if snapshot.exists:
                found[snapshot.reference.path] = as_stored(snapshot.to_dict() or {}, kind)
    return found


def cost_of(project_id: str, members: Sequence[Summary]) -> Cost:
    """The tokens and dollars the member sessions spent, as their sessions counted them
    (`usd` None when no session reported a cost)."""
    refs = [psychologist_store.session_ref(project_id, m.session_id) for m in members]
    sessions = _read(refs, Session).values()
    usages = [data.get("usage") or data.get("metered") or {} for data in sessions]
    costs = [usage["cost_usd"] for usage in usages if "cost_usd" in usage]
    return {
        "input_tokens": int(sum(usage.get("input_tokens", 0) for usage in usages)),
        "output_tokens": int(sum(usage.get("output_tokens", 0) for usage in usages)),
        "usd": round(sum(costs), 6) if costs else None,
    }


def targets_of(
    project_id: str, agent: str, summaries: Sequence[Summary]
) -> dict[str, tuple[str | None, str | None]]:
    """Each session's chosen runtime and model, from its outcome record (None, None where
    AgentConnect chose nothing for it)."""
    refs = [outcome_store.outcome_ref(project_id, s.session_id, agent) for s in summaries]
    read = _read(refs, OutcomeRecord)
    chosen: dict[str, tuple[str | None, str | None]] = {}
    for summary, ref in zip(summaries, refs, strict=True):
        choice = read[ref.path].get("selection") if ref.path in read else None
        target = choice["target"] if choice else None
        chosen[summary.session_id] = (
            (target.get("runtime"), target.get("model")) if target else (None, None)
        )
    return chosen


def by_target(
    members: Sequence[Summary],
    summaries: Sequence[Summary],
    targets: Mapping[str, tuple[str | None, str | None]],
) -> list[TargetRow]:
    """Per runtime and model chosen: the pattern's sessions of the agent's ended ones."""
    total = Counter(targets[summary.session_id] for summary in summaries)
    matching = Counter(targets[member.session_id] for member in members)
    return [
        {
            "runtime": runtime,
            "model": model,
            "matching": matching.get((runtime, model), 0),
            "total": count,
        }
        for (runtime, model), count in sorted(total.items(), key=lambda item: str(item[0]))
    ]


HYPOTHESES_PER_QUERY = 30
"""Firestore's limit of values in one `in` filter."""


def hypotheses_of(project_id: str, members: Sequence[Summary]) -> list[str]:
    """The ids of the hypotheses the member sessions' analyses proposed."""
    sessions = [member.session_id for member in members]
    found: list[str] = []
    for start in range(0, len(sessions), HYPOTHESES_PER_QUERY):
        query = psychologist_store.hypotheses(project_id).where(
            filter=FieldFilter("sessionId", "in", sessions[start : start + HYPOTHESES_PER_QUERY])
        )
        found += [snapshot.id for snapshot in query.select([]).stream()]
    return sorted(found)[:KEPT_IDS]


def _known(failing: Sequence[Summary]) -> dict[str, frozenset[str]]:
    members: dict[str, set[str]] = defaultdict(set)
    for summary in failing:
        if summary.pattern_id:
            members[summary.pattern_id].add(summary.session_id)
    return {pattern_id: frozenset(sessions) for pattern_id, sessions in members.items()}


def _earlier_patterns(project_id: str, ids: Sequence[str]) -> dict[str, StoredPattern]:
    refs = [store.pattern_ref(project_id, pattern_id) for pattern_id in ids]
    return {
        snapshot.id: as_stored(snapshot.to_dict() or {}, StoredPattern)
        for snapshot in db().get_all(refs)
        if snapshot.exists
    }


def _split_from(pattern_id: str, matching: Matched) -> str | None:
    """The pattern this one split from, if it did."""
    for parent, children in matching.split.items():
        if pattern_id in children:
            return parent
    return None


def _needs_label(previous: StoredPattern | None, members: Sequence[Summary]) -> bool:
    """A new pattern, one never labelled, or one whose members mostly changed since."""
    if previous is None or "labelled_members" not in previous:
        return True
    before = set(previous["labelled_members"])
    now = {member.session_id for member in members[:KEPT_IDS]}
    return len(before & now) < CHANGED_SHARE * len(now)


def _shown(members: Sequence[Summary]) -> list[Shown]:
    return [
        Shown(member.session_id, member.failure or "", member.task, member.cited)
        for member in members[:SHOWN]
    ]


def _label_fields(labelled: Labelled, members: Sequence[Summary], now: datetime) -> Labelling:
    return {
        "title": labelled.title,
        "description": labelled.description,
        "sugestao": labelled.sugestao,
        "evidence": labelled.evidence,
        "refused": labelled.refused,
        "label_model": labelled.model,
        "labelled_at": now,
        "labelled_members": [member.session_id for member in members[:KEPT_IDS]],
    }


def _placed(
    project_id: str,
    agent: str,
    pattern_id: str,
    group: Group,
    members: Sequence[Summary],
    summaries: Sequence[Summary],
) -> Placed:
    """A pattern's place and counts, as of this refresh."""
    ended = [summary.ended_at for summary in members]
    return {
        "id": pattern_id,
        "project_id": project_id,
        "agent": agent,
        "centroid": Vector(list(group.centroid)),
        "radius": group.radius,
        "matching": len(members),
        "total": len(summaries),
        "summarised": sum(summary.summarised for summary in summaries),
        "weekly": weekly(members, summaries),
        "first_seen": min(ended),
        "last_seen": max(ended),
        "central": members[0].session_id,
        "expires_at": max(ended)
        + timedelta(days=settings().psychologist_hypothesis_retention_days),
    }


def week_of(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def weekly(members: Sequence[Summary], summaries: Sequence[Summary]) -> list[Week]:
    """Per ISO week of the window: the pattern's sessions and the agent's ended sessions."""
    matching = Counter(week_of(member.ended_at) for member in members)
    total = Counter(week_of(summary.ended_at) for summary in summaries)
    return [
        {"week": week, "matching": matching.get(week, 0), "total": count}
        for week, count in sorted(total.items())
    ]


def member_record(project_id: str, summary: Summary, pattern_id: str | None) -> Merge:
    """The session's pattern as its outcome record keeps it, with the record's own expiry
    (its end plus the retention, as both halves set it)."""
    kept = timedelta(days=settings().psychologist_hypothesis_retention_days)
    expires_at = summary.ended_at + kept
    return outcome_records.grouped(
        project_id, summary.session_id, summary.agent, pattern_id, expires_at
    )


def _memberships(
    project_id: str,
    failing: Sequence[Summary],
    grouped: Mapping[str, tuple[str, float]],
    now: datetime,
) -> list[tuple[firestore.DocumentReference, Changes]]:
    """Each failing summary's pattern (None outside every group), where it changed, and
    its outcome record's where the pattern changed."""
    writes: list[tuple[firestore.DocumentReference, Changes]] = []
    for summary in failing:
        pattern_id, distance = grouped.get(summary.session_id, (None, None))
        if (pattern_id, distance) == (summary.pattern_id, summary.distance):
            continue
        changes: Changes = {"pattern_id": pattern_id, "distance": distance}
        if pattern_id != summary.pattern_id:
            changes["joined_at"] = now
            writes.append(member_record(project_id, summary, pattern_id))
        writes.append((psychologist_store.summary_ref(project_id, summary.session_id), changes))
    return writes


def refresh(project_id: str, agent: str | None, until: datetime) -> tuple[Changed, Spent]:
    """Regroup the window ending `until`, for one agent or every agent in it."""
    window = Window.ending(until)
    summaries = read_summaries(project_id, window, agent)
    changed, spent = Changed(), Spent()
    changed.sessions_ended = len(summaries)
    changed.sessions_summarised = sum(summary.summarised for summary in summaries)
    by_agent: dict[str, list[Summary]] = defaultdict(list)
    for summary in summaries:
        by_agent[summary.agent].append(summary)
    for name, owned in sorted(by_agent.items()):
        changed.by_agent[name] = [len(owned), sum(summary.summarised for summary in owned)]
        refresh_agent(project_id, name, owned, window, changed, spent)
    return changed, spent
