"""Floor functions for the benchmarks: the same Firestore reads and writes as the real
entry points, with no auth, no validation and no logging. Never deployed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

import flask
import functions_framework
from google.cloud import firestore

from shared.clients import firestore_client


@cache
def _db() -> firestore.Client:
    """A plain client (no call bounds), counted by the bench like the functions' own."""
    return firestore_client("demo-evidencia")


def _json(body: Any, status: int = 200) -> flask.Response:
    return flask.Response(json.dumps(body, default=str), status=status, mimetype="application/json")


@functions_framework.http
def floor_read(_request: flask.Request) -> flask.Response:
    """One document read: the floor of a cold start."""
    return _json(_db().document("floor/one").get().to_dict())


@functions_framework.http
def floor_status(request: flask.Request) -> flask.Response:
    body = request.get_json()
    ws = _db().collection("workspaces").document(body["workspace_id"])
    refs = [
        ws.collection("runs").document(body["run_id"]),
        ws.collection("conversations").document(body["conversation_id"]),
    ]
    found = [s.to_dict() for s in _db().get_all(refs)]
    return _json(found)


@functions_framework.http
def floor_hypotheses(request: flask.Request) -> flask.Response:
    project = request.path.split("/")[2]
    query = (
        _db()
        .collection("projects")
        .document(project)
        .collection("hypotheses")
        .order_by("createdAt", direction=firestore.Query.DESCENDING)
        .order_by("id", direction=firestore.Query.DESCENDING)
        .limit(51)
    )
    return _json([s.to_dict() for s in query.stream()][:50])


@functions_framework.http
def floor_evaluation(request: flask.Request) -> flask.Response:
    parts = request.path.split("/")
    agent = _db().collection("orgs").document(parts[3]).collection("agents").document(parts[5])
    refs = [
        agent.collection("evaluations").document(parts[7]),
        agent.collection("evaluation_details").document(parts[7]),
    ]
    return _json([s.to_dict() for s in _db().get_all(refs)])


@functions_framework.http
def floor_ask(request: flask.Request) -> flask.Response:
    body = request.get_json()
    ws = _db().collection("workspaces").document(body["workspace_id"])
    conversation = ws.collection("conversations").document(body["conversation_id"])
    slots = [ws.collection("slots").document(str(k)) for k in range(5)]
    usage = [ws.collection("usage").document(str(k)) for k in range(8)]
    read = {s.reference.path: s for s in _db().get_all([conversation, *slots, *usage])}
    current = read[conversation.path]
    run = ws.collection("runs").document()
    batch = _db().batch()
    batch.create(run, {"status": "queued", "conversation_id": conversation.id})
    batch.set(slots[0], {"run_id": run.id, "until": datetime.now(UTC)})
    batch.update(
        conversation,
        {"run_count": (current.to_dict() or {})["run_count"] + 1},
        option=_db().write_option(last_update_time=current.update_time),
    )
    batch.commit()
    return _json({"ok": True}, 202)


@functions_framework.http
def floor_ingest(request: flask.Request) -> flask.Response:
    parts = request.path.split("/")
    session = (
        _db().collection("projects").document(parts[2]).collection("sessions").document(parts[4])
    )
    events = request.get_json()["events"]
    refs = [session.collection("events").document(e["id"]) for e in events]
    found = {s.id: s for s in _db().get_all([session, *refs])}
    fresh = [e for e in events if not found[e["id"]].exists]
    batch = _db().batch()
    for event in fresh:
        batch.create(session.collection("events").document(event["id"]), {"event": event})
    batch.set(session, {"event_count": firestore.Increment(len(fresh))}, merge=True)
    batch.commit()
    return _json({"accepted": len(fresh)})
