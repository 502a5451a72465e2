"""AgentConnect operations behind the HTTP entry points."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cachetools import LRUCache
from google.cloud import firestore
from google.cloud.firestore_v1 import FieldFilter

from functions.agentconnect import store
from functions.agentconnect.documents import (
    Agent,
    AgentSession,
    Details,
    EvaluationStatus,
    PendingEvaluation,
    Selection,
    ServedInstructions,
    StoredSelection,
    Summary,
)
from functions.agentconnect.lifecycle import LIFECYCLE, fallback_summary, stuck, stuck_summary
from functions.agentconnect.outcomes import Chosen, recorded
from functions.agentconnect.requests import (
    AgentParams,
    EvaluationParams,
    EvaluationsParams,
    OutcomeSourceRequest,
    SessionStartRequest,
)
from functions.agentconnect.selection import configuration_issues
from functions.agentconnect.views import (
    author_can_view,
    details_shown,
    evaluation_view,
    fallback_of,
    outcome_source_view,
    selection_view,
)
from functions.loop import outcomes as outcome_records
from functions.loop.documents import OutcomeSource, StoredInstructions
from functions.loop.instructions import instructions_ref
from functions.loop.randomization import Assignment, assignments
from shared import auth, jobs, logs
from shared.clients import db
from shared.errors import ApiError, ErrorCode, conflict, not_found
from shared.http import Call, Reply
from shared.ids import new_ulid
from shared.instance import Instance, instance, settings
from shared.jsonbody import JsonObject
from shared.retention import is_expired, utcnow
from shared.store import (
    as_stored,
    commit_if_unchanged,
    data_as,
    read_all,
    read_as,
    stream_as,
    transact,
    writable,
)

NOT_READY_RETRY_S = "1"
BUDGET_SPENT = (
    "the org has spent its Gemini token budget (budget_exhausted); fell back to the default target"
)
HAND_STARTED = (
    "started by hand and registered by the agent's own hook (hand_started): the person chose "
    "the runtime, model, effort and permission mode; no target was applied and Gemini was not "
    "asked"
)
"""A hook's session is frozen at its start: its choice could not be applied."""
MAX_INPUT_BYTES = 64 * 1024
"""A session's input is stored with the session and again in its evaluation's details."""


def put_selection(call: Call) -> Reply:
    params = call.params_as(AgentParams)
    org_id, agent_id = params["orgId"], params["id"]
    selection = call.body_as(Selection)
    issues = configuration_issues(selection)
    if issues:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "The selection contradicts itself.", issues=issues
        )
    agent = store.agent_ref(org_id, agent_id)

    def apply(transaction: firestore.Transaction) -> StoredSelection:
        current = read_as(agent, Agent, transaction) or {}
        version = current.get("selection_version", 0) + 1
        stored: StoredSelection = {
            "version": version,
            "selection": selection,
            "created_at": utcnow(),
            "created_by": call.principal.user_id,
        }
        ref = store.selection_ref(org_id, agent_id, version)
        _check_stored_size(ref, stored)
        transaction.create(ref, writable(stored))
        transaction.set(
            agent,
            {"selection_version": version, "selection_fallback": fallback_of(selection)},
            merge=True,
        )
        return stored

    return Reply(selection_view(org_id, agent_id, transact(apply)), status=201)


def _check_stored_size(ref: firestore.DocumentReference, stored: StoredSelection) -> None:
    """A selection version is the one copy of its questions and rules (evaluations refer
    to it): one Firestore would refuse to store is refused before anything is written.
    A body within the 1 MiB request limit can still be larger stored, as every threshold
    takes 8 bytes there."""
    size = store.stored_bytes(ref, writable(stored))
    if size > store.DOCUMENT_LIMIT:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            "The selection is too large to store.",
            issues=[
                {
                    "path": [],
                    "message": f"the selection is {size:,} bytes as Firestore stores it; "
                    f"a document holds at most {store.DOCUMENT_LIMIT:,}",
                    "code": "too_big",
                }
            ],
        )


def _check_input_size(session_input: JsonObject) -> None:
    size = len(json.dumps(session_input, separators=(",", ":")).encode())
    if size > MAX_INPUT_BYTES:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            "The session input is too large.",
            issues=[
                {
                    "path": ["input"],
                    "message": f"input is {size} bytes as JSON; at most {MAX_INPUT_BYTES}",
                    "code": "too_big",
                }
            ],
        )


@dataclass(frozen=True)
class Starting:
    """What a session start names, as its call carries it."""

    session_id: str
    title: str
    input: JsonObject
    user_id: str
    trace: str | None
    started_by: str = "api"

    @property
    def by_hand(self) -> bool:
        """Registered by an agent's own hook: the person chose its target."""
        return self.started_by == "hook"


@dataclass(frozen=True)
class StartPlan:
    """What a start writes: its session at the agent's next `seq`, and that seq's
    evaluation, pending, or frozen on the default target when the org's budget is spent."""

    seq: int
    session: AgentSession
    evaluation: PendingEvaluation | Summary
    trials: list[Assignment] = field(default_factory=list)
    """The running trials the session is assigned to, each with its arm."""
    instructions: StoredInstructions | None = None
    """The agent's current instructions version, served with the start."""


def trials_for(agent: Agent, session_id: str) -> list[Assignment]:
    """The agent's running trials a session joins: those logged where the agent's link
    points (the only place their outcome can be read), with room left."""
    source = agent.get("outcome_source")
    running = {
        trial_id: trial
        for trial_id, trial in agent.get("running_trials", {}).items()
        if source is not None and trial["project_id"] == source["project_id"]
    }
    return assignments(running, session_id)


def selecting(agent: Agent | None) -> Agent:
    """The agent a session may start under: one with a selection."""
    if agent is None or "selection_version" not in agent:
        raise conflict("This agent has no model selection yet: PUT one first.")
    return agent


def plan_start(
    starting: Starting, agent: Agent, over_budget: bool, now: datetime, retention: timedelta
) -> StartPlan:
    """A new start's decision from the agent it read."""
    seq = agent.get("last_seq", 0) + 1
    session: AgentSession = {
        "seq": seq,
        "title": starting.title,
        "input": starting.input,
        "selection_version": agent["selection_version"],
        "created_by": starting.user_id,
        "created_at": now,
        "expires_at": now + retention,
        "started_by": starting.started_by,
    }
    source = agent.get("outcome_source")
    if source is not None:
        session["outcome_source"] = {"project_id": source["project_id"], "agent": source["agent"]}
    trials = trials_for(agent, starting.session_id)
    if trials:
        session["trials"] = [
            {
                "trial_id": t.trial_id,
                "hypothesis_id": t.trial["hypothesis_id"],
                "pattern_id": t.trial.get("pattern_id"),
                "arm": t.arm,
                "sugestao": t.trial["sugestao"],
            }
            for t in trials
        ]
    pending: PendingEvaluation = {
        "seq": seq,
        "sessionId": starting.session_id,
        "status": EvaluationStatus.PENDING,
        "created_at": now,
        "fallback": agent["selection_fallback"],
    }
    if starting.trace is not None:
        pending["trace"] = starting.trace
    instructions = agent.get("instructions")
    if instructions is not None:
        session["instructions_version"] = pending["instructions_version"] = instructions["version"]
    evaluation: PendingEvaluation | Summary = pending
    if starting.by_hand:
        evaluation = fallback_summary(pending, HAND_STARTED, now)
    elif over_budget:
        evaluation = fallback_summary(pending, BUDGET_SPENT, now)
    return StartPlan(seq, session, evaluation, trials, instructions)


def trials_served(stored: AgentSession, agent: Agent) -> list[JsonObject]:
    """The arms a session was given at its first start, as a start answers them. A trial
    recorded before its suggestion was kept with the session takes it from the agent."""
    running = agent.get("running_trials", {})
    served_trials: list[JsonObject] = []
    for each in stored.get("trials", []):
        trial = running.get(each["trial_id"])
        sugestao = each.get("sugestao") or (trial["sugestao"] if trial else None)
        if sugestao is None:
            continue
        served_trials.append(
            {
                "trialId": each["trial_id"],
                "hypothesisId": each["hypothesis_id"],
                "patternId": each.get("pattern_id"),
                "arm": each["arm"],
                "sugestao": sugestao,
            }
        )
    return served_trials


def served(instructions: StoredInstructions | None) -> ServedInstructions | None:
    """The instructions version a start answers."""
    if instructions is None:
        return None
    return {"version": instructions["version"], "text": instructions["text"]}


def start_session(call: Call) -> Reply:
    """Start a session: its evaluation takes the agent's next `seq`. One batched read and
    one commit that creates the evaluation at that `seq` only if no other start took it
    first, and raises the agent's `last_seq` by a `Maximum` transform, so `seq` stays
    contiguous without a transaction on the agent. The agent document read holds the
    current instructions version too, which the start serves and freezes with the
    session at no further read. A start that lost its `seq` reads again at once: each
    loss means another start got through, so a burst of `CONDITIONED_TRIES` starts of
    one agent all land, in about two round trips each. The
    first read also sums the org's token spend: past its budget the evaluation is
    created frozen with the default target, and no Gemini call is made.

    A session id that already started (a resumed session's hook, a first-prompt hook
    after the start's, or two of them at once: the second commit loses and reads again)
    is answered its first start's seq, arms and instructions, with a new token."""
    params, body = call.params_as(AgentParams), call.body_as(SessionStartRequest)
    org_id, agent_id = params["orgId"], params["id"]
    _check_input_size(body["input"])
    starting = Starting(
        body.get("sessionId") or new_ulid(),
        body["title"],
        body["input"],
        call.principal.user_id,
        logs.current_trace(),
        body.get("startedBy", "api"),
    )
    session_id = starting.session_id
    agent = store.agent_ref(org_id, agent_id)
    session = store.session_ref(org_id, agent_id, session_id)
    retention = timedelta(hours=settings().agentconnect_details_retention_hours)
    spend = store.spend(org_id)
    # The spend is read with the first try's agent and session; a try lost to another
    # start reads only those two again (the budget is a ceiling the commit does not hold).
    over_budget: list[bool] = []

    def plan(batch: firestore.WriteBatch) -> Reply:
        snapshots = read_all([agent, session, *([] if over_budget else spend.shards())])
        if not over_budget:
            over_budget.append(spend.used(snapshots) >= settings().agentconnect_org_token_budget)
        agent_data = selecting(data_as(snapshots[agent.path], Agent))
        earlier = data_as(snapshots[session.path], AgentSession)
        token = _session_token(batch, call, org_id, agent_id, session_id)
        if earlier is not None:
            return _started_again(earlier, agent_data, (org_id, agent_id, session_id), token)
        decided = plan_start(starting, agent_data, over_budget[0], utcnow(), retention)
        batch.create(session, writable(decided.session))
        batch.create(
            store.evaluation_ref(org_id, agent_id, decided.seq), writable(decided.evaluation)
        )
        counted_trials = {
            f"running_trials.{t.trial_id}.assigned": firestore.Increment(1) for t in decided.trials
        }
        batch.update(agent, {"last_seq": firestore.Maximum(decided.seq), **counted_trials})
        if decided.evaluation["status"] == EvaluationStatus.FROZEN:
            frozen = as_stored(decided.evaluation, Summary)
            record = recorded(agent, session_id, decided.session, frozen, Chosen())
            if record is not None:
                outcome_records.merge(batch, record)
        reply = {
            "sessionId": session_id,
            "seq": decided.seq,
            "sessionToken": token,
            "trials": trials_served(decided.session, agent_data),
            "instructions": served(decided.instructions),
            "registeredBefore": False,
        }
        return Reply(reply, status=202)

    reply = commit_if_unchanged(plan)
    logs.bind(evaluation=str(reply.body["seq"]))
    return reply


def _session_token(
    batch: firestore.WriteBatch, call: Call, org_id: str, agent_id: str, session_id: str
) -> str:
    """A `session_audience` token for this session alone, created with the batch."""
    token, token_id, token_document = auth.token_document(
        user_id=call.principal.user_id,
        credential_class=auth.CredentialClass.SESSION_AUDIENCE,
        capabilities=["agent:connect"],
        tenants=[org_id],
        expires_in=timedelta(hours=settings().agentconnect_session_token_hours),
        audience={"org_id": org_id, "agent_id": agent_id, "session_id": session_id},
    )
    batch.create(db().collection("tokens").document(token_id), writable(token_document))
    return token


def _started_again(
    earlier: AgentSession, agent: Agent, names: tuple[str, str, str], token: str
) -> Reply:
    """The first start's answer again, its instructions version read back when the agent
    has moved on since (one more read)."""
    org_id, agent_id, session_id = names
    version = earlier.get("instructions_version")
    current = agent.get("instructions")
    instructions: ServedInstructions | None = None
    if version is not None and current is not None and current["version"] == version:
        instructions = served(current)
    elif version is not None:
        kept = read_as(instructions_ref(org_id, agent_id, version), StoredInstructions)
        instructions = served(kept)
    reply = {
        "sessionId": session_id,
        "seq": earlier["seq"],
        "sessionToken": token,
        "trials": trials_served(earlier, agent),
        "instructions": instructions,
        "registeredBefore": True,
    }
    return Reply(reply, status=202)


def put_outcome_source(call: Call) -> Reply:
    """Link the agent to where its sessions are logged. The caller must be able to view
    that project now (and a token that selects tenants must select it); a report checks
    the link's author again on every read."""
    params, body = call.params_as(AgentParams), call.body_as(OutcomeSourceRequest)
    project_id = body["projectId"]
    principal = call.principal
    if principal.tenants is not None and project_id not in principal.tenants:
        raise ApiError(ErrorCode.FORBIDDEN, "The token is not selected for this project.")
    auth.check_membership(db(), principal, kind="project", tenant_id=project_id, role="viewer")
    source: OutcomeSource = {
        "project_id": project_id,
        "agent": body["agent"],
        "created_by": principal.user_id,
        "created_at": utcnow(),
    }
    store.agent_ref(params["orgId"], params["id"]).set(
        {"outcome_source": writable(source)}, merge=True
    )
    return Reply(outcome_source_view(params["orgId"], params["id"], source, author_can_view=True))


def _linked(params: AgentParams) -> OutcomeSource:
    agent = read_as(store.agent_ref(params["orgId"], params["id"]), Agent) or {}
    source = agent.get("outcome_source")
    if source is None:
        raise not_found("The agent's outcome source")
    return source


def get_outcome_source(call: Call) -> Reply:
    params = call.params_as(AgentParams)
    source = _linked(params)
    return Reply(
        outcome_source_view(
            params["orgId"], params["id"], source, author_can_view=author_can_view(source)
        )
    )


def delete_outcome_source(call: Call) -> Reply:
    """Unlink: sessions started from now on are not recorded; records made stay in the
    project until they expire. Answers the link as it was."""
    params = call.params_as(AgentParams)
    source = _linked(params)
    store.agent_ref(params["orgId"], params["id"]).update(
        {"outcome_source": firestore.DELETE_FIELD}
    )
    view = outcome_source_view(
        params["orgId"], params["id"], source, author_can_view=author_can_view(source)
    )
    return Reply(view)


def _own_session_only(call: Call, session_id: str) -> None:
    audience = call.principal.audience
    if audience is not None and audience.get("session_id") != session_id:
        raise not_found("The evaluation")


def get_evaluation(call: Call) -> Reply:
    params = call.params_as(EvaluationParams)
    org_id, agent_id, seq = params["orgId"], params["id"], params["seq"]
    summary_ref = store.evaluation_ref(org_id, agent_id, seq)
    details_ref = store.details_ref(org_id, agent_id, seq)
    snapshots = read_all([summary_ref, details_ref])
    stored = data_as(snapshots[summary_ref.path], Summary)
    if stored is None:
        raise not_found("The evaluation")
    _own_session_only(call, stored["sessionId"])
    if stored["status"] != EvaluationStatus.FROZEN:
        pending = as_stored(stored, PendingEvaluation)
        if stuck(pending):
            return Reply(evaluation_view(stuck_summary(pending), None))
        raise ApiError(
            ErrorCode.CONFLICT,
            f"Evaluation {seq} is not frozen yet; retry after {NOT_READY_RETRY_S} s.",
            headers={"Retry-After": NOT_READY_RETRY_S},
        )
    details = data_as(snapshots[details_ref.path], Details)
    now = utcnow()
    decided_under = _decided_under(org_id, agent_id, stored, details, now)
    return Reply(evaluation_view(stored, details, decided_under, now))


def _decided_under(
    org_id: str, agent_id: str, summary: Summary, details: Details | None, now: datetime
) -> Selection | None:
    """The selection version shown details were decided under (immutable and kept, so
    read rather than copied into each evaluation); None when no details are shown."""
    if details is None or not details_shown(summary, details, now):
        return None
    ref = store.selection_ref(org_id, agent_id, details["selection_version"])
    return _versions().selection(ref)


VERSIONS_KEPT = 512
"""Selection versions one instance keeps after reading them: each is at most 1 MiB."""


@dataclass
class _Versions:
    """Selection versions this instance has read. A version is never changed once
    written, so a kept one is what Firestore holds: a warm evaluation read reads none."""

    kept: LRUCache[str, Selection] = field(default_factory=lambda: LRUCache(VERSIONS_KEPT))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def selection(self, ref: firestore.DocumentReference) -> Selection | None:
        with self.lock:
            found = self.kept.get(ref.path)
        if found is not None:
            return found
        version = read_as(ref, StoredSelection)
        if version is None:
            return None
        with self.lock:
            self.kept[ref.path] = version["selection"]
        return version["selection"]


def _no_versions(_owner: Instance) -> _Versions:
    return _Versions()


def _versions() -> _Versions:
    return instance().get(_no_versions)


def list_evaluations(call: Call) -> Reply:
    params = call.params_as(EvaluationsParams)
    org_id, agent_id = params["orgId"], params["id"]
    limit = params.get("limit", 20)
    query = (
        store.evaluations(org_id, agent_id)
        .where(filter=FieldFilter("status", "==", EvaluationStatus.FROZEN))
        .order_by("seq", direction=firestore.Query.DESCENDING)
    )
    if "pageToken" in params:
        query = query.start_after({"seq": int(params["pageToken"])})
    found = list(stream_as(query.limit(limit + 1), Summary).values())
    page = found[:limit]
    titles = _titles(org_id, agent_id, [summary["seq"] for summary in page])
    return Reply(
        {
            "evaluations": [
                evaluation_view(summary, None, title=titles.get(summary["seq"])) for summary in page
            ],
            "nextPageToken": str(page[-1]["seq"]) if len(found) > limit else None,
        }
    )


def _titles(org_id: str, agent_id: str, seqs: list[int]) -> dict[int, str]:
    """The session titles of these evaluations while their details are retained (titles
    are user text, kept only as long as the details), in one batched read."""
    refs = [store.details_ref(org_id, agent_id, seq) for seq in seqs]
    now = utcnow()
    found = read_all(refs).values() if refs else []
    return {
        int(snapshot.id): details["title"]
        for snapshot in found
        if (details := data_as(snapshot, Details)) is not None
        and details.get("title") is not None
        and not is_expired(details, now)
    }


def sweep(request_id: str) -> Reply:
    """Freeze evaluations stuck past their lease or queue deadline with their fallback
    (Cloud Scheduler's job)."""
    ended = jobs.sweep(LIFECYCLE, jobs.SWEEP_BATCH)
    logs.info("Sweep froze stuck evaluations", request_id=request_id, ended=len(ended))
    return Reply({"ended": len(ended), "evaluations": ended})
