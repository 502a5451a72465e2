"""Pattern operations behind the HTTP entry points: the ranked list, one pattern with its
members, and refreshes (queued here, run by their worker).

The counts served are those of the pattern's last refresh (and the sessions that joined it
since): k of the n sessions of its agent that ended in that refresh's window, with a 95%
Wilson interval computed as it is read. A project holds few patterns (each is a group of
at least two sessions' failures), so the list reads them all and ranks them in memory."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.loop import store as outcome_store
from functions.loop.arms import after_adoption, arm_counts, randomized
from functions.loop.documents import Trial
from functions.loop.estimators import Share, wilson
from functions.loop.randomization import DEFAULT_MEANINGFUL_RATIO
from functions.psychologist import store as psychologist_store
from functions.psychologist.patterns import store
from functions.psychologist.patterns.documents import (
    Cost,
    MemberView,
    PatternView,
    Refused,
    ShareView,
    StoredPattern,
    TargetRow,
    TargetView,
)
from functions.psychologist.patterns.lifecycle import COMPLETED, new_refresh
from functions.psychologist.patterns.store import RESOLVED
from functions.psychologist.patterns.window import Window
from functions.psychologist.requests import (
    DecisionRequest,
    PatternDecisionParams,
    PatternParams,
    PatternRefreshParams,
    PatternRefreshRequest,
    PatternsParams,
    ProjectParams,
)
from functions.psychologist.views import decider
from shared.errors import ApiError, ErrorCode
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.retention import iso as rfc3339
from shared.retention import parse_instant, utcnow
from shared.store import as_stored, read_as, stream_as, transact

NO_COST: Cost = {"input_tokens": 0, "output_tokens": 0, "usd": None}
RECENT_REFRESHES = 10
"""Completed refreshes read to find the latest one of the agent asked for."""


def pattern_view(data: StoredPattern) -> PatternView:
    """A stored pattern in its published shape (`schemas/psychologist/pattern.json`)."""
    share = wilson(int(data.get("matching", 0)), int(data.get("total", 0)))
    cost = data.get("cost") or NO_COST
    window = data["window"]
    return {
        "id": data["id"],
        "agent": data["agent"],
        "status": data.get("status", "open"),
        "title": data.get("title"),
        "description": data.get("description"),
        "sugestao": data.get("sugestao"),
        "sessions": _share_view(share),
        "window": {"since": rfc3339(window["since"]), "until": rfc3339(window["until"])},
        "cost": {
            "inputTokens": int(cost.get("input_tokens", 0)),
            "outputTokens": int(cost.get("output_tokens", 0)),
            "usd": cost.get("usd"),
        },
        "byTarget": [_target_view(row) for row in data.get("by_target") or []],
        "weekly": list(data.get("weekly") or []),
        "firstSeen": rfc3339(data["first_seen"]),
        "lastSeen": rfc3339(data["last_seen"]),
        "evidence": list(data.get("evidence") or []),
        "hypothesisIds": list(data.get("hypothesis_ids") or []),
        "trialId": data.get("trial_id"),
        "splitFrom": data.get("split_from"),
        "mergedInto": data.get("merged_into"),
    }


def _target_view(row: TargetRow) -> TargetView:
    share = wilson(int(row["matching"]), int(row["total"]))
    return {
        "runtime": row.get("runtime"),
        "model": row.get("model"),
        "sessions": _share_view(share),
    }


def _share_view(share: Share) -> ShareView:
    return {
        "matching": share.count,
        "total": share.sessions,
        "share": share.share,
        "low": share.low,
        "high": share.high,
    }


CHANGES = {
    "created": "created",
    "kept": "kept",
    "split": "split",
    "merged": "merged",
    "labelled": "labelled",
    "sessions_ended": "sessionsEnded",
    "sessions_summarised": "sessionsSummarised",
}
SPENT = {
    "embedded": "embedded",
    "embedding_tokens": "embeddingTokens",
    "label_calls": "labelCalls",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
}
"""A refresh's stored fields → their published names."""


def _published(stored: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    return {published: stored[name] for name, published in names.items()}


def refresh_view(data: Mapping[str, Any]) -> dict[str, Any]:
    changes, spent = data.get("changes"), data.get("spent")
    failure = data.get("failure_code")
    return {
        "id": data["id"],
        "status": data["status"],
        "agent": data.get("agent"),
        "createdAt": rfc3339(data["created_at"]),
        "completedAt": rfc3339(data["completed_at"]) if data.get("completed_at") else None,
        "changes": _published(changes, CHANGES) if changes else None,
        "spent": _published(spent, SPENT) if spent else None,
        "failure": {"code": failure, "detail": data.get("failure_detail")} if failure else None,
    }


def _visible(data: StoredPattern, params: Mapping[str, Any], window: Window) -> bool:
    """Whether a pattern is listed: not merged away, of the agent and status asked for,
    seen in the window."""
    return (
        not data.get("merged_into")
        and data.get("agent") == params.get("agent", data.get("agent"))
        and data.get("status", "open") == params.get("status", data.get("status", "open"))
        and data["last_seen"] >= window.since
        and data["first_seen"] < window.until
    )


def _ranked(found: list[PatternView], sort: str) -> list[PatternView]:
    def key(pattern: PatternView) -> tuple[float, str]:
        if sort == "cost":
            cost = pattern["cost"]
            return (-(cost["usd"] or 0.0) - cost["inputTokens"] * 1e-12, pattern["id"])
        return (-pattern["sessions"]["matching"], pattern["id"])

    return sorted(found, key=key)


def _offset(params: Mapping[str, Any]) -> int:
    token = params.get("pageToken")
    if token is None:
        return 0
    try:
        return int(base64.urlsafe_b64decode(token.encode()).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError) as error:
        raise ApiError(ErrorCode.INVALID_REQUEST, "pageToken is not one this list gave") from error


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(str(offset).encode()).decode()


def coverage(project_id: str, agent: str | None) -> dict[str, int]:
    """The sessions ended and summarised in the window of the latest completed refresh that
    covered the agent (any agent's, when none is named)."""
    query = (
        store.refreshes(project_id)
        .where(filter=FieldFilter("status", "==", COMPLETED))
        .order_by("completed_at", direction=firestore.Query.DESCENDING)
        .limit(RECENT_REFRESHES)
    )
    for snapshot in query.stream():
        data = snapshot.to_dict() or {}
        if agent is None or data.get("agent") in (None, agent):
            changes = data.get("changes") or {}
            ended = (changes.get("by_agent") or {}).get(agent) if agent else None
            return {
                "sessionsEnded": int(ended[0] if ended else changes.get("sessions_ended", 0)),
                "sessionsSummarised": int(
                    ended[1] if ended else changes.get("sessions_summarised", 0)
                ),
            }
    return {"sessionsEnded": 0, "sessionsSummarised": 0}


def list_patterns(call: Call) -> Reply:
    params = call.params_as(PatternsParams)
    project_id, limit = params["projectId"], int(params.get("limit", 20))
    until = parse_instant(params["until"]) if "until" in params else utcnow()
    since = parse_instant(params["since"]) if "since" in params else Window.ending(until).since
    window = Window(since, until)
    query: Any = store.patterns(project_id)
    if "agent" in params:
        query = query.where(filter=FieldFilter("agent", "==", params["agent"]))
    found = [
        pattern_view(data)
        for data in stream_as(query, StoredPattern).values()
        if data.get("first_seen") and _visible(data, params, window)
    ]
    ranked = _ranked(found, params.get("sort", "sessions"))
    start = _offset(params)
    page = ranked[start : start + limit]
    headers = {"X-Next-Page-Token": _token(start + limit)} if start + limit < len(ranked) else {}
    body = {
        "window": {"since": rfc3339(since), "until": rfc3339(until)},
        "coverage": coverage(project_id, params.get("agent")),
        "patterns": page,
    }
    return Reply(body, headers=headers)


def _pattern(project_id: str, pattern_id: str) -> StoredPattern:
    data = read_as(store.pattern_ref(project_id, pattern_id), StoredPattern)
    if not data or not data.get("first_seen"):
        raise ApiError(ErrorCode.NOT_FOUND, "The pattern was not found")
    return data


def get_pattern(call: Call) -> Reply:
    params = call.params_as(PatternParams)
    project_id, limit = params["projectId"], int(params.get("limit", 50))
    data = _pattern(project_id, params["patternId"])
    start = _offset(params)
    members = (
        psychologist_store.summaries(project_id)
        .where(filter=FieldFilter("pattern_id", "==", data["id"]))
        .order_by("distance")
        .offset(start)
        .limit(limit + 1)
    )
    rows = [_member(snapshot.id, snapshot.to_dict() or {}) for snapshot in members.stream()]
    headers = {"X-Next-Page-Token": _token(start + limit)} if len(rows) > limit else {}
    body = {
        "pattern": pattern_view(data),
        "refused": [_refused(claim) for claim in data.get("refused") or []],
        "members": rows[:limit],
        "trial": _trial_read(project_id, data.get("trial_id")),
    }
    return Reply(body, headers=headers)


def _trial_read(project_id: str, trial_id: str | None) -> dict[str, Any] | None:
    """The pattern's latest trial and the pattern's own rate per arm in it, with the
    trial's interval and verdict (`functions.loop.arms`)."""
    trial = read_as(outcome_store.trial_ref(project_id, trial_id), Trial) if trial_id else None
    if trial is None:
        return None
    read = randomized(trial, arm_counts(trial), DEFAULT_MEANINGFUL_RATIO)
    return {
        "id": trial["id"],
        "status": trial["status"],
        "autoAdopt": trial.get("auto_adopt", False),
        "adoptedAs": trial.get("adopted_as"),
        "stoppedBy": trial.get("stopped_by"),
        "verdict": read["verdict"],
        "rate": read["pattern"],
        "afterAdoption": after_adoption(trial),
    }


def _member(session_id: str, data: Mapping[str, Any]) -> MemberView:
    joined: datetime | None = data.get("joined_at")
    return {
        "sessionId": session_id,
        "summary": (data.get("failure") or {}).get("text") or "",
        "distance": data.get("distance"),
        "joinedAt": rfc3339(joined) if joined else None,
    }


def _refused(claim: Refused) -> Refused:
    refused: Refused = {"claim": claim.get("claim"), "reason": claim["reason"]}
    if "sessionId" in claim:
        refused["sessionId"] = claim["sessionId"]
        refused["eventIds"] = list(claim.get("eventIds") or [])
    return refused


def start_refresh(call: Call) -> Reply:
    """Queue a refresh; its worker runs it."""
    project_id = call.params_as(ProjectParams)["projectId"]
    agent = call.body_as(PatternRefreshRequest).get("agent")
    refresh = new_refresh(project_id, agent, call.principal.user_id)
    store.refresh_ref(project_id, refresh["id"]).create(refresh)
    return Reply(refresh_view(refresh), status=202)


def get_refresh(call: Call) -> Reply:
    params = call.params_as(PatternRefreshParams)
    snapshot = store.refresh_ref(params["projectId"], params["refreshId"]).get()
    if not snapshot.exists:
        raise ApiError(ErrorCode.NOT_FOUND, "The refresh was not found")
    return Reply(refresh_view(snapshot.to_dict() or {}))


def decide(call: Call) -> Reply:
    """Accept or dismiss a pattern, keeping the decision in its history (append-only, as a
    hypothesis's). A resolved pattern (a trial of its suggestion read improved) keeps its
    status: a person's decision does not undo a randomised result."""
    params, body = call.params_as(PatternDecisionParams), call.body_as(DecisionRequest)
    ref = store.pattern_ref(params["projectId"], params["patternId"])

    def apply(transaction: firestore.Transaction) -> StoredPattern:
        current = read_as(ref, StoredPattern, transaction)
        if not current or not current.get("first_seen"):
            raise ApiError(ErrorCode.NOT_FOUND, "The pattern was not found")
        if current.get("status") == RESOLVED:
            raise ApiError(ErrorCode.CONFLICT, "The pattern is resolved by its trial")
        now, by = utcnow(), decider(call.principal)
        changes = {"status": body["status"], "decided_by": by, "decided_at": now}
        transaction.update(ref, changes)
        decision = {
            "status": body["status"],
            "previous_status": current.get("status", "open"),
            "reason": body.get("reason"),
            "decided_by": by,
            "decided_at": now,
            "request_id": call.request_id,
        }
        transaction.create(ref.collection("decisions").document(new_ulid()), decision)
        return as_stored({**current, **changes}, StoredPattern)

    return Reply(pattern_view(transact(apply)))
