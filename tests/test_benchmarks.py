"""The bench's round-trip counter sees every call a Firestore client makes, and the
documents each reads or writes; the bench prints the tables of the sections it measured."""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from google.cloud.firestore_v1 import FieldFilter
from google.cloud.firestore_v1.types import Document, Write

from benchmarks.auto_adopt import acted
from benchmarks.counting import CallCounter
from benchmarks.launch import RequestLines, ThreadReads
from benchmarks.pattern_rate import Arms
from benchmarks.patterns import WINDOW_DAYS, summaries
from benchmarks.processes import ROOT
from benchmarks.reporting import table
from benchmarks.telemetry import (
    CODEX_CONVERSATION,
    CODEX_ID_KEYS,
    CODEX_TURN_EVERY_S,
    NANOS,
    _codex_turn_exports,
    _ids_in,
    codex_turns,
)
from benchmarks.trials import _harm, _two_sided, log_e_values_at
from cli.meaning import FAILURE_FAMILIES
from functions.loop.safe import HARM, HELP_AND_HARM, Table, log_e_value
from shared.clients import db
from shared.retention import utcnow
from shared.store import counted


def test_every_firestore_call_of_a_client_passes_the_channel_interceptors(
    counter: CallCounter,
) -> None:
    db().document("bench/one").set({"n": 1})
    list(db().get_all([db().document("bench/one"), db().document("bench/two")]))
    list(db().collection("bench").stream())
    assert counter.calls == ["Commit", "BatchGetDocuments", "RunQuery"]


def test_the_counter_counts_the_documents_a_call_reads_and_writes(counter: CallCounter) -> None:
    batch = db().batch()
    for n in range(3):
        batch.set(db().document(f"bench/{n}"), {"n": n})
    batch.commit()
    list(db().get_all([db().document("bench/0"), db().document("bench/1")]))
    list(db().collection("bench").limit(5).stream())
    list(db().collection("bench").stream())
    assert (counter.writes, counter.reads) == (3, 2 + 5 + 1)


def test_an_aggregation_is_counted_a_read_per_thousand_entries_it_matched(
    counter: CallCounter,
) -> None:
    for start in range(0, 2_500, 500):
        batch = db().batch()
        for n in range(start, start + 500):
            batch.set(db().document(f"counted/{n}"), {"n": n})
        batch.commit()
    counter.clear()
    assert counted(db().collection("counted")) == 2_500
    assert (counter.calls, counter.reads) == (["RunAggregationQuery"], 3)
    counter.clear()
    assert counted(db().collection("counted").where(filter=FieldFilter("n", "<", 10))) == 10
    assert counter.reads == 1


def test_each_document_created_with_an_expiry_is_counted_as_a_delete_to_come(
    counter: CallCounter,
) -> None:
    later = utcnow() + timedelta(hours=1)
    batch = db().batch()
    batch.create(db().document("ttl/created"), {"expires_at": later})
    batch.set(db().document("ttl/set"), {"expires_at": later})
    batch.set(db().document("ttl/kept"), {"n": 1})
    batch.commit()
    assert counter.expiring == 2
    counter.clear()
    db().document("ttl/created").update({"expires_at": later + timedelta(hours=1)})
    snapshot = db().document("ttl/set").get()
    db().document("ttl/set").update(
        {"expires_at": later}, option=db().write_option(last_update_time=snapshot.update_time)
    )
    assert counter.expiring == 0


@pytest.mark.pure
def test_a_run_of_some_sections_prints_the_tables_it_has() -> None:
    """`--only throughput` into a new results file prints its table, not a KeyError."""
    recorded = json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8"))
    printed = table({"throughput": recorded["throughput"]})
    assert printed.splitlines()[0].startswith("Throughput of one instance")
    assert "research_status" in printed
    assert "Warm latency" not in printed
    assert table(recorded).startswith("Warm latency")


@pytest.mark.pure
def test_a_launch_run_alone_prints_the_launchers_table() -> None:
    recorded = json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8"))
    printed = table({"launch": recorded["launch"]}).splitlines()
    assert printed[0].startswith("evidencia launch before Claude Code's first model request")
    assert any(line.strip().startswith("wait:") and "a listener" in line for line in printed)


@pytest.mark.pure
def test_each_request_line_takes_the_documents_its_own_thread_read() -> None:
    """The launcher's polls are counted apart from the worker freezing the evaluation on
    another thread at the same time."""
    reads = ThreadReads()
    lines = RequestLines(reads, offset=0.0)
    get = SimpleNamespace(method="/google.firestore.v1.Firestore/BatchGetDocuments")
    commit = SimpleNamespace(method="/google.firestore.v1.Firestore/Commit")
    evaluation = "projects/p/databases/(default)/documents/orgs/o/agents/a/evaluations/7"

    def worker() -> None:
        reads._count(get, SimpleNamespace(documents=["x"] * 5))
        write = Write(update=Document(name=evaluation))
        reads._count(commit, SimpleNamespace(writes=[write]))

    reads._count(get, SimpleNamespace(documents=["summary", "details"]))
    other = threading.Thread(target=worker)
    other.start()
    other.join()
    record = logging.LogRecord("evidencia", logging.INFO, "", 0, "GET /x/7 409", None, None)
    record.httpRequest = {"latency": "0.012000s"}
    lines.handle(record)

    [line] = lines.lines
    assert (line.method, line.status, line.reads, line.latency_s) == ("GET", 409, 2, 0.012)
    assert reads.evaluation_writes == [evaluation]


def _spans(turn: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        span
        for signal, body in turn
        if signal == "traces"
        for resource in body["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]


def _parent_names(spans: list[dict[str, Any]]) -> list[tuple[str, str]]:
    names = {span["spanId"]: span["name"] for span in spans}
    return sorted((span["name"], names.get(span["parentSpanId"], "")) for span in spans)


@pytest.mark.pure
def test_each_replayed_codex_turn_has_ids_of_its_own_a_turn_later_in_one_conversation() -> None:
    """The Codex replay gives every turn fresh trace, span, call and turn ids, each span
    under the same parent as in the capture, its times a turn later, and keeps one
    conversation id (not the captured one) for the whole session."""
    turns, session = codex_turns(2)
    first, second = (_ids_in([body for _, body in turn], set(), CODEX_ID_KEYS) for turn in turns)
    assert len(first) == len(second) > 800
    assert not first & second
    assert [signal for signal, _ in turns[0]] == ["traces", "logs", "traces", "metrics"]
    captured = _parent_names(_spans(_codex_turn_exports()))
    assert _parent_names(_spans(turns[0])) == _parent_names(_spans(turns[1])) == captured
    starts = [
        next(int(s["startTimeUnixNano"]) for s in _spans(turn) if s["name"] == "run_turn")
        for turn in turns
    ]
    assert starts[1] - starts[0] == CODEX_TURN_EVERY_S * NANOS
    texts = [json.dumps(turn) for turn in turns]
    assert session != CODEX_CONVERSATION
    assert all(text.count(session) == texts[0].count(session) > 50 for text in texts)
    assert CODEX_CONVERSATION not in texts[0]


@pytest.mark.pure
def test_the_patterns_bench_seeds_its_shares_of_sessions_spread_over_the_window() -> None:
    """A tenth abnormal ends and a fifth normal ends with a failure, a hundredth not
    summarised, each failure a known paraphrase with words of its own, every day of the
    window holding its share of the ends."""
    until = datetime(2026, 12, 5, tzinfo=UTC)
    seeded = summaries(1_000, until)
    kinds = Counter(
        (d["state"], d["status"], d["failure"] is not None, d["source"]) for d in seeded
    )
    assert kinds == {
        ("closed_abnormally", "summarised", True, "analysis"): 100,
        ("closed", "summarised", True, "summary"): 200,
        ("closed", "not_summarised", False, "summary"): 10,
        ("closed", "summarised", False, "summary"): 690,
    }
    failures = [d["failure"]["text"] for d in seeded if d["failure"]]
    known = [text for family in FAILURE_FAMILIES.values() for text in family]
    assert all(any(f.startswith(k.rstrip(".")) for k in known) for f in failures)
    assert len(set(failures)) > 0.9 * len(failures)
    ends = [d["ended_at"] for d in seeded]
    assert until - timedelta(days=WINDOW_DAYS) < min(ends)
    assert max(ends) < until
    days = Counter((until - end).days for end in ends)
    assert sorted(days) == list(range(WINDOW_DAYS))
    assert max(days.values()) - min(days.values()) <= 1


@pytest.mark.pure
def test_the_benchs_e_value_at_any_ratio_is_the_served_one() -> None:
    """The pattern-rate simulation reads coverage as the e-value against the true ratio
    staying below 20; at every ratio, and for the guardrail's bets too, it is the served
    `log_e_value`, arms empty or not."""
    rng = random.Random(55)  # noqa: S311 - seeded tables for a test
    for _ in range(200):
        n1, n0 = rng.randint(0, 300), rng.randint(0, 300)
        a, b = rng.randint(0, n1), rng.randint(0, n0)
        ratio = rng.choice([0.001, 0.3, 0.5, 0.75, 1.0, 1.5, 3.0, 999.0])
        shifts = rng.choice([HELP_AND_HARM, HARM])
        treated, treated_n, control, control_n = (np.array([[float(x)]]) for x in (a, n1, b, n0))
        simulated = log_e_values_at(treated, treated_n, control, control_n, ratio, shifts)[0, 0]
        assert simulated == pytest.approx(
            log_e_value(Table(a, n1, b, n0), ratio, shifts), abs=1e-9
        ), (a, n1, b, n0, ratio)


@pytest.mark.pure
def test_an_observed_ratio_is_the_true_one_when_recall_and_summaries_match_across_arms() -> None:
    assert Arms(0.3, 0.5).observed_ratio == pytest.approx(0.5)
    assert Arms(0.3, 0.5, (0.9, 0.6)).observed_ratio == pytest.approx(0.75)
    assert Arms(0.3, 0.5, summarised=(0.95, 0.5)).observed_ratio == pytest.approx(0.95)


@pytest.mark.pure
def test_a_trial_that_would_adopt_is_stopped_first_when_the_guardrail_finds_harm_earlier() -> None:
    """Arms taking turns: for 200 sessions the treated show the pattern at 52 % and the
    control at 30 % (the guardrail finds harm, the two-sided read never says worse), then
    only control sessions show it (the two-sided read comes to say improved). The sweep
    stops the trial at the harm and never adopts it."""
    treated = np.tile([True, False], 1_000)
    early = [(i * rate) // 100 != ((i + 1) * rate) // 100 for i in range(100) for rate in (52, 30)]
    shown = np.array(early + [not arm for arm in treated[200:]])

    def cumulative(x: Any) -> Any:
        return np.cumsum(x, dtype=np.float64)[None, :]

    counts = [cumulative(shown & treated), cumulative(treated)]
    counts += [cumulative(shown & ~treated), cumulative(~treated)]
    verdicts = _two_sided(*counts)
    assert (verdicts == -1).any()
    assert not (verdicts == 1).any()
    adopted, stopped = acted(*counts)
    assert not np.isfinite(adopted[0])
    assert stopped[0] == 1 + int(_harm(*counts)[0].argmax()) < 200
