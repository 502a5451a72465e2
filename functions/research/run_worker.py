"""Trigger on `workspaces/{workspaceId}/runs/{runId}` created: settle the new run."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.research import worker
from shared.jobs import deliver


@functions_framework.cloud_event
def research_run_worker(event: CloudEvent) -> None:
    deliver(event, worker.process)
