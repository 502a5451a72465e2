"""The evaluation worker: walk the selection chain with Gemini and freeze the decision.

Triggered by the creation of `orgs/{o}/agents/{a}/agent_sessions/{s}`. The claim moves the
session's evaluation `pending` → `evaluating` in a transaction (a duplicate delivery
finds it claimed); the freeze writes the summary and the details in one transaction,
only if this worker's claim still stands, and nothing changes the evaluation afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from google.cloud import firestore

from functions.agentconnect import store
from functions.agentconnect.checks import answer_schema, checked_answer
from functions.agentconnect.documents import (
    AgentSession,
    Answer,
    ChainLink,
    Clipped,
    Condition,
    Details,
    Drawn,
    EvaluationStatus,
    FullAnswer,
    Outcome,
    PendingEvaluation,
    Selection,
    StepRecord,
    StepStatus,
    StoredSelection,
    Summary,
    Target,
    TokenCounts,
)
from functions.agentconnect.lifecycle import LIFECYCLE, fallback_summary
from functions.agentconnect.outcomes import UNDRAWN, Chosen, recorded
from functions.agentconnect.probability import value_probability
from functions.agentconnect.prompts import SYSTEM, build_prompt
from functions.agentconnect.selection import (
    DEFAULT_ROUTE,
    EXPLORED_ROUTE,
    FALLBACK_ROUTE,
    Step,
    answer_key,
    drawn,
    explores,
    held_rule,
    route_of,
    steps_of,
    target_key,
    target_of,
)
from functions.loop import outcomes as outcome_records
from functions.loop.outcomes import Merge
from shared import jobs, logs
from shared.budgets import clip_utf8
from shared.codes import ProviderFailure
from shared.gemini import (
    GeminiError,
    Output,
    Usage,
    generate_json,
)
from shared.instance import settings
from shared.jobs import Claim, Job, JobGoneError, Settled, Snapshots
from shared.jsonbody import JsonObject
from shared.retention import utcnow
from shared.store import as_stored, read_as, writable

PROVIDER_ID = "google-gemini"


@dataclass
class StepResult:
    step: Step
    status: str
    answer: Answer | None
    model: str
    usage: Usage
    latency_ms: float
    raw_request: str
    raw_response: str
    detail: str = ""
    probability_source: str | None = None
    condition: Condition | None = None


@dataclass(frozen=True)
class Evaluating:
    """The session a claimed evaluation decides for, read before the claim (it names the
    evaluation's `seq`)."""

    session_id: str
    session: AgentSession


def recorded_by(
    claimed: Claim, evaluating: Evaluating, summary: Summary, decision: ChainDecision | None
) -> Merge | None:
    """The choice's outcome record merge; a failed evaluation (no decision) records its
    fallback."""
    chosen = Chosen()
    if decision is not None:
        answers = {r.step.step_id: r.answer for r in decision.asked() if r.answer}
        chosen = Chosen(decision.route, answers, decision.drawable)
    agent = claimed.ref.parent.parent
    return recorded(agent, evaluating.session_id, evaluating.session, summary, chosen)


@dataclass(frozen=True)
class Frozen:
    """What the worker stores: the summary, and the details when there are any."""

    outcome: Outcome
    steps: int
    summary: Summary
    details: Details | None
    record: Merge | None = None
    """The choice, for the outcome record the session's link names."""


@dataclass
class ChainDecision:
    outcome: Outcome
    reason: str
    target: Target
    deciding: StepResult | None
    results: list[StepResult] = field(default_factory=list)
    """The steps walked, through the deciding one: what the details show."""
    route: str = DEFAULT_ROUTE
    extra: list[StepResult] = field(default_factory=list)
    """Steps asked after the deciding one (an exploring session asks every step): kept in
    the outcome record and counted in the usage, not shown as the decision's."""

    drawable: list[str] = field(default_factory=list)
    """The target keys an exploring session's target was drawn among."""

    def asked(self) -> list[StepResult]:
        return [*self.results, *self.extra]


def clip(text: str) -> Clipped:
    """A raw text as stored: byte for byte as sent or received, cut to
    `AGENTCONNECT_RAW_TEXT_LIMIT` UTF-8 bytes, so that the evaluation's details (two texts
    a step) stay within a document."""
    clipped, truncated = clip_utf8(text, settings().agentconnect_raw_text_limit)
    return {"text": clipped, "truncated": truncated}


def ask(step: Step, title: str, session_input: JsonObject, deadline: datetime) -> StepResult:
    config = settings()
    prompt = build_prompt(step, title, session_input)
    schema = answer_schema(step.question)
    started = time.perf_counter()
    try:
        reply = generate_json(
            model=config.agentconnect_model,
            system=SYSTEM,
            prompt=prompt,
            schema=schema,
            output=Output(
                config.agentconnect_output_token_limit,
                config.agentconnect_thinking_tokens,
                least_thinking=True,
            ),
            logprobs=True,
            deadline=deadline,
        )
    except GeminiError as error:
        elapsed = (time.perf_counter() - started) * 1000
        status = (
            StepStatus.INVALID
            if error.kind == ProviderFailure.INVALID_OUTPUT
            else StepStatus.FAILED
        )
        return StepResult(
            step,
            status,
            None,
            error.model_version or config.agentconnect_model,
            error.usage,
            elapsed,
            error.wire.request,
            error.wire.response or error.detail,
            detail=error.detail,
        )
    elapsed = (time.perf_counter() - started) * 1000
    model = reply.model_version or config.agentconnect_model
    answer = checked_answer(step.question, reply.data)
    if answer is None:
        return StepResult(
            step,
            StepStatus.INVALID,
            None,
            model,
            reply.usage,
            elapsed,
            reply.wire.request,
            reply.wire.response,
            detail=f"answered {reply.text[:200]!r}",
        )
    measured = value_probability(reply.text, reply.logprobs)
    source = "model_estimate"
    if measured is not None:
        answer["probability"], source = measured, "logprobs"
    return StepResult(
        step,
        StepStatus.ANSWERED,
        answer,
        model,
        reply.usage,
        elapsed,
        reply.wire.request,
        reply.wire.response,
        probability_source=source,
    )


def decide(
    selection: Selection,
    title: str,
    session_input: JsonObject,
    deadline: datetime,
    ask_all: bool = False,
) -> ChainDecision:
    """Walk the chain until a rule holds (or a step fails); with `ask_all`, go on asking
    the steps after the deciding one, for the outcome record alone."""
    default = selection["default"]
    results: list[StepResult] = []
    decided: ChainDecision | None = None
    for step in steps_of(selection):
        if decided is not None and not ask_all:
            break
        result = ask(step, title, session_input, deadline)
        if decided is not None:
            decided.extra.append(result)
            continue
        results.append(result)
        if result.answer is None:
            why = (
                f"failed ({result.detail})"
                if result.status == StepStatus.FAILED
                else "answered outside the question's options (its answer is in the step's "
                "rawResponse)"
            )
            reason = f"step {step.step_id} {why}; fell back to the default target"
            return ChainDecision(
                Outcome.FALLBACK, reason, default.copy(), result, results, FALLBACK_ROUTE
            )
        held = held_rule(step, result.answer)
        if held is not None:
            index, rule = held
            result.condition = rule["when"]
            key = answer_key(result.answer)
            reason = (
                f"rule {index} of step {step.step_id} (decision {step.decision_id}) held: "
                f"{key} with probability {result.answer['probability']:.4f} "
                f">= {rule['when']['thresholds'][key]}"
            )
            route = route_of(step, index, result.answer)
            decided = ChainDecision(
                Outcome.SELECTED, reason, target_of(rule, default), result, results, route
            )
    if decided is not None:
        return decided
    reason = f"no rule held at any of the {len(results)} steps; the default target applies"
    return ChainDecision(
        Outcome.DEFAULTED, reason, default.copy(), results[-1], results, DEFAULT_ROUTE
    )


def explore(selection: Selection, session_id: str, decision: ChainDecision) -> Drawn:
    """Apply the selection's exploration to a decision the rules made: in an exploring
    session the target is drawn among the candidates and the reason says so. A fallback
    is never explored (the rules made no choice)."""
    share = selection.get("exploration", {}).get("share", 0.0)
    if decision.outcome == Outcome.FALLBACK:
        return {**UNDRAWN, "share": share}
    explored = explores(selection, session_id)
    draw = drawn(selection, session_id, decision.target, explored)
    if explored:
        ceiling = decision.target["permissionMode"]
        kept = target_key(draw.target) == target_key(decision.target)
        decision.reason = (
            f"explored (share {share:g}): the target was drawn at random among the "
            f"{len(draw.candidates)} targets whose permissionMode does not exceed {ceiling}"
            f"{', and the draw gave the rules own choice' if kept else ''}; "
            f"the rules said: {decision.reason}"
        )
        decision.target = draw.target
        decision.route = EXPLORED_ROUTE
        decision.drawable = draw.candidates
    return {
        "explored": explored,
        "share": share,
        "propensity": draw.propensity,
        "candidates": len(draw.candidates),
    }


def _usage(usage: Usage) -> TokenCounts:
    return {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens}


def records(
    seq: int,
    session_id: str,
    session: AgentSession,
    selection: Selection,
    decision: ChainDecision,
    draw: Drawn,
) -> tuple[Summary, Details]:
    """The summary (kept, with how its target was drawn) and the details (expiring) of a
    decision."""
    now = utcnow()
    details_expire = now + timedelta(hours=settings().agentconnect_details_retention_hours)
    deciding = decision.deciding
    total = Usage(
        sum(r.usage.input_tokens for r in decision.asked()),
        sum(r.usage.output_tokens for r in decision.asked()),
    )
    answered = deciding is not None and deciding.answer is not None
    summary: Summary = {
        "seq": seq,
        "at": now,
        "sessionId": session_id,
        "decisionId": deciding.step.decision_id
        if deciding
        else selection["decision"]["decisionId"],
        "outcome": decision.outcome,
        "reason": decision.reason,
        "target": decision.target,
        "answer": deciding.answer.copy() if deciding and deciding.answer else None,
        "requestedModel": settings().agentconnect_model,
        "actualModel": deciding.model if answered and deciding else None,
        "latencyMs": round(sum(r.latency_ms for r in decision.asked()), 3),
        "usage": _usage(total),
        "status": EvaluationStatus.FROZEN,
        "details_expires_at": details_expire,
        "drawn": draw,
    }
    if "instructions_version" in session:
        summary["instructions_version"] = session["instructions_version"]
    full_answer: FullAnswer | None = None
    if deciding is not None and deciding.answer is not None:
        full_answer = {**deciding.answer, "probabilitySource": deciding.probability_source}
    details: Details = {
        "selection_version": session["selection_version"],
        "title": session["title"],
        "input": session["input"],
        "fullAnswer": full_answer,
        "chain": [_link(r) for r in decision.results],
        "steps": [_step_record(r) for r in decision.results],
        "expires_at": details_expire,
    }
    return summary, details


def _link(result: StepResult) -> ChainLink:
    return {
        "stepId": result.step.step_id,
        "decisionId": result.step.decision_id,
        "evaluation": {
            "status": result.status,
            "answer": result.answer,
            "model": result.model,
            "usage": _usage(result.usage),
        },
    }


def _step_record(result: StepResult) -> StepRecord:
    return {
        "stepId": result.step.step_id,
        "decisionId": result.step.decision_id,
        "providerId": PROVIDER_ID,
        "model": settings().agentconnect_model,
        "condition": result.condition,
        "rawRequest": clip(result.raw_request),
        "rawResponse": clip(result.raw_response),
    }


def freeze(claimed: Claim, frozen: Frozen) -> Settled:
    """Store the decision while the claim holds; a claim that lost its lease stores the
    fallback that reads were already showing, with this decision's token usage."""
    seq = claimed.job["seq"]
    details_ref = claimed.ref.parent.parent.collection("evaluation_details").document(str(seq))

    def write(transaction: firestore.Transaction, _current: Job, _snapshots: Snapshots) -> str:
        transaction.set(claimed.ref, writable(frozen.summary))
        if frozen.details is not None:
            transaction.set(details_ref, writable(frozen.details))
        if frozen.record is not None:
            outcome_records.merge(transaction, frozen.record)
        return EvaluationStatus.FROZEN

    def count_tokens(transaction: firestore.Transaction) -> None:
        usage = frozen.summary["usage"]
        tokens = usage["inputTokens"] + usage["outputTokens"]
        store.spend_of(claimed.ref).count(transaction, claimed.ref.path, tokens)

    return jobs.settle(claimed, write, {"usage": frozen.summary["usage"]}, always=count_tokens)


def _evaluate(claimed: Claim, evaluating: Evaluating) -> Frozen:
    agent = claimed.ref.parent.parent
    session = evaluating.session
    version = agent.collection("selections").document(str(session["selection_version"]))
    stored = read_as(version, StoredSelection)
    if stored is None:
        raise LookupError(f"selection version {session['selection_version']} is gone")
    selection = stored["selection"]
    exploring = explores(selection, evaluating.session_id)
    decision = decide(
        selection, session["title"], session["input"], claimed.deadline, ask_all=exploring
    )
    draw = explore(selection, evaluating.session_id, decision)
    summary, details = records(
        claimed.job["seq"], evaluating.session_id, session, selection, decision, draw
    )
    record = recorded_by(claimed, evaluating, summary, decision)
    return Frozen(decision.outcome, len(decision.results), summary, details, record)


def claim(params: Mapping[str, str]) -> tuple[Claim, Evaluating] | None:
    """Claim the pending evaluation of the session created; the session names its `seq`."""
    org_id, agent_id, session_id = params["orgId"], params["agentId"], params["sessionId"]
    session_ref = store.session_ref(org_id, agent_id, session_id)
    session = read_as(session_ref, AgentSession)
    if session is None:
        raise JobGoneError(session_ref.path)
    claimed = jobs.claim(store.evaluation_ref(org_id, agent_id, session["seq"]), LIFECYCLE)
    return (claimed, Evaluating(session_id, session)) if claimed is not None else None


def failed(claimed: Claim, evaluating: Evaluating, code: str, error: GeminiError | None) -> Frozen:
    cause = jobs.cause_of(error)
    reason = f"the evaluation failed ({code}: {cause}); fell back to the default target"
    pending = as_stored(claimed.job, PendingEvaluation)
    summary = fallback_summary(pending, reason)
    record = recorded_by(claimed, evaluating, summary, None)
    return Frozen(Outcome.FALLBACK, 0, summary, None, record)


def log(claimed: Claim, frozen: Frozen, settled: Settled) -> None:
    logs.log(
        logs.WARNING if frozen.outcome == Outcome.FALLBACK else logs.INFO,
        "Evaluation frozen" if settled.stored else "Evaluation superseded",
        seq=claimed.job["seq"],
        agent_id=claimed.ref.parent.parent.id,
        outcome=frozen.outcome,
        steps=frozen.steps,
        reason=frozen.summary["reason"],
        **frozen.summary["usage"],
    )


WORKER = jobs.Worker("Evaluation", claim, _evaluate, failed, freeze, log)
