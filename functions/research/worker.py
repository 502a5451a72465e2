"""The research run worker: claim once, ask Gemini, check, and settle in one transaction.

At-least-once delivery is safe: the claim moves a run `queued` → `processing` in a
transaction, so a second delivery finds it claimed and does nothing. A run whose worker
died is settled by the next delivery once its lease has passed (and reads already show
it failed). Nothing here writes into the run's path from a create event of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.cloud import firestore

from functions.research import lifecycle, store, support
from functions.research.checks import (
    gemini_answer_schema,
    issues_for_answer,
    parse_answer,
    quote_refusals,
    rejections,
    split_quotes,
)
from functions.research.citations import cited_ids
from functions.research.documents import (
    Answer,
    Citation,
    Conversation,
    Evidence,
    FailureCode,
    Message,
    Rejection,
    Run,
    RunStatus,
)
from functions.research.grants import asker_grant
from functions.research.prompts import Prompt, build_prompt, repair_prompt
from functions.research.quotes import Cited, locate
from shared import jobs
from shared.clients import db
from shared.gemini import NO_USAGE, GeminiError, Output, Usage, estimate_tokens, generate_json
from shared.ids import new_uuid
from shared.instance import settings
from shared.jobs import Claim, Job, Settled, Snapshots
from shared.retention import is_expired, utcnow
from shared.store import Changes, as_stored, data_as, read_all, read_as, stream_as
from shared.validation import Schema

ANSWER, SUPPORT_CHECK = "answer", "support_check"


@dataclass
class RunWork:
    answer: Answer | None = None
    failure: str | None = None
    usage: Usage = NO_USAGE
    model_version: str | None = None
    """The version of the model whose answer the run holds (the support check's is apart)."""
    checked_by: str | None = None
    """The version of the model that made the support check, when one was asked."""
    asking: str = ANSWER
    rejected: list[Rejection] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    quote_repairs: int = 0

    def summary(self, workspace_id: str) -> dict[str, object]:
        """What the settled run's log line says beside its status."""
        return {
            "cause": self.rejected[0]["reason"] if self.rejected else None,
            "workspace_id": workspace_id,
            **self.usage.stored(),
            "model_version": self.model_version,
            "support_check_model_version": self.checked_by,
            "rejected": len(self.rejected),
            "quote_repairs": self.quote_repairs,
        }


def claim(params: Mapping[str, str]) -> tuple[Claim, RunWork] | None:
    """Move a queued run to processing; None when there is nothing (more) to do."""
    workspace_id = params["workspaceId"]
    run_ref = store.run_ref(workspace_id, params["runId"])

    def start(transaction: firestore.Transaction, job: Job) -> Changes | None:
        run = as_stored(job, Run)
        if is_expired(run):
            lifecycle.end(transaction, run_ref, run, {})
            return None
        conversation_ref = store.conversation_ref(workspace_id, run["conversation_id"])
        conversation = read_as(conversation_ref, Conversation, transaction)
        if conversation is None or is_expired(conversation):
            lifecycle.fail(transaction, run_ref, run, FailureCode.SOURCE_UNAVAILABLE)
            return None
        return {
            "conversation_revision": conversation["revision"],
            "model_id": settings().research_model,
        }

    claimed = jobs.claim(run_ref, lifecycle.LIFECYCLE, start)
    return (claimed, RunWork()) if claimed is not None else None


def _preflight(run: Run) -> str | None:
    """Why the run cannot start (access, budget), read in one round trip; None when it can.
    A run that can start gives each usage shard a ceiling first, if one has none, so that
    its tokens count under it."""
    client = db()
    grant = asker_grant(run)
    spend = store.spend(run["workspace_id"])
    ceilings = spend.ceilings()
    snapshots = read_all([*grant.refs(client), *spend.shards(), ceilings])
    if not grant.holds(snapshots, client):
        return FailureCode.ACCESS_CHANGED
    budget = settings().research_workspace_token_budget
    if spend.used(snapshots) >= budget:
        return FailureCode.BUDGET_EXHAUSTED
    spend.keep_ceilings(snapshots[ceilings.path], budget)
    return None


def _evidence(run: Run) -> dict[str, Evidence]:
    collection = store.evidence_collection(run["workspace_id"], run["conversation_id"])
    return stream_as(collection, Evidence)


def produce(claimed: Claim, outcome: RunWork) -> RunWork:
    """Fill `outcome` as the run goes, so that a fault after Gemini answered still
    settles with the tokens it spent."""
    run = as_stored(claimed.job, Run)
    config = settings()
    if not config.gemini_configured:
        outcome.failure = FailureCode.NOT_CONFIGURED
        return outcome
    outcome.failure = _preflight(run)
    if outcome.failure:
        return outcome
    evidence = _evidence(run)
    if not evidence:
        outcome.failure = FailureCode.SOURCE_UNAVAILABLE
        return outcome
    prompt = build_prompt(run["request_kind"], run.get("question"), evidence)
    if estimate_tokens(prompt.system + prompt.text) > config.research_input_token_budget:
        outcome.failure = FailureCode.INPUT_TOO_LARGE
        return outcome
    started = time.monotonic()
    checked = _answered(prompt, run, claimed, outcome)
    if checked.mendable and _time_for_another(claimed, time.monotonic() - started):
        outcome.quote_repairs = 1
        refused = [(r["path"], r["reason"]) for r in checked.rejected]
        checked = _answered(repair_prompt(prompt, refused), run, claimed, outcome)
    outcome.answer, outcome.rejected, outcome.citations = (
        checked.answer,
        checked.rejected,
        checked.citations,
    )
    if outcome.rejected:
        outcome.failure = FailureCode.INVALID_OUTPUT
    return outcome


def _answered(prompt: Prompt, run: Run, claimed: Claim, outcome: RunWork) -> Checked:
    """The model's answer to the prompt, checked; with the support check on, an answer
    whose quotes all stand is also held to what they say."""
    data = _asked(ANSWER, prompt.system, prompt.text, gemini_answer_schema(), claimed, outcome)
    checked = _checked(data, run, prompt)
    if checked.answer is None or not settings().research_support_check:
        return checked
    text = support.prompt(checked.answer, checked.citations)
    verdicts = _asked(SUPPORT_CHECK, support.SYSTEM, text, support.SCHEMA, claimed, outcome)
    refused = support.unsupported(verdicts, checked.citations)
    if refused:
        return Checked(None, refused, [])
    supported: list[Citation] = [{**c, "supported": True} for c in checked.citations]
    return Checked(checked.answer, [], supported)


def _asked(
    step: str, system: str, text: str, schema: Schema, claimed: Claim, outcome: RunWork
) -> Any:
    """Gemini's answer, its tokens added to the run's and its model named for its step."""
    config = settings()
    outcome.asking = step
    reply = generate_json(
        model=config.research_model,
        system=system,
        prompt=text,
        schema=schema,
        output=Output(config.research_output_token_limit, config.research_thinking_tokens),
        deadline=claimed.deadline,
    )
    outcome.usage = outcome.usage + reply.usage
    _name_model(outcome, reply.model_version)
    return reply.data


def _name_model(outcome: RunWork, version: str | None) -> None:
    """Name the model that made the step being asked; a support check never renames the
    model that made the answer."""
    if outcome.asking == SUPPORT_CHECK:
        outcome.checked_by = version
    else:
        outcome.model_version = version


@dataclass(frozen=True)
class Checked:
    answer: Answer | None
    rejected: list[Rejection]
    citations: list[Citation]

    @property
    def mendable(self) -> bool:
        """Refused for its quotes alone (not found, or not supporting their statement):
        what one more answer may mend."""
        return bool(self.rejected) and all(
            r["path"].endswith((".quote", ".supported")) for r in self.rejected
        )


def _checked(data: Any, run: Run, prompt: Prompt) -> Checked:
    """The answer held to the contract's schema, the evidence shown and its own quotes."""
    answer_data, cited = split_quotes(data)
    rejected = issues_for_answer(answer_data)
    if rejected:
        return Checked(None, rejected, [])
    answer = parse_answer(answer_data)
    rejected = rejections(answer, run["request_kind"], prompt.cited_revisions)
    rejected = rejected or quote_refusals(cited, prompt.texts)
    if rejected:
        return Checked(None, rejected, [])
    return Checked(answer, [], [_citation(each, prompt.texts) for each in cited])


def _citation(cited: Cited, texts: dict[str, str]) -> Citation:
    found = locate(cited.quote, texts[cited.evidence_id])
    if found is None:
        raise ValueError(f"{cited.path}: a checked quote is not in its item")
    return {
        "path": cited.path,
        "evidence_id": cited.evidence_id,
        "revision": cited.revision,
        "quote": texts[cited.evidence_id][found.start : found.end],
        "start": found.start,
        "end": found.end,
        "supported": None,
    }


def _time_for_another(claimed: Claim, first_call_s: float) -> bool:
    """Whether one more call as long as the first fits before the claim's deadline."""
    left = (claimed.deadline - utcnow()).total_seconds()
    return left > first_call_s


def _settlement(
    run: Run,
    snapshots: dict[str, firestore.DocumentSnapshot[Any]],
    cited: list[firestore.DocumentReference],
    conversation_path: str,
) -> str | None:
    """The failure code that must replace a good answer at completion, if any."""
    client = db()
    if not asker_grant(run).holds(snapshots, client):
        return FailureCode.ACCESS_CHANGED
    if any(not snapshots[ref.path].exists for ref in cited):
        return FailureCode.SOURCE_UNAVAILABLE
    conversation = data_as(snapshots[conversation_path], Conversation)
    if conversation is None or conversation["revision"] != run["conversation_revision"]:
        return FailureCode.CONTEXT_CHANGED
    return None


def finish(claimed: Claim, outcome: RunWork) -> Settled:
    """Write the result or failure in one transaction; the run's tokens are counted on
    the workspace whatever state the run is in."""
    client = db()
    run = as_stored(claimed.job, Run)
    workspace_id, run_id = run["workspace_id"], claimed.ref.id
    conversation_ref = store.conversation_ref(workspace_id, run["conversation_id"])
    cited_evidence = sorted(cited_ids(outcome.answer)) if outcome.answer else []
    cited = [store.evidence_ref(workspace_id, run["conversation_id"], e) for e in cited_evidence]
    grant_refs = asker_grant(run).refs(client) if outcome.answer else []
    usage: Changes = {"usage": outcome.usage.stored()}
    tokens = outcome.usage.total
    spend = store.spend(workspace_id)
    counted = spend.ceiling_refs(run_id) if tokens else []

    def write(transaction: firestore.Transaction, current: Job, snapshots: Snapshots) -> str:
        store.release_own_slot(transaction, workspace_id, run)
        common: Changes = {
            **usage,
            "model_version": outcome.model_version,
            "support_check_model_version": outcome.checked_by,
            "rejected": outcome.rejected,
            "quote_repairs": outcome.quote_repairs,
        }
        failure = FailureCode.EXPIRED if is_expired(current) else outcome.failure
        if failure is None:
            failure = _settlement(run, snapshots, cited, conversation_ref.path)
        answer = outcome.answer
        if failure is not None or answer is None:
            transaction.update(
                claimed.ref,
                {**common, **jobs.failure_changes(failure or FailureCode.GENERATION_UNCONFIRMED)},
            )
            return RunStatus.FAILED
        message: Message = {
            "id": new_uuid(),
            "run_id": run_id,
            "question": run["question"],
            "answer": answer,
            "created_at": utcnow(),
        }
        transaction.update(
            claimed.ref,
            {
                **common,
                "status": RunStatus.COMPLETED,
                "lease_until": None,
                "finished_at": utcnow(),
                "message": message,
                "citations": outcome.citations,
            },
        )
        return RunStatus.COMPLETED

    def count_tokens(transaction: firestore.Transaction, read: Snapshots) -> None:
        budget = settings().research_workspace_token_budget
        spend.count_under_ceiling(transaction, read, run_id, tokens, budget)

    refs = [conversation_ref, *grant_refs, *cited, *counted]
    return jobs.settle(claimed, write, usage, refs, always_reading=count_tokens)


def failed(_claimed: Claim, outcome: RunWork, code: str, error: GeminiError | None) -> RunWork:
    outcome.failure, outcome.answer = code, None
    if error is not None:
        outcome.usage = outcome.usage + error.usage
        _name_model(outcome, error.model_version)
    outcome.rejected = [{"path": "$", "reason": jobs.cause_of(error)}]
    return outcome


def log(claimed: Claim, outcome: RunWork, settled: Settled) -> None:
    summary = outcome.summary(claimed.job["workspace_id"])
    jobs.log_settled("Run settled", settled.status, outcome.failure, **summary)


WORKER = jobs.Worker("Run", claim, produce, failed, finish, log)
