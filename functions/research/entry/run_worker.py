"""Trigger on `workspaces/{workspaceId}/runs/{runId}` created: settle the new run."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.registry import trigger_document
from functions.research import worker
from shared.jobs import deliver

DOCUMENT = trigger_document("research_run_worker")


@functions_framework.cloud_event
def research_run_worker(event: CloudEvent) -> None:
    deliver(event, DOCUMENT, worker.WORKER)
