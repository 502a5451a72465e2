"""Trigger on `projects/{projectId}/analyses/{analysisId}` created: run the analysis."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.psychologist import worker
from functions.registry import trigger_document
from shared.jobs import deliver

DOCUMENT = trigger_document("psychologist_analysis_worker")


@functions_framework.cloud_event
def psychologist_analysis_worker(event: CloudEvent) -> None:
    deliver(event, DOCUMENT, worker.WORKER)
