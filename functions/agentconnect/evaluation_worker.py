"""Trigger on `orgs/{orgId}/agents/{agentId}/agent_sessions/{sessionId}` created: evaluate."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.agentconnect import worker
from shared.jobs import deliver


@functions_framework.cloud_event
def agentconnect_evaluation_worker(event: CloudEvent) -> None:
    deliver(event, worker.process)
