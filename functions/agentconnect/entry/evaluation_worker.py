"""Trigger on `orgs/{orgId}/agents/{agentId}/agent_sessions/{sessionId}` created: evaluate."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.agentconnect import worker
from functions.registry import trigger_document
from shared.jobs import deliver

DOCUMENT = trigger_document("agentconnect_evaluation_worker")


@functions_framework.cloud_event
def agentconnect_evaluation_worker(event: CloudEvent) -> None:
    deliver(event, DOCUMENT, worker.WORKER)
