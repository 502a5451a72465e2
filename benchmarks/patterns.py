"""What the patterns cost (#54): one refresh over an agent's 10,000 ended sessions, and the
dollars of summarising and clustering them.

`SESSIONS` summaries of one agent in one project, as the worker writes them, are seeded
with batched writes: a tenth abnormal ends (the capacity model's one session in ten), each
with a failure sentence from its analysis call; a fifth normal ends whose summary call
found a failure; a hundredth normal ends left not summarised (an empty log); the rest
normal ends with none. Their ends are spread evenly over the 30-day window. A failure
sentence is one of `cli.meaning.FAILURE_FAMILIES`' paraphrases with a few words of context
drawn at random, so that no two need be alike.

The refresh then runs in a fresh process of its own (`python -m benchmarks.patterns`),
through `functions.psychologist.patterns.refresh.refresh` as the worker's `produce` calls
it, its Firestore calls counted at the client's channel, its embeddings and labels
answered by the Gemini test server, its peak memory the process's maximum resident set.
It runs twice: first with every sentence new (each embedded, every group labelled), then
again over the same window (nothing new: what a daily refresh repeats).

Dollars per 1,000 sessions are priced from `benchmarks/prices.json`: a normal end's
summary call over the compact view of a typical log (the capture of a Claude Code prompt,
`tests/telemetry_samples/claude_code`, replayed to `TYPICAL_EVENTS` events, as the worker's
own prompt builder shows it) at the summary model's Batch API price; an abnormal end's
summary as the output tokens its analysis call spends on it, at the analysis model's batch
price; the embeddings and the labels as the refresh reported them."""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc

from benchmarks.processes import ROOT
from benchmarks.tokens import price_table
from cli.capacity import batch_price, cost_usd
from cli.meaning import FAILURE_FAMILIES
from functions.psychologist.documents import Event, Session, SessionState

PROJECT = "bench-patterns"
AGENT = "dev-api"
SESSIONS = 10_000
WINDOW_DAYS = 30
SEED = 54
ABNORMAL, FAILING, NOT_SUMMARISED, CLEAN = "abnormal", "failing", "not_summarised", "clean"
SHARES = {ABNORMAL: 0.10, FAILING: 0.20, NOT_SUMMARISED: 0.01}
"""Each kind of ended session's share; the rest are `CLEAN`."""
PLACES = (
    "in the billing service",
    "on the login page",
    "for the payments API",
    "in the search indexer",
    "during the nightly export",
    "in the onboarding wizard",
    "for the admin console",
    "in the mobile client",
    "on the staging cluster",
    "in the reports module",
    "for the invoice generator",
    "in the webhook handler",
)
MOMENTS = (
    "on the first attempt",
    "after a retry",
    "right after the upgrade",
    "while the release was cut",
    "late in the session",
    "before the review",
    "once the cache was cleared",
    "with the new configuration",
)
TYPICAL_EVENTS = 60
WRITES_PER_BATCH = 500
LONG_QUERY_S = 120
"""Enough for this bench's own reads of every summary and pattern, vectors and all."""
GOAL_WALL_S = 600
GOAL_MIB = 1024
GOAL_USD_PER_1000 = 0.25
SUMMARY_ANSWER = {
    "task": "Fix the sign-out bug so that users stay signed in after a page reload.",
    "ending": "The agent reported the fix and ended the session after the tests ran.",
    "failure": "The test run timed out after ten minutes in the billing service.",
}
"""A typical summary's three sentences, as the model answers them, each citing two events."""


def kinds(count: int, seed: int = SEED) -> list[str]:
    """Each session's kind, in exactly the shares of `SHARES`, in a shuffled order."""
    chosen = [kind for kind, share in SHARES.items() for _ in range(round(share * count))]
    chosen += [CLEAN] * (count - len(chosen))
    random.Random(seed).shuffle(chosen)  # noqa: S311 - a reproducible draw, not a secret
    return chosen


def failure_sentence(draw: random.Random) -> str:
    """A paraphrase of one of the known failures with a place and a moment of its own."""
    family = draw.choice(sorted(FAILURE_FAMILIES))
    said = draw.choice(FAILURE_FAMILIES[family]).rstrip(".")
    return f"{said} {draw.choice(PLACES)} {draw.choice(MOMENTS)}."


def ended_at(index: int, count: int, until: datetime) -> datetime:
    """The `index`th session's end: the window's sessions spread evenly, none at its edges."""
    window = timedelta(days=WINDOW_DAYS)
    return until - window + window * (index + 0.5) / count


def summary_document(
    index: int, kind: str, failure: str | None, until: datetime, count: int
) -> dict[str, Any]:
    """A summary as the worker writes it: its claims cite events of the session."""
    session_id = f"patterns-{index:05d}"
    cites = [f"{session_id}-e1", f"{session_id}-e2"]
    ended = ended_at(index, count, until)
    summarised = kind != NOT_SUMMARISED
    abnormal = kind == ABNORMAL
    return {
        "session_id": session_id,
        "agent": AGENT,
        "ended_at": ended,
        "state": "closed_abnormally" if abnormal else "closed",
        "status": "summarised" if summarised else "not_summarised",
        "reason": None if summarised else "empty_log",
        "task": {"text": SUMMARY_ANSWER["task"], "event_ids": cites[:1]} if summarised else None,
        "ending": {"text": SUMMARY_ANSWER["ending"], "event_ids": cites[1:]}
        if summarised
        else None,
        "failure": {"text": failure, "event_ids": cites} if failure else None,
        "refused": [],
        "model": "gemini-3.8-flash" if abnormal else "gemini-2.5-flash-lite",
        "source": "analysis" if abnormal else "summary",
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "created_at": ended,
        "expires_at": ended + timedelta(days=90),
    }


def summaries(count: int, until: datetime, seed: int = SEED) -> list[dict[str, Any]]:
    """The seeded sessions' summaries, in the order they ended."""
    draw = random.Random(seed + 1)  # noqa: S311 - a reproducible draw, not a secret
    return [
        summary_document(
            index,
            kind,
            failure_sentence(draw) if kind in (ABNORMAL, FAILING) else None,
            until,
            count,
        )
        for index, kind in enumerate(kinds(count, seed))
    ]


def seed_summaries(documents: list[dict[str, Any]]) -> None:
    """Write the summaries, `WRITES_PER_BATCH` to a commit."""
    from functions.psychologist import store
    from shared.clients import db

    for start in range(0, len(documents), WRITES_PER_BATCH):
        batch = db().batch()
        for document in documents[start : start + WRITES_PER_BATCH]:
            batch.set(store.summary_ref(PROJECT, document["session_id"]), document)
        batch.commit()


class _CountedQuery:
    """A query's answers, passed on as they come, counting the documents they return."""

    def __init__(self, answers: Any, counter: QueryReads) -> None:
        self.answers, self.counter, self.returned = answers, counter, 0

    def __iter__(self) -> _CountedQuery:
        return self

    def __next__(self) -> Any:
        try:
            answer = next(self.answers)
        except StopIteration:
            self.counter.extra += max(self.returned, 1) - 1
            raise
        self.returned += "document" in answer
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.answers, name)


class QueryReads(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """The reads `benchmarks.counting.COUNTER` leaves out: it counts a query with no limit
    one read, and Firestore bills one a document it returns (at least one)."""

    def __init__(self) -> None:
        self.extra = 0

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        answers = continuation(details, request)
        if details.method.endswith("/RunQuery") and "limit" not in request.structured_query:
            return _CountedQuery(answers, self)
        return answers


def max_rss_mib() -> float:
    """This process's largest resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def refresh_alone(project: str, until: datetime) -> dict[str, Any]:
    """One refresh of every agent of `project`, in this process: its wall time, the memory
    it added to a process that already holds what the worker imports, its documents and
    what it changed and spent."""
    from benchmarks.counting import COUNTER, count_round_trips
    from shared.clients import CHANNEL_INTERCEPTORS
    from shared.instance import renew

    queries = QueryReads()
    count_round_trips()
    CHANNEL_INTERCEPTORS.append(queries)
    renew()
    from functions.psychologist.patterns.refresh import refresh
    from shared import gemini  # noqa: F401 - the refresh imports it lazily; a worker has it

    before = max_rss_mib()
    started = time.perf_counter()
    changed, spent = refresh(project, None, until)
    wall = time.perf_counter() - started
    peak = max_rss_mib()
    return {
        "wall_s": round(wall, 2),
        "rss_before_mib": round(before),
        "rss_peak_mib": round(peak),
        "rss_growth_mib": round(peak - before),
        "firestore_calls": len(COUNTER.calls),
        "reads": COUNTER.reads + queries.extra,
        "writes": COUNTER.writes,
        "changed": {
            "created": len(changed.created),
            "kept": len(changed.kept),
            "split": len(changed.split),
            "merged": len(changed.merged),
            "labelled": len(changed.labelled),
            "sessions_ended": changed.sessions_ended,
            "sessions_summarised": changed.sessions_summarised,
        },
        "spent": asdict(spent),
    }


def refreshed(until: datetime, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """`refresh_alone` in a fresh process, which inherits the emulator and the Gemini test
    server from this one's environment (and `environ` beside it): its figures, or, when it
    failed, the gRPC status it failed with and after how long."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.patterns", PROJECT, until.isoformat()],
        cwd=ROOT,
        env={**os.environ, **(environ or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        status = re.search(r"status = StatusCode\.(\w+)", done.stderr)
        failure = status.group(1) if status else done.stderr.strip().splitlines()[-1]
        return {"failed": failure, "after_s": round(time.perf_counter() - started, 1)}
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def stored_summaries() -> Iterator[dict[str, Any]]:
    from functions.psychologist import store

    for snapshot in store.summaries(PROJECT).stream(timeout=LONG_QUERY_S):
        yield snapshot.to_dict() or {}


def _check(holds: bool, otherwise: str) -> None:
    if not holds:
        raise RuntimeError(f"not every ended session is covered: {otherwise}")


def coverage(seeded: list[dict[str, Any]], first: dict[str, Any]) -> dict[str, Any]:
    """Every ended session counted, every failing summary embedded and either grouped or
    left a lone failure: asserted, and the counts returned."""
    from functions.psychologist.patterns import store as pattern_store

    failing = {d["session_id"] for d in seeded if d["failure"] and d["status"] == "summarised"}
    stored = {d["session_id"]: d for d in stored_summaries()}
    embedded = {s for s in failing if stored[s].get("embedding") is not None}
    grouped = {s for s in failing if stored[s].get("pattern_id")}
    members = Counter(stored[s]["pattern_id"] for s in grouped)
    patterns = {
        snapshot.id: snapshot.to_dict() or {}
        for snapshot in pattern_store.patterns(PROJECT).stream(timeout=LONG_QUERY_S)
    }
    summarised = sum(d["status"] == "summarised" for d in seeded)
    changed = first["changed"]
    _check(changed["sessions_ended"] == len(seeded), f"sessions counted: {changed}")
    _check(changed["sessions_summarised"] == summarised, f"summarised counted: {changed}")
    _check(embedded == failing, f"{len(failing - embedded)} failing summaries have no vector")
    _check(first["spent"]["embedded"] == len(failing), f"embedded: {first['spent']}")
    _check(all(patterns[p]["matching"] == n for p, n in members.items()), "a count differs")
    return {
        "sessions_seeded": len(seeded),
        "sessions_ended": first["changed"]["sessions_ended"],
        "sessions_summarised": first["changed"]["sessions_summarised"],
        "failing": len(failing),
        "embedded": len(embedded),
        "grouped": len(grouped),
        "lone": len(failing - grouped),
        "patterns": len(members),
        "largest_pattern": max(members.values(), default=0),
    }


def _typical_events() -> tuple[Session, list[Event]]:
    """A normal end's session of `TYPICAL_EVENTS` events: the Claude Code capture's start,
    then its one prompt again and again, a minute apart, each event with an id of its own."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from ulid import ULID

    from functions.psychologist.telemetry.log_records import map_logs
    from shared.retention import parse_instant

    raw = json.loads((ROOT / "tests/telemetry_samples/claude_code/logs.json").read_text("utf-8"))
    request = json_format.ParseDict(raw, ExportLogsServiceRequest(), ignore_unknown_fields=True)
    (captured,) = map_logs(request).events.values()
    start, prompt = list(captured.values())[:4], list(captured.values())[4:]
    events: list[Event] = list(start)
    while len(events) < TYPICAL_EVENTS:
        later = timedelta(minutes=len(events) // len(prompt))
        for event in prompt[: TYPICAL_EVENTS - len(events)]:
            moment = parse_instant(event["at"]) + later
            at = moment.isoformat().replace("+00:00", "Z")
            events.append({**event, "id": str(ULID.from_datetime(moment)), "at": at})
    ended = parse_instant(events[-1]["at"])
    session: Session = {
        "state": SessionState.CLOSED,
        "cause": None,
        "agents": sorted({event["agent"] for event in events}),
        "event_count": len(events),
        "created_at": parse_instant(events[0]["at"]),
        "last_seen_at": ended,
    }
    return session, events


def summary_tokens() -> dict[str, int]:
    """A normal end's summary call over a typical log, as the worker's prompt builder makes
    it, and a typical answer, in estimated tokens (about four characters a token)."""
    from functions.psychologist.prompts import compact_view, summary_call
    from functions.psychologist.signals import find_signals
    from shared.gemini import estimate_tokens

    session, events = _typical_events()
    call = summary_call(session, find_signals(events, session), events)
    ids = [event["id"] for event in events[-2:]]
    answer = {claim: {"text": text, "eventIds": ids} for claim, text in SUMMARY_ANSWER.items()}
    return {
        "events": len(events),
        "shown": len(compact_view(events)),
        "input_tokens": call.estimated_tokens,
        "output_tokens": estimate_tokens(json.dumps(answer)),
    }


def _per_thousand(usd: float, sessions: int) -> float:
    return round(usd * 1_000 / sessions, 4)


def dollars(seeded: list[dict[str, Any]], first: dict[str, Any]) -> dict[str, Any]:
    """Dollars per 1,000 ended sessions, by part: summaries of normal and of abnormal ends,
    embeddings and labels."""
    table = price_table()
    discount = table["batch"]["discount"]
    summary_model = next(d["model"] for d in seeded if d["source"] == "summary")
    analysis_model = next(d["model"] for d in seeded if d["source"] == "analysis")
    tokens = summary_tokens()
    sessions = len(seeded)
    normal = sum(d["source"] == "summary" and d["status"] == "summarised" for d in seeded)
    abnormal = sum(d["source"] == "analysis" for d in seeded)
    summary_price = batch_price(table["models"][summary_model], discount)
    one_summary = cost_usd({**tokens, "cached_tokens": 0}, summary_price)
    answer = {"input_tokens": 0, "cached_tokens": 0, "output_tokens": tokens["output_tokens"]}
    one_extra = cost_usd(answer, batch_price(table["models"][analysis_model], discount))
    spent = first["spent"]
    embedding_model = "gemini-embedding-001"
    embedded = spent["embedding_tokens"] * table["embeddings"][embedding_model]["input"] / 1e6
    label_usage = {
        "input_tokens": spent["input_tokens"],
        "cached_tokens": 0,
        "output_tokens": spent["output_tokens"],
    }
    labels = cost_usd(label_usage, table["models"][analysis_model])
    parts = {
        "normal_summaries": _per_thousand(normal * one_summary, sessions),
        "abnormal_summaries": _per_thousand(abnormal * one_extra, sessions),
        "embeddings": _per_thousand(embedded, sessions),
        "labels": _per_thousand(labels, sessions),
    }
    total = round(sum(parts.values()), 4)
    return {
        "summary_model": summary_model,
        "analysis_model": analysis_model,
        "embedding_model": embedding_model,
        "typical_summary": tokens,
        "normal_ends": normal,
        "abnormal_ends": abnormal,
        "per_normal_summary_usd": one_summary,
        "per_abnormal_summary_usd": one_extra,
        "per_1000_sessions_usd": parts,
        "total_per_1000_usd": total,
        "costliest": max(parts, key=lambda part: parts[part]),
        "goal_per_1000_usd": GOAL_USD_PER_1000,
        "met": total <= GOAL_USD_PER_1000,
    }


def _per_session(refresh: dict[str, Any], sessions: int) -> dict[str, Any]:
    return {
        **refresh,
        "reads_per_session": round(refresh["reads"] / sessions, 3),
        "writes_per_session": round(refresh["writes"] / sessions, 3),
    }


def _label_requests(gemini: Any, since: int) -> int:
    from cli.gemini_stand_in import is_pattern_label

    return sum(is_pattern_label(recorded) for recorded in gemini.requests[since:])


def repeated(until: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    """The refresh again over the same window: as deployed, and, if that failed, with
    Firestore calls given `LONG_QUERY_S` (`FIRESTORE_TIMEOUT_S`), to measure it anyway."""
    default = refreshed(until)
    if "failed" not in default:
        return _per_session(default, SESSIONS), {"completed": True}
    longer = refreshed(until, {"FIRESTORE_TIMEOUT_S": str(LONG_QUERY_S)})
    if "failed" in longer:
        raise RuntimeError(f"the repeated refresh failed: {longer}")
    figures = {**_per_session(longer, SESSIONS), "firestore_timeout_s": LONG_QUERY_S}
    return figures, {"completed": False, **default}


def patterns(gemini: Any) -> dict[str, Any]:
    """Seed, refresh twice in fresh processes, check the coverage, price it."""
    until = datetime.now(UTC).replace(microsecond=0)
    seeded = summaries(SESSIONS, until)
    seed_summaries(seeded)
    embeddings, labels = len(gemini.embedding_requests), len(gemini.requests)
    measured = refreshed(until)
    if "failed" in measured:
        raise RuntimeError(f"the first refresh failed: {measured}")
    first = _per_session(measured, SESSIONS)
    first["embedding_requests"] = len(gemini.embedding_requests) - embeddings
    first["label_requests"] = _label_requests(gemini, labels)
    covered = coverage(seeded, first)
    repeat, as_deployed = repeated(until)
    met = first["wall_s"] <= GOAL_WALL_S and first["rss_peak_mib"] <= GOAL_MIB
    return {
        "sessions": SESSIONS,
        "window_days": WINDOW_DAYS,
        "shares": {**SHARES, CLEAN: round(1 - sum(SHARES.values()), 4)},
        "first": first,
        "repeat": repeat,
        "repeat_as_deployed": as_deployed,
        "coverage": covered,
        "cost": dollars(seeded, first),
        "goals": {"wall_s": GOAL_WALL_S, "peak_mib": GOAL_MIB},
        "met": met
        and as_deployed["completed"]
        and repeat["wall_s"] <= GOAL_WALL_S
        and repeat["rss_peak_mib"] <= GOAL_MIB,
    }


if __name__ == "__main__":
    print(json.dumps(refresh_alone(sys.argv[1], datetime.fromisoformat(sys.argv[2]))))
