"""How analyses move through the shared job lifecycle, and how a stuck one ends."""

from __future__ import annotations

from functions.psychologist import store
from functions.psychologist.documents import AnalysisStatus
from shared.jobs import Lifecycle

LIFECYCLE = Lifecycle(
    store.ANALYSES,
    AnalysisStatus.QUEUED,
    AnalysisStatus.PROCESSING,
    lambda config: config.psychologist_lease_seconds,
    "analysis_id",
)
"""A stuck analysis fails `generation_unconfirmed`."""
