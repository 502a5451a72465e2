"""Stored Psychologist documents turned into their published shapes."""

from __future__ import annotations

from datetime import datetime

from functions.psychologist.documents import (
    Analysis,
    AnalysisFailure,
    AnalysisStatus,
    AnalysisView,
    BatchRecord,
    BatchView,
    DecidedBy,
    DecisionView,
    Hypothesis,
    HypothesisDecision,
    HypothesisView,
    Session,
    SessionRow,
    SessionUsage,
    SessionUsageView,
    SessionView,
)
from functions.psychologist.lifecycle import LIFECYCLE, stuck_detail
from shared.auth import Principal
from shared.retention import from_micros, iso, utcnow
from shared.spend import NO_TOKENS


def _iso_or_none(moment: datetime | None) -> str | None:
    return iso(moment) if moment is not None else None


def decider(principal: Principal) -> DecidedBy:
    """Who decides, as stored with the decision and shown as `decidedBy`."""
    return {
        "userId": principal.user_id,
        "credentialClass": principal.credential_class.value,
        "displayName": None,
    }


def hypothesis_view(data: Hypothesis) -> HypothesisView:
    """Exactly the contract's fields: the stored event copies stay internal."""
    return {
        "id": data["id"],
        "projectId": data["projectId"],
        "sessionId": data["sessionId"],
        "analysisId": data["analysisId"],
        "agenteAlvo": data["agenteAlvo"],
        "observacao": data["observacao"],
        "hipotese": data["hipotese"],
        "sugestao": data["sugestao"],
        "confiancaPercent": data["confiancaPercent"],
        "evidenceEventIds": list(data["evidenceEventIds"]),
        "terminationAnalysis": data.get("terminationAnalysis"),
        "status": data["status"],
        "decidedBy": data["decidedBy"],
        "decidedAt": _iso_or_none(data.get("decidedAt")),
        "createdAt": iso(data["createdAt"]),
        "updatedAt": iso(data["updatedAt"]),
    }


def decision_view(data: HypothesisDecision) -> DecisionView:
    return {
        "status": data["status"],
        "previousStatus": data["previousStatus"],
        "reason": data.get("reason"),
        "decidedBy": data["decidedBy"],
        "decidedAt": iso(data["decidedAt"]),
        "requestId": data["requestId"],
    }


def _iso_of_micros(micros: int | None) -> str | None:
    return None if micros is None else iso(from_micros(micros))


def session_view(project_id: str, session_id: str, data: Session) -> SessionView:
    return {
        "projectId": project_id,
        "sessionId": session_id,
        "state": data["state"],
        "cause": data.get("cause"),
        "agents": sorted(data.get("agents", [])),
        "eventCount": data.get("event_count", 0),
        "firstEventAt": _iso_of_micros(data.get("first_event_micros")),
        "lastEventAt": _iso_of_micros(data.get("last_event_micros")),
        "endedAt": _iso_or_none(data.get("ended_at")),
        "analysisId": data.get("analysis_id"),
        "endedBySilence": bool(data.get("ended_by_silence")),
        "resumedCount": data.get("resumed", 0),
    }


def usage_view(session: Session) -> SessionUsageView:
    """The session's tokens and cost: per request from its logs and spans, else from its
    token and cost metrics (which count the same requests, so never both)."""
    usage: SessionUsage = session.get("usage") or {}
    found = "requests" if usage else "none"
    if not usage and session.get("metered"):
        usage, found = session.get("metered") or {}, "metrics"
    cost = usage.get("cost_usd")
    return {
        "inputTokens": int(usage.get("input_tokens", 0)),
        "outputTokens": int(usage.get("output_tokens", 0)),
        "cachedTokens": int(usage.get("cached_tokens", 0)),
        "costUsd": None if cost is None else round(cost, 6),
        "from": found,
    }


def session_row(session_id: str, data: Session, version: int | None) -> SessionRow:
    last = data.get("last_analysis")
    return {
        "sessionId": session_id,
        "agents": sorted(data.get("agents", [])),
        "source": data.get("source"),
        "state": data["state"],
        "cause": data.get("cause"),
        "eventCount": data.get("event_count", 0),
        "toolErrors": data.get("tool_errors", 0),
        "usage": usage_view(data),
        "createdAt": iso(data["created_at"]),
        "endedAt": _iso_or_none(data.get("ended_at")),
        "endedBySilence": bool(data.get("ended_by_silence")),
        "resumedCount": data.get("resumed", 0),
        "lastAnalysisId": last["id"] if last is not None else data.get("analysis_id"),
        "instructionsVersion": version,
    }


def analysis_state(data: Analysis) -> tuple[str, str | None, str | None]:
    """The status, failure code and failure detail as a reader must see them: an analysis
    processing past its lease, or queued past its queue deadline, failed unconfirmed (the
    sweep or the next delivery stores that)."""
    if LIFECYCLE.stuck(data, utcnow()):
        return AnalysisStatus.FAILED, AnalysisFailure.GENERATION_UNCONFIRMED, stuck_detail(data)
    detail = data.get("failure_detail") if data["status"] == AnalysisStatus.FAILED else None
    return data["status"], data.get("failure_code"), detail


def analysis_view(data: Analysis) -> AnalysisView:
    usage = data.get("usage") or NO_TOKENS
    status, failure, detail = analysis_state(data)
    return {
        "id": data["id"],
        "projectId": data["project_id"],
        "sessionId": data["session_id"],
        "status": status,
        "failureCode": failure,
        "failureDetail": detail,
        "trigger": data["trigger"],
        "createdAt": iso(data["created_at"]),
        "startedAt": _iso_or_none(data.get("started_at")),
        "finishedAt": _iso_or_none(data.get("finished_at")),
        "counts": {
            "events": data.get("event_count", 0),
            "toolErrors": data.get("tool_error_count", 0),
            "chunks": data.get("chunk_count", 0),
            "calls": len(data.get("calls", [])),
            "hypotheses": len(data.get("hypothesis_ids", [])),
            "rejected": data.get("rejected_count", 0),
        },
        "usage": {
            "inputTokens": usage["input_tokens"],
            "outputTokens": usage["output_tokens"],
            "cachedTokens": usage["cached_tokens"],
            "thoughtTokens": usage["thought_tokens"],
        },
        "calls": data.get("calls", []),
        "signals": data.get("signals", []),
        "hypothesisIds": data.get("hypothesis_ids", []),
        "rejected": data.get("rejected", []),
        "batch": _batch_view(data.get("batch")),
        "sessionUsage": data.get("session_usage"),
    }


def _batch_view(batch: BatchRecord | None) -> BatchView | None:
    if batch is None:
        return None
    return {
        "state": batch["state"],
        "submittedAt": _iso_or_none(batch["submitted_at"]),
        "deadlineAt": _iso_or_none(batch["deadline_at"]),
        "fallback": batch["fallback"],
    }
