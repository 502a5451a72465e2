"""A real headless Chromium (Debian's `chromium`, driven by Playwright) on the console the
local host serves, with the API, the emulator and the Gemini test server behind it.

`make test` installs Chromium when it is missing; without it these tests fail, saying so."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

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
    folder: Path
    messages: list[str] = field(default_factory=list)
    """Errors the page logged, Content-Security-Policy violations among them."""

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
        """A screenshot of the whole page now, beside the one taken when the test ends;
        also into the folder CONSOLE_SCREENSHOTS names, when it is set (docs/console.md's
        pictures: `CONSOLE_SCREENSHOTS=docs/screenshots pytest tests/console`)."""
        self.page.screenshot(path=str(self.folder / f"{name}.png"), full_page=True)
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

    def script_ran(self) -> Any:
        return self.page.evaluate("window.__evidencia_injected")


@pytest.fixture
def console(browser: Browser, host: LocalHost, tmp_path: Path) -> Iterator[Console]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    opened = Console(page, host.url, tmp_path)

    def record(message: ConsoleMessage) -> None:
        if message.type == "error":
            opened.messages.append(message.text)

    page.on("console", record)
    try:
        yield opened
    finally:
        page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
        context.close()


def both_apis(tried: Tried) -> str:
    """A token of `ada`, admin of the trial's project and of its org, for both APIs."""
    capabilities = ("agent:psychologist", "agent:connect")
    token: str = tried.loop.connect.world.token("ada", capabilities=capabilities)[0]
    return token
