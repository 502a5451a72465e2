"""How each kind of function is sized on Cloud Run functions (gen2): what the deploy
asks for and what the capacity model counts with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizing:
    """How one kind of function is sized on Cloud Run functions (gen2)."""

    cpu: str
    memory: str
    concurrency: int
    """Requests one instance serves at once; functions-framework's Python server is told
    to run as many threads (`THREADS`), as Google advises for a concurrency above one."""


PUBLIC_SIZING = Sizing(cpu="1", memory="512Mi", concurrency=8)
"""A public request spends most of its time waiting on one to three Firestore round trips,
so eight share one vCPU well; a concurrency above one needs a whole vCPU, and eight is
where Google advises to start (tests/test_one_instance.py holds every public handler
correct with eight requests at once on one instance)."""
SWEEP_SIZING = Sizing(cpu="1", memory="512Mi", concurrency=1)
"""Cloud Scheduler calls each sweep once a minute: one at a time. A whole vCPU, since
Cloud Run takes less than one only in its first-generation execution environment."""
WORKER_SIZING = Sizing(cpu="1", memory="1Gi", concurrency=4)
"""A worker waits seconds to minutes on Gemini, so one instance takes four jobs at once;
the largest analysis (100,000 events) peaks near 120 MiB while it prepares its calls, so
four fit in 1 GiB beside the runtime."""
MAX_INSTANCES = 20
"""The least cap on a function's instances: with the sizing above, 160 public requests or
80 jobs in flight before Cloud Run queues. The deploy raises a function's cap to what the
capacity model gives it at `CAP_SCALE`, with `CAP_HEADROOM` (`cli/capacity.py`)."""
