"""An agent's Instructions page in a real browser: the version in force, every version
with who, when and why and the trial it came from, a line diff between any two versions
picked, and for an org's admin a new version or a rollback, each re-read from the API's
answer. The versions are put through HTTP as any client puts them."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.agentconnect.conftest import AGENT, Connect
from tests.console.conftest import Console, both_apis
from tests.console.test_home import WIDTHS, layout_problems
from tests.console.test_patterns import percent
from tests.loop.test_adoption import SUGGESTION, adopt, seed_versions
from tests.loop.tried import IMPROVED, Tried, seed_arms

FIRST = "Keep every change small.\nRun the tests before every commit."
SECOND = "Keep every change small.\nRun the tests before every commit.\nSay what done means."


def put(connect: Connect, body: dict[str, Any]) -> dict[str, Any]:
    reply = connect.put_instructions(body)
    assert reply.status_code == 200, reply.text
    made: dict[str, Any] = reply.json()
    return made


def current(connect: Connect) -> dict[str, Any]:
    reply = connect.api.call("GET", connect.path("/instructions"), token=connect.viewer)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_the_page_shows_the_text_in_force_its_versions_and_the_added_line_between_two(
    configured: Connect, console: Console
) -> None:
    """Reached from the nav: the text in force, each version with who and why, and the
    diff from version 1 to 2 marking the one line added (and, picked the other way, the
    line removed)."""
    put(configured, {"text": FIRST, "reason": "Our house rules."})
    put(configured, {"text": SECOND, "reason": "Tasks were reopened."})
    console.open()
    console.sign_in(configured.viewer)
    # The nav's link: once Home has drawn, each agent of its has an "Instructions" link too.
    views = console.page.get_by_role("navigation", name="Views")
    views.get_by_role("link", name="Instructions").click()
    expect(console.page.locator("nav a[aria-current=page]")).to_have_text("Instructions")
    console.page.get_by_label("Org").fill(configured.org)
    console.page.get_by_label("Agent", exact=True).fill(AGENT)
    console.page.get_by_role("button", name="Show").click()
    expect(console.page.locator("#instructions-current")).to_have_text("In force: version 2")
    expect(console.page.locator("section.current pre")).to_have_text(SECOND)
    versions = console.page.locator("article.version")
    expect(versions).to_have_count(2)
    assert [v.get_attribute("data-version") for v in versions.all()] == ["2", "1"]
    expect(versions.nth(0).locator(".meta")).to_contain_text("Made by ada, ")
    expect(versions.nth(0).locator(".meta q")).to_have_text("Tasks were reopened.")
    expect(versions.nth(1).locator(".origin")).to_have_text("A person's edit or a rollback.")
    expect(versions.nth(0).locator(".badge.current")).to_have_text("in force")
    diff = console.page.locator("section.compare")
    expect(diff.locator(".diff-summary")).to_have_text(
        "From version 1 to version 2: 1 line added, 0 removed."
    )
    expect(diff.locator("li.added")).to_have_text(["+Added: Say what done means."])
    expect(diff.locator("li.added ins")).to_have_text("Say what done means.")
    expect(diff.locator("li.same")).to_have_count(2)
    diff.get_by_label("From").select_option("2")
    diff.get_by_label("To").select_option("1")
    expect(diff.locator("li.removed del")).to_have_text("Say what done means.")
    expect(diff.locator("li.added")).to_have_count(0)
    expect(console.page.locator("p.cannot-edit")).to_be_visible()
    expect(console.page.get_by_role("button", name="Roll back to this version")).to_have_count(0)
    expect(console.page.locator("form.edit-instructions")).to_have_count(0)
    assert console.accessibility_violations() == []
    assert console.errors() == []


def test_an_admin_rolls_back_to_an_earlier_version_which_makes_a_new_one(
    configured: Connect, console: Console
) -> None:
    put(configured, {"text": FIRST, "reason": "Our house rules."})
    put(configured, {"text": SECOND})
    console.open()
    console.sign_in(configured.admin)
    console.show("instructions", org=configured.org, agent=AGENT)
    first = console.page.locator('article.version[data-version="1"]')
    expect(console.page.locator('article.version[data-version="2"] button')).to_have_count(0)
    first.get_by_role("button", name="Roll back to this version").click()
    first.get_by_label("Reason (optional)").fill("The third line confused it.")
    first.get_by_role("button", name="Roll back to version 1").click()
    expect(console.page.locator("#instructions-current")).to_have_text("In force: version 3")
    expect(console.page.locator("section.current pre")).to_have_text(FIRST)
    newest = console.page.locator("article.version").first
    expect(newest).to_have_attribute("data-version", "3")
    expect(newest.locator(".meta q")).to_have_text("The third line confused it.")
    expect(console.page.locator("article.version")).to_have_count(3)
    read = current(configured)
    assert (read["version"], read["text"], read["reason"]) == (
        3,
        FIRST,
        "The third line confused it.",
    )
    assert console.accessibility_violations() == []
    assert console.errors() == []


def test_an_admin_saves_a_new_text_and_is_told_plainly_when_the_api_refuses_it(
    configured: Connect, console: Console
) -> None:
    """The first version from an empty page; then a text over the API's limit is refused
    with its 400 said on the form, and nothing changes."""
    console.open()
    console.sign_in(configured.admin)
    console.show("instructions", org=configured.org, agent=AGENT)
    expect(console.page.locator("#instructions-current")).to_have_text("In force: none")
    form = console.page.locator("form.edit-instructions")
    form.get_by_label("Text").fill(FIRST)
    form.get_by_label("Reason (optional)").fill("A start.")
    form.get_by_role("button", name="Save as a new version").click()
    expect(console.page.locator("#instructions-current")).to_have_text("In force: version 1")
    expect(console.page.locator("article.version .meta q")).to_have_text("A start.")
    assert current(configured)["text"] == FIRST
    # Past the textarea's own limit, as a script or a pasted text bypassing it would send.
    form.get_by_label("Text").evaluate("(el) => { el.value = 'x'.repeat(8001); }")
    form.get_by_role("button", name="Save as a new version").click()
    refused = form.locator(".problem")
    expect(refused).to_have_attribute("data-status", "400")
    expect(refused).to_contain_text("Error 400")
    expect(refused.locator("li")).to_contain_text("text")
    assert current(configured)["version"] == 1
    # The browser logs the refused request itself, and nothing else.
    path = f"/v1/orgs/{configured.org}/agents/{AGENT}/instructions"
    assert console.take_errors() == [console.refused(400, path)]


def test_the_versions_page_through_the_next_page_token(
    configured: Connect, console: Console
) -> None:
    for n in range(1, 13):
        put(configured, {"text": f"Rule {n}."})
    console.open()
    console.sign_in(configured.viewer)
    console.show("instructions", org=configured.org, agent=AGENT)
    versions = console.page.locator("article.version")
    expect(versions).to_have_count(10)
    console.page.get_by_role("button", name="Load more").click()
    expect(versions).to_have_count(12)
    assert [v.get_attribute("data-version") for v in versions.all()] == [
        str(n) for n in range(12, 0, -1)
    ]
    expect(console.page.get_by_role("button", name="Load more")).to_have_count(0)
    expect(console.page.locator("#diff-from option")).to_have_count(12)


def adopted(tried: Tried) -> str:
    """Version 1 a person's, version 2 adopted from a trial of the accepted hypothesis that
    read improved, and each version's ended sessions (12 of 30 and 3 of 30 abnormal): the
    trial's id."""
    put(tried.loop.connect, {"text": "Keep every change small.", "reason": "Our house rules."})
    trial: str = tried.start_trial().json()["id"]
    seed_arms(tried.loop, trial, IMPROVED)
    assert adopt(tried, trial).status_code == 200
    seed_versions(tried.loop, {1: (30, 12), 2: (30, 3)})
    return trial


def test_an_adopted_version_links_its_trial_and_hypothesis_and_shows_its_sessions(
    tried: Tried, console: Console
) -> None:
    """A version adopted from a trial names it and its hypothesis as links to the
    hypothesis's card, in the linked project; each version says its sessions' rates."""
    loop = tried.loop
    trial = adopted(tried)
    console.open()
    console.sign_in(both_apis(tried))
    console.show("instructions", org=loop.connect.org, agent=AGENT)
    version = console.page.locator('article.version[data-version="2"]')
    expect(version.locator(".origin")).to_have_text(
        f"Adopted from trial {trial}, of hypothesis {tried.hypothesis}."
    )
    expect(console.page.locator("section.current pre")).to_have_text(
        f"Keep every change small.\n\n{SUGGESTION}"
    )
    listed = loop.connect.api.call(
        "GET", loop.connect.path("/instructions/versions"), token=loop.connect.viewer
    ).json()
    for number, found in ((2, listed[0]["sessions"]), (1, listed[1]["sessions"])):
        share = f"{percent(found['abnormalShare'])}; 95% interval {percent(found['low'])} to "
        expect(
            console.page.locator(f'article.version[data-version="{number}"] .sessions')
        ).to_have_text(
            f"Its sessions: {found['abnormalEnds']} of {found['joined']} ended abnormally ({share}"
            f"{percent(found['high'])}). An association over time, not an effect."
        )
    assert console.accessibility_violations() == []
    version.get_by_role("link", name=tried.hypothesis).click()
    expect(console.page.locator("h1")).to_have_text("Hypotheses")
    card = console.page.locator(f'article.hypothesis[data-id="{tried.hypothesis}"]')
    expect(card).to_have_class("hypothesis target")
    expect(card.locator("section.trial .trial-id")).to_contain_text(trial)
    assert console.errors() == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_instructions_page_lays_out_at_a_desktop_and_a_phone_width(
    tried: Tried, console: Console, width: int
) -> None:
    """An admin's page (the form, the diff, the versions) at both widths, its pictures in
    docs/screenshots/ (`make screenshots`)."""
    adopted(tried)
    console.page.set_viewport_size({"width": width, "height": 900})
    console.open()
    console.sign_in(both_apis(tried))
    console.show("instructions", org=tried.loop.connect.org, agent=AGENT)
    expect(console.page.locator("ol.diff li.added")).to_have_count(2)
    expect(console.page.locator("article.version")).to_have_count(2)
    problems = layout_problems(console.page)
    assert problems == [], (width, problems)
    assert console.accessibility_violations() == [], width
    console.snapshot(f"instructions-{width}")
    assert console.errors() == []
