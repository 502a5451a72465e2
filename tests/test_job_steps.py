"""The job skeleton's decisions, from the job as read to what claiming and settling do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore

from shared.instance import settings
from shared.jobs import Claim, ClaimStep, Lifecycle, SettleStep, claim_changes, claim_step
from shared.jobs import settle_step as step_of
from shared.store import Changes

pytestmark = pytest.mark.pure

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ANONYMOUS = AnonymousCredentials()  # type: ignore[no-untyped-call]
REF = firestore.Client(project="demo-steps", credentials=ANONYMOUS).document("j/1")
"""A reference builds no channel: nothing here reaches Firestore."""


def never_ends(*_: Any) -> str:
    raise AssertionError("a decision writes nothing")


LIFECYCLE = Lifecycle("jobs", "queued", "processing", lambda _: 120, "job_id", never_ends)


def job(status: str, **extra: Any) -> dict[str, Any]:
    return {"status": status, "created_at": NOW - timedelta(seconds=1), **extra}


def test_a_queued_job_in_time_is_taken() -> None:
    assert claim_step(job("queued"), LIFECYCLE, NOW) is ClaimStep.TAKE


def test_a_queued_job_past_its_queue_deadline_is_ended_not_taken() -> None:
    queue_s = settings().job_queue_seconds
    late = job("queued", created_at=NOW - timedelta(seconds=queue_s))
    assert claim_step(late, LIFECYCLE, NOW) is ClaimStep.END_STUCK
    almost = job("queued", created_at=NOW - timedelta(seconds=queue_s - 1))
    assert claim_step(almost, LIFECYCLE, NOW) is ClaimStep.TAKE


@pytest.mark.parametrize(
    "lease_until", [None, NOW, NOW - timedelta(seconds=1)], ids=["no lease", "at", "past"]
)
def test_a_running_job_at_or_past_its_lease_is_ended(lease_until: datetime | None) -> None:
    stuck = job("processing", lease_until=lease_until)
    assert claim_step(stuck, LIFECYCLE, NOW) is ClaimStep.END_STUCK


@pytest.mark.parametrize("status", ["processing", "completed", "failed", "cancelled"])
def test_a_job_taken_or_settled_is_skipped(status: str) -> None:
    held = job(status, lease_until=NOW + timedelta(seconds=1))
    assert claim_step(held, LIFECYCLE, NOW) is ClaimStep.SKIP


def test_taking_a_job_keeps_the_extra_changes_and_sets_a_lease_from_now() -> None:
    extra: Changes = {"model_id": "m", "status": "overridden"}
    changes = claim_changes(extra, LIFECYCLE, NOW, "claim-1")
    assert changes == {
        "model_id": "m",
        "status": "processing",
        "claim": "claim-1",
        "lease_until": NOW + timedelta(seconds=120),
        "started_at": NOW,
    }


CLAIM = Claim(REF, "claim-1", job("processing"), NOW + timedelta(seconds=60), LIFECYCLE)


def running(claim: str = "claim-1", lease_until: datetime | None = None) -> dict[str, Any]:
    return job("processing", claim=claim, lease_until=lease_until or NOW + timedelta(seconds=1))


def test_a_result_is_stored_while_the_claim_holds() -> None:
    assert step_of(CLAIM, running(), NOW) is SettleStep.STORE


def test_a_result_whose_lease_passed_ends_the_job_as_readers_see_it() -> None:
    assert step_of(CLAIM, running(lease_until=NOW), NOW) is SettleStep.END_LOST


def test_a_result_under_another_claim_ends_the_job_as_readers_see_it() -> None:
    assert step_of(CLAIM, running(claim="claim-2"), NOW) is SettleStep.END_LOST


@pytest.mark.parametrize("current", [None, job("failed"), job("cancelled"), job("completed")])
def test_a_job_already_settled_or_gone_is_left_as_it_is(current: dict[str, Any] | None) -> None:
    assert step_of(CLAIM, current, NOW) is SettleStep.LEAVE


def test_the_work_deadline_keeps_a_margin_inside_the_lease() -> None:
    assert CLAIM.deadline < CLAIM.lease_until
