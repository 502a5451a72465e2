"""The trial calls of the Psychologist's API: start, read, stop and adopt a randomised
trial of an accepted hypothesis's or pattern's suggestion. What a trial is and does lives
in the loop (`functions.loop.trials`); here, what the loop is handed of a hypothesis or a
pattern, and who may ask."""

from __future__ import annotations

from functions.loop import trials
from functions.loop.documents import GENERIC_KINDS, Trial, TrialStatus
from functions.loop.subjects import hypotheses, pattern_ref
from functions.loop.trials import DEFAULT_SHARE, Start, Tried, trial_view
from functions.psychologist.documents import Hypothesis, HypothesisStatus
from functions.psychologist.requests import (
    PatternDecisionParams,
    PatternTrialParams,
    TrialAdoptRequest,
    TrialParams,
    TrialsParams,
    TrialStartRequest,
    TrialStopRequest,
)
from shared import auth
from shared.clients import db
from shared.errors import ApiError, ErrorCode, conflict, not_found
from shared.http import Call, Reply
from shared.store import Snapshot, live_as


def _check_org_admin(call: Call, org_id: str) -> None:
    principal = call.principal
    if principal.tenants is not None and org_id not in principal.tenants:
        raise ApiError(ErrorCode.FORBIDDEN, "The token is not selected for this org.")
    auth.check_membership(db(), principal, kind="org", tenant_id=org_id, role="admin")


def specific_kinds(hypothesis: Hypothesis) -> list[str]:
    """The signal kinds the hypothesis stands on, less those every abnormal end shows."""
    return [k for k in hypothesis.get("signal_kinds", []) if k not in GENERIC_KINDS]


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


def _start_asked(call: Call) -> Start:
    body = call.body_as(TrialStartRequest)
    _check_org_admin(call, body["orgId"])
    return Start(
        body["orgId"],
        body["agentId"],
        call.principal.user_id,
        body.get("share", DEFAULT_SHARE),
        body.get("maxSessions"),
        body.get("autoAdopt", False),
    )


def start_trial(call: Call) -> Reply:
    """Start a trial on an accepted hypothesis."""
    params = call.params_as(TrialsParams)
    subject = hypotheses(params["projectId"]).document(params["hypothesisId"])
    started = trials.start(params["projectId"], subject, _from_hypothesis, _start_asked(call))
    return Reply(trial_view(started), status=201)


def start_pattern_trial(call: Call) -> Reply:
    """Start a trial on an accepted pattern's suggestion: judged on the pattern's own rate
    per arm."""
    params = call.params_as(PatternDecisionParams)
    subject = pattern_ref(params["projectId"], params["patternId"])
    started = trials.start(params["projectId"], subject, _from_pattern, _start_asked(call))
    return Reply(trial_view(started), status=201)


def _hypothesis_trial(call: Call) -> Trial:
    params = call.params_as(TrialParams)
    return trials.trial_of(params["projectId"], params["trialId"], params["hypothesisId"], None)


def _pattern_trial(call: Call) -> Trial:
    params = call.params_as(PatternTrialParams)
    return trials.trial_of(params["projectId"], params["trialId"], None, params["patternId"])


def get_trial(call: Call) -> Reply:
    trial = _hypothesis_trial(call)
    return Reply(trial_view(trial, trials.read_of(trial)))


def get_pattern_trial(call: Call) -> Reply:
    trial = _pattern_trial(call)
    return Reply(trial_view(trial, trials.read_of(trial)))


def stop_trial(call: Call) -> Reply:
    return _stop_asked(call, _hypothesis_trial(call))


def stop_pattern_trial(call: Call) -> Reply:
    return _stop_asked(call, _pattern_trial(call))


def _stop_asked(call: Call, trial: Trial) -> Reply:
    """End assignment: the agent's start no longer sees the trial and its subject may be
    tried again. The verdict as it stands is kept with the trial, for calibration; the
    counts stay readable. Stopping a stopped trial answers it as it is."""
    body = call.body_as(TrialStopRequest)
    if trial["status"] == TrialStatus.STOPPED:
        return Reply(trial_view(trial))
    read = trials.read_of(trial)
    stopped = trials.stop(trial, read, call.principal.user_id, body.get("reason"))
    return Reply(trial_view(stopped, read))


def adopt_trial(call: Call) -> Reply:
    return _adopt_asked(call, _hypothesis_trial(call))


def adopt_pattern_trial(call: Call) -> Reply:
    return _adopt_asked(call, _pattern_trial(call))


def _adopt_asked(call: Call, trial: Trial) -> Reply:
    reason = call.body_as(TrialAdoptRequest).get("reason")
    _check_org_admin(call, trial["org_id"])
    read = trials.read_of(trial)
    adopted = trials.adopt(trial, read, call.principal.user_id, reason)
    return Reply(trial_view(adopted, read))
