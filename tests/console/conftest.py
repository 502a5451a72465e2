"""A real headless Chromium (Debian's `chromium`, driven by Playwright) on the console the
local host serves, with the API, the emulator and the Gemini test server behind it.

`make test` installs Chromium when it is missing; without it these tests fail, saying so."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Playwright,
    expect,
    sync_playwright,
)

from cli.host import LocalHost
from tests.agentconnect.conftest import configured, connect
from tests.loop.linked import loop
from tests.loop.test_adoption import pattern
from tests.loop.tried import Tried, tried
from tests.psychologist.conftest import psy
from tests.research.conftest import research

__all__ = ["configured", "connect", "loop", "pattern", "psy", "research", "tried"]

AXE = Axe()
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Without the background-networking flags Chromium keeps trying to reach Google's hosts,
which a closed network refuses."""

WAIT_MS = 15_000
"""How long an action or an assertion waits for the page: Playwright's assertions wait 5 s
by default, which a console reloading after an adoption passed on a busy machine (three
workers on two cores) while its answer was already in."""
expect.set_options(timeout=WAIT_MS)

COUNT_REQUESTS = """
window.__requestsInFlight = 0;
const fetched = window.fetch;
window.fetch = function (...args) {
  window.__requestsInFlight += 1;
  const done = () => { window.__requestsInFlight -= 1; };
  return fetched.apply(this, args).then(
    (response) => {
      const text = response.text.bind(response);
      response.text = () => text().finally(done);
      return response;
    },
    (error) => { done(); throw error; },
  );
};
"""
"""The console's requests still in flight in the page: a request counts from its fetch
until its body is read (`api.js` reads every body), so a view that asks again after an
answer (a pattern, then its cited events) never reads zero in between."""


def chromium_path() -> str:
    found = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if found is None or not Path(found).is_file():
        pytest.fail(
            "Chromium is not installed: install it with `sudo apt-get install -y chromium` "
            "(Debian, Ubuntu), or point CHROMIUM at a Chromium binary.",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Package-scoped: while Playwright's sync driver runs, its event loop is the running
    loop of the main thread, and tests elsewhere that start their own (asyncio.run) must
    not find it there."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
    try:
        yield launched
    finally:
        launched.close()


@dataclass
class Console:
    """One browser tab on the console, and what the page reported while the test ran."""

    page: Page
    url: str
    messages: list[str] = field(default_factory=list)
    """Errors the page logged, Content-Security-Policy violations among them, each followed
    by the address it names (a refused request's URL)."""

    def open(self, route: str = "") -> None:
        self.page.goto(f"{self.url}/{route}")

    def sign_in(self, token: str) -> None:
        """Sign in, and wait for the console's answer: signed in, or the form saying why not."""
        self.page.get_by_label("Bearer token").fill(token)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.locator("#session .signed-in, .sign-in [role=alert]").first.wait_for()

    def show(self, route: str, **params: str) -> None:
        query = "&".join(f"{name}={value}" for name, value in params.items())
        self.page.goto(f"{self.url}/#/{route}?{query}")

    def snapshot(self, name: str) -> None:
        """A screenshot of the whole page now into the folder CONSOLE_SCREENSHOTS names,
        when it is set (docs/console.md's pictures:
        `CONSOLE_SCREENSHOTS=docs/screenshots pytest tests/console`); otherwise none, since
        a full-page PNG costs the browser and the suite a core for a moment each."""
        published = os.environ.get("CONSOLE_SCREENSHOTS")
        if published:
            self.page.screenshot(path=str(Path(published) / f"{name}.png"), full_page=True)

    def accessibility_violations(self) -> list[tuple[str, str, list[str]]]:
        """What axe-core finds wrong on the page now, by WCAG 2.x A and AA rules and best
        practice: (rule, impact, the elements it found)."""
        results = AXE.run(self.page)
        return [
            (rule["id"], rule["impact"], [" ".join(node["target"]) for node in rule["nodes"]])
            for rule in results.response["violations"]
        ]

    def errors(self) -> list[str]:
        """The errors the page logged, once none of its requests is in flight: an answer
        still on its way may yet be logged (a 404 reaches the browser's console after the
        view's heading is drawn)."""
        self.page.wait_for_function("() => window.__requestsInFlight === 0")
        return self.messages

    def take_errors(self) -> list[str]:
        """The errors logged so far, taken: a test that provokes one (a refused request, a
        blocked script) asserts it, and the check when the test ends sees only the rest."""
        taken = list(self.errors())
        self.messages.clear()
        return taken

    def refused(self, status: int, path: str) -> str:
        """What the browser logs of a request the API refused with `status`."""
        phrase = HTTPStatus(status).phrase.upper()
        return (
            f"Failed to load resource: the server responded with a status of {status} "
            f"({phrase}) at {self.url}{path}"
        )

    def script_ran(self) -> Any:
        return self.page.evaluate("window.__evidencia_injected")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keeps each phase's report on the test, for the console's screenshot on failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def console(
    browser: Browser, host: LocalHost, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Console]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(COUNT_REQUESTS)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    opened = Console(page, host.url)

    def record(message: ConsoleMessage) -> None:
        if message.type == "error":
            opened.messages.append(f"{message.text} at {message.location.get('url', '')}")

    page.on("console", record)
    try:
        yield opened
        assert opened.errors() == [], "the page logged errors the test did not expect"
    finally:
        called = getattr(request.node, "report_call", None)
        if called is None or called.failed:
            page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
        context.close()


def both_apis(tried: Tried) -> str:
    """A token of `ada`, admin of the trial's project and of its org, for both APIs."""
    capabilities = ("agent:psychologist", "agent:connect")
    token: str = tried.loop.connect.world.token("ada", capabilities=capabilities)[0]
    return token
