"""The console starts from what a person can see: a home page of their tenants and agents
by name, every view reached by clicking, at a desktop's width and a phone's."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from shared.clients import db
from tests.agentconnect.conftest import AGENT
from tests.console.conftest import Console
from tests.loop.linked import AGENT_NAME, Loop
from tests.loop.tried import Tried

EVERY = ("agent:research", "agent:psychologist", "agent:connect")
WIDTHS = (1280, 390)


def named(tried: Tried) -> str:
    """Names the project and the org, and signs ada in with a token for all three APIs."""
    db().document(f"projects/{tried.loop.project}").update({"name": "Checkout agents"})
    db().document(f"orgs/{tried.loop.connect.org}").update({"name": "Acme"})
    token, _ = tried.loop.connect.world.token("ada", capabilities=EVERY)
    return token


def unlinked(tried: Tried) -> None:
    reply = tried.loop.connect.api.call(
        "DELETE", tried.loop.connect.path("/outcome-source"), token=tried.loop.connect.admin
    )
    assert reply.status_code in (200, 204), reply.text


def layout_problems(page: Page) -> list[str]:
    """What is laid out badly now: the page wider than the window, the top bar on more
    rows than the width allows, a label wrapped inside the bar, or two of its parts
    overlapping."""
    found: list[str] = page.evaluate(
        """() => {
        const problems = [];
        const root = document.documentElement;
        if (root.scrollWidth > root.clientWidth + 1)
          problems.push(`page ${root.scrollWidth}px wide in ${root.clientWidth}px`);
        const lines = (el) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          const middles = [...range.getClientRects()].map((r) => (r.top + r.bottom) / 2);
          return middles.filter((m, i) => middles.every((n, j) => j >= i || Math.abs(m - n) > 6))
            .length;
        };
        const parts = [...document.querySelectorAll(
          ".top .brand, .top nav, #session .signed-in, #session button")];
        for (const el of [...parts, ...document.querySelectorAll(".top nav a")]) {
          if (lines(el) > 1) problems.push(`${el.textContent.trim()} wraps`);
        }
        const boxes = parts.map((el) => [el, el.getBoundingClientRect()]);
        for (const [i, [a, ra]] of boxes.entries())
          for (const [b, rb] of boxes.slice(i + 1))
            if (ra.left < rb.right - 1 && rb.left < ra.right - 1 &&
                ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1)
              problems.push(`${a.textContent.trim()} overlaps ${b.textContent.trim()}`);
        const middles = boxes.map(([, r]) => (r.top + r.bottom) / 2);
        const rows = middles.filter(
          (m, i) => middles.every((n, j) => j >= i || Math.abs(m - n) > 12)).length;
        const allowed = window.innerWidth > 900 ? 1 : 2;
        if (rows > allowed) problems.push(`top bar on ${rows} rows`);
        for (const el of document.querySelectorAll("main *")) {
          const r = el.getBoundingClientRect();
          let scrolls = false;
          for (let up = el.parentElement; up && up !== root; up = up.parentElement)
            if (getComputedStyle(up).overflowX !== "visible") scrolls = true;
          if (r.width && r.right > root.clientWidth + 1 && !scrolls && !el.closest("svg"))
            problems.push(`${el.tagName}.${el.className} past the right edge`);
        }
        return problems.slice(0, 10);
    }"""
    )
    return found


def test_home_lists_each_tenant_and_agent_by_name_with_role_and_todays_activity(
    tried: Tried, console: Console
) -> None:
    token = named(tried)
    console.open()
    console.sign_in(token)
    project = console.page.locator(f'li.tenant[data-id="{tried.loop.project}"]')
    expect(project.locator("h3")).to_have_text("Checkout agents")
    expect(project.locator(".meta")).to_contain_text("Project · your role: admin")
    expect(project.locator(".meta code.id")).to_have_text(tried.loop.project)
    expect(project.locator("ul.activity li")).to_have_text(
        ["1 session ended today", "1 hypothesis proposed today", "0 trials running"]
    )
    org = console.page.locator(f'li.tenant[data-id="{tried.loop.connect.org}"]')
    expect(org.locator("h3")).to_have_text("Acme")
    expect(org.locator(".meta")).to_contain_text("Org · your role: admin")
    agent = org.locator(f'tr[data-agent="{AGENT}"]')
    expect(agent.locator("th")).to_contain_text(AGENT_NAME)
    expect(agent.locator("th code.id")).to_have_text(AGENT)
    expect(console.page.locator("nav a[aria-current=page]")).to_have_text("Home")
    console.snapshot("home")
    assert console.errors() == []
    assert console.accessibility_violations() == []


def test_every_view_from_sign_in_to_a_running_trial_is_reached_by_clicking(
    tried: Tried, console: Console
) -> None:
    """Sign in, open the project's hypotheses from home, link the org's agent to the
    project from the card, start a trial by picking it, see where it runs; back home,
    open the agent's selection report and evaluations. No id is typed."""
    token = named(tried)
    unlinked(tried)
    console.open()
    console.sign_in(token)
    page = console.page
    project = page.locator(f'li.tenant[data-id="{tried.loop.project}"]')
    project.get_by_role("link", name="Hypotheses").click()
    expect(page.get_by_label("Project")).to_have_value(tried.loop.project)
    panel = page.locator("section.trial")
    expect(panel.locator(".no-link")).to_contain_text(
        f"No agent of an org you can see logs its sessions to this project as {AGENT_NAME}"
    )
    link = panel.locator("form.link-agent")
    link.get_by_label("Link an agent").select_option(f"{tried.loop.connect.org}/{AGENT}")
    link.get_by_role("button", name="Link").click()
    start = panel.locator("form.start-trial")
    expect(start.get_by_label("Agent")).to_have_value(f"{tried.loop.connect.org}/{AGENT}")
    expect(start.locator("option")).to_have_text([f"{AGENT_NAME} in Acme"])
    start.get_by_role("button", name="Start a trial").click()
    expect(panel.locator(".trial-verdict")).to_contain_text("Running.")
    expect(panel.locator(".trial-where")).to_contain_text(f"In {AGENT_NAME} in Acme (agent ")
    expect(panel.locator(".trial-where code.id")).to_have_text([AGENT, tried.loop.connect.org])
    page.get_by_role("link", name="Home").click()
    expect(project.locator("ul.activity li").nth(2)).to_have_text("1 trial running")
    agent = page.locator(f'tr[data-agent="{AGENT}"]')
    expect(agent.locator("td").nth(1)).to_have_text("1")
    agent.get_by_role("link", name="Selection report").click()
    expect(page.locator("h1")).to_have_text("Selection report")
    expect(page.get_by_label("Org")).to_have_value(tried.loop.connect.org)
    expect(page.get_by_role("textbox", name="Agent")).to_have_value(AGENT)
    expect(page.locator("section.results dl").first).to_contain_text(tried.loop.project)
    page.go_back()
    page.locator(f'tr[data-agent="{AGENT}"]').get_by_role("link", name="Model evaluations").click()
    expect(page.locator("h1")).to_have_text("Model evaluations")
    expect(page.get_by_role("textbox", name="Agent")).to_have_value(AGENT)
    page.go_back()
    page.locator(f'tr[data-agent="{AGENT}"]').get_by_role("link", name="Instructions").click()
    expect(page.locator("h1")).to_have_text("Instructions")
    expect(page.get_by_role("textbox", name="Agent")).to_have_value(AGENT)
    # No version yet is a normal state: said in words, and nothing is asked that is not there.
    expect(page.locator("#instructions-current")).to_have_text("In force: none")
    expect(page.locator("section.current .empty")).to_have_text(
        "This agent has no instructions yet: its sessions are served none."
    )
    assert console.errors() == []


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_overlaps_or_wraps_badly_at_a_desktop_and_a_phone_width(
    tried: Tried, console: Console, width: int
) -> None:
    token = named(tried)
    console.page.set_viewport_size({"width": width, "height": 900})
    console.open()
    console.sign_in(token)
    expect(console.page.locator("li.tenant")).to_have_count(2)
    views: list[tuple[str, dict[str, Any]]] = [
        ("home", {}),
        ("hypotheses", {"project": tried.loop.project}),
        ("selection", {"org": tried.loop.connect.org, "agent": AGENT}),
    ]
    for name, params in views:
        console.show(name, **params)
        ready = {"home": "li.tenant", "hypotheses": "section.trial form", "selection": "dl"}
        console.page.locator(ready[name]).first.wait_for()
        problems = layout_problems(console.page)
        assert problems == [], (name, width, problems)
        assert console.accessibility_violations() == [], (name, width)
        console.snapshot(f"{name}-{width}")
    assert console.errors() == []


def test_signal_kinds_needed_sessions_and_the_chart_axis_read_in_plain_words(
    tried: Tried, console: Console
) -> None:
    token = named(tried)
    assert tried.start_trial().status_code == 201
    console.open()
    console.sign_in(token)
    console.show("hypotheses", project=tried.loop.project)
    panel = console.page.locator("section.trial")
    verdict = panel.locator(".trial-verdict")
    expect(verdict).to_contain_text(
        "How many sessions it needs to tell a change that cuts the pattern by 30% cannot be "
        "said yet: no session without the change has ended yet."
    )
    expect(verdict).not_to_contain_text("find a ratio")
    expect(panel.locator("ul.trial-intervals li")).to_contain_text(["a task reopened: "])
    expect(panel).not_to_contain_text("task_reopened")
    console.show("calibration", project=tried.loop.project)
    axis = console.page.locator("figure.calibration text.axis")
    expect(axis).to_have_text("The model's self-reported confidence")
    ticks = console.page.locator("figure.calibration text.tick")
    axis_top = axis.bounding_box()
    assert axis_top is not None
    for index in range(ticks.count()):
        tick = ticks.nth(index).bounding_box()
        assert tick is not None
        assert tick["y"] + tick["height"] <= axis_top["y"], index
    console.show("selection", org=tried.loop.connect.org, agent=AGENT)
    window = console.page.locator("section.results dd time")
    expect(window).to_have_count(2)
    for index in range(2):
        shown = window.nth(index).inner_text()
        assert not re.search(r"\d{4}-\d\d-\d\dT", shown), shown
    assert console.errors() == []


EMPTY_VIEWS = (
    ("hypotheses", "project", "No hypotheses match."),
    ("patterns", "project", "No pattern matches."),
    ("sessions", "project", "No session matches."),
    ("calibration", "project", "too few"),
    ("evaluations", "agent", "No evaluation yet."),
    ("instructions", "agent", "This agent has no instructions yet: its sessions are served none."),
    ("selection", "agent", "No recorded session in this window."),
)
"""Each view of a project with no session yet and of an agent with a selection alone, and
the words it says so with."""


def test_each_view_of_a_new_project_and_agent_says_so_in_words_and_logs_no_error(
    loop: Loop, console: Console
) -> None:
    """Nothing yet is a normal state: every view says it in words, and the browser logs no
    error, since the console asks for nothing that is not there."""
    capabilities = ("agent:psychologist", "agent:connect")
    token = loop.connect.world.token("ada", capabilities=capabilities)[0]
    console.open()
    console.sign_in(token)
    for view, of, words in EMPTY_VIEWS:
        if of == "project":
            console.show(view, project=loop.project)
        else:
            console.show(view, org=loop.connect.org, agent=AGENT)
        expect(console.page.locator("#view")).to_contain_text(words)
        assert console.errors() == [], view
