"""Randomised trials of an accepted hypothesis's or pattern's suggestion: started and
stopped by an admin, assigned by AgentConnect at each session's start, read with their
arms' counts and verdict (`functions.outcomes.arms`), watched by the sweep (the guardrail,
`autoAdopt`), and adopted into the agent's standing instructions.

A trial is `projects/{p}/trials/{t}`; while it runs, the hypothesis or pattern names it
(`running_trial`, so only one runs at a time) and the AgentConnect agent carries what a
session start needs of it (`running_trials.{t}`), written here in the same commit. Its
arms are counted over the outcome records of the project, where each session's arm is
stored with its choice (`selection.trial_arms`): assigned, joined (its log ended), lost,
abnormal ends and each signal kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions
from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.outcomes import store as outcome_store
from functions.outcomes.arms import after_adoption, arm_counts, randomized
from functions.outcomes.documents import (
    GENERIC_KINDS,
    RunningTrial,
    StopCause,
    Trial,
    TrialOrigin,
    TrialStatus,
)
from functions.outcomes.instructions import (
    MAX_CHARS,
    Change,
    next_version,
    version_ref,
    with_suggestion,
)
from functions.outcomes.trials import DEFAULT_MEANINGFUL_RATIO
from functions.psychologist import store
from functions.psychologist.documents import Hypothesis, HypothesisStatus
from functions.psychologist.patterns import store as patterns_store
from functions.psychologist.patterns.store import RESOLVED
from functions.psychologist.requests import (
    PatternDecisionParams,
    PatternTrialParams,
    TrialAdoptRequest,
    TrialParams,
    TrialsParams,
    TrialStartRequest,
    TrialStopRequest,
)
from shared import auth, logs
from shared.clients import db
from shared.errors import ApiError, ErrorCode, conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.retention import iso, utcnow
from shared.store import (
    Snapshot,
    commit_if_unchanged,
    data_as,
    live_as,
    read_all,
    read_as,
    read_fields,
    unchanged_since,
    writable,
)

DEFAULT_SHARE = 0.5
RUNNING = "running_trial"


def _check_org_admin(call: Call, org_id: str) -> None:
    principal = call.principal
    if principal.tenants is not None and org_id not in principal.tenants:
        raise ApiError(ErrorCode.FORBIDDEN, "The token is not selected for this org.")
    auth.check_membership(db(), principal, kind="org", tenant_id=org_id, role="admin")


def specific_kinds(hypothesis: Hypothesis) -> list[str]:
    """The signal kinds the hypothesis stands on, less those every abnormal end shows."""
    return [k for k in hypothesis.get("signal_kinds", []) if k not in GENERIC_KINDS]


@dataclass(frozen=True)
class Tried:
    """What a trial takes from the accepted hypothesis or pattern it tries."""

    agent: str
    """The agent name its sessions are logged under."""
    sugestao: str
    fields: dict[str, Any]
    """The trial's fields naming it (and, for a hypothesis, what calibration counts)."""
    latest: str
    """The subject's field naming its latest trial."""


def _from_hypothesis(snapshot: Snapshot) -> Tried:
    hypothesis = live_as(snapshot, Hypothesis, "The hypothesis")
    if hypothesis["status"] != HypothesisStatus.ACCEPTED:
        raise conflict(f"The hypothesis is {hypothesis['status']}: only an accepted one is tried.")
    return Tried(
        hypothesis["agenteAlvo"],
        hypothesis["sugestao"],
        {
            "hypothesis_id": hypothesis["id"],
            "pattern_id": None,
            "agenteAlvo": hypothesis["agenteAlvo"],
            "confiancaPercent": hypothesis["confiancaPercent"],
            "createdAt": hypothesis["createdAt"],
            "signal_kinds": hypothesis.get("signal_kinds", []),
        },
        "last_trial",
    )


def _from_pattern(snapshot: Snapshot) -> Tried:
    pattern = snapshot.to_dict() if snapshot.exists else None
    if not pattern or not pattern.get("first_seen"):
        raise not_found("The pattern")
    if pattern.get("merged_into"):
        raise conflict(f"The pattern was merged into {pattern['merged_into']}: try that one.")
    if pattern.get("status") != "accepted":
        raise conflict(f"The pattern is {pattern.get('status')}: only an accepted one is tried.")
    if not pattern.get("sugestao"):
        raise conflict("The pattern has no suggestion (its label was refused): none to try.")
    return Tried(
        pattern["agent"],
        pattern["sugestao"],
        {
            "hypothesis_id": None,
            "pattern_id": snapshot.id,
            "agenteAlvo": pattern["agent"],
            "signal_kinds": [],
        },
        "trial_id",
    )


def start_trial(call: Call) -> Reply:
    """Start a trial on an accepted hypothesis."""
    params = call.params_as(TrialsParams)
    ref = store.hypotheses(params["projectId"]).document(params["hypothesisId"])
    return _start(call, params["projectId"], ref, _from_hypothesis)


def start_pattern_trial(call: Call) -> Reply:
    """Start a trial on an accepted pattern's suggestion: judged on the pattern's own rate
    per arm."""
    params = call.params_as(PatternDecisionParams)
    ref = patterns_store.pattern_ref(params["projectId"], params["patternId"])
    return _start(call, params["projectId"], ref, _from_pattern)


def _start(
    call: Call,
    project_id: str,
    subject_ref: firestore.DocumentReference,
    tried_of: Callable[[Snapshot], Tried],
) -> Reply:
    """A trial for one AgentConnect agent whose sessions are logged in this project under
    the subject's agent. One commit, conditioned on the subject and the agent as read: a
    second start racing it finds the first's trial and answers 409."""
    body = call.body_as(TrialStartRequest)
    org_id, agent_id = body["orgId"], body["agentId"]
    _check_org_admin(call, org_id)
    agent_ref = outcome_store.connect_agent_ref(org_id, agent_id)

    def plan(batch: firestore.WriteBatch) -> Reply:
        snapshots = read_all([subject_ref, agent_ref])
        found = snapshots[subject_ref.path]
        tried = tried_of(found)
        running = (found.to_dict() or {}).get(RUNNING)
        if running:
            raise conflict(f"Trial {running} of this {_kind(tried)} is running: stop it first.")
        agent = read_fields(snapshots[agent_ref.path]) or {}
        _check_linked(agent, project_id, tried.agent)
        now = utcnow()
        trial: Trial = {
            "id": new_ulid(),
            "project_id": project_id,
            "org_id": org_id,
            "agent_id": agent_id,
            "share": body.get("share", DEFAULT_SHARE),
            "max_sessions": body.get("maxSessions"),
            "status": TrialStatus.RUNNING,
            "started_at": now,
            "started_by": call.principal.user_id,
            "stopped_at": None,
            "sugestao": tried.sugestao,
            "auto_adopt": body.get("autoAdopt", False),
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
        batch.update(subject_ref, started, option=unchanged_since(found))
        batch.update(
            agent_ref,
            {f"running_trials.{trial['id']}": writable(running_trial)},
            option=unchanged_since(snapshots[agent_ref.path]),
        )
        return Reply(trial_view(trial), status=201)

    return commit_if_unchanged(plan)


def _kind(tried: Tried) -> str:
    return "pattern" if tried.fields.get("pattern_id") else "hypothesis"


def _check_linked(agent: dict[str, Any], project_id: str, logged_as: str) -> None:
    source = agent.get("outcome_source")
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


def _trial(params: TrialParams | PatternTrialParams) -> Trial:
    trial = read_as(outcome_store.trial_ref(params["projectId"], params["trialId"]), Trial)
    if trial is None:
        raise not_found("The trial")
    named = (
        trial["hypothesis_id"] == params.get("hypothesisId")
        if "hypothesisId" in params
        else trial.get("pattern_id") == params.get("patternId")
    )
    if not named:
        raise not_found("The trial")
    return trial


def _subject_ref(trial: Trial) -> firestore.DocumentReference:
    pattern_id = trial.get("pattern_id")
    if pattern_id:
        return patterns_store.pattern_ref(trial["project_id"], pattern_id)
    return store.hypotheses(trial["project_id"]).document(trial["hypothesis_id"] or "")


def trial_view(trial: Trial, read: dict[str, Any] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
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


def read_of(trial: Trial) -> dict[str, Any]:
    """The trial's randomized read as it stands."""
    return randomized(trial, arm_counts(trial), DEFAULT_MEANINGFUL_RATIO)


def get_trial(call: Call) -> Reply:
    trial = _trial(call.params_as(TrialParams))
    return Reply(trial_view(trial, read_of(trial)))


def get_pattern_trial(call: Call) -> Reply:
    trial = _trial(call.params_as(PatternTrialParams))
    return Reply(trial_view(trial, read_of(trial)))


def stop_trial(call: Call) -> Reply:
    return _stop_asked(call, _trial(call.params_as(TrialParams)))


def stop_pattern_trial(call: Call) -> Reply:
    return _stop_asked(call, _trial(call.params_as(PatternTrialParams)))


def _stop_asked(call: Call, trial: Trial) -> Reply:
    """End assignment: the agent's start no longer sees the trial and its subject may be
    tried again. The verdict as it stands is kept with the trial, for calibration; the
    counts stay readable. Stopping a stopped trial answers it as it is."""
    body = call.body_as(TrialStopRequest)
    if trial["status"] == TrialStatus.STOPPED:
        return Reply(trial_view(trial))
    read = read_of(trial)
    stopped = stop(trial, read, call.principal.user_id, body.get("reason"))
    return Reply(trial_view(stopped, read))


def stop(trial: Trial, read: dict[str, Any], by: str, reason: str | None) -> Trial:
    """Stop a running trial with its verdict as read; a pattern's trial that read
    `improved` resolves its pattern."""
    now = utcnow()
    changes: dict[str, Any] = {
        "status": TrialStatus.STOPPED,
        "stopped_at": now,
        "stopped_by": by,
        "stop_reason": reason,
        "verdict": read["verdict"],
    }
    batch = db().batch()
    batch.update(outcome_store.trial_ref(trial["project_id"], trial["id"]), changes)
    batch.update(_subject_ref(trial), {RUNNING: firestore.DELETE_FIELD, **_resolved(trial, read)})
    batch.set(
        outcome_store.connect_agent_ref(trial["org_id"], trial["agent_id"]),
        {"running_trials": {trial["id"]: firestore.DELETE_FIELD}},
        merge=True,
    )
    batch.commit()
    stopped: Trial = {**trial, **changes}  # type: ignore[typeddict-item]
    return stopped


def _resolved(trial: Trial, read: dict[str, Any]) -> dict[str, Any]:
    """A pattern's changes when its trial reads `improved`: resolved by a randomised
    result, and only by one."""
    if trial.get("pattern_id") and read["verdict"] == "improved":
        return {"status": RESOLVED, "resolved_by": trial["id"]}
    return {}


def adopt_trial(call: Call) -> Reply:
    return _adopt_asked(call, _trial(call.params_as(TrialParams)))


def adopt_pattern_trial(call: Call) -> Reply:
    return _adopt_asked(call, _trial(call.params_as(PatternTrialParams)))


def _adopt_asked(call: Call, trial: Trial) -> Reply:
    reason = call.body_as(TrialAdoptRequest).get("reason")
    _check_org_admin(call, trial["org_id"])
    read = read_of(trial)
    return Reply(trial_view(adopt(trial, read, call.principal.user_id, reason), read))


def adopt(trial: Trial, read: dict[str, Any], by: str, reason: str | None = None) -> Trial:
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
        current = (read_fields(snapshots[agent_ref.path]) or {}).get("instructions")
        text = with_suggestion(current, current_trial.get("sugestao", ""))
        if len(text) > MAX_CHARS:
            raise conflict(
                f"The instructions with the suggestion would hold {len(text):,} characters, "
                f"over the {MAX_CHARS:,} limit: shorten them (PUT .../instructions) first."
            )
        stored = next_version(current, _adopted(current_trial, text, by, reason))
        running = current_trial["status"] == TrialStatus.RUNNING
        agent_changes: dict[str, Any] = {"instructions": writable(stored)}
        if running:
            agent_changes[f"running_trials.{trial['id']}"] = firestore.DELETE_FIELD
        batch.create(version_ref(agent_ref, stored), writable(stored))
        batch.update(agent_ref, agent_changes, option=unchanged_since(snapshots[agent_ref.path]))
        changes = _adoption(stored["version"], read["verdict"], by, running)
        batch.update(trial_ref, changes, option=unchanged_since(snapshots[trial_ref.path]))
        subject = {RUNNING: firestore.DELETE_FIELD} if running else {}
        subject |= _resolved(current_trial, read)
        if subject:
            batch.update(_subject_ref(current_trial), subject)
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


def _adoption(version: int, verdict: str, by: str, running: bool) -> dict[str, Any]:
    """The trial's changes when it is adopted as `version` (and stopped, if it runs)."""
    changes: dict[str, Any] = {"adopted_as": version, "verdict": verdict}
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


def _act_on(trial: Trial, read: dict[str, Any]) -> str | None:
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
    resolved = _resolved(trial, read)
    if not resolved or trial.get("resolved"):
        return None
    batch = db().batch()
    batch.update(_subject_ref(trial), resolved)
    batch.update(outcome_store.trial_ref(trial["project_id"], trial["id"]), {"resolved": True})
    batch.commit()
    return "resolved"
