"""Trigger on `projects/{projectId}/pattern_refreshes/{refreshId}` created: run the refresh."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.psychologist.patterns import jobs
from functions.registry import trigger_document
from shared.jobs import deliver

DOCUMENT = trigger_document("psychologist_pattern_refresh_worker")


@functions_framework.cloud_event
def psychologist_pattern_refresh_worker(event: CloudEvent) -> None:
    deliver(event, DOCUMENT, jobs.WORKER)
