"""Shared fixtures: the real Firestore emulator, the Gemini protocol server, the local host."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.counting import CallCounter
from cli import emulator as emulator_module
from cli.gemini_stand_in import GeminiTestServer
from cli.host import LocalHost
from shared.clients import CHANNEL_INTERCEPTORS
from shared.instance import Instance, install, instance, renew
from tests.api import Api, Configure, World
from tests.firestore_indexes import Indexes, QueryRecorder, problems
from tests.firestore_sizes import CommitRecorder, oversized

HOST_PORT = emulator_module.free_port()
BASE_ENV = {
    "GEMINI_API_KEY": "test-key",
    "GEMINI_ATTEMPTS": "3",
    "GEMINI_INITIAL_DELAY_S": "0.01",
    "GEMINI_TIMEOUT_MS": "30000",
    "AUTH_CACHE_SECONDS": "0",
    "PSYCHOLOGIST_GEMINI_BATCH": "off",
    "RESEARCH_SUPPORT_CHECK": "off",
}
"""A Gemini call waits longer than any test holds one on a gate (a loaded machine's three
workers once took over 3 s between a held call and its gate's opening, and the client's
retry then took the next reply); the tests of timeouts set their own. An abnormal end's
analysis is asked the standard way, so that it settles without a
sweep, unless a test turns batches on (`tests/psychologist/test_batch.py`); a research
run makes one Gemini call, so that tests of budgets, retries and faults count exactly
theirs, unless a test turns the support check on (`tests/research/test_citations.py`)."""


QUERIES = QueryRecorder()
"""Every query the suite sends, for the index check at the end of the session."""
COMMITS = CommitRecorder()
"""The largest document each collection group was written with, for the size check."""
CHANNEL_INTERCEPTORS.extend([QUERIES, COMMITS])


SERVICES = {"emulator", "gemini_server", "host", "api", "world", "counter"}
"""Fixtures that start a process or a server: a test using one is not pure."""


LONGEST_FIRST = (
    "test_serve_hygiene.py",
    "console/test_console.py",
    "test_examples.py",
    "loop/test_launch.py",
    "test_cli.py",
    "loop/test_selection_report.py",
    "console/test_patterns.py",
    "test_fuzzing.py",
    "test_entry_points.py",
    "test_deploy.py",
    "console/test_home.py",
    "console/test_instructions.py",
    "test_local_host.py",
    "test_firestore_outage.py",
)
"""The modules that take longest (`make test`'s durations report, summed by module), run
first: `--dist loadfile` hands each worker a module at a time in this order, so the run
ends on short modules, not on a worker alone with a long one."""


def _longest_first(item: pytest.Item) -> int:
    path = item.path.relative_to(ROOT / "tests").as_posix()
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test is in one tier: `pure` where it says so (and then it may use no
    service), else `integration`; the console's tests are also `browser`. The longest
    modules come first."""
    items.sort(key=_longest_first)
    for item in items:
        used = SERVICES & set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("pure") is None:
            item.add_marker(pytest.mark.integration)
        elif used:
            raise pytest.UsageError(f"{item.nodeid} is marked pure but uses {sorted(used)}")
        if item.path.is_relative_to(ROOT / "tests" / "console"):
            item.add_marker(pytest.mark.browser)


def _refuse(what: str) -> Any:
    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError(f"a pure test {what}: take its `pure` mark away")

    return refused


def _forbid_services(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _refuse("opened a connection"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("opened a connection"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("started a process"))


@pytest.fixture(scope="session", autouse=True)
def pure_run(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a run of the pure tier alone (`-m pure`), nothing opens a connection or starts a
    process, fixtures of any scope included."""
    if request.config.option.markexpr != "pure":
        yield
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        _forbid_services(monkeypatch)
        yield


@pytest.fixture(autouse=True)
def pure_stays_pure(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pure test that opens a connection or starts a process fails, saying so."""
    if request.node.get_closest_marker("pure") is not None:
        _forbid_services(monkeypatch)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A test worker is done (pytest-xdist): the run checks its queries and writes too."""
    recorded = getattr(node, "workeroutput", {}).get("firestore")
    if recorded is not None:
        QUERIES.absorb(recorded["queries"])
        COMMITS.absorb(recorded["commits"])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a document the suite wrote is over Firestore's 1 MiB, when a query
    it sent has no index in production, or when a composite index serves no query (so that
    deleting any index turns the check red). Indexes are checked on a whole run only: a
    selection of tests sends a selection of queries. A test worker hands what it recorded
    to the run, which checks every worker's together."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["firestore"] = {"queries": QUERIES.exported(), "commits": COMMITS.exported()}
        return
    if exitstatus != 0:
        return
    found = oversized(COMMITS)
    whole = session.config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if whole and not session.config.option.keyword and not session.config.option.markexpr:
        found += problems(QUERIES.queries, Indexes.load())
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        assert reporter is not None
        reporter.write_line("Firestore checks (production's rules) failed:", red=True)
        for problem in found:
            reporter.write_line(f"  {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator_module.Emulator]:
    """The emulator named by FIRESTORE_EMULATOR_HOST, or one started from the SDK's jar."""
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("runtime"))
    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        pytest.exit(
            f"FIRESTORE_EMULATOR_HOST={external} would be one database for every test worker: "
            "run with TEST_WORKERS=0 (pytest -n 0), or unset it so each worker starts its own",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    if external:
        yield emulator_module.Emulator(host=external)
        return
    started = emulator_module.start(functions_port=HOST_PORT)
    os.environ["FIRESTORE_EMULATOR_HOST"] = started.host
    try:
        yield started
    finally:
        started.stop()
        os.environ.pop("FIRESTORE_EMULATOR_HOST", None)


@pytest.fixture(scope="session")
def gemini_server() -> Iterator[GeminiTestServer]:
    server = GeminiTestServer().start()
    os.environ.update(BASE_ENV)
    os.environ["GEMINI_BASE_URL"] = server.url
    renew()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def host(
    emulator: emulator_module.Emulator, gemini_server: GeminiTestServer
) -> Iterator[LocalHost]:
    local = LocalHost(HOST_PORT, emulator, owns_emulator=False, schedule_interval_s=0).start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(autouse=True)
def clean(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from an empty database, an empty Gemini script and base settings,
    and ends once the triggers it caused have finished."""
    if "emulator" in request.fixturenames:
        request.getfixturevalue("emulator").reset()
    if "gemini_server" in request.fixturenames:
        request.getfixturevalue("gemini_server").reset()
    yield
    if "gemini_server" in request.fixturenames:
        request.getfixturevalue("gemini_server").open_gates()
    if "host" in request.fixturenames:
        local = request.getfixturevalue("host")
        assert local.delivered_probe(timeout=10)
        assert local.in_flight.wait_idle(timeout=30)
    monkeypatch.undo()
    renew()


@pytest.fixture
def counter(emulator: emulator_module.Emulator) -> Iterator[CallCounter]:
    """Every Firestore call this process makes from now on, by method name."""
    counting = CallCounter()
    CHANNEL_INTERCEPTORS.append(counting)
    renew(instance().environ)
    yield counting
    CHANNEL_INTERCEPTORS.remove(counting)
    renew(instance().environ)


LIBRARY_VARIABLES = frozenset(
    {
        "FIRESTORE_EMULATOR_HOST",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    }
)
"""Also read by the client libraries themselves (google-cloud-firestore, google-auth,
google-genai), from the process's environment: a test that changes one sets it there too."""


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Configure:
    """Change settings for one test, `configure(RESEARCH_MAX_ACTIVE_RUNS="1")` (None takes
    one away): a new instance reads them, nothing built before is kept."""

    def apply(**env: str | None) -> None:
        environ = dict(instance().environ)
        for name, value in env.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
            if name in LIBRARY_VARIABLES and value is None:
                monkeypatch.delenv(name, raising=False)
            elif name in LIBRARY_VARIABLES and value is not None:
                monkeypatch.setenv(name, value)
        install(Instance(environ))

    return apply


@pytest.fixture
def api(host: LocalHost) -> Api:
    return Api(host.url, host.secret)


@pytest.fixture
def world(api: Api, emulator: emulator_module.Emulator, gemini_server: GeminiTestServer) -> World:
    return World(api, gemini_server)


ROOT = Path(__file__).resolve().parent.parent
