"""The analysis worker: claim once, read the log, ground, ask Gemini, check, store.

Triggered by the creation of `projects/{p}/analyses/{a}`. The claim moves the analysis
`queued` → `processing` in a transaction, so a duplicated delivery does nothing; the
hypotheses and the final status are written in one transaction that first checks the
analysis is still this worker's.

An end's analysis also leaves the session's summary (`projects/{p}/summaries/{s}`): an
abnormal end's from the analysis's own call that sees the whole log, a normal end's from
a call of its own to the summary model over the log's compact view. A session left out
(over budget, an empty log, a failed call) is stored as not summarised, with the reason.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from google.cloud import firestore

from functions.loop import outcomes as outcome_records
from functions.loop.documents import Outcome, Spent
from functions.psychologist import store
from functions.psychologist.checks import (
    CheckedSummary,
    SessionFacts,
    checked_summary,
    output_issues,
    reasons_to_reject,
)
from functions.psychologist.documents import (
    NO_BATCH,
    Analysis,
    AnalysisFailure,
    AnalysisStatus,
    AnalysisTrigger,
    BatchRecord,
    Event,
    EventChunk,
    Finding,
    Hypothesis,
    HypothesisStatus,
    ModelCallRecord,
    ModelOutput,
    NotSummarised,
    Rejected,
    Session,
    SessionState,
    Signal,
    Summary,
    SummaryFinding,
    SummarySource,
    SummaryStatus,
)
from functions.psychologist.lifecycle import LIFECYCLE
from functions.psychologist.prompts import (
    SUMMARY_PHASE,
    InputTooLargeError,
    ModelCall,
    analysis_calls,
    combine_call,
    compact_view,
    session_agent,
    summary_call,
)
from functions.psychologist.signals import (
    every_signal,
    find_signals,
    kinds_by_event,
    signal_counts,
    tool_errors,
)
from functions.psychologist.telemetry.ingestion import latest_versions
from functions.psychologist.views import usage_view
from shared import jobs, logs
from shared.answers import parse_strictly
from shared.budgets import clip_utf8, stored_size
from shared.gemini import (
    GeminiError,
    JsonAnswer,
    Output,
    Usage,
    batch_unavailable,
    generate_json,
    model_schema,
    submit_batch,
)
from shared.ids import new_ulid
from shared.instance import settings
from shared.jobs import Claim, Job, Settled, Snapshots
from shared.retention import is_expired, parse_instant, utcnow
from shared.spend import TokenUsage
from shared.store import Changes, as_stored, data_as, read_all, read_as, stream_as, writable
from shared.validation import Schema, inlined, load_schema

REJECTION_BYTES = 16 * 1024
"""The most one stored rejection's proposal occupies; a larger one keeps its start."""
REJECTED_BYTES = 256 * 1024
"""The most the stored rejections of one analysis occupy, within its document's 1 MiB
(signals, calls and the rest stay far below the remainder)."""
REASONS_KEPT = 20
COPIED_EVENT_BYTES = 256 * 1024


def stored_rejections(rejected: list[Rejected]) -> list[Rejected]:
    """The rejections as stored: each proposal within `REJECTION_BYTES`, and the list
    cut where it would pass `REJECTED_BYTES` (`counts.rejected` still counts them all)."""
    kept: list[Rejected] = []
    used = 0
    for rejection in rejected:
        stored = _within_bytes(rejection)
        size = stored_size(stored)
        if used + size > REJECTED_BYTES:
            break
        kept.append(stored)
        used += size
    return kept


def _within_bytes(rejection: Rejected) -> Rejected:
    proposal = rejection["hypothesis"]
    if stored_size(proposal) > REJECTION_BYTES:
        text, _ = clip_utf8(json.dumps(proposal, ensure_ascii=False), REJECTION_BYTES)
        proposal = {"clipped": text, "truncated": True}
    reasons = [clip_utf8(reason, 1_000)[0] for reason in rejection["reasons"][:REASONS_KEPT]]
    return {"phase": rejection["phase"], "hypothesis": proposal, "reasons": reasons}


class AnalysisFailedError(Exception):
    def __init__(self, code: str, cause: str) -> None:
        super().__init__(code)
        self.code, self.cause = code, cause


@dataclass
class AnalysisWork:
    signals: list[Signal] = field(default_factory=list)
    event_count: int = 0
    tool_error_count: int = 0
    chunk_count: int = 0
    calls: list[ModelCallRecord] = field(default_factory=list)
    accepted: list[Finding] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    failure: str | None = None
    cause: str | None = None
    """Why it failed, in words, for the log."""
    session: Session | None = None
    cited_events: dict[str, Event] = field(default_factory=dict)
    agent_events: Counter[str] = field(default_factory=Counter)
    """Each agent's event count in the log."""
    agent_signals: dict[str, dict[str, int]] = field(default_factory=dict)
    signal_kinds: dict[str, set[str]] = field(default_factory=dict)
    """The kinds of signal each event of a signal stands behind."""
    submitted: str | None = None
    """The Gemini batch job its chunk calls went to: the analysis waits on it."""
    batch: BatchRecord | None = None
    """What became of its batch, when it had or wanted one."""
    batch_answers: list[JsonAnswer | GeminiError] | None = None
    """The batch's answers, one per chunk call, when it resumes from a finished batch."""
    summarised: CheckedSummary | None = None
    """The session's summary as checked, once a call gave one."""
    summary_found: SummaryFinding | None = None
    """The summary as the analysis's call that sees the whole log proposed it."""
    summary_call: ModelCallRecord | None = None
    """The call the summary was asked in, answered or not."""
    summary_model: str | None = None
    summary_failure: str | None = None
    """Why the session is not summarised when the analysis itself did not fail."""

    @property
    def usage(self) -> TokenUsage:
        return {
            "input_tokens": sum(call["inputTokens"] for call in self.calls),
            "output_tokens": sum(call["outputTokens"] for call in self.calls),
            "cached_tokens": sum(call["cachedTokens"] for call in self.calls),
            "thought_tokens": sum(call["thoughtTokens"] for call in self.calls),
        }

    def summary(self) -> dict[str, object]:
        """What the settled analysis's log line says beside its status."""
        return {
            "cause": self.cause,
            "events": self.event_count,
            "calls": len(self.calls),
            "hypotheses": len(self.accepted),
            "rejected": len(self.rejected),
            **self.usage,
        }


SUMMARY_SCHEMA = "psychologist/model_summary"
END_TRIGGERS = frozenset({AnalysisTrigger.ABNORMAL_END, AnalysisTrigger.SESSION_END})
"""The analyses an end queues: each leaves the session's summary."""


@cache
def gemini_output_schema() -> Schema:
    """An analysis's answer as Gemini is asked for it: its summary required (null over a
    part of a log), which the published schema leaves optional, so that an answer without
    one still gives its hypotheses (and leaves the session not summarised)."""
    schema: Schema = model_schema(inlined(load_schema("psychologist/model_output")))
    return {**schema, "required": [*schema["required"], "summary"]}


@cache
def summary_output_schema() -> Schema:
    return model_schema(inlined(load_schema(SUMMARY_SCHEMA)))


def parse_output(data: Any) -> ModelOutput:
    """Output that passed the published schema, in its typed shape."""
    return parse_strictly(ModelOutput, data)


SUMMARY_OUTPUT = Output(1_024, 1_024, least_thinking=True)
"""A summary is three sentences and their event ids, at the least thinking."""


@dataclass(frozen=True)
class Asked:
    """How a kind of call is asked: the model, its answer's schema, what it may write."""

    model: str
    schema: Schema
    output: Output


def analysis_asked() -> Asked:
    return Asked(settings().psychologist_model, gemini_output_schema(), model_output())


def summary_asked() -> Asked:
    return Asked(settings().psychologist_summary_model, summary_output_schema(), SUMMARY_OUTPUT)


def asked_for(analysis: Analysis) -> Asked:
    """How the analysis's calls are asked: a normal end's is its summary call."""
    return summary_asked() if only_counts(analysis) else analysis_asked()


def claim(params: Mapping[str, str]) -> tuple[Claim, AnalysisWork] | None:
    ref = store.analysis_ref(params["projectId"], params["analysisId"])
    claimed = jobs.claim(ref, LIFECYCLE)
    return (claimed, AnalysisWork()) if claimed is not None else None


def load_log(analysis: Analysis) -> tuple[Session | None, list[Event]]:
    """The session and its retained events in log order (by `at`, then id).

    Events are read from the session's event chunks: a few JSON documents instead of one
    document per event, which keeps a 100,000-event log within seconds. A call reported
    again was stored again: its versions count once, merged."""
    project_id, session_id = analysis["project_id"], analysis["session_id"]
    session = read_as(store.session_ref(project_id, session_id), Session)
    now = utcnow()
    events: list[Event] = []
    chunks = store.event_chunks(project_id, session_id).select(["events_json", "expires_at"])
    for chunk in stream_as(chunks, EventChunk).values():
        if not is_expired(chunk, now):
            events.extend(json.loads(chunk["events_json"]))
    events = latest_versions(events)
    events.sort(key=lambda event: (parse_instant(event["at"]), event["id"]))
    return session, events


def model_output() -> Output:
    config = settings()
    return Output(config.psychologist_output_token_limit, config.psychologist_thinking_tokens)


def _reply(call: ModelCall, asked: Asked, deadline: datetime) -> JsonAnswer | GeminiError:
    """Gemini's answer to one call, or why there is none."""
    try:
        return generate_json(
            model=asked.model,
            system=call.system,
            prompt=call.text,
            schema=asked.schema,
            output=asked.output,
            deadline=deadline,
        )
    except GeminiError as error:
        return error


def _ask(call: ModelCall, work: AnalysisWork, deadline: datetime) -> list[Finding]:
    """The hypotheses Gemini proposes for one call; its token use goes on the work."""
    return _answered(call, work, _reply(call, analysis_asked(), deadline))


def _answered(
    call: ModelCall, work: AnalysisWork, reply: JsonAnswer | GeminiError
) -> list[Finding]:
    """The hypotheses of one call's answer, however it was asked; its token use goes on
    the work."""
    record = _record(work, call, reply.usage, reply.model_version)
    if call.summarises:
        work.summary_call, work.summary_model = record, settings().psychologist_model
    if isinstance(reply, GeminiError):
        raise AnalysisFailedError(reply.kind.value, reply.detail) from reply
    problems = output_issues(reply.data)
    if problems:
        _reject_output(work, call, reply, problems)
        raise AnalysisFailedError(AnalysisFailure.INVALID_OUTPUT, problems[0])
    output = parse_output(reply.data)
    if call.summarises:
        work.summary_found = output.get("summary")
    return output["hypotheses"]


def _reject_output(
    work: AnalysisWork, call: ModelCall, reply: JsonAnswer, problems: list[str]
) -> None:
    work.rejected.append(
        {
            "phase": call.phase,
            "hypothesis": {"output": reply.text[:2000]},
            "reasons": problems[:20],
        }
    )


def _record(
    work: AnalysisWork, call: ModelCall, usage: Usage, model_version: str | None
) -> ModelCallRecord:
    record: ModelCallRecord = {
        "phase": call.phase,
        "modelVersion": model_version,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cachedTokens": usage.cached_tokens,
        "thoughtTokens": usage.thought_tokens,
        "estimatedInputTokens": call.estimated_tokens,
    }
    work.calls.append(record)
    return record


def _unfinishable(calls: list[ModelCall], deadline: datetime) -> str | None:
    """Why the planned calls cannot finish before the deadline, when they cannot: the
    chunks go `PSYCHOLOGIST_CALL_CONCURRENCY` at a time, then one call combines them,
    each given `PSYCHOLOGIST_CALL_SECONDS`."""
    config = settings()
    combining = int(len(calls) > 1)
    rounds = -(-len(calls) // config.psychologist_call_concurrency) + combining
    needed = rounds * config.psychologist_call_seconds
    left = (deadline - utcnow()).total_seconds()
    if needed <= left:
        return None
    return (
        f"the log needs {len(calls) + combining} Gemini calls in {rounds} rounds of at most "
        f"{config.psychologist_call_concurrency} at once, {needed:.0f} s at "
        f"{config.psychologist_call_seconds:g} s a call, and only {left:.0f} s of the lease "
        f"are left"
    )


def _chunk_findings(
    calls: list[ModelCall], facts: SessionFacts, work: AnalysisWork, deadline: datetime
) -> list[Finding]:
    """Every chunk's checked hypotheses, in log order; the calls run concurrently."""

    def one(call: ModelCall) -> list[Finding]:
        return _checked(_ask(call, work, deadline), facts, call.phase, work)

    if work.batch_answers is not None:
        answered = zip(calls, work.batch_answers, strict=True)
        return [
            h for c, a in answered for h in _checked(_answered(c, work, a), facts, c.phase, work)
        ]

    workers = min(settings().psychologist_call_concurrency, len(calls))
    if workers <= 1:
        return [h for call in calls for h in one(call)]
    planned = {call.phase: index for index, call in enumerate(calls)}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(one, call) for call in calls]
        try:
            return [h for future in futures for h in future.result()]
        except AnalysisFailedError:
            for future in futures:
                future.cancel()
            raise
        finally:
            pool.shutdown(wait=True)
            work.calls.sort(key=lambda record: planned[record["phase"]])


def _checked(
    hypotheses: list[Finding], facts: SessionFacts, phase: str, work: AnalysisWork
) -> list[Finding]:
    kept = []
    for hypothesis in hypotheses:
        reasons = reasons_to_reject(hypothesis, facts)
        if reasons:
            rejected: Rejected = {
                "phase": phase,
                "hypothesis": dict(hypothesis),
                "reasons": reasons,
            }
            work.rejected.append(rejected)
        else:
            kept.append(hypothesis)
    return kept


def only_counts(analysis: Analysis) -> bool:
    """Whether the analysis only counts its log's signals and asks for no hypothesis: a
    normal end's, queued so that every ended session leaves outcomes (and a summary)."""
    return analysis["trigger"] == AnalysisTrigger.SESSION_END


def produce(claimed: Claim, work: AnalysisWork) -> AnalysisWork:
    """Fill `work` as the analysis goes, so that what a fault interrupts (token use
    above all) is still there to settle with."""
    analysis = as_stored(claimed.job, Analysis)
    session, events = load_log(analysis)
    work.event_count, work.tool_error_count = len(events), tool_errors(events)
    work.session = session
    if session is None or not events:
        work.failure = AnalysisFailure.SESSION_EMPTY
        return work
    work.signals = find_signals(events, session)
    every = every_signal(events, session)
    work.agent_signals = signal_counts(every)
    work.signal_kinds = kinds_by_event(every)
    work.agent_events = Counter(event["agent"] for event in events)
    if only_counts(analysis):
        return _summarised_apart(claimed, work, session, events)
    work.failure = _refusal(analysis["project_id"])
    return work if work.failure else _asked(claimed, work, session, events)


def _summarised_apart(
    claimed: Claim, work: AnalysisWork, session: Session, events: list[Event]
) -> AnalysisWork:
    """A normal end's summary, asked of the summary model over the compact view of its
    log (through the Batch API when batches are on). It never fails the analysis, which
    only counts: a summary it cannot have says why on the session's summary."""
    if not settings().psychologist_normal_end_summaries:
        work.summary_failure = NotSummarised.SWITCHED_OFF
        return work
    refused = _refusal(as_stored(claimed.job, Analysis)["project_id"])
    if refused:
        work.summary_failure = not_summarised_because(refused)
        return work
    call, asked = summary_call(session, work.signals, events), summary_asked()
    if work.batch_answers is not None and len(work.batch_answers) != 1:
        work.batch_answers = None
        work.batch = _fallen_back(work, "the batch did not answer its one request")
    if _batch_wanted(claimed, work) and _submitted(claimed, asked, [call], work):
        return work
    answers = work.batch_answers
    reply = answers[0] if answers else _reply(call, asked, claimed.deadline)
    work.summary_call = _record(work, call, reply.usage, reply.model_version)
    work.summary_model = asked.model
    if isinstance(reply, GeminiError):
        work.summary_failure = not_summarised_because(reply.kind.value)
        return work
    problems = output_issues(reply.data, SUMMARY_SCHEMA)
    if problems:
        _reject_output(work, call, reply, problems)
        work.summary_failure = not_summarised_because(AnalysisFailure.INVALID_OUTPUT)
        return work
    agent_by_event = {event["id"]: event["agent"] for event in events}
    found = parse_strictly(SummaryFinding, reply.data)
    work.summarised = checked_summary(found, session_agent(events) or "", agent_by_event)
    return work


def not_summarised_because(code: str) -> str:
    """The summary's `reason` for an analysis's or a summary call's failure code."""
    if code == AnalysisFailure.BUDGET_EXHAUSTED:
        return NotSummarised.OVER_BUDGET
    if code == AnalysisFailure.SESSION_EMPTY:
        return NotSummarised.EMPTY_LOG
    return f"failed: {code}"


def _asked(
    claimed: Claim, work: AnalysisWork, session: Session, events: list[Event]
) -> AnalysisWork:
    """The model's hypotheses over the log, checked against it."""
    facts = SessionFacts(
        agent_by_event={event["id"]: event["agent"] for event in events},
        agents=frozenset(event["agent"] for event in events),
        ended_abnormally=session["state"] == SessionState.CLOSED_ABNORMALLY,
    )
    try:
        calls = analysis_calls(
            session, work.signals, events, settings().psychologist_input_token_budget
        )
    except InputTooLargeError as error:
        work.failure, work.cause = AnalysisFailure.INPUT_TOO_LARGE, str(error)
        return work
    work.chunk_count = len(calls)
    unfinishable = _unfinishable(calls, claimed.deadline)
    if unfinishable:
        work.failure, work.cause = AnalysisFailure.INPUT_TOO_LARGE, unfinishable
        return work
    if work.batch_answers is not None and len(work.batch_answers) != len(calls):
        work.batch_answers = None
        work.batch = _fallen_back(work, "the log changed while its batch ran")
    if _batch_wanted(claimed, work) and _submitted(claimed, analysis_asked(), calls, work):
        return work
    summarising = as_stored(claimed.job, Analysis)["trigger"] in END_TRIGGERS
    try:
        findings = _chunk_findings(calls, facts, work, claimed.deadline)
        if len(calls) > 1 and (findings or summarising):
            final = _combine(session, work, findings, events, summarising)
            findings = _checked(_ask(final, work, claimed.deadline), facts, final.phase, work)
    except AnalysisFailedError as failure:
        work.failure, work.cause = failure.code, failure.cause
        return work
    work.accepted = findings
    cited = {event_id for h in findings for event_id in h["evidenceEventIds"]}
    work.cited_events = {event["id"]: event for event in events if event["id"] in cited}
    if work.summary_found is not None:
        agent = session_agent(events) or ""
        work.summarised = checked_summary(work.summary_found, agent, facts.agent_by_event)
    return work


def _combine(
    session: Session,
    work: AnalysisWork,
    findings: list[Finding],
    events: list[Event],
    summarising: bool,
) -> ModelCall:
    """The call that merges the chunks' hypotheses; shown, when the session's summary is
    wanted, the log's compact view too."""
    by_id = {event["id"]: event for event in events}
    cited = [by_id[i] for i in sorted({i for h in findings for i in h["evidenceEventIds"]})]
    context = compact_view(events) if summarising else []
    budget = settings().psychologist_input_token_budget
    agent = session_agent(events)
    return combine_call(session, work.signals, findings, cited, context, budget, agent)


def _batch_wanted(claimed: Claim, work: AnalysisWork) -> bool:
    """Whether this analysis's calls go to the Batch API: an end's (an abnormal end's
    chunk calls, a normal end's summary call), which nobody waits on, when batches are on
    and it has not had one yet."""
    analysis = as_stored(claimed.job, Analysis)
    return (
        settings().psychologist_gemini_batch
        and analysis["trigger"] in END_TRIGGERS
        and "batch" not in analysis
        and work.batch is None
    )


def _submitted(claimed: Claim, asked: Asked, calls: list[ModelCall], work: AnalysisWork) -> bool:
    """Submit the calls (all with one system instruction) as one batch; False (and why, on
    the work) when this backend cannot take one or Gemini refused it, and the calls are
    made the standard way."""
    now = utcnow()
    unavailable = batch_unavailable()
    if unavailable is not None:
        work.batch = {**NO_BATCH, "state": "unavailable", "fallback": unavailable}
        return False
    try:
        work.submitted = submit_batch(
            model=asked.model,
            system=calls[0].system,
            prompts=[call.text for call in calls],
            schema=asked.schema,
            output=asked.output,
            name=f"analysis-{claimed.ref.id}",
        )
    except GeminiError as error:
        work.batch = {**NO_BATCH, "state": "unsubmitted", "fallback": error.detail}
        return False
    deadline = now + timedelta(seconds=settings().psychologist_batch_deadline_s)
    work.batch = {
        "name": work.submitted,
        "state": "pending",
        "submitted_at": now,
        "deadline_at": deadline,
        "requests": len(calls),
        "fallback": None,
    }
    return True


def _fallen_back(work: AnalysisWork, why: str) -> BatchRecord:
    held = work.batch or NO_BATCH
    return {**held, "fallback": f"{why}; asked the standard way"}


def _refusal(project_id: str) -> str | None:
    """Why no Gemini call may be made: no credentials, or the project spent its token
    budget (checked here too, since an abnormal end queues its analysis without reading
    the project's spend)."""
    config = settings()
    if not config.gemini_configured:
        return AnalysisFailure.NOT_CONFIGURED
    spend = store.spend(project_id)
    if spend.used(read_all(spend.shards())) >= config.psychologist_project_token_budget:
        return AnalysisFailure.BUDGET_EXHAUSTED
    return None


def _stored_hypothesis(
    analysis: Analysis, session: Session, hypothesis: Finding, work: AnalysisWork
) -> Hypothesis:
    """The hypothesis as stored: the contract's fields, copies of its cited events, and
    the kinds of signal those events stand behind (what its effect is measured on)."""
    now = utcnow()
    events, kinds = work.cited_events, work.signal_kinds
    termination = hypothesis["terminationAnalysis"]
    return {
        "id": new_ulid(),
        "projectId": analysis["project_id"],
        "sessionId": analysis["session_id"],
        "analysisId": analysis["id"],
        "agenteAlvo": hypothesis["agenteAlvo"],
        "observacao": hypothesis["observacao"],
        "hipotese": hypothesis["hipotese"],
        "sugestao": hypothesis["sugestao"],
        "confiancaPercent": hypothesis["confiancaPercent"],
        "evidenceEventIds": hypothesis["evidenceEventIds"],
        "terminationAnalysis": None
        if termination is None
        else {
            "causa": session.get("cause"),
            "estadoDaSessao": session.get("state"),
            "analise": termination["analise"],
        },
        "status": HypothesisStatus.PROPOSED,
        "decidedBy": None,
        "decidedAt": None,
        "createdAt": now,
        "updatedAt": now,
        "expires_at": now + timedelta(days=settings().psychologist_hypothesis_retention_days),
        "evidence_events": copied_events(
            [events[event_id] for event_id in hypothesis["evidenceEventIds"]]
        ),
        "signal_kinds": sorted(
            {
                kind
                for event_id in hypothesis["evidenceEventIds"]
                for kind in kinds.get(event_id, ())
            }
        ),
    }


OUTCOME_AGENTS = 100
"""At most this many agents of a session get an work, those with the most events: the
records are written in the analysis's settling transaction, and a log may name thousands
of agents (one event each), which would push that commit past Firestore's 10 MiB."""


def session_outcomes(
    analysis: Analysis, session: Session, work: AnalysisWork, stored: list[Hypothesis]
) -> list[Outcome]:
    """One outcome per agent of an ended session's log: what outlives the log for
    measuring, later, whether an accepted suggestion changed how the agent's sessions go.
    Its model versions are the hypotheses' provenance: a normal end's summary call is not."""
    now = utcnow()
    versions = sorted(
        {
            call["modelVersion"]
            for call in work.calls
            if call["modelVersion"] and call["phase"] != SUMMARY_PHASE
        }
    )
    abnormal = session["state"] == SessionState.CLOSED_ABNORMALLY
    return [
        {
            "project_id": analysis["project_id"],
            "session_id": analysis["session_id"],
            "agent": agent,
            "ended_as": session["state"],
            "cause": session.get("cause"),
            "ended_at": session.get("ended_at"),
            "event_count": count,
            "signals": work.agent_signals.get(agent, {}),
            "signal_kinds": sorted(work.agent_signals.get(agent, {})),
            "abnormal_end": int(abnormal),
            "analysis_id": analysis["id"],
            "hypothesis_ids": [h["id"] for h in stored if h["agenteAlvo"] == agent],
            "model_versions": versions,
            **spent(session),
            "analysed_at": now,
            "expires_at": now + timedelta(days=settings().psychologist_hypothesis_retention_days),
        }
        for agent, count in work.agent_events.most_common(OUTCOME_AGENTS)
    ]


def spent(session: Session) -> Spent:
    """What the session's telemetry says it spent, as its outcome records keep it: each
    figure, its square and its cube, and where positive its logarithm and the log's
    square, which the report sums into a mean and its interval
    (`functions.loop.means`)."""
    usage = session.get("usage") or session.get("metered") or {}
    if "input_tokens" not in usage and "output_tokens" not in usage:
        return {"usage_reported": 0}
    tokens = int(usage.get("input_tokens", 0) + usage.get("output_tokens", 0))
    found: Spent = {
        "usage_reported": 1,
        "cost_reported": int("cost_usd" in usage),
        "tokens": tokens,
        "tokens_sq": float(tokens) * tokens,
        "tokens_cu": float(tokens) ** 3,
        "tokens_positive": float(tokens > 0),
    }
    if tokens > 0:
        found["log_tokens"] = math.log(tokens)
        found["log_tokens_sq"] = math.log(tokens) ** 2
    if "cost_usd" in usage:
        cost = float(usage["cost_usd"])
        found |= {
            "cost_usd": cost,
            "cost_usd_sq": cost * cost,
            "cost_usd_cu": cost**3,
            "cost_usd_positive": float(cost > 0),
        }
        if cost > 0:
            found["log_cost_usd"] = math.log(cost)
            found["log_cost_usd_sq"] = math.log(cost) ** 2
    return found


def copied_events(cited: list[Event]) -> list[Event]:
    """The cited events a hypothesis keeps, in order, whole while they fit in
    `COPIED_EVENT_BYTES`; past it without their `data`. An event's 8 KiB limit counts its
    JSON, and Firestore stores a small integer in 8 bytes, so 50 whole events can pass
    a document's 1 MiB."""
    copied: list[Event] = []
    used = 0
    for event in cited:
        kept, size = event, stored_size(event)
        if used + size > COPIED_EVENT_BYTES:
            kept = as_stored({key: value for key, value in event.items() if key != "data"}, Event)
            size = stored_size(kept)
        copied.append(kept)
        used += size
    return copied


@dataclass(frozen=True)
class FinishPlan:
    """What settling an analysis writes while its claim holds."""

    status: str
    analysis: Changes
    """The analysis document's changes."""
    hypotheses: list[Hypothesis]
    """Created only when it completed."""
    outcomes: list[Outcome]
    """Merged into each agent's outcome record whether it completed or failed."""


def plan_finish(
    analysis: Analysis, work: AnalysisWork, stored: list[Hypothesis], now: datetime
) -> FinishPlan:
    """The analysis's settling from its work: failed with its code, its cause and no
    hypothesis, or completed with them; either way its usage, signals, calls and
    rejections, and, for an ended session, each agent's work."""
    session = work.session
    outcomes = (
        session_outcomes(analysis, session, work, stored)
        if session is not None and session["state"] != SessionState.OPEN
        else []
    )
    common: Changes = {
        "usage": work.usage,
        "signals": work.signals,
        "event_count": work.event_count,
        "tool_error_count": work.tool_error_count,
        "chunk_count": work.chunk_count,
        "calls": work.calls,
        "rejected": stored_rejections(work.rejected),
        "rejected_count": len(work.rejected),
        "session_usage": usage_view(session) if session is not None else None,
    }
    if work.batch is not None:
        common["batch"] = work.batch
    if work.failure:
        failed: Changes = {
            **common,
            **jobs.failure_changes(work.failure),
            "finished_at": now,
            "failure_detail": work.cause,
            "hypothesis_ids": [],
        }
        return FinishPlan(AnalysisStatus.FAILED, failed, [], outcomes)
    completed: Changes = {
        **common,
        "hypothesis_ids": [h["id"] for h in stored],
        "status": AnalysisStatus.COMPLETED,
        "lease_until": None,
        "finished_at": now,
    }
    return FinishPlan(AnalysisStatus.COMPLETED, completed, stored, outcomes)


NO_SUMMARY = "no_summary"
"""The code of an analysis's answer that gave no summary."""


def session_summary(analysis: Analysis, work: AnalysisWork, now: datetime) -> Summary | None:
    """The session's summary when the analysis is its end's: summarised, each claim kept
    or refused, or not summarised and why."""
    session = work.session
    if (
        analysis["trigger"] not in END_TRIGGERS
        or session is None
        or session["state"] == SessionState.OPEN
    ):
        return None
    checked, call = work.summarised, work.summary_call
    source = SummarySource.SUMMARY if only_counts(analysis) else SummarySource.ANALYSIS
    return {
        "session_id": analysis["session_id"],
        "agent": _main_agent(work, session),
        "ended_at": session.get("ended_at") or now,
        "state": session["state"],
        "status": SummaryStatus.NOT_SUMMARISED if checked is None else SummaryStatus.SUMMARISED,
        "reason": _why_not_summarised(work) if checked is None else None,
        "task": None if checked is None else checked.task,
        "ending": None if checked is None else checked.ending,
        "failure": None if checked is None else checked.failure,
        "refused": [] if checked is None else checked.refused,
        "model": work.summary_model,
        "source": source,
        "usage": {
            "input_tokens": call["inputTokens"] if call else 0,
            "output_tokens": call["outputTokens"] if call else 0,
        },
        "created_at": now,
        "expires_at": now + timedelta(days=settings().psychologist_hypothesis_retention_days),
    }


def _main_agent(work: AnalysisWork, session: Session) -> str:
    """The agent with the most events in the log; the session's first when none is left."""
    counted = work.agent_events.most_common(1)
    if counted:
        return counted[0][0]
    return next(iter(session.get("agents") or []), "")


def _why_not_summarised(work: AnalysisWork) -> str:
    if work.summary_failure:
        return work.summary_failure
    return not_summarised_because(work.failure or NO_SUMMARY)


def parked(work: AnalysisWork, now: datetime) -> Changes:
    """An analysis left waiting on its batch: still processing, its lease past the batch's
    deadline (the sweep polls it, and ends it stuck only if nothing did), and polled at
    the next sweep."""
    batch = work.batch or NO_BATCH
    deadline = batch["deadline_at"] or now
    return {
        "batch": batch,
        "batch_poll_at": now,
        "lease_until": deadline + LIFECYCLE.lease(),
        "event_count": work.event_count,
        "tool_error_count": work.tool_error_count,
        "chunk_count": work.chunk_count,
    }


def finish(claimed: Claim, work: AnalysisWork) -> Settled:
    if work.submitted is not None and not work.failure:
        return _park(claimed, work)
    analysis = as_stored(claimed.job, Analysis)
    project_id, session = analysis["project_id"], work.session
    stored = (
        [_stored_hypothesis(analysis, session, h, work) for h in work.accepted]
        if session is not None
        else []
    )
    decided = plan_finish(analysis, work, stored, utcnow())
    summary = session_summary(analysis, work, utcnow())
    summary_ref = store.summary_ref(project_id, analysis["session_id"])
    session_ref = store.session_ref(project_id, analysis["session_id"])

    def write(transaction: firestore.Transaction, _current: Job, snapshots: Snapshots) -> str:
        if not superseded(analysis, snapshots[session_ref.path]):
            write_outcomes(transaction, project_id, decided.outcomes)
        for hypothesis in decided.hypotheses:
            transaction.create(
                store.hypotheses(project_id).document(hypothesis["id"]), writable(hypothesis)
            )
        transaction.update(claimed.ref, decided.analysis)
        return decided.status

    def count_tokens(transaction: firestore.Transaction) -> None:
        tokens = work.usage["input_tokens"] + work.usage["output_tokens"]
        store.spend(project_id).count(transaction, analysis["id"], tokens)

    def summarise(transaction: firestore.Transaction, snapshots: Snapshots) -> None:
        """The session's one summary, of its latest end: the first written for an end
        stays, so a retried job changes nothing; a later end's (the session spoke again
        after silence ended it) replaces it; written whatever became of the claim, so the
        session is counted."""
        if summary is None or superseded(analysis, snapshots[session_ref.path]):
            return
        stored = data_as(snapshots[summary_ref.path], Summary)
        if stored is None or stored["ended_at"] < summary["ended_at"]:
            transaction.set(summary_ref, writable(summary))

    return jobs.settle(
        claimed,
        write,
        {"usage": work.usage},
        refs=[summary_ref, session_ref],
        always=count_tokens,
        always_reading=summarise,
    )


def superseded(analysis: Analysis, session: firestore.DocumentSnapshot[Any]) -> bool:
    """Whether the analysis is of an end the session has since replaced (it spoke again
    after silence ended it, and ended again): the later end's analysis, whose id sorts
    after (ids are ULIDs), writes its outcome and summary."""
    if analysis["trigger"] not in END_TRIGGERS:
        return False
    latest = data_as(session, Session)
    newer = latest.get("analysis_id") if latest is not None else None
    return newer is not None and newer > analysis["id"]


def write_outcomes(
    transaction: firestore.Transaction, project_id: str, outcomes: list[Outcome]
) -> None:
    """Merge each agent's outcome into its record (AgentConnect's half may be there)."""
    for each in outcomes:
        outcome_records.merge(transaction, outcome_records.ended(project_id, each))


def _park(claimed: Claim, work: AnalysisWork) -> Settled:
    """Wait on the batch. A normal end's outcomes do not hang on its summary: they are
    written now (the trials and the selection report read them), and again, unchanged,
    when the batch settles the analysis."""
    analysis = as_stored(claimed.job, Analysis)
    session = work.session
    outcomes = (
        session_outcomes(analysis, session, work, [])
        if only_counts(analysis) and session is not None
        else []
    )

    session_ref = store.session_ref(analysis["project_id"], analysis["session_id"])

    def write(transaction: firestore.Transaction, _current: Job, snapshots: Snapshots) -> str:
        if not superseded(analysis, snapshots[session_ref.path]):
            write_outcomes(transaction, analysis["project_id"], outcomes)
        transaction.update(claimed.ref, parked(work, utcnow()))
        return AnalysisStatus.PROCESSING

    return jobs.settle(claimed, write, {"usage": work.usage}, refs=[session_ref])


def failed(
    _claimed: Claim, work: AnalysisWork, code: str, error: GeminiError | None
) -> AnalysisWork:
    work.failure = code
    work.cause = jobs.cause_of(error)
    return work


def log(_claimed: Claim, work: AnalysisWork, settled: Settled) -> None:
    if work.submitted is not None and settled.status == AnalysisStatus.PROCESSING:
        logs.info("Analysis waiting on a Gemini batch", batch=work.submitted, **work.summary())
        return
    jobs.log_settled("Analysis settled", settled.status, work.failure, **work.summary())


WORKER = jobs.Worker("Analysis", claim, produce, failed, finish, log)
