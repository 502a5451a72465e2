"""Randomised trials of an accepted hypothesis's suggestion: started and stopped by an
admin, assigned by AgentConnect at each session's start, read with their arms' counts and
verdict.

A trial is `projects/{p}/trials/{t}`; while it runs, the hypothesis names it
(`running_trial`, so only one runs at a time) and the AgentConnect agent carries what a
session start needs of it (`running_trials.{t}`), written here in the same commit. Its
arms are counted over the outcome records of the project, where each session's arm is
stored with its choice (`selection.trial_arms`): assigned, joined (its log ended), lost,
abnormal ends and each signal kind."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.outcomes import store as outcome_store
from functions.outcomes.documents import (
    GENERIC_KINDS,
    SIGNAL_KINDS,
    Arm,
    RunningTrial,
    Trial,
    TrialStatus,
)
from functions.outcomes.estimators import share_of
from functions.outcomes.safe import ALPHA, HARM, Table, harm_found
from functions.outcomes.trials import (
    DEFAULT_MEANINGFUL_RATIO,
    MIN_PER_ARM,
    SRM_ALPHA,
    WITHHELD,
    ArmCounts,
    needed,
    sample_ratio_mismatch,
    verdict_of,
)
from functions.psychologist import store
from functions.psychologist.documents import Hypothesis, HypothesisStatus
from functions.psychologist.requests import (
    TrialParams,
    TrialsParams,
    TrialStartRequest,
    TrialStopRequest,
)
from shared import auth
from shared.clients import db
from shared.errors import ApiError, ErrorCode, conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.retention import iso, utcnow
from shared.store import (
    commit_if_unchanged,
    counted,
    live_as,
    read_all,
    read_as,
    read_fields,
    unchanged_since,
    writable,
)

DEFAULT_SHARE = 0.5
RUNNING = "running_trial"
METHOD = (
    "Sessions assigned at their start by a hash of (trial, session id); the risk ratio "
    "treatment/control of joined sessions showing the hypothesis's own pattern, with a 95% "
    "confidence sequence from an exact safe test for two-by-two tables (Turner, Ly and "
    "Grünwald, 'Generic E-variables for exact sequential k-sample tests that allow for "
    "optional stopping', Journal of Statistical Planning and Inference 2024), inverted over "
    "the ratio (Turner and Grünwald, 'Exact anytime-valid confidence intervals for "
    "contingency tables and beyond', Statistics & Probability Letters 2023), taken at the "
    "arms' joined sizes so that sessions lost for reasons unrelated to the outcome cannot "
    "make a verdict: exact at every sample size and valid however often it is read; high "
    "null means no upper end. A loss that depends on the outcome biases any method: an "
    "unequal loss between the arms is flagged and withholds the verdict."
)


def _check_org_admin(call: Call, org_id: str) -> None:
    principal = call.principal
    if principal.tenants is not None and org_id not in principal.tenants:
        raise ApiError(ErrorCode.FORBIDDEN, "The token is not selected for this org.")
    auth.check_membership(db(), principal, kind="org", tenant_id=org_id, role="admin")


def specific_kinds(hypothesis: Hypothesis) -> list[str]:
    """The signal kinds the hypothesis stands on, less those every abnormal end shows."""
    return [k for k in hypothesis.get("signal_kinds", []) if k not in GENERIC_KINDS]


def start_trial(call: Call) -> Reply:
    """Start a trial on an accepted hypothesis, for one AgentConnect agent whose sessions
    are logged in this project under the hypothesis's agent. One commit, conditioned on
    the hypothesis and the agent as read: a second start racing it finds the first's
    trial and answers 409."""
    params, body = call.params_as(TrialsParams), call.body_as(TrialStartRequest)
    project_id, hypothesis_id = params["projectId"], params["hypothesisId"]
    org_id, agent_id = body["orgId"], body["agentId"]
    _check_org_admin(call, org_id)
    hypothesis_ref = store.hypotheses(project_id).document(hypothesis_id)
    agent_ref = outcome_store.connect_agent_ref(org_id, agent_id)

    def plan(batch: firestore.WriteBatch) -> Reply:
        snapshots = read_all([hypothesis_ref, agent_ref])
        found = snapshots[hypothesis_ref.path]
        hypothesis = live_as(found, Hypothesis, "The hypothesis")
        agent = read_fields(snapshots[agent_ref.path]) or {}
        _check_startable(hypothesis, agent, project_id)
        now = utcnow()
        trial: Trial = {
            "id": new_ulid(),
            "project_id": project_id,
            "hypothesis_id": hypothesis_id,
            "org_id": org_id,
            "agent_id": agent_id,
            "share": body.get("share", DEFAULT_SHARE),
            "max_sessions": body.get("maxSessions"),
            "status": TrialStatus.RUNNING,
            "started_at": now,
            "started_by": call.principal.user_id,
            "stopped_at": None,
            "agenteAlvo": hypothesis["agenteAlvo"],
            "confiancaPercent": hypothesis["confiancaPercent"],
            "createdAt": hypothesis["createdAt"],
            "signal_kinds": hypothesis.get("signal_kinds", []),
            "verdict": None,
        }
        running: RunningTrial = {
            "project_id": project_id,
            "hypothesis_id": hypothesis_id,
            "share": trial["share"],
            "sugestao": hypothesis["sugestao"],
            "max_sessions": trial["max_sessions"],
            "assigned": 0,
        }
        batch.create(outcome_store.trial_ref(project_id, trial["id"]), writable(trial))
        batch.update(
            hypothesis_ref,
            {RUNNING: trial["id"], "last_trial": trial["id"]},
            option=unchanged_since(found),
        )
        batch.update(
            agent_ref,
            {f"running_trials.{trial['id']}": writable(running)},
            option=unchanged_since(snapshots[agent_ref.path]),
        )
        return Reply(trial_view(trial), status=201)

    return commit_if_unchanged(plan)


def _check_startable(hypothesis: Hypothesis, agent: dict[str, Any], project_id: str) -> None:
    if hypothesis["status"] != HypothesisStatus.ACCEPTED:
        raise conflict(f"The hypothesis is {hypothesis['status']}: only an accepted one is tried.")
    running = hypothesis.get("running_trial")
    if running:
        raise conflict(f"Trial {running} of this hypothesis is running: stop it first.")
    source = agent.get("outcome_source")
    if source is None or source.get("project_id") != project_id:
        raise conflict(
            "The agent's outcome source must point at this project (PUT "
            ".../outcome-source): a trial reads how its sessions end here."
        )
    if source.get("agent") != hypothesis["agenteAlvo"]:
        raise conflict(
            f"The agent's sessions are logged as {source.get('agent')!r}; the hypothesis is "
            f"about {hypothesis['agenteAlvo']!r}."
        )


def _trial(params: TrialParams) -> Trial:
    trial = read_as(outcome_store.trial_ref(params["projectId"], params["trialId"]), Trial)
    if trial is None or trial["hypothesis_id"] != params["hypothesisId"]:
        raise not_found("The trial")
    return trial


def _arm_queries(trial: Trial, arm: Arm) -> list[Any]:
    """An arm's assigned sessions, the joined ones, abnormal ends and each signal kind
    (a kind by its count above zero: a query holds one array-membership filter)."""
    assigned: Any = outcome_store.outcomes(trial["project_id"]).where(
        filter=FieldFilter("selection.trial_arms", "array_contains", f"{trial['id']}:{arm}")
    )
    return [
        assigned,
        assigned.where(filter=FieldFilter("abnormal_end", "in", [0, 1])),
        assigned.where(filter=FieldFilter("abnormal_end", "==", 1)),
        *(assigned.where(filter=FieldFilter(f"signals.{kind}", ">", 0)) for kind in SIGNAL_KINDS),
    ]


def arm_counts(trial: Trial) -> dict[Arm, ArmCounts]:
    """Both arms' counts, every aggregation at once."""
    queries = [q for arm in Arm for q in _arm_queries(trial, arm)]
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        found = list(pool.map(counted, queries))
    size = len(found) // 2
    counts = {}
    for index, arm in enumerate(Arm):
        assigned, joined, abnormal, *kinds = found[index * size : (index + 1) * size]
        counts[arm] = ArmCounts(
            assigned, joined, abnormal, dict(zip(SIGNAL_KINDS, kinds, strict=True))
        )
    return counts


def randomized(trial: Trial, counts: dict[Arm, ArmCounts], meaningful: float) -> dict[str, Any]:
    """The randomized design's read: each arm, each kind's ratio on its own, the verdict on
    the hypothesis's own kinds (on abnormal ends when it has none), withheld on a
    sample-ratio mismatch, and the guardrail's one-sided test for harm."""
    treated, control = counts[Arm.TREATMENT], counts[Arm.CONTROL]
    kinds = [k for k in trial["signal_kinds"] if k not in GENERIC_KINDS]
    per_kind: dict[str, dict[str, Any]] = {}
    verdicts: dict[str, str] = {}
    for kind in SIGNAL_KINDS:
        verdict, ratio = verdict_of(
            treated.kinds[kind], treated.joined, control.kinds[kind], control.joined
        )
        verdicts[kind] = verdict
        per_kind[kind] = {
            "specific": kind in kinds,
            "treatment": share_of(treated.kinds[kind], treated.joined),
            "control": share_of(control.kinds[kind], control.joined),
            **ratio,
            "verdict": verdict,
        }
    abnormal_verdict, abnormal_ratio = verdict_of(
        treated.abnormal, treated.joined, control.abnormal, control.joined
    )
    if kinds:
        verdict = _combined({verdicts[k] for k in kinds})
        basis = [(treated.kinds[k], control.kinds[k]) for k in kinds]
    else:
        verdict, basis = abnormal_verdict, [(treated.abnormal, control.abnormal)]
    mismatch = sample_ratio_mismatch(treated, control)
    if mismatch and verdict in ("improved", "worse"):
        verdict = WITHHELD
    plan = needed(control, [shown for _, shown in basis], trial["share"], meaningful)
    return {
        "design": "randomized",
        "trialId": trial["id"],
        "status": trial["status"],
        "share": trial["share"],
        "arms": {
            str(arm): {
                "assigned": c.assigned,
                "sessions": c.joined,
                "lost": c.lost,
                "abnormalEnds": c.abnormal,
                "abnormalShare": share_of(c.abnormal, c.joined),
            }
            for arm, c in counts.items()
        },
        "sampleRatioMismatch": {"flagged": mismatch, "alpha": SRM_ALPHA},
        "abnormalEnds": {**abnormal_ratio, "verdict": abnormal_verdict},
        "signalKinds": per_kind,
        "basis": kinds or ["abnormal_end"],
        "verdict": verdict,
        "minimumPerArm": MIN_PER_ARM,
        "meaningfulRatio": meaningful,
        "sessionsNeeded": plan.sessions,
        "sessionsNeededReason": plan.reason,
        "guardrail": _guardrail(trial, treated, control, basis, meaningful),
        "method": METHOD,
    }


def _guardrail(
    trial: Trial,
    treated: ArmCounts,
    control: ArmCounts,
    basis: list[tuple[int, int]],
    meaningful: float,
) -> dict[str, Any]:
    """The one-sided test for harm a trial that reads worse stops itself by: harm on any of
    the basis's kinds, at ALPHA over them all (Bonferroni), and the sessions it needs to
    find the mirror of `meaningfulRatio`."""
    threshold = math.log(len(basis) / ALPHA)
    found = any(
        harm_found(Table(shown, treated.joined, seen, control.joined), threshold)
        for shown, seen in basis
    )
    harmful = round(1 / meaningful, 4)
    plan = needed(control, [seen for _, seen in basis], trial["share"], harmful, HARM)
    return {
        "alpha": ALPHA,
        "harmFound": found,
        "harmfulRatio": harmful,
        "sessionsNeeded": plan.sessions,
        "sessionsNeededReason": plan.reason,
    }


def _combined(verdicts: set[str]) -> str:
    """One verdict over the hypothesis's kinds: improved only when every kind improved,
    worse when any worsened."""
    if "worse" in verdicts:
        return "worse"
    if verdicts == {"improved"}:
        return "improved"
    if WITHHELD in verdicts:
        return WITHHELD
    if "too_few_sessions" in verdicts:
        return "too_few_sessions"
    return "no_clear_change"


def trial_view(trial: Trial, read: dict[str, Any] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": trial["id"],
        "projectId": trial["project_id"],
        "hypothesisId": trial["hypothesis_id"],
        "orgId": trial["org_id"],
        "agentId": trial["agent_id"],
        "share": trial["share"],
        "maxSessions": trial["max_sessions"],
        "status": trial["status"],
        "startedAt": iso(trial["started_at"]),
        "stoppedAt": iso(trial["stopped_at"]) if trial["stopped_at"] else None,
    }
    if read is not None:
        view["arms"] = read["arms"]
        view["verdict"] = read["verdict"]
        view["effect"] = read
    return view


def get_trial(call: Call) -> Reply:
    params = call.params_as(TrialParams)
    trial = _trial(params)
    read = randomized(trial, arm_counts(trial), DEFAULT_MEANINGFUL_RATIO)
    return Reply(trial_view(trial, read))


def stop_trial(call: Call) -> Reply:
    """End assignment: the agent's start no longer sees the trial and the hypothesis may be
    tried again. The verdict as it stands is kept with the trial, for calibration; the
    counts stay readable. Stopping a stopped trial answers it as it is."""
    params, body = call.params_as(TrialParams), call.body_as(TrialStopRequest)
    trial = _trial(params)
    if trial["status"] == TrialStatus.STOPPED:
        return Reply(trial_view(trial))
    read = randomized(trial, arm_counts(trial), DEFAULT_MEANINGFUL_RATIO)
    now = utcnow()
    batch = db().batch()
    batch.update(
        outcome_store.trial_ref(trial["project_id"], trial["id"]),
        {
            "status": TrialStatus.STOPPED,
            "stopped_at": now,
            "stopped_by": call.principal.user_id,
            "stop_reason": body.get("reason"),
            "verdict": read["verdict"],
        },
    )
    batch.update(
        store.hypotheses(trial["project_id"]).document(trial["hypothesis_id"]),
        {RUNNING: firestore.DELETE_FIELD},
    )
    batch.set(
        outcome_store.connect_agent_ref(trial["org_id"], trial["agent_id"]),
        {"running_trials": {trial["id"]: firestore.DELETE_FIELD}},
        merge=True,
    )
    batch.commit()
    stopped: Trial = {**trial, "status": TrialStatus.STOPPED, "stopped_at": now}
    stopped["verdict"] = read["verdict"]
    return Reply(trial_view(stopped, read))
