"""Trigger on `projects/{projectId}/analyses/{analysisId}` created: run the analysis."""

from __future__ import annotations

import functions_framework
from cloudevents.http.event import CloudEvent

from functions.psychologist import worker
from shared.jobs import deliver


@functions_framework.cloud_event
def psychologist_analysis_worker(event: CloudEvent) -> None:
    deliver(event, worker.process)
