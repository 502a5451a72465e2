"""The Patterns page in a real browser: failures that recur across an agent's sessions,
ranked as the API ranks them, each with its share, interval, weekly trend and cost; opened,
its examples beside the events they cite (read through the audit read), its member
sessions, hypotheses and refused claims; a refresh for members, followed until it settles.

The sessions are ingested through HTTP (their events are real, so the audit read finds
them) and their summaries seeded as the analysis worker writes them, each citing its
session's own events (`tests/psychologist/test_patterns.py` seeds them the same way); a
refresh then runs through HTTP with the real worker, the Gemini test server's embeddings
(a stand-in for meaning) and its label answers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from cli.gemini_stand_in import PATTERN_LABEL, Gate
from cli.meaning import FAILURE_FAMILIES
from functions.psychologist import store
from tests.agentconnect.conftest import AGENT as CONNECT_AGENT
from tests.api import wait_for
from tests.console.conftest import Console, both_apis
from tests.console.test_home import WIDTHS, layout_problems
from tests.loop.test_adoption import sweep
from tests.loop.tried import IMPROVED, Tried, seed_arms
from tests.psychologist.conftest import Log, Psychologist, hypothesis

AGENT = "builder"
PLANTED = {"timeout": (4, 0.01), "permission": (3, 0.02), "failing_tests": (2, 0.5)}
"""Failure family → (sessions, dollars each session spent): the smallest costs the most, so
that ranking by cost differs from ranking by sessions."""
CLEAN = 2
ANALYSED = "timeout-0"
"""A session ended abnormally and analysed, so that its pattern names a hypothesis."""
OUTSIDE = {
    "title": "Timeouts",
    "description": "Runs time out.",
    "sugestao": "Set a shorter timeout.",
    "evidence": [{"sessionId": "timeout-0", "eventIds": ["not-cited"], "claim": "It hung."}],
}
"""A label whose claim cites an event the session's summary does not: refused."""


@dataclass
class Planted:
    cited: dict[str, list[str]] = field(default_factory=dict)
    """Session → the ids of the events its summary cites."""
    hypothesis_id: str = ""


def summary(
    psy: Psychologist, session_id: str, log: Log, failure: str | None, ended_at: datetime
) -> list[str]:
    """A session's summary as the worker writes one, citing the session's own events: the
    task its first, the ending its last, the failure its tool error and model call. The ids
    it cites, sorted."""
    ids = [event["id"] for event in log.events]
    failing = [e["id"] for e in log.events if e["type"] in ("tool.error", "model.call")]
    status = "summarised" if session_id != "unsummarised" else "not_summarised"
    store.summary_ref(psy.project, session_id).set(
        {
            "session_id": session_id,
            "agent": AGENT,
            "ended_at": ended_at,
            "state": "closed_abnormally" if failure else "closed",
            "status": status,
            "reason": None if status == "summarised" else "over_budget",
            "task": {"text": "Fix the build.", "event_ids": ids[:1]},
            "ending": {"text": "It ended.", "event_ids": ids[-1:]},
            "failure": {"text": failure, "event_ids": failing} if failure else None,
            "refused": [],
            "model": "gemini-stand-in",
            "source": "analysis",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "created_at": ended_at,
        }
    )
    return sorted({ids[0], ids[-1], *failing})


def session_log(cost: float, error: str | None) -> Log:
    log = Log()
    log.add(AGENT, "task.opened", task="T-1")
    usage = {"input_tokens": 100, "output_tokens": 20, "cost_usd": cost}
    log.add(AGENT, "model.call", task="T-1", usage=usage)
    if error:
        log.add(AGENT, "tool.error", task="T-1", tool="make", error=error)
    log.add(AGENT, "task.closed", task="T-1")
    return log


def planted(psy: Psychologist) -> Planted:
    """Planted failures in sessions whose events are ingested, one of them analysed, and a
    summary for each (one session left unsummarised, as over budget)."""
    now = datetime.now(UTC)
    seeded = Planted()
    logs: dict[str, tuple[Log, str | None, float]] = {}
    for family, (count, cost) in PLANTED.items():
        for n in range(count):
            sentence = FAILURE_FAMILIES[family][n]
            logs[f"{family}-{n}"] = (session_log(cost, sentence), sentence, n + 1)
    for n in range(CLEAN):
        logs[f"clean-{n}"] = (session_log(0.001, None), None, n + 1)
    logs["unsummarised"] = (session_log(0.001, None), None, 2)
    for session_id, (log, _, _) in logs.items():
        assert psy.ingest(session_id, log.events).status_code == 200
        # What a session's telemetry reports of its tokens and cost, as ingestion keeps it.
        cost = next(e["data"]["usage"] for e in log.events if e["type"] == "model.call")
        store.session_ref(psy.project, session_id).update({"usage": cost})
    error = [e["id"] for e in logs[ANALYSED][0].events if e["type"] == "tool.error"]
    psy.world.gemini.answer_json({"hypotheses": [hypothesis(AGENT, error)]})
    ended = psy.end(ANALYSED, "closed_abnormally", "timeout")
    assert psy.settled(ended.json()["analysisId"])["status"] == "completed"
    (analysed,) = psy.hypotheses(sessionId=ANALYSED).json()
    seeded.hypothesis_id = analysed["id"]
    for session_id, (log, failure, days) in logs.items():
        at = now - timedelta(days=days * 4, hours=1)
        seeded.cited[session_id] = summary(psy, session_id, log, failure, at)
    return seeded


def refreshed(psy: Psychologist) -> dict[str, Any]:
    started = psy.api.call("POST", psy.path("/patterns/refresh"), {}, token=psy.member)
    assert started.status_code == 202, started.text
    path = psy.path(f"/patterns/refreshes/{started.json()['id']}")

    def done() -> dict[str, Any] | None:
        body: dict[str, Any] = psy.api.call("GET", path, token=psy.viewer).json()
        return body if body["status"] in ("completed", "failed") else None

    settled: dict[str, Any] = wait_for(done, timeout=60)
    assert settled["status"] == "completed", settled
    return settled


def read(psy: Psychologist, pattern_id: str) -> dict[str, Any]:
    reply = psy.api.call("GET", psy.path(f"/patterns/{pattern_id}"), token=psy.viewer)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def ready(psy: Psychologist) -> Planted:
    """The planted corpus, refreshed; the largest pattern's label refused twice (untitled)."""
    seeded = planted(psy)
    psy.world.gemini.answer_side(PATTERN_LABEL, OUTSIDE)
    psy.world.gemini.answer_side(PATTERN_LABEL, OUTSIDE)
    refreshed(psy)
    return seeded


def percent(share: float) -> str:
    value = share * 100
    return f"{value:.1f}%" if 0 < value < 10 else f"{round(value)}%"


def share_words(sessions: dict[str, Any]) -> str:
    return (
        f"{sessions['matching']} of {sessions['total']} sessions ({percent(sessions['share'])}; "
        f"95% interval {percent(sessions['low'])} to {percent(sessions['high'])})"
    )


def test_the_list_is_ranked_as_the_api_ranks_it_with_coverage_shares_trends_and_cost(
    psy: Psychologist, console: Console
) -> None:
    """Reached from home: the coverage line first, then the patterns in the API's order,
    each with k of n sessions and its interval written out, a weekly trend whose words say
    each week's counts, cost and dates; ranked by cost on request."""
    ready(psy)
    served = psy.patterns()
    by_cost = psy.patterns(sort="cost")
    ranked = [pattern["id"] for pattern in served["patterns"]]
    costly = [pattern["id"] for pattern in by_cost["patterns"]]
    assert len(ranked) == len(PLANTED)
    assert costly != ranked, "the corpus ranks differently by cost"
    console.open()
    console.sign_in(psy.viewer)
    project = console.page.locator(f'li.tenant[data-id="{psy.project}"]')
    project.get_by_role("link", name="Patterns").click()
    expect(console.page.locator("h1")).to_have_text("Patterns")
    expect(console.page.locator("nav a[aria-current=page]")).to_have_text("Patterns")
    summarised = sum(count for count, _ in PLANTED.values()) + CLEAN
    assert served["coverage"] == {"sessionsEnded": summarised + 1, "sessionsSummarised": summarised}
    expect(console.page.locator("p.coverage")).to_have_text(
        f"{summarised} of {summarised + 1} ended sessions summarised in the last 30 days. "
        "1 was not summarised (over budget or a failed summary), and still counted in every "
        "share below. As of the last refresh."
    )
    cards = console.page.locator("ol.patterns article.pattern")
    expect(cards).to_have_count(len(ranked))
    assert [cards.nth(i).get_attribute("data-id") for i in range(len(ranked))] == ranked
    for index, pattern in enumerate(served["patterns"]):
        card = cards.nth(index)
        expect(card.locator("h2 a")).to_have_text(pattern["title"] or "Untitled")
        expect(card.locator(".share")).to_have_text(share_words(pattern["sessions"]))
        expect(card.locator(".cost")).to_contain_text(f"${pattern['cost']['usd']:.4f}")
        weeks = card.locator("ol.trend li")
        expect(weeks).to_have_count(len(pattern["weekly"]))
        for n, week in enumerate(pattern["weekly"]):
            expect(weeks.nth(n)).to_have_attribute("data-matching", str(week["matching"]))
            expect(weeks.nth(n).locator(".visually-hidden")).to_have_text(
                re.compile(rf"^Week of .+: {week['matching']} of {week['total']} sessions?$")
            )
        seen = card.locator(".seen time")
        expect(seen).to_have_count(2)
        in_locale = "(el) => el.textContent === new Date(el.dateTime).toLocaleDateString()"
        assert [time.evaluate(in_locale) for time in seen.all()] == [True, True]
    untitled = cards.filter(has=console.page.locator("p.central"))
    expect(untitled).to_have_count(1)
    expect(untitled.locator("h2 a")).to_have_text("Untitled")
    expect(untitled.locator("p.central")).to_have_text(re.compile(r"^\S.+\S$"))
    assert console.accessibility_violations() == []

    console.page.get_by_label("Rank by").select_option("cost")
    console.page.get_by_role("button", name="Show").click()
    expect(console.page.locator("p.ranking")).to_have_text(
        "Ranked by what their sessions cost, most first."
    )
    expect(cards.first).to_have_attribute("data-id", costly[0])
    assert [cards.nth(i).get_attribute("data-id") for i in range(len(costly))] == costly
    assert console.errors() == []


def test_a_pattern_shows_its_examples_beside_their_cited_events_and_what_was_refused(
    psy: Psychologist, console: Console
) -> None:
    """Opened, the untitled pattern shows its central claim beside each event it cites
    (found by the audit read), its members linking to their sessions, the analysed
    session's hypothesis, and the two refused labels' claims as not served; a titled one
    shows its suggested instruction change and examples from several sessions."""
    seeded = ready(psy)
    patterns = psy.patterns()["patterns"]
    untitled = next(p for p in patterns if p["title"] is None)
    detail = read(psy, untitled["id"])
    assert seeded.hypothesis_id in untitled["hypothesisIds"]
    console.open()
    console.sign_in(psy.viewer)
    console.show("patterns", project=psy.project)
    console.page.locator(f'article.pattern[data-id="{untitled["id"]}"] h2 a').click()
    opened = console.page.locator("article.pattern.open")
    expect(opened.locator("h2")).to_have_text("Untitled open")
    expect(opened.locator("section.label")).to_contain_text(
        "Untitled: no label the model wrote held"
    )
    examples = opened.locator("li.example")
    expect(examples).to_have_count(len(untitled["evidence"]))
    for index, claim in enumerate(untitled["evidence"]):
        example = examples.nth(index)
        expect(example.locator(".claim p").first).to_have_text(claim["claim"])
        events = example.locator("div.evidence li.event")
        expect(events).to_have_count(len(claim["eventIds"]))
        assert sorted(claim["eventIds"]) == seeded.cited[claim["sessionId"]]
        for n, event_id in enumerate(claim["eventIds"]):
            expect(events.nth(n)).to_have_attribute("data-event-id", event_id)
            expect(events.nth(n)).to_have_class("event")
            expect(events.nth(n)).to_contain_text(f" by {AGENT}")
        expect(example.locator("li.event", has_text="tool.error by builder")).to_have_count(1)
    members = opened.locator("table.members tbody tr")
    expect(members).to_have_count(len(detail["members"]))
    for index, member in enumerate(detail["members"]):
        row = members.nth(index)
        expect(row).to_have_attribute("data-session", member["sessionId"])
        expect(row.locator("td").first).to_have_text(member["summary"])
    refused = opened.locator("ol.refused li")
    expect(refused).to_have_count(2)
    expect(refused.locator(".reason")).to_have_text(
        ["Not served: events not-cited are not cited by timeout-0's summary."] * 2
    )
    expect(refused.first.locator("q")).to_have_text("It hung.")
    link = opened.locator(f'li[data-hypothesis="{seeded.hypothesis_id}"] a')
    expect(opened.locator("section.related")).to_contain_text(
        "The instructions don't say when to consider the task done."
    )
    expect(opened.locator("p.trial")).to_have_text("No trial has been started from this pattern.")
    assert console.accessibility_violations() == []
    link.click()
    expect(console.page.locator("h1")).to_have_text("Hypotheses")
    expect(console.page.get_by_label("Session")).to_have_value(ANALYSED)
    expect(console.page.locator("article.hypothesis")).to_have_attribute(
        "data-id", seeded.hypothesis_id
    )
    console.page.go_back()
    opened.locator(f'table.members tr[data-session="{ANALYSED}"] a').click()
    expect(console.page.get_by_label("Session")).to_have_value(ANALYSED)

    assert console.errors() == []


def test_a_titled_pattern_shows_its_suggestion_and_examples_from_several_sessions(
    psy: Psychologist, console: Console
) -> None:
    ready(psy)
    patterns = psy.patterns()["patterns"]
    console.open()
    console.sign_in(psy.viewer)
    opened = console.page.locator("article.pattern.open")
    titled = next(p for p in patterns if p["title"] is not None)
    console.show("patterns", project=psy.project, pattern=titled["id"])
    expect(opened.locator("h2")).to_have_text(f"{titled['title']} open")
    expect(opened.locator("section.label dd").nth(1)).to_have_text(titled["sugestao"])
    expect(opened.locator("li.example")).to_have_count(len(titled["evidence"]))
    cited = opened.locator("div.evidence li.event")
    expect(cited).to_have_count(sum(len(claim["eventIds"]) for claim in titled["evidence"]))
    expect(opened.locator("li.event.missing")).to_have_count(0)
    expect(opened.locator("section.refused")).to_contain_text(
        "None: every claim of its label held."
    )
    assert console.errors() == []


def test_a_viewer_is_not_offered_the_refresh_and_is_told_why(
    psy: Psychologist, console: Console
) -> None:
    access = psy.api.call("GET", psy.path("/access"), token=psy.viewer).json()
    (refresh,) = [op for op in access["operations"] if op["path"].endswith("/patterns/refresh")]
    assert refresh["allowed"] is False
    console.open()
    console.sign_in(psy.viewer)
    console.show("patterns", project=psy.project)
    expect(console.page.locator("p.cannot-refresh")).to_have_text(
        f"Signed in as vic (viewer): you may read the patterns, not refresh them. "
        f"{refresh['reason']}"
    )
    expect(console.page.get_by_role("button", name="Refresh")).to_have_count(0)
    expect(console.page.locator("p.coverage")).to_contain_text("No ended session counted yet")
    assert console.errors() == []


SETTLE_MS = 30_000
"""How long a released refresh may take to settle (its other label calls and its writes,
and the page's next poll a second later) on a machine running the whole suite."""


def test_a_member_refreshes_and_follows_its_progress_until_it_settles(
    psy: Psychologist, console: Console
) -> None:
    """Before any refresh, no pattern; the member's Refresh shows the refresh running while
    its first label call is held, then what it changed, and the list read again."""
    planted(psy)
    gate = Gate()
    psy.world.gemini.gates.append(gate)
    psy.world.gemini.answer_side(PATTERN_LABEL, OUTSIDE, gate=gate)
    console.open()
    console.sign_in(psy.member)
    console.show("patterns", project=psy.project)
    expect(console.page.locator("p.coverage")).to_contain_text("No ended session counted yet")
    expect(console.page.locator("ol.patterns")).to_have_count(0)
    console.page.get_by_role("button", name="Refresh").click()
    status = console.page.locator("p.refresh-status")
    expect(status).to_have_attribute("data-status", "running")
    expect(status).to_have_text(
        "Refreshing: embedding the new failure sentences, grouping and labelling…"
    )
    expect(console.page.get_by_role("button", name="Refresh")).to_be_disabled()
    gate.open()
    expect(status).to_have_attribute("data-status", "completed", timeout=SETTLE_MS)
    ended = sum(count for count, _ in PLANTED.values()) + CLEAN + 1
    expect(status).to_contain_text(
        f": 3 new patterns, 0 kept, 3 labelled, over {ended} ended sessions "
        f"({ended - 1} summarised)."
    )
    expect(console.page.locator("ol.patterns article.pattern")).to_have_count(len(PLANTED))
    expect(console.page.locator("p.coverage")).to_contain_text(
        f"{ended - 1} of {ended} ended sessions summarised"
    )
    expect(console.page.get_by_role("button", name="Refresh")).to_be_enabled()
    assert console.accessibility_violations() == []
    assert console.errors() == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_patterns_page_lays_out_at_a_desktop_and_a_phone_width(
    psy: Psychologist, console: Console, width: int
) -> None:
    ready(psy)
    titled = next(p for p in psy.patterns()["patterns"] if p["title"] is not None)
    console.page.set_viewport_size({"width": width, "height": 900})
    console.open()
    console.sign_in(psy.member)
    console.show("patterns", project=psy.project)
    console.page.locator("ol.patterns article.pattern").first.wait_for()
    console.page.get_by_role("button", name="Refresh").wait_for()
    problems = layout_problems(console.page)
    assert problems == [], (width, problems)
    assert console.accessibility_violations() == [], width
    console.snapshot(f"patterns-{width}")
    console.show("patterns", project=psy.project, pattern=titled["id"])
    console.page.locator("div.evidence li.event").first.wait_for()
    problems = layout_problems(console.page)
    assert problems == [], (width, problems)
    assert console.accessibility_violations() == [], width
    console.snapshot(f"patterns-pattern-{width}")
    assert console.errors() == []


def as_js(number: float) -> str:
    """A number as JavaScript writes it: 0.0 as "0", others in their shortest form."""
    return str(int(number)) if number == int(number) else repr(number)


def test_an_admin_starts_a_trial_of_an_accepted_pattern_and_reads_its_rate_per_arm(
    tried: Tried, pattern: str, console: Console
) -> None:
    """From the accepted pattern's page, with the org and agent picked as a hypothesis's
    trial picks them; then each arm's ended sessions and those that joined the pattern,
    the ratio with its interval and the verdict; the list links to the trial; once the
    sweep reads it improved, the pattern is shown resolved."""
    loop = tried.loop
    console.open()
    console.sign_in(both_apis(tried))
    console.show("patterns", project=loop.project, pattern=pattern)
    section = console.page.locator("section.pattern-trial")
    expect(section.locator("p.trial")).to_have_text("No trial has been started from this pattern.")
    form = section.locator("form.start-trial")
    expect(form.get_by_label("Agent")).to_have_value(f"{loop.connect.org}/{CONNECT_AGENT}")
    form.get_by_role("button", name="Start a trial").click()
    expect(section.locator(".trial-verdict")).to_have_text(
        "Running. Too few sessions in an arm to tell yet."
    )
    expect(section.locator("form.start-trial")).to_have_count(0)
    trial = read_as(tried, pattern)["trial"]
    assert trial["status"] == "running"
    seed_arms(loop, trial["id"], IMPROVED, pattern=pattern)
    rate = read_as(tried, pattern)["trial"]["rate"]
    console.page.reload()
    expect(section.locator(".trial-verdict")).to_have_attribute("data-verdict", "improved")
    expect(section.locator('tr[data-arm="treatment"] td')).to_have_text(["40", "0", "0%"])
    expect(section.locator('tr[data-arm="control"] td')).to_have_text(["40", "20", "50%"])
    expect(section.locator("p.ratio")).to_have_text(
        "Risk ratio, given the suggestion against without it: "
        f"{as_js(rate['ratio'])} (95% interval {as_js(rate['low'])} to {as_js(rate['high'])})."
    )
    expect(section.locator(".trial-where")).to_contain_text("In ")
    expect(section.get_by_role("button", name="Adopt")).to_be_visible()
    assert console.accessibility_violations() == []
    console.snapshot("pattern-trial")
    assert sweep(loop)["trials"] == [f"{trial['id']}:resolved"]
    console.show("patterns", project=loop.project)
    card = console.page.locator(f'article.pattern[data-id="{pattern}"]')
    expect(card.locator(".badge")).to_have_text("resolved")
    card.get_by_role("link", name="its trial").click()
    expect(section.locator("p.resolved")).to_have_text(
        "Resolved: a randomised trial of its suggestion read improved."
    )
    expect(console.page.locator("article.pattern.open .badge").first).to_have_text("resolved")
    expect(section.locator(".trial-id code")).to_have_text(trial["id"])
    assert console.errors() == []


def read_as(tried: Tried, pattern_id: str) -> dict[str, Any]:
    reply = tried.loop.connect.api.call(
        "GET", f"/projects/{tried.loop.project}/patterns/{pattern_id}", token=tried.admin
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body
