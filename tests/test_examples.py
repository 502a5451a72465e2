"""Every walkthrough in `examples/` runs as written against `evidencia serve --local-model`,
as a newcomer would run it against `make run LOCAL_MODEL=1`, and shows its flow complete."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from cli.emulator import free_port
from tests.conftest import BASE_ENV
from tests.test_serve_hygiene import EVIDENCIA, ROOT, environment

EXAMPLES = sorted(path for path in (ROOT / "examples").glob("*.sh") if path.name != "lib.sh")
PAGES = {"launch": "agentconnect", "lifecycle": "psychologist", "hooks": "agentconnect"}
"""The page that walks through a walkthrough, where it is not named like it: the launcher
is a section of AgentConnect's, the loop's lifecycle one of the Psychologist's."""
SAYS = {"research": ["model: evidencia-local\n", "support check: evidencia-local\n"]}
"""Lines a walkthrough prints under the local model: a research answer and its support
check each name the model that made them, never a Gemini model that did not."""


class Served:
    def __init__(self, url: str, env: dict[str, str], said: list[str], logged: list[str]) -> None:
        self.url, self.env = url, env
        self.said = said
        """What serve printed on stderr, for the operator."""
        self.logged = logged
        """What it printed on stdout: log lines."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = free_port()
    env = environment(tmp_path_factory.mktemp("runtime"))
    for name in BASE_ENV:  # a newcomer's defaults: batches and the support check on
        env.pop(name, None)
    process = subprocess.Popen(
        [str(EVIDENCIA), "serve", "--port", str(port), "--local-model"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    logged: list[str] = []
    ready = threading.Event()

    def drain(stream: IO[str], into: list[str]) -> None:
        for line in stream:
            into.append(line)
            if line.startswith("Private routes"):
                ready.set()
        ready.set()

    streams = [(process.stdout, logged), (process.stderr, said)]
    drains = [
        threading.Thread(target=drain, args=(stream, into), daemon=True) for stream, into in streams
    ]
    for thread in drains:
        thread.start()
    try:
        assert ready.wait(120), "serve did not start: " + "".join(said)
        assert process.poll() is None, "serve exited: " + "".join(said)
        yield Served(f"http://127.0.0.1:{port}", env, said, logged)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        for thread in drains:
            thread.join(timeout=30)
        for stream, _ in streams:
            if stream is not None:
                stream.close()


def test_serve_says_the_local_model_is_on(served: Served) -> None:
    said = "".join(served.said)
    assert "--local-model" in said
    assert "evidencia-local" in said


RUNS: dict[Path, subprocess.CompletedProcess[str]] = {}
"""Each walkthrough's run, made once for the tests that read what it printed."""


def walkthrough(served: Served, script: Path) -> subprocess.CompletedProcess[str]:
    if script not in RUNS:
        RUNS[script] = subprocess.run(
            ["bash", str(script)],
            cwd=ROOT,
            env={**served.env, "EVIDENCIA_URL": served.url, "EVIDENCIA": str(EVIDENCIA)},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    return RUNS[script]


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_each_walkthrough_runs_as_written_and_its_flow_completes(
    served: Served, script: Path
) -> None:
    result = walkthrough(served, script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "== 1." in result.stdout
    for line in SAYS.get(script.stem, []):
        assert line in result.stdout


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_a_walkthrough_with_no_host_on_its_port_says_so_in_one_sentence(
    script: Path, tmp_path: Path
) -> None:
    port = free_port()
    env = environment(tmp_path)
    env.pop("EVIDENCIA_URL", None)
    result = subprocess.run(
        ["bash", str(script)],
        cwd=ROOT,
        env={**env, "PORT": str(port), "EVIDENCIA": str(EVIDENCIA)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    (said,) = result.stderr.splitlines()
    assert said.startswith(f"No Evidencia host answers at http://127.0.0.1:{port}: ")


@pytest.mark.pure
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_the_apis_page_shows_its_walkthroughs_steps_in_order(script: Path) -> None:
    """`examples/research.sh` is walked through in `docs/research.md`, and so on."""
    steps = re.findall(r'^step "(.*)"$', script.read_text(), re.MULTILINE)
    page = (ROOT / "docs" / f"{PAGES.get(script.stem, script.stem)}.md").read_text()
    shown = [page.find(step.replace('\\"', '"')) for step in steps]
    assert steps
    assert -1 not in shown, [step for step, at in zip(steps, shown, strict=True) if at == -1]
    assert shown == sorted(shown)


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_a_walkthrough_names_the_firestore_its_admin_commands_use_once(
    served: Served, script: Path
) -> None:
    result = walkthrough(served, script)
    printed = result.stdout + result.stderr
    assert printed.count("Firestore:") == 0, printed
    assert printed.count("admin commands: ") == 1, printed
    assert f"(the Firestore emulator of the host on port {served.url.rsplit(':', 1)[1]})" in printed


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_value_a_walkthrough_prints_has_its_label(served: Served, script: Path) -> None:
    """No bare `1`, `dev-api` or JSON blob: each line says what its value is."""
    result = walkthrough(served, script)
    bare = [
        line
        for line in result.stdout.splitlines()
        if line.strip() and (" " not in line.strip() or line.lstrip()[:1] in "{[")
    ]
    assert bare == []


WAITS = {
    "research": "the run (its worker starts on the run's create event): at most 60 s",
    "agentconnect": "the evaluation (its worker starts on the session's create event): at most",
    "psychologist": "the analysis (an abnormal end's analysis is collected from the Batch API by "
    "the sweep, every {sweep} s): at most",
    "otlp": "the analysis (an abnormal end's analysis is collected from the Batch API by the "
    "sweep, every {sweep} s): at most",
}
"""What each walkthrough that waits says it waits for, the sweep's interval as the host runs it."""


@pytest.mark.parametrize("script", sorted(WAITS))
def test_a_walkthrough_says_what_it_waits_for_and_for_how_long_at_most(
    served: Served, script: str
) -> None:
    [banner] = [line for line in served.said if line.startswith("Private routes")]
    sweep = re.search(r"run every (\S+) s", banner)
    assert sweep, banner
    result = walkthrough(served, ROOT / "examples" / f"{script}.sh")
    assert "waiting for " + WAITS[script].format(sweep=sweep.group(1)) in result.stderr
    assert re.search(r"^ready after \d+\.\d s$", result.stderr, re.MULTILINE), result.stderr


def test_every_line_the_host_prints_on_stdout_is_a_structured_log_line(served: Served) -> None:
    assert served.logged, "the walkthroughs left no log line"
    for line in served.logged:
        entry = json.loads(line)
        assert {"severity", "message", "time"} <= set(entry), line
