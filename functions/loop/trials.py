"""Randomised trials of an accepted hypothesis's or pattern's suggestion: started and
stopped by an admin, assigned at each session's start (`randomization.assignments`), read
with their arms' counts and verdict (`arms`), watched by the sweep (the guardrail,
`autoAdopt`), and adopted into the agent's standing instructions (`instructions`).

A trial is `projects/{p}/trials/{t}`; while it runs, its subject (`subjects`) names it, so
only one runs at a time, and the AgentConnect agent carries what a session start needs of
it (`running_trials.{t}`), written here in the same commit. Its arms are counted over the
outcome records of the project, where each session's arm is stored with its choice
(`selection.trial_arms`): assigned, joined (its log ended), lost, abnormal ends and each
signal kind. What an API knows of its own documents (a hypothesis's status, a pattern's
label) it hands in as a `Tried`; who may ask is its entry point's to check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from google.api_core import exceptions
from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter
from typing_extensions import TypedDict

from functions.loop import store as outcome_store
from functions.loop.arms import after_adoption, arm_counts, randomized
from functions.loop.documents import (
    OutcomeSource,
    RandomizedRead,
    RunningTrial,
    StopCause,
    Trial,
    TrialOrigin,
    TrialStatus,
    TrialView,
)
from functions.loop.instructions import MAX_CHARS, Change, add_version, with_suggestion
from functions.loop.randomization import DEFAULT_MEANINGFUL_RATIO
from functions.loop.subjects import RUNNING, resolved_by, subject_ref
from shared import logs
from shared.clients import db
from shared.errors import ApiError, conflict, not_found
from shared.ids import new_ulid
from shared.retention import iso, utcnow
from shared.store import (
    Changes,
    Snapshot,
    commit_if_unchanged,
    data_as,
    read_all,
    read_as,
    read_fields,
    transact,
    unchanged_since,
    writable,
)

DEFAULT_SHARE = 0.5


class Naming(TypedDict, total=False):
    """The trial's fields naming what it tries (and, for a hypothesis, what calibration
    counts of it)."""

    hypothesis_id: str | None
    pattern_id: str | None
    agenteAlvo: str
    confiancaPercent: float
    createdAt: datetime
    signal_kinds: list[str]


@dataclass(frozen=True)
class Tried:
    """What a trial takes from the accepted hypothesis or pattern it tries."""

    agent: str
    """The agent name its sessions are logged under."""
    sugestao: str
    fields: Naming
    latest: str
    """The subject's field naming its latest trial."""

    @property
    def kind(self) -> str:
        return "pattern" if self.fields.get("pattern_id") else "hypothesis"


@dataclass(frozen=True)
class Start:
    """What a person starting a trial asks for."""

    org_id: str
    agent_id: str
    by: str
    share: float = DEFAULT_SHARE
    max_sessions: int | None = None
    auto_adopt: bool = False


def start(
    project_id: str,
    subject: firestore.DocumentReference,
    tried_of: Callable[[Snapshot], Tried],
    asked: Start,
) -> Trial:
    """A trial for one AgentConnect agent whose sessions are logged in this project under
    the subject's agent. One commit, conditioned on the subject and the agent as read: a
    second start racing it finds the first's trial and answers 409."""
    agent_ref = outcome_store.connect_agent_ref(asked.org_id, asked.agent_id)

    def plan(batch: firestore.WriteBatch) -> Trial:
        snapshots = read_all([subject, agent_ref])
        found = snapshots[subject.path]
        tried = tried_of(found)
        running = (found.to_dict() or {}).get(RUNNING)
        if running:
            raise conflict(f"Trial {running} of this {tried.kind} is running: stop it first.")
        linked = (read_fields(snapshots[agent_ref.path]) or {}).get("outcome_source")
        _check_linked(linked, project_id, tried.agent)
        trial: Trial = {
            "id": new_ulid(),
            "project_id": project_id,
            "org_id": asked.org_id,
            "agent_id": asked.agent_id,
            "share": asked.share,
            "max_sessions": asked.max_sessions,
            "status": TrialStatus.RUNNING,
            "started_at": utcnow(),
            "started_by": asked.by,
            "stopped_at": None,
            "sugestao": tried.sugestao,
            "auto_adopt": asked.auto_adopt,
            "adopted_as": None,
            "verdict": None,
            **tried.fields,  # type: ignore[typeddict-item]
        }
        running_trial: RunningTrial = {
            "project_id": project_id,
            "hypothesis_id": trial["hypothesis_id"],
            "pattern_id": trial.get("pattern_id"),
            "share": trial["share"],
            "sugestao": tried.sugestao,
            "max_sessions": trial["max_sessions"],
            "assigned": 0,
        }
        started = {RUNNING: trial["id"], tried.latest: trial["id"]}
        batch.create(outcome_store.trial_ref(project_id, trial["id"]), writable(trial))
        batch.update(subject, started, option=unchanged_since(found))
        batch.update(
            agent_ref,
            {f"running_trials.{trial['id']}": writable(running_trial)},
            option=unchanged_since(snapshots[agent_ref.path]),
        )
        return trial

    return commit_if_unchanged(plan)


def _check_linked(source: OutcomeSource | None, project_id: str, logged_as: str) -> None:
    if source is None or source.get("project_id") != project_id:
        raise conflict(
            "The agent's outcome source must point at this project (PUT "
            ".../outcome-source): a trial reads how its sessions end here."
        )
    if source.get("agent") != logged_as:
        raise conflict(
            f"The agent's sessions are logged as {source.get('agent')!r}; what is tried is "
            f"about {logged_as!r}."
        )


def trial_of(
    project_id: str, trial_id: str, hypothesis_id: str | None, pattern_id: str | None
) -> Trial:
    """The trial, when it tries the hypothesis or pattern named (404 otherwise)."""
    trial = read_as(outcome_store.trial_ref(project_id, trial_id), Trial)
    if trial is None:
        raise not_found("The trial")
    named = (
        trial["hypothesis_id"] == hypothesis_id
        if hypothesis_id is not None
        else trial.get("pattern_id") == pattern_id
    )
    if not named:
        raise not_found("The trial")
    return trial


def trial_view(trial: Trial, read: RandomizedRead | None = None) -> TrialView:
    view: TrialView = {
        "id": trial["id"],
        "projectId": trial["project_id"],
        "hypothesisId": trial["hypothesis_id"],
        "patternId": trial.get("pattern_id"),
        "orgId": trial["org_id"],
        "agentId": trial["agent_id"],
        "share": trial["share"],
        "maxSessions": trial["max_sessions"],
        "autoAdopt": trial.get("auto_adopt", False),
        "status": trial["status"],
        "startedAt": iso(trial["started_at"]),
        "stoppedAt": iso(trial["stopped_at"]) if trial["stopped_at"] else None,
        "stoppedBy": trial.get("stopped_by"),
        "stopReason": trial.get("stop_reason"),
        "adoptedAs": trial.get("adopted_as"),
    }
    if read is not None:
        view["arms"] = read["arms"]
        view["verdict"] = read["verdict"]
        view["effect"] = read
        view["afterAdoption"] = after_adoption(trial)
    return view


def read_of(trial: Trial) -> RandomizedRead:
    """The trial's randomized read as it stands. The first read that finds a sample-ratio
    mismatch latches it on the trial, for every read after."""
    read = randomized(trial, arm_counts(trial), DEFAULT_MEANINGFUL_RATIO)
    if read["sampleRatioMismatch"]["flagged"] and "mismatch_flagged_at" not in trial:
        latched = _latch_mismatch(trial)
        read["sampleRatioMismatch"]["flaggedAt"] = iso(latched)
    return read


def _latch_mismatch(trial: Trial) -> datetime:
    """Keep the moment a mismatch was first found on the trial; a reader that finds it
    already kept gets the kept one."""
    ref = outcome_store.trial_ref(trial["project_id"], trial["id"])

    def apply(transaction: firestore.Transaction) -> datetime:
        current = read_as(ref, Trial, transaction)
        kept = current.get("mismatch_flagged_at") if current is not None else None
        if kept is not None:
            return kept
        now = utcnow()
        if current is not None:
            transaction.update(ref, {"mismatch_flagged_at": now})
        return now

    return transact(apply)


def stop(trial: Trial, read: RandomizedRead, by: str, reason: str | None) -> Trial:
    """Stop a running trial with its verdict as read; a pattern's trial that read
    `improved` resolves its pattern."""
    now = utcnow()
    changes: Changes = {
        "status": TrialStatus.STOPPED,
        "stopped_at": now,
        "stopped_by": by,
        "stop_reason": reason,
        "verdict": read["verdict"],
    }
    batch = db().batch()
    batch.update(outcome_store.trial_ref(trial["project_id"], trial["id"]), changes)
    batch.update(
        subject_ref(trial), {RUNNING: firestore.DELETE_FIELD, **resolved_by(trial, read["verdict"])}
    )
    batch.set(
        outcome_store.connect_agent_ref(trial["org_id"], trial["agent_id"]),
        {"running_trials": {trial["id"]: firestore.DELETE_FIELD}},
        merge=True,
    )
    batch.commit()
    stopped: Trial = {**trial, **changes}  # type: ignore[typeddict-item]
    return stopped


def adopt(trial: Trial, read: RandomizedRead, by: str, reason: str | None = None) -> Trial:
    """Make the trial's suggestion part of its agent's standing instructions: a new version
    (the current text, then the suggestion, naming the trial), the trial stopped if it
    runs, and the version it became kept on it. Only on a verdict of `improved`; adopting
    an adopted trial answers it as it is. One commit conditioned on the trial and the agent
    as read, creating the version's document: of two adoptions at once one lands, and the
    other, reading again, finds the trial adopted (no read takes a lock, so the sweep and
    a person adopting at once never wait on each other)."""
    if read["verdict"] != "improved":
        raise conflict(
            f"The trial's verdict is {read['verdict']}: only an improved one is adopted."
        )
    trial_ref = outcome_store.trial_ref(trial["project_id"], trial["id"])
    agent_ref = outcome_store.connect_agent_ref(trial["org_id"], trial["agent_id"])

    def plan(batch: firestore.WriteBatch) -> Trial:
        snapshots = read_all([trial_ref, agent_ref])
        current_trial = data_as(snapshots[trial_ref.path], Trial) or trial
        if current_trial.get("adopted_as") is not None:
            return current_trial
        agent = snapshots[agent_ref.path]
        current = (read_fields(agent) or {}).get("instructions")
        text = with_suggestion(current, current_trial.get("sugestao", ""))
        if len(text) > MAX_CHARS:
            raise conflict(
                f"The instructions with the suggestion would hold {len(text):,} characters, "
                f"over the {MAX_CHARS:,} limit: shorten them (PUT .../instructions) first."
            )
        running = current_trial["status"] == TrialStatus.RUNNING
        stopped = {f"running_trials.{trial['id']}": firestore.DELETE_FIELD} if running else {}
        change = _adopted(current_trial, text, by, reason)
        stored = add_version(batch, agent_ref, current, change, also=stopped, read=agent)
        changes = _adoption(stored["version"], read["verdict"], by, running)
        batch.update(trial_ref, changes, option=unchanged_since(snapshots[trial_ref.path]))
        subject: Changes = {RUNNING: firestore.DELETE_FIELD} if running else {}
        subject |= resolved_by(current_trial, read["verdict"])
        if subject:
            batch.update(subject_ref(current_trial), subject)
        adopted: Trial = {**current_trial, **changes}  # type: ignore[typeddict-item]
        return adopted

    return commit_if_unchanged(plan)


def _adopted(trial: Trial, text: str, by: str, reason: str | None) -> Change:
    """The change an adoption makes, naming the trial and what it tried."""
    origin: TrialOrigin = {
        "trial_id": trial["id"],
        "hypothesis_id": trial["hypothesis_id"],
        "pattern_id": trial.get("pattern_id"),
    }
    return Change(text, by, reason or f"Adopted from trial {trial['id']}", origin)


def _adoption(version: int, verdict: str, by: str, running: bool) -> Changes:
    """The trial's changes when it is adopted as `version` (and stopped, if it runs)."""
    changes: Changes = {"adopted_as": version, "verdict": verdict}
    if running:
        changes |= {
            "status": TrialStatus.STOPPED,
            "stopped_at": utcnow(),
            "stopped_by": by,
            "stop_reason": f"Adopted as instructions version {version}",
        }
    return changes


WATCHED = 100
"""Running trials one sweep reads, the longest running first."""


def watch() -> list[str]:
    """Read every running trial (the sweep's minute) and act on what it reads: a verdict of
    `worse`, or harm found by the guardrail's one-sided test, stops the trial at once
    (`stoppedBy: guardrail`; only a person starts another); a verdict of `improved` adopts
    the suggestion when the trial was started with `autoAdopt`, and resolves a pattern
    whose trial it is. The confidence sequence holds at every look, so acting on the first
    one that crosses is sound. The trials acted on, as `{id}:{what}`."""
    running = (
        db()
        .collection_group("trials")
        .where(filter=FieldFilter("status", "==", TrialStatus.RUNNING))
        .order_by("started_at")
        .limit(WATCHED)
    )
    acted: list[str] = []
    for snapshot in running.stream():
        trial = data_as(snapshot, Trial)
        try:
            what = None if trial is None else _act_on(trial, read_of(trial))
        except exceptions.Aborted:
            logs.warning(
                "A trial's read was not acted on (contention): next sweep", trial=snapshot.id
            )
            continue
        if what is not None:
            acted.append(f"{snapshot.id}:{what}")
    return acted


def _act_on(trial: Trial, read: RandomizedRead) -> str | None:
    verdict, harm = read["verdict"], read["guardrail"]["harmFound"]
    if verdict == "worse" or harm:
        why = "the verdict read worse" if verdict == "worse" else "the guardrail found harm"
        stop(trial, read, StopCause.GUARDRAIL, f"Stopped by the guardrail: {why}.")
        return "guardrail"
    if verdict != "improved":
        return None
    if trial.get("auto_adopt"):
        try:
            adopt(trial, read, StopCause.AUTO_ADOPT)
        except ApiError as refused:
            logs.warning("A trial could not adopt itself", trial=trial["id"], cause=refused.message)
            return None
        return "adopted"
    resolved = resolved_by(trial, verdict)
    if not resolved or trial.get("resolved"):
        return None
    batch = db().batch()
    batch.update(subject_ref(trial), resolved)
    batch.update(outcome_store.trial_ref(trial["project_id"], trial["id"]), {"resolved": True})
    batch.commit()
    return "resolved"
