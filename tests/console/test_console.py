"""The review console in a real browser: what a person sees and can do."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, expect

from cli import local_model
from cli.console import CONTENT_SECURITY_POLICY
from functions.loop.randomization import ArmCounts, arm_of, needed
from shared import auth
from shared.clients import db
from shared.retention import utcnow
from tests.agentconnect.conftest import AGENT, Connect, answer
from tests.api import Configure, document, wait_for
from tests.console.conftest import Console, both_apis
from tests.loop.linked import Loop, run_explored
from tests.loop.test_adoption import SUGGESTION, current_instructions, put_instructions, sweep
from tests.loop.tried import IMPROVED, NO_CHANGE, WORSE, Tried, seed_arms
from tests.psychologist.conftest import Log, Psychologist, expire_indexed, hypothesis
from tests.psychologist.test_effect import MIN, measured
from tests.psychologist.test_otlp import agent_run, export, tool_event_ids
from tests.research.conftest import Research

SAMPLES = Path(__file__).parents[1] / "telemetry_samples"

TRIAL_IMPROVED = "The change helped: sessions given it show the pattern less, beyond chance."
TRIAL_NO_CHANGE = "No clear difference between the arms yet."
SESSION = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
INJECTED = '<img src=x onerror="window.__evidencia_injected=1">'


def analysed(psy: Psychologist, *proposals: dict[str, Any]) -> list[dict[str, Any]]:
    """The session ended abnormally and was analysed; Gemini proposed `proposals`."""
    psy.world.gemini.answer_json({"hypotheses": list(proposals)})
    ended = psy.end(SESSION, "closed_abnormally", "crash").json()
    analysis = psy.settled(ended["analysisId"])
    assert analysis["status"] == "completed", analysis
    assert analysis["rejected"] == [], analysis["rejected"]
    listed: list[dict[str, Any]] = psy.hypotheses().json()
    assert len(listed) == len(proposals)
    return listed


def reopening(psy: Psychologist) -> list[str]:
    log = Log()
    log.add("dev-api", "task.opened", task="T-1")
    reopened = [log.add("dev-api", "task.reopened", task="T-1")["id"] for _ in range(3)]
    log.add("dev-api", "tool.call", task="T-1", tool="pytest")
    assert psy.ingest(SESSION, log.events).status_code == 200
    return reopened


def test_a_person_signs_in_and_sees_each_hypothesis_beside_its_cited_events(
    psy: Psychologist, console: Console
) -> None:
    reopened = reopening(psy)
    analysed(psy, hypothesis("dev-api", reopened, termination="Stopped after a long tool call."))
    expired = reopened[2]
    expire_indexed(psy.project, SESSION, utcnow() - timedelta(minutes=1), [expired])
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=psy.project)
    card = console.page.locator("article.hypothesis")
    expect(card).to_have_count(1)
    expect(card.locator("h2")).to_have_text(
        "The instructions don't say when to consider the task done. proposed"
    )
    expect(card.locator("dd").first).to_have_text("The agent reopened the same task three times.")
    expect(card.locator(".provenance")).to_have_text("gemini-3.8-flash-001")
    expect(card.locator(".calibrated")).to_have_text(
        "No hypothesis of dev-api at this confidence (60\N{EN DASH}80%) has been decided yet."
    )
    expect(card.locator("section.effect")).to_have_count(0)
    termination = card.locator(".termination")
    expect(termination.locator("p")).to_have_text("Stopped after a long tool call.")
    expect(termination.locator("dd")).to_have_text(["closed_abnormally", "crash"])
    events = card.locator("section.evidence li.event")
    expect(events).to_have_count(3)
    for index, event_id in enumerate(reopened[:2]):
        expect(events.nth(index)).to_have_attribute("data-event-id", event_id)
        expect(events.nth(index)).to_contain_text("task.reopened by dev-api")
    expect(events.nth(2)).to_have_class("event missing")
    expect(events.nth(2)).to_contain_text(f"{expired} — missing or expired")
    console.snapshot("hypotheses")
    assert console.errors() == []
    assert console.accessibility_violations() == []


def test_an_event_received_as_a_span_names_the_span_it_came_from(
    psy: Psychologist, console: Console
) -> None:
    """A hypothesis citing events an OpenTelemetry exporter sent shows, beside each, the
    span's name, status, duration and ids."""
    spans = agent_run(failing=True)
    cited = tool_event_ids(spans)
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("trip-planner", cited)]})
    assert export(psy, spans, "protobuf").name == "SUCCESS"
    ended = psy.end("conv-trip-42", "closed_abnormally", "last_turn_failed")
    assert psy.settled(ended.json()["analysisId"])["status"] == "completed"
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=psy.project)
    events = console.page.locator("article.hypothesis section.evidence li.event")
    expect(events).to_have_count(3)
    trace = format(spans[0].context.trace_id, "032x") if spans[0].context else ""
    expect(events.first.locator("p.span")).to_contain_text(
        "from span execute_tool search_flights (error,"
    )
    expect(events.first.locator("p.span")).to_contain_text(f"of trace {trace}")
    assert console.errors() == []


def test_the_sessions_view_lists_how_each_session_ended_and_opens_its_analysis(
    psy: Psychologist, console: Console, configure: Configure
) -> None:
    """Two sessions, one fed by Gemini CLI's own telemetry and ended by its silence, one
    ended abnormally by its agent: the view shows each one's end, tool errors and tokens as
    the sessions read serves them, and a row's Analysis button shows its analysis; nothing
    axe-core finds wrong."""
    configure(PSYCHOLOGIST_HEARTBEAT_TIMEOUT_S="1", PSYCHOLOGIST_NORMAL_END_SUMMARIES="off")
    log = Log()
    log.add("dev-api", "tool.error", tool="make", error="exit 2")
    assert psy.ingest("s-crashed", log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": []})
    ended = psy.end("s-crashed", "closed_abnormally", "exit_code_2")
    assert psy.settled(ended.json()["analysisId"])["status"] == "completed"
    for signal in ("traces", "logs"):
        body = (SAMPLES / "gemini_cli" / f"{signal}.json").read_bytes()
        reply = requests.post(
            f"{psy.api.base_url}{psy.path(f'/otlp/v1/{signal}')}",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {psy.member}"},
            timeout=30,
        )
        assert reply.status_code == 200, reply.text
    assert len(wait_for(lambda: psy.sweep()["sessions"])) == 1
    served = psy.api.call("GET", psy.path("/sessions"), token=psy.viewer).json()
    console.open()
    console.sign_in(psy.viewer)
    console.show("sessions", project=psy.project)
    rows = console.page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(len(served))
    expect(rows.locator("td.tool-errors")).to_have_text([str(r["toolErrors"]) for r in served])
    crashed = console.page.locator('tr[data-session="s-crashed"]')
    expect(crashed.locator("td.ending")).to_have_text("closed abnormally (exit_code_2)")
    crashed.get_by_role("button", name="Analysis").click()
    expect(crashed.locator(".analysis dd").first).to_have_text(
        re.compile("queued|processing|completed")
    )
    gemini = rows.first
    expect(gemini.locator("td.ending")).to_have_text(
        f"closed ({served[0]['cause']}) by silence, until its next record"
    )
    expect(gemini.locator("td.tokens")).to_have_text(
        f"{served[0]['usage']['inputTokens']} / {served[0]['usage']['outputTokens']}"
    )
    assert console.accessibility_violations() == []
    assert console.errors() == []


def test_an_admin_accepts_with_a_reason_and_it_leaves_the_proposed_filter(
    psy: Psychologist, console: Console
) -> None:
    reopened = reopening(psy)
    analysed(
        psy,
        hypothesis("dev-api", reopened[:1], observacao="First."),
        hypothesis("dev-api", reopened[1:], observacao="Second."),
    )
    console.open()
    console.sign_in(psy.admin)
    console.show("hypotheses", project=psy.project, status="proposed")
    cards = console.page.locator("article.hypothesis")
    expect(cards).to_have_count(2)
    first = cards.filter(has_text="First.")
    chosen = first.get_attribute("data-id")
    first.get_by_label("Reason (optional)").fill("Seen in three sessions.")
    first.get_by_role("button", name="Accept").click()
    expect(cards).to_have_count(1)
    expect(cards.first).to_contain_text("Second.")

    console.show("hypotheses", project=psy.project, status="accepted")
    accepted = console.page.locator(f'article.hypothesis[data-id="{chosen}"]')
    expect(accepted).to_have_attribute("data-status", "accepted")
    decided = accepted.locator("section.decided")
    expect(decided).to_contain_text("Accepted by ada · ")
    expect(decided.locator("q")).to_have_text("Seen in three sessions.")
    expect(accepted.get_by_role("button", name=re.compile("Accept|Dismiss"))).to_have_count(0)
    accepted.locator("details.history summary").click()
    expect(accepted.locator("ol.decisions li")).to_have_text(
        [_starts_with("proposed → accepted by ada")]
    )
    expect(accepted.locator("ol.decisions q")).to_have_text("Seen in three sessions.")
    console.snapshot("hypothesis-decided")
    assert console.accessibility_violations() == []

    accepted.get_by_role("button", name="Change the decision").click()
    expect(accepted.locator(".confirm")).to_have_text(
        "This hypothesis is accepted. A new decision replaces it; the earlier one stays "
        "in the history."
    )
    expect(accepted.get_by_role("button", name="Accept instead")).to_have_count(0)
    accepted.get_by_role("button", name="Keep the decision").click()
    expect(accepted.locator("form.decide")).to_have_count(0)
    accepted.get_by_role("button", name="Change the decision").click()
    accepted.get_by_label("Reason (optional)").fill("Did not hold up.")
    accepted.get_by_role("button", name="Dismiss instead").click()
    expect(accepted).to_have_count(0)
    history = psy.api.call("GET", psy.path(f"/hypotheses/{chosen}/decisions"), token=psy.viewer)
    assert [(d["previousStatus"], d["status"]) for d in history.json()["decisions"]] == [
        ("accepted", "dismissed"),
        ("proposed", "accepted"),
    ]


def test_an_accepted_hypothesis_shows_its_effect_and_how_people_decided_at_its_confidence(
    psy: Psychologist, console: Console
) -> None:
    effect = measured(psy, before=[2] * MIN, after=[0] * MIN)
    assert effect["verdict"] == "improved"
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=psy.project, status="accepted")
    card = console.page.locator(f'article.hypothesis[data-id="{effect["hypothesisId"]}"]')
    expect(card.locator(".calibrated")).to_have_text(
        "People accepted 1 of 1 of dev-api's hypotheses at this confidence (60\N{EN DASH}80%): "
        "too few to tell."
    )
    panel = card.locator("section.effect")
    expect(panel).to_have_attribute("data-verdict", "improved")
    compared = effect["signals"]
    assert (compared["ratio"], compared["low"]) == (0.0, 0.0)
    expect(panel.locator(".verdict")).to_have_text(
        "Improved: a smaller share of sessions showed a task reopened after the decision "
        f"(ratio 0, exact 95% interval 0\N{EN DASH}{compared['high']})."
    )
    expect(panel.locator(".shares")).to_have_text(
        "Sessions showing a task reopened: 100% before, 0% after."
    )
    rows = panel.locator("table.windows tbody tr")
    expect(rows.nth(0).locator("td").nth(1)).to_have_text(str(MIN))
    expect(rows.nth(0).locator("td").nth(2)).to_have_text(f"{MIN} showing the pattern")
    expect(rows.nth(1).locator("td").first).to_contain_text("(still open)")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("0 showing the pattern")
    expect(panel.locator(".caveat")).to_contain_text("An association over time, not proof")
    console.snapshot("hypothesis-effect")
    assert console.errors() == []
    assert console.accessibility_violations() == []


def _starts_with(text: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(text))


def test_a_viewer_sees_no_decide_action_and_is_told_why(
    psy: Psychologist, console: Console
) -> None:
    analysed(psy, hypothesis("dev-api", reopening(psy)))
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=psy.project)
    card = console.page.locator("article.hypothesis")
    expect(card.locator(".cannot-decide")).to_have_text(
        "You cannot decide on this hypothesis. This operation needs the admin role or higher."
    )
    expect(card.locator("form.decide")).to_have_count(0)
    expect(console.page.get_by_role("button", name="Accept")).to_have_count(0)


def test_markup_in_model_text_is_shown_as_inert_text(psy: Psychologist, console: Console) -> None:
    analysed(psy, hypothesis("dev-api", reopening(psy), observacao=INJECTED, sugestao=INJECTED))
    console.open()
    console.sign_in(psy.admin)
    console.show("hypotheses", project=psy.project)
    card = console.page.locator("article.hypothesis")
    expect(card.locator("dd").first).to_have_text(INJECTED)
    expect(card.locator("img")).to_have_count(0)
    assert console.page.locator("img").count() == 0
    assert console.script_ran() is None


def test_the_console_is_sent_with_a_policy_that_forbids_inline_script_and_eval(
    psy: Psychologist, console: Console
) -> None:
    page = requests.get(console.url + "/", timeout=10)
    policy = page.headers["Content-Security-Policy"]
    assert policy == CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert "script-src 'self'" in policy
    script = requests.get(console.url + "/assets/app.js", timeout=10)
    assert script.headers["Content-Security-Policy"] == policy
    console.open()
    with pytest.raises(PlaywrightError, match="violates the following Content Security Policy"):
        console.page.add_script_tag(content="window.__evidencia_injected = 1")
    assert console.script_ran() is None
    [blocked] = console.take_errors()
    assert blocked.startswith(
        "Executing inline script violates the following Content Security Policy directive "
        "'script-src 'self''."
    )


def test_api_errors_are_shown_with_their_message_and_request_id(
    psy: Psychologist, console: Console
) -> None:
    elsewhere = "PROJECT-OF-SOMEONE-ELSE"
    refused = psy.api.call("GET", f"/projects/{elsewhere}/hypotheses", token=psy.viewer)
    assert refused.status_code == 403
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=elsewhere)
    problem = console.page.locator(".problem")
    expect(problem).to_contain_text(f"Error 403 {refused.json()['message']}")
    request_id = problem.get_attribute("data-request-id")
    assert request_id
    expect(problem.locator(".request-id code")).to_have_text(request_id)
    paths = [f"/projects/{elsewhere}/access", f"/projects/{elsewhere}/hypotheses"]
    assert sorted(console.take_errors()) == [console.refused(403, path) for path in paths]


def tab_to(console: Console, target: Locator, at_most: int) -> None:
    """Press Tab until `target` has the focus, as a keyboard user would."""
    for _ in range(at_most):
        if target.evaluate("field => field === document.activeElement"):
            break
        console.page.keyboard.press("Tab")
    expect(target).to_be_focused()


def test_the_hypotheses_view_is_usable_with_the_keyboard_alone(
    psy: Psychologist, console: Console
) -> None:
    analysed(psy, hypothesis("dev-api", reopening(psy)))
    console.open()
    keys = console.page.keyboard
    expect(console.page.get_by_label("Bearer token")).to_be_focused()
    assert console.accessibility_violations() == []
    keys.type(psy.admin)
    keys.press("Enter")
    opens = console.page.locator("li.tenant").get_by_role("link", name="Hypotheses")
    tab_to(console, opens, at_most=20)
    keys.press("Enter")
    expect(console.page).to_have_url(re.compile(r"#/hypotheses\?"))
    expect(console.page.get_by_label("Project", exact=True)).to_have_value(psy.project)
    reason = console.page.get_by_label("Reason (optional)")
    tab_to(console, reason, at_most=30)
    keys.type("Keyboard only.")
    keys.press("Tab")
    expect(console.page.get_by_role("button", name="Accept")).to_be_focused()
    keys.press("Enter")
    expect(console.page.locator("article.hypothesis")).to_have_attribute("data-status", "accepted")


def shown_answer(
    research: Research,
    console: Console,
    cited: list[tuple[str, int]],
    quote: str | None = None,
    **reply: Any,
) -> None:
    """Gemini's answer citing `cited` (the first citation quoting `quote` when given),
    settled, shown to the viewer in the research view."""
    answer = research.answer("Onboarding is slow.", cite=cited)
    if quote is not None:
        answer["answer"]["evidence"][0]["quote"] = quote
    research.world.gemini.answer_json(answer, **reply)
    run_id = research.ask().json()["run"]["id"]
    assert research.settled(run_id)["run"]["status"] == "completed"
    console.open()
    console.sign_in(research.viewer)
    route = {"workspace": research.workspace, "conversation": research.conversation, "run": run_id}
    console.show("research", **route)


def test_a_research_answer_shows_the_cited_text_until_its_source_is_removed(
    research: Research, console: Console
) -> None:
    cited = list(research.evidence.items())[:2]
    shown_answer(research, console, cited)
    answer = console.page.locator("article.statement").first
    expect(answer.locator(".claim p").first).to_have_text("Onboarding is slow.")
    quotes = answer.locator("figure.citation")
    expect(quotes).to_have_count(2)
    for index, (evidence_id, revision) in enumerate(cited):
        expect(quotes.nth(index)).to_have_attribute("data-evidence-id", evidence_id)
        expect(quotes.nth(index)).to_have_attribute("data-revision", str(revision))
    expect(quotes.locator("blockquote")).to_have_text(
        ["Onboarding took me two days.", "The setup wizard is confusing."]
    )
    run = console.page.locator("section.run")
    expect(run.locator(".provenance")).to_have_text(
        "gemini-3.8-flash (version gemini-3.8-flash-001)"
    )
    expect(run).to_contain_text("ProcessorGoogle Gemini")
    expect(console.page.locator("section.answer .meta")).to_contain_text(
        "Answered by gemini-3.8-flash (version gemini-3.8-flash-001)"
    )
    console.snapshot("research")
    assert console.accessibility_violations() == []
    removed = research.api.post(
        "/research-api/evidence/remove", research.body(evidence_ids=[cited[0][0]]), research.member
    )
    assert removed.status_code == 200
    console.page.reload()
    notice = console.page.locator(".not-current")
    expect(notice).to_have_attribute("data-reason", "source_unavailable")
    expect(notice).to_contain_text("No longer current: an evidence item it cites was removed")
    expect(console.page.locator("article.statement")).to_have_count(0)


def test_an_answer_of_the_local_development_model_says_so_and_never_names_gemini(
    research: Research, console: Console
) -> None:
    cited = list(research.evidence.items())[:1]
    shown_answer(research, console, cited, model_version=local_model.MODEL_VERSION)
    made_up = "Made up by the local development model (evidencia-local), not by Gemini"
    expect(console.page.locator("section.run .provenance.local")).to_have_text(made_up)
    expect(console.page.locator("section.answer .meta .provenance")).to_have_text(made_up)
    expect(console.page.locator("main")).not_to_contain_text("Google Gemini")
    assert console.accessibility_violations() == []


def test_id_fields_show_the_whole_id(research: Research, console: Console) -> None:
    console.open()
    console.sign_in(research.viewer)
    route = {"workspace": research.workspace, "conversation": research.conversation}
    console.show("research", **route, run=research.workspace)
    for name in ("workspace", "conversation", "run"):
        field = console.page.locator(f'input[name="{name}"]')
        expect(field).to_have_value(research.workspace if name == "run" else route[name])
        width = field.evaluate("(el) => [el.scrollWidth, el.clientWidth]")
        assert width[0] <= width[1], (name, width)
    # The run named is the workspace's id: no such run.
    assert console.take_errors() == [console.refused(404, "/research-api/assistant/status")]


def test_sign_in_checks_the_token_and_names_who_it_stands_for(
    psy: Psychologist, console: Console
) -> None:
    console.open()
    console.sign_in("not-a-token")
    refused = console.page.locator(".signed-out")
    expect(refused).to_contain_text("Signed out: the API refused the token (")
    expect(console.page.get_by_role("button", name="Sign out")).to_have_count(0)
    assert console.page.evaluate("sessionStorage.length") == 0
    assert console.take_errors() == [console.refused(401, "/v1/whoami")]
    assert console.accessibility_violations() == []
    psy.world.member(psy.project, "uma", "viewer")
    token, _ = psy.world.token("uma", capabilities=("agent:psychologist",))
    console.sign_in(token)
    signed_in = console.page.locator("#session .signed-in")
    expect(signed_in).to_have_text("Signed in as uma")
    expect(signed_in).to_have_attribute(
        "title", "Signed in as uma with a personal_access_token token"
    )
    expect(refused).to_have_count(0)


def test_a_token_refused_later_returns_to_sign_in_with_the_reason(
    psy: Psychologist, console: Console
) -> None:
    psy.world.member(psy.project, "uma", "viewer")
    token, token_id = psy.world.token("uma", capabilities=("agent:psychologist",))
    console.open()
    console.sign_in(token)
    assert console.errors() == []  # Home has read /v1/home with the token still good
    assert auth.revoke_token(db(), token_id)
    console.show("hypotheses", project=psy.project)
    expect(console.page.locator(".signed-out")).to_contain_text(
        "Signed out: the API refused the token ("
    )
    expect(console.page.get_by_label("Bearer token")).to_be_visible()
    assert console.page.evaluate("sessionStorage.length") == 0
    paths = [f"/projects/{psy.project}/access", f"/projects/{psy.project}/hypotheses"]
    assert sorted(console.take_errors()) == [console.refused(401, path) for path in paths]


def test_a_pending_run_is_shown_as_such_until_it_completes(
    research: Research, console: Console
) -> None:
    gate = research.world.gemini.held_answer_json(research.answer("Setup is slow."))
    run_id = research.ask().json()["run"]["id"]
    console.open()
    console.sign_in(research.viewer)
    route = {"workspace": research.workspace, "conversation": research.conversation, "run": run_id}
    console.show("research", **route)
    run = console.page.locator("section.run")
    expect(run).to_have_attribute("data-status", re.compile("^(queued|processing)$"))
    gate.open()
    expect(run).to_have_attribute("data-status", "completed")
    expect(console.page.locator("article.statement .claim p").first).to_have_text("Setup is slow.")


def test_a_cancelled_run_reads_cancelled_not_as_a_result_gone_stale(
    research: Research, console: Console
) -> None:
    research.world.gemini.held_answer_json(research.answer())
    run_id = research.ask().json()["run"]["id"]
    cancel = research.api.post(
        "/research-api/assistant/cancel", research.body(run_id=run_id), research.member
    )
    assert cancel.status_code == 200, cancel.text
    console.open()
    console.sign_in(research.viewer)
    route = {"workspace": research.workspace, "conversation": research.conversation, "run": run_id}
    console.show("research", **route)
    run = console.page.locator("section.run")
    expect(run).to_have_attribute("data-status", "cancelled")
    expect(run.locator("dd").nth(3)).to_have_text("cancelled")
    expect(console.page.locator(".not-current")).to_have_count(0)


def test_an_evaluation_shows_its_chain_of_steps_and_raw_texts(
    configured: Connect, console: Console
) -> None:
    configured.world.gemini.answer_json(answer(False, 0.9), usage=(50, 5))
    configured.world.gemini.answer_json(answer("large", 0.7), usage=(60, 6))
    configured.start("Fix the login bug")
    frozen = configured.frozen(1)
    console.open()
    console.sign_in(configured.viewer)
    console.show("evaluations", org=configured.org, agent=AGENT, seq="1")
    expect(console.page.locator("tbody tr")).to_have_count(1)
    evaluation = console.page.locator("article.evaluation")
    expect(evaluation.locator("h2")).to_contain_text("Evaluation #1: Fix the login bug")
    expect(evaluation).to_contain_text(frozen["reason"])
    expect(evaluation).to_contain_text("Requested model")
    steps = evaluation.locator("ol.chain > li.step")
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_contain_text("Does the task need deep reasoning?")
    expect(steps.nth(0)).to_contain_text("false (probability 0.9)")
    expect(steps.nth(1)).to_have_class("step held")
    expect(steps.nth(1)).to_contain_text("large ≥ 0.6")
    expect(steps.nth(1)).to_contain_text(
        "Chose runtime container · model gemini-2.5-flash · effort medium · "
        "permissionMode plan · fastMode true"
    )
    expect(steps.nth(1).locator(".provenance")).to_have_text(
        "gemini-3.5-flash-lite (version gemini-3.5-flash-lite-001)"
    )
    expect(evaluation.locator("details", has_text="Raw response")).to_have_count(2)
    raw = steps.nth(1).locator("details", has_text="Raw response")
    raw.locator("summary").click()
    sent = frozen["steps"][1]["rawResponse"]["text"]
    indented = json.dumps(json.loads(sent), indent=2, ensure_ascii=False)
    expect(raw.locator("pre")).to_have_text(indented)
    console.snapshot("evaluation")
    assert console.accessibility_violations() == []


DECIDED = [
    (10, "dismissed"),
    (25, "accepted"),
    (30, "dismissed"),
    (35, None),
    (82, "accepted"),
    (85, "accepted"),
    (88, "dismissed"),
    (90, "accepted"),
    (95, "accepted"),
]


def test_the_calibration_chart_shows_each_band_s_counts_and_too_few_decisions_as_such(
    psy: Psychologist, console: Console
) -> None:
    """Hypotheses across the confidence bands, some accepted, some dismissed, one left
    proposed: the chart's bands carry exactly the counts the calibration endpoint serves,
    and only a band of five decisions or more is drawn as a share."""
    reopened = reopening(psy)
    proposals = [
        hypothesis("dev-api", reopened, confiancaPercent=confidence, observacao=f"At {confidence}.")
        for confidence, _ in DECIDED
    ]
    decisions = dict(DECIDED)
    for item in analysed(psy, *proposals):
        status = decisions[int(item["confiancaPercent"])]
        if status is not None:
            path = psy.path(f"/hypotheses/{item['id']}/decision")
            assert psy.api.post(path, {"status": status}, psy.admin).status_code == 200
    served = psy.api.call("GET", psy.path("/calibration"), token=psy.viewer).json()
    assert [(b["accepted"], b["dismissed"], b["proposed"]) for b in served["bands"]] == [
        (0, 1, 0),
        (1, 1, 1),
        (0, 0, 0),
        (0, 0, 0),
        (4, 1, 0),
    ]
    console.open()
    console.sign_in(psy.viewer)
    console.show("calibration", project=psy.project)
    bands = console.page.locator("svg g.band")
    expect(bands).to_have_count(5)
    counted = ("hypotheses", "accepted", "dismissed", "proposed")
    shown = [
        {name: bands.nth(i).get_attribute(f"data-{name}") for name in counted} for i in range(5)
    ]
    assert shown == [{name: str(band[name]) for name in counted} for band in served["bands"]]
    states = [bands.nth(i).get_attribute("data-state") for i in range(5)]
    assert states == ["insufficient", "insufficient", "empty", "empty", "enough"]
    expect(bands.locator("text.count")).to_have_text(
        ["1 decided", "2 decided", "0 decided", "0 decided", "5 decided"]
    )
    expect(bands.nth(1).locator("rect")).to_have_class("bar insufficient")
    expect(bands.nth(1).locator("text.value")).to_have_text("too few")
    full = float(bands.nth(1).locator("rect").get_attribute("height") or 0)
    height = float(bands.nth(4).locator("rect").get_attribute("height") or 0)
    assert height == pytest.approx(0.8 * full)
    expect(bands.nth(4).locator("text.value")).to_have_text("4/5")
    rows = console.page.locator("table.counts tbody tr")
    expect(rows.nth(1).locator("td")).to_have_text(
        [
            "3",
            "1",
            "1",
            "1",
            "too few decisions (2) to tell; 50% accepted so far",
            "no trial stopped",
        ]
    )
    expect(rows.nth(4).locator("td").nth(4)).to_have_text("80% accepted")
    caption = console.page.locator("figure.calibration figcaption")
    expect(caption.locator("time")).to_have_count(2)
    in_locale = "(el) => el.textContent === new Date(el.dateTime).toLocaleString()"
    assert [time.evaluate(in_locale) for time in caption.locator("time").all()] == [True, True]
    expect(caption).not_to_contain_text(re.compile(r"\d{4}-\d\d-\d\dT"))
    assert console.accessibility_violations() == []


def test_an_evaluation_whose_details_expired_says_so(configured: Connect, console: Console) -> None:
    configured.world.gemini.answer_json(answer(True, 0.95))
    configured.start("Rotate the keys")
    configured.frozen(1)
    summary = db().document(f"orgs/{configured.org}/agents/{AGENT}/evaluations/1")
    summary.update({"details_expires_at": summary.get().get("at")})
    console.open()
    console.sign_in(configured.viewer)
    console.show("evaluations", org=configured.org, agent=AGENT, seq="1")
    evaluation = console.page.locator("article.evaluation")
    expect(evaluation.locator(".expired")).to_contain_text("Details expired")
    expect(evaluation).to_contain_text("Requested model")
    expect(evaluation.locator("ol.chain")).to_have_count(0)


def test_hypotheses_page_through_the_next_page_token(psy: Psychologist, console: Console) -> None:
    reopened = reopening(psy)
    analysed(psy, *[hypothesis("dev-api", reopened, observacao=f"Number {n}.") for n in range(3)])
    newest_first = [item["id"] for item in psy.hypotheses().json()]
    console.open()
    console.sign_in(psy.viewer)
    console.show("hypotheses", project=psy.project, limit="2")
    cards = console.page.locator("article.hypothesis")
    expect(cards).to_have_count(2)
    console.page.get_by_role("button", name="Load more").click()
    expect(cards).to_have_count(3)
    assert [cards.nth(i).get_attribute("data-id") for i in range(3)] == newest_first
    expect(console.page.get_by_role("button", name="Load more")).to_have_count(0)


def test_the_selection_report_shows_shares_with_intervals_and_an_admin_puts_its_recommendation(
    loop: Loop, console: Console
) -> None:
    """After 45 exploring sessions the report view shows each target's joined sessions
    and abnormal-end share with its interval, the threshold changes estimated, and the
    recommendation; an admin puts it from the page, and the new version names the report."""
    run_explored(loop, 45)
    expected = loop.report()
    console.open()
    console.sign_in(loop.connect.admin)
    console.show("selection", org=loop.connect.org, agent=AGENT)
    rows = console.page.locator("table.targets tbody tr")
    expect(rows).to_have_count(len(expected["targets"]))
    for target in expected["targets"]:
        row = console.page.locator(f'table.targets tr[data-target="{target["targetKey"]}"]')
        ended = target["abnormalEnds"]
        expect(row).to_contain_text(f"{ended['count']} of {ended['sessions']}")
    expect(console.page.locator(".exploration-status")).to_have_text(
        "Estimated from 45 explored sessions."
    )
    expect(console.page.locator("table.candidates tr.better").first).to_contain_text("0.8 → 0.6")
    recommendation = console.page.locator("section.recommendation")
    expect(recommendation).to_contain_text("threshold for true 0.8 -> 0.6")
    console.snapshot("selection-report")
    assert console.accessibility_violations() == []
    recommendation.get_by_role("button", name="Put this selection").click()
    expect(recommendation.get_by_role("status")).to_contain_text("Stored as version 3")
    stored = document(f"orgs/{loop.connect.org}/agents/{AGENT}/selections/3")
    assert len(stored["selection"]["fromReport"]["reportId"]) == 32
    assert stored["selection"]["decision"]["rules"][0]["when"]["thresholds"] == {"true": 0.6}


def test_an_admin_starts_a_trial_from_an_accepted_card_sees_its_arms_and_stops_it(
    tried: Tried, console: Console
) -> None:
    everything = ("agent:psychologist", "agent:connect")
    token, _ = tried.loop.connect.world.token("ada", capabilities=everything)
    console.open()
    console.sign_in(token)
    console.show("hypotheses", project=tried.loop.project)
    panel = console.page.locator("section.trial")
    form = panel.locator("form.start-trial")
    expect(form.get_by_label("Agent")).to_have_value(f"{tried.loop.connect.org}/{AGENT}")
    form.get_by_role("button", name="Start a trial").click()
    expect(panel.locator(".trial-verdict")).to_contain_text("Running.")
    expect(panel.locator("table.arms tbody tr")).to_have_count(2)
    expect(panel.locator(".trial-verdict")).to_contain_text(
        "cannot be said yet: no session without the change has ended yet."
    )
    trial = tried.effect()["randomized"]["trialId"]
    session = next(
        f"console-{n}" for n in range(100) if arm_of(trial, f"console-{n}", 0.5) == "control"
    )
    started = tried.loop.connect.start("under trial", sessionId=session)
    tried.loop.connect.frozen(started["seq"])
    tried.loop.log_and_end(session, "closed", reopened=True)
    console.page.reload()
    expect(panel.locator('table.arms tr[data-arm="control"] td').first).to_have_text("1")
    planned = needed(ArmCounts(1, 1, 0, {}), [1], 0.5, 0.7).sessions
    expect(panel.locator(".trial-verdict")).to_contain_text(
        f"With about {planned} sessions in all, the trial has an 80% chance"
    )
    expect(panel.locator("ul.trial-intervals li")).to_have_text(
        [
            "a task reopened: risk ratio undefined (no session given the change has ended "
            "yet), 95% interval 0 to no upper end yet"
        ]
    )
    console.snapshot("trial")
    assert console.accessibility_violations() == []
    panel.get_by_role("button", name="Stop the trial").click()
    expect(panel.locator(".trial-verdict")).to_contain_text("Stopped.")
    expect(panel.locator("form.start-trial")).to_have_count(1)


def trial_panel(console: Console, tried: Tried, token: str) -> Locator:
    """The trial panel of the accepted card, signed in with `token`."""
    console.sign_in(token)
    console.show("hypotheses", project=tried.loop.project)
    return console.page.locator("section.trial")


def test_an_admin_adopts_a_trial_reading_improved_and_is_shown_the_version_it_became(
    tried: Tried, console: Console
) -> None:
    """ "Adopt" appears beside a verdict reading improved; adopting makes the next version
    of the agent's instructions, said as "Adopted as version 2" linking to them, with the
    sessions before against after said to be an association."""
    loop = tried.loop
    assert put_instructions(loop, "Keep every change small.").status_code == 200
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, IMPROVED)
    console.open()
    panel = trial_panel(console, tried, both_apis(tried))
    expect(panel.locator(".trial-verdict")).to_contain_text(TRIAL_IMPROVED)
    panel.get_by_role("button", name="Adopt").click()
    adopted = panel.locator("p.adopted")
    expect(adopted).to_have_text("Adopted as version 2 of the agent's instructions.")
    expect(panel.get_by_role("button", name="Adopt")).to_have_count(0)
    expect(panel.locator("p.stopped-by")).to_have_text(
        "Stopped by ada: Adopted as instructions version 2"
    )
    assert current_instructions(loop)["text"] == f"Keep every change small.\n\n{SUGGESTION}"
    expect(panel.locator("p.after-adoption")).to_contain_text(
        "version 1: 0 of 0 (\u2013) before, version 2: 0 of 0 (\u2013) after"
    )
    expect(panel.locator("p.after-adoption")).to_contain_text("An association over time")
    assert console.accessibility_violations() == []
    adopted.get_by_role("link", name="version 2").click()
    expect(console.page.locator("h1")).to_have_text("Instructions")
    expect(console.page.locator("#instructions-current")).to_have_text("In force: version 2")
    expect(console.page.locator('article.version[data-version="2"] .origin')).to_contain_text(
        f"Adopted from trial {trial}"
    )
    assert console.errors() == []


def test_adopt_is_not_offered_to_a_viewer_nor_while_the_verdict_reads_no_clear_change(
    tried: Tried, console: Console
) -> None:
    loop = tried.loop
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, NO_CHANGE)
    console.open()
    panel = trial_panel(console, tried, both_apis(tried))
    expect(panel.locator(".trial-verdict")).to_contain_text(TRIAL_NO_CHANGE)
    expect(panel.locator(".trial-where")).to_be_visible()
    expect(panel.get_by_role("button", name="Stop the trial")).to_be_visible()
    expect(panel.get_by_role("button", name="Adopt")).to_have_count(0)
    seed_arms(loop, trial, IMPROVED)
    viewer = loop.connect.world.user(
        loop.project, "val", "viewer", capabilities=("agent:psychologist",)
    )
    console.page.get_by_role("button", name="Sign out").click()
    trial_panel(console, tried, viewer)
    expect(panel.locator(".trial-verdict")).to_contain_text(TRIAL_IMPROVED)
    expect(panel.locator(".trial-where")).to_be_visible()
    expect(panel.get_by_role("button", name="Adopt")).to_have_count(0)
    assert console.errors() == []


def test_a_trial_the_guardrail_stopped_says_so_with_its_reason(
    tried: Tried, console: Console
) -> None:
    loop = tried.loop
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, WORSE)
    assert sweep(loop)["trials"] == [f"{trial}:guardrail"]
    reason = tried.loop.connect.api.call(
        "GET", tried.path(f"/trials/{trial}"), token=tried.admin
    ).json()["stopReason"]
    console.open()
    panel = trial_panel(console, tried, both_apis(tried))
    expect(panel.locator(".trial-verdict")).to_contain_text("Stopped.")
    assert reason.startswith("Stopped by the guardrail: ")
    expect(panel.locator("p.stopped-by.guardrail")).to_have_text(reason)
    expect(panel.get_by_role("button", name="Adopt")).to_have_count(0)
    assert console.accessibility_violations() == []


def test_each_cited_item_shows_the_passage_its_statement_rests_on_highlighted(
    research: Research, console: Console
) -> None:
    shown_answer(research, console, list(research.evidence.items())[:2], "took me two days")
    quotes = console.page.locator("article.statement").first.locator("figure.citation")
    expect(quotes.nth(0).locator("blockquote")).to_have_text("Onboarding took me two days.")
    expect(quotes.nth(0).locator("mark.passage")).to_have_text("took me two days")
    expect(quotes.nth(0)).to_have_attribute("data-path", "answer.evidence[0]")
    expect(quotes.nth(1).locator("mark.passage")).to_have_text("The setup wizard is confusing.")
    console.snapshot("research-passages")
    assert console.accessibility_violations() == []
