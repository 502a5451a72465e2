"""Deterministic signals found in a session log, each with the events behind it.

They ground the model: it is shown what can be counted for certain before it guesses why.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from functions.psychologist.documents import Event, Session, SessionState, Signal

REOPENS_TO_SIGNAL = 2
REPEATED_ERRORS_TO_SIGNAL = 3
EVENTS_BEFORE_END = 5
MAX_SIGNALS = 20
EVENT_IDS_SHOWN = 10
"""A signal names its first and last events, never thousands: every prompt carries the
signals, so they must stay small whatever the size of the log."""


TOOL_ERROR = "tool.error"
"""A failed tool call's event type, whichever way its source said it failed: the one thing
every tool-error count counts (the session row, the analysis, the signals)."""


def tool_errors(events: Iterable[Event]) -> int:
    return sum(1 for event in events if event["type"] == TOOL_ERROR)


Counted = tuple[list[str], Signal]
"""A signal and every event behind it (the signal itself names at most EVENT_IDS_SHOWN)."""


def _signal(kind: str, agent: str, summary: str, event_ids: list[str]) -> Counted:
    half = EVENT_IDS_SHOWN // 2
    shown = event_ids if len(event_ids) <= EVENT_IDS_SHOWN else event_ids[:half] + event_ids[-half:]
    return event_ids, {"kind": kind, "agent": agent, "summary": summary, "eventIds": shown}


def reopened_tasks(events: list[Event]) -> list[Counted]:
    reopens: dict[tuple[str, str], list[str]] = defaultdict(list)
    for event in events:
        task = event.get("taskId")
        if event["type"] == "task.reopened" and task:
            reopens[(event["agent"], task)].append(event["id"])
    return [
        _signal("task_reopened", agent, f"task {task} reopened {len(ids)} times", ids)
        for (agent, task), ids in reopens.items()
        if len(ids) >= REOPENS_TO_SIGNAL
    ]


def _error_key(event: Event) -> str:
    data = event.get("data") or {}
    tool = str(data.get("tool") or data.get("name") or "")
    message = str(data.get("error") or data.get("message") or data.get("code") or "")
    return f"{tool}: {message[:200]}"


def repeated_tool_errors(events: list[Event]) -> list[Counted]:
    errors: dict[tuple[str, str], list[str]] = defaultdict(list)
    for event in events:
        if event["type"] == TOOL_ERROR:
            errors[(event["agent"], _error_key(event))].append(event["id"])
    return [
        _signal("tool_error_repeated", agent, f"the same tool error {len(ids)} times ({key})", ids)
        for (agent, key), ids in errors.items()
        if len(ids) >= REPEATED_ERRORS_TO_SIGNAL
    ]


def last_events_before_abnormal_end(events: list[Event], session: Session) -> list[Counted]:
    if session.get("state") != SessionState.CLOSED_ABNORMALLY or not events:
        return []
    tail = events[-EVENTS_BEFORE_END:]
    agents = sorted({event["agent"] for event in tail})
    return [
        _signal(
            "last_events_before_abnormal_end",
            agent,
            f"the session ended {session.get('cause')}; the last events came before it",
            [event["id"] for event in tail if event["agent"] == agent],
        )
        for agent in agents
    ]


def find_signals(events: list[Event], session: Session) -> list[Signal]:
    """`events` in log order (by `at`, then id). The abnormal end first, then the
    strongest signals, at most MAX_SIGNALS."""
    ending = last_events_before_abnormal_end(events, session)
    counted = sorted(
        [*reopened_tasks(events), *repeated_tool_errors(events)], key=lambda found: -len(found[0])
    )
    return [signal for _, signal in [*ending, *counted][:MAX_SIGNALS]]


def every_signal(events: list[Event], session: Session) -> list[Counted]:
    """Every signal of the log, never cut to MAX_SIGNALS: what is compared across sessions."""
    return [
        *last_events_before_abnormal_end(events, session),
        *reopened_tasks(events),
        *repeated_tool_errors(events),
    ]


def signal_counts(every: list[Counted]) -> dict[str, dict[str, int]]:
    """{agent: {kind: how many signals of it}}."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _, signal in every:
        counts[signal["agent"]][signal["kind"]] += 1
    return {agent: dict(kinds) for agent, kinds in counts.items()}


def kinds_by_event(every: list[Counted]) -> dict[str, set[str]]:
    """{event id: the kinds of the signals it stands behind}."""
    kinds: dict[str, set[str]] = defaultdict(set)
    for event_ids, signal in every:
        for event_id in event_ids:
            kinds[event_id].add(signal["kind"])
    return dict(kinds)
