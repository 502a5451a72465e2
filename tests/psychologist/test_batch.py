"""An abnormal end's analysis through Gemini's Batch API: submitted by the worker, polled
by the sweep, finished from the batch's answers with the same checks, or asked the
standard way (and saying why) when the batch fails, expires, loses a request, passes its
deadline, or the backend takes none."""

from __future__ import annotations

from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from tests.api import Configure, document, wait_for
from tests.gemini import use_vertex
from tests.psychologist.conftest import Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import SESSION, reopening_log


@pytest.fixture
def batched(psy: Psychologist, configure: Configure) -> Psychologist:
    configure(PSYCHOLOGIST_GEMINI_BATCH="auto")
    return psy


def ended_abnormally(psy: Psychologist) -> tuple[str, list[str]]:
    """Log a session, script Gemini's hypothesis over it and end it abnormally; its
    analysis, and the events a hypothesis may cite."""
    log, reopened = reopening_log()
    psy.ingest(SESSION, log.events)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    psy.end(SESSION, "closed_abnormally", "crash")
    analysis_id: str = document(f"projects/{psy.project}/sessions/{SESSION}")["analysis_id"]
    return analysis_id, reopened


def waiting_analysis(psy: Psychologist) -> tuple[str, list[str]]:
    """`ended_abnormally`, once its analysis waits on its batch."""
    analysis_id, reopened = ended_abnormally(psy)

    def waiting() -> dict[str, Any] | None:
        shown = psy.analysis(analysis_id)
        return shown if shown["batch"] is not None and shown["status"] == "processing" else None

    wait_for(waiting)
    return analysis_id, reopened


def test_an_abnormal_end_is_analysed_through_a_batch_and_finished_by_the_sweep(
    batched: Psychologist,
) -> None:
    analysis_id, _ = waiting_analysis(batched)
    waiting = batched.analysis(analysis_id)
    assert waiting["batch"]["state"] == "pending"
    assert waiting["batch"]["fallback"] is None
    assert waiting["batch"]["submittedAt"] < waiting["batch"]["deadlineAt"]
    [asked] = batched.world.gemini.requests
    assert asked.batch is not None, "the chunk call went in a batch"
    assert batched.sweep()["batches"] == [f"projects/{batched.project}/analyses/{analysis_id}"]
    done = batched.analysis(analysis_id)
    assert (done["status"], done["counts"]["hypotheses"]) == ("completed", 1)
    assert (done["batch"]["state"], done["batch"]["fallback"]) == ("succeeded", None)
    assert done["usage"]["inputTokens"] == batched.world.gemini.reported_usage()["inputTokens"]
    assert len(batched.world.gemini.requests) == 1, "no standard call was made"
    assert batched.sweep()["batches"] == []


def test_a_batch_past_its_deadline_is_cancelled_and_asked_the_standard_way(
    batched: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_BATCH_DEADLINE_S="3")
    batched.world.gemini.hold_batches()
    analysis_id, reopened = waiting_analysis(batched)
    assert batched.sweep()["batches"] == [], "still inside its deadline"
    assert batched.analysis(analysis_id)["batch"]["state"] == "running"
    batched.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", reopened)]})
    resumed = wait_for(lambda: batched.sweep()["batches"], timeout=15, interval=0.5)
    assert resumed == [f"projects/{batched.project}/analyses/{analysis_id}"]
    done = batched.analysis(analysis_id)
    assert (done["status"], done["counts"]["hypotheses"]) == ("completed", 1)
    assert done["batch"]["state"] == "cancelled"
    assert done["batch"]["fallback"] == (
        "the batch had not finished 3 s after it was submitted; cancelled it; "
        "asked the standard way"
    )
    [job] = batched.world.gemini.batches.values()
    assert job.state == "BATCH_STATE_CANCELLED"
    standard = [r for r in batched.world.gemini.requests if r.batch is None]
    assert len(standard) == 1


def test_a_failed_batch_is_asked_the_standard_way_and_says_why(batched: Psychologist) -> None:
    batched.world.gemini.fail_next_batch("the batch backend is down")
    analysis_id, _ = waiting_analysis(batched)
    batched.sweep()
    done = batched.analysis(analysis_id)
    assert done["status"] == "completed"
    assert done["batch"]["state"] == "failed"
    assert done["batch"]["fallback"] == "the batch ended failed; asked the standard way"


def test_a_request_that_failed_in_its_batch_is_asked_the_standard_way(
    batched: Psychologist,
) -> None:
    batched.world.gemini.fail(500, message="internal error in the batch")
    analysis_id, _ = ended_abnormally(batched)
    wait_for(lambda: batched.analysis(analysis_id)["batch"])
    batched.sweep()
    done = batched.analysis(analysis_id)
    assert done["status"] == "completed"
    assert done["batch"]["state"] == "succeeded"
    assert done["batch"]["fallback"].startswith("request 1 of 1 failed in the batch (code 13)")


def test_two_sweeps_at_once_finish_a_batched_analysis_once(batched: Psychologist) -> None:
    analysis_id, _ = waiting_analysis(batched)
    found: list[list[str]] = []
    sweeps = [Thread(target=lambda: found.append(batched.sweep()["batches"])) for _ in range(2)]
    for sweep in sweeps:
        sweep.start()
    for sweep in sweeps:
        sweep.join()
    assert sorted(len(paths) for paths in found) == [0, 1]
    assert batched.analysis(analysis_id)["counts"]["hypotheses"] == 1
    assert len(batched.hypotheses().json()) == 1


def test_with_batches_off_an_abnormal_end_is_asked_the_standard_way(psy: Psychologist) -> None:
    analysis_id, _ = ended_abnormally(psy)
    done = psy.settled(analysis_id)
    assert (done["status"], done["batch"]) == ("completed", None)
    assert [r.batch for r in psy.world.gemini.requests] == [None]


def test_vertex_ai_without_a_bucket_says_so_and_asks_the_standard_way(
    batched: Psychologist, configure: Configure, tmp_path: Path
) -> None:
    use_vertex(configure, batched.world.gemini, tmp_path, "gemini-3.8-flash")
    analysis_id, _ = ended_abnormally(batched)
    done = batched.settled(analysis_id)
    assert done["status"] == "completed"
    assert done["batch"]["state"] == "unavailable"
    assert "Cloud Storage bucket" in done["batch"]["fallback"]
