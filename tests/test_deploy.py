"""The deploy bundle serves every entry point on its own, and the dry run is the real plan."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests

from cli import capacity, console
from cli.deploy import Target, build_bundle, hosting_rewrites, plan
from cli.emulator import Emulator
from cli.main import main as evidencia
from cli.sizing import MAX_INSTANCES
from functions.registry import ENTRIES, McpEntry, RestEntry, SweepEntry, TriggerEntry
from shared.instance import settings
from tests.api import wait_for

MODELS = {"RESEARCH_GEMINI_MODEL": "gemini-2.5-flash"}
KINDS = (RestEntry, TriggerEntry, SweepEntry, McpEntry)
TARGET = Target("demo-p", "europe-west1", "eur3", MODELS)


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundle's source folder and a fresh virtual environment made from its requirements,
    read by its tests alone: made once a run, in the folder the test workers share (the
    first makes it, the others wait on its lock), however the module's tests are shared."""
    run = tmp_path_factory.getbasetemp()
    shared = (run.parent if "PYTEST_XDIST_WORKER" in os.environ else run) / "deploy-bundle"
    shared.mkdir(exist_ok=True)
    out, venv, made = shared / "out", shared / "venv", shared / "made"
    with (shared / "lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not made.exists():
            _make_bundle(out, venv)
            made.touch()
    return out / "source", venv


def _make_bundle(out: Path, venv: Path) -> None:
    """The bundle, and its requirements installed into a fresh environment by the locked uv
    the suite installs with (pip took 50 s and both cores for scipy and scikit-learn, which
    starved the other workers' emulators)."""
    build_bundle(out)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    uv = Path(sys.executable).with_name("uv")
    subprocess.run(
        [
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin" / "python"),
            "-r",
            str(out / "source" / "requirements.txt"),
        ],
        check=True,
        capture_output=True,
    )


def test_the_bundles_requirements_install_and_import_every_entry_point(
    bundle: tuple[Path, Path],
) -> None:
    source, venv = bundle
    code = "import main\nfor name in dir(main): getattr(main, name)\nprint(len(dir(main)))"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        cwd=source,
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout) == len(ENTRIES)


def test_a_bundle_missing_a_file_cannot_import_its_entry_points(
    bundle: tuple[Path, Path], tmp_path: Path
) -> None:
    source, venv = bundle
    broken = tmp_path / "source"
    shutil.copytree(source, broken)
    (broken / "shared" / "auth.py").unlink()
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import main; main.research_status"],
        cwd=broken,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "shared.auth" in done.stderr or "cannot import name 'auth'" in done.stderr


def distinct_free_ports(count: int) -> list[int]:
    """`count` free ports, all different: each is held until all are chosen, so the
    system cannot hand out one it handed out a moment before."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


BY_COMMAND = {kind: next(e.name for e in ENTRIES if isinstance(e, kind)) for kind in KINDS}
"""One name of each kind served by the `functions-framework` command itself; every name is
served by the app that command builds (`tests/bundle_server.py`)."""


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def served(bundle: tuple[Path, Path], emulator: Emulator) -> Iterator[dict[str, str]]:
    """Every registered name served from the bundle alone, by functions-framework's app for
    it in one interpreter; and one name of each kind by the `functions-framework` command
    (`{name}!` for those)."""
    source, venv = bundle
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["FIRESTORE_EMULATOR_HOST"] = emulator.host
    names = [entry.name for entry in ENTRIES] + [f"{name}!" for name in BY_COMMAND.values()]
    ports = dict(zip(names, distinct_free_ports(len(names)), strict=True))
    pairs = [f"{entry.name}={ports[entry.name]}" for entry in ENTRIES]
    python = str(venv / "bin" / "python")
    server = Path(__file__).with_name("bundle_server.py")
    processes = [
        subprocess.Popen(
            [python, str(server), *pairs], cwd=source, env=env, stdout=subprocess.DEVNULL
        )
    ]
    for name in BY_COMMAND.values():
        command = [
            str(venv / "bin" / "functions-framework"),
            *("--source", "main.py", "--target", name, "--port", str(ports[f"{name}!"])),
        ]
        processes.append(
            subprocess.Popen(
                command, cwd=source, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        )
    try:
        yield {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    finally:
        # gunicorn's quick shutdown (SIGTERM would have it wait out its graceful one); the
        # bundle's server has nothing to finish.
        processes[0].terminate()
        for process in processes[1:]:
            process.send_signal(signal.SIGINT)
        for process in processes:
            _stop(process)


def first_answer(method: str, url: str, **kwargs: Any) -> requests.Response:
    """The first answer of a server that is still starting."""

    def answer() -> list[requests.Response]:
        try:
            return [requests.request(method, url, timeout=10, **kwargs)]
        except requests.ConnectionError:
            return []

    replies: list[requests.Response] = wait_for(answer, timeout=60)
    return replies[0]


def filled(route: str) -> str:
    return re.sub(r"\{\w+\}", "01JC4Z8QK3M7YV2N5T9B0PXHRA", route)


def test_functions_framework_serves_every_registered_name_from_the_bundle(
    served: dict[str, str],
) -> None:
    event_headers = {
        "ce-id": "1",
        "ce-specversion": "1.0",
        "ce-source": "test",
        "ce-type": "google.cloud.firestore.document.v1.created",
        "ce-document": "elsewhere/x",
        "Content-Type": "application/protobuf",
    }
    by_command = [
        (entry, served[f"{entry.name}!"]) for entry in ENTRIES if entry.name + "!" in served
    ]
    assert len(by_command) == len(KINDS)
    for entry, url in [(entry, served[entry.name]) for entry in ENTRIES] + by_command:
        if isinstance(entry, TriggerEntry):
            reply = first_answer("POST", url, data=b"", headers=event_headers)
            assert reply.status_code == 200, (entry.name, reply.text)
        elif isinstance(entry, SweepEntry):
            reply = first_answer("POST", url + filled(entry.route))
            assert reply.status_code == 200, (entry.name, reply.text)
        elif isinstance(entry, McpEntry):
            reply = first_answer("POST", url + "/mcp", json={})
            assert reply.status_code == 401, (entry.name, reply.text)
            assert reply.headers["WWW-Authenticate"].startswith("Bearer")
        else:
            for operation in entry.operations:
                kwargs: dict[str, Any] = {"json": {}} if operation.method in ("POST", "PUT") else {}
                reply = first_answer(operation.method, url + filled(entry.route), **kwargs)
                body = reply.json()
                code = body["code"] if operation.codec is None else body["details"][0]["reason"]
                # the boundary answered: the path and parameters are checked, then the token
                assert (reply.status_code, code) in (
                    (400, "invalid_request"),
                    (401, "unauthenticated"),
                ), (entry.name, reply.text)


EXPECTED_SIZING = {
    "public": ("1", "512Mi", 8),
    "sweep": ("1", "512Mi", 1),
    "worker": ("1", "1Gi", 4),
}


def kind_of(entry: object) -> str:
    if isinstance(entry, TriggerEntry):
        return "worker"
    return "sweep" if isinstance(entry, SweepEntry) else "public"


@pytest.mark.pure
def test_every_function_is_deployed_with_its_cpu_concurrency_threads_and_instance_cap(
    tmp_path: Path,
) -> None:
    """Public functions take eight requests at once on a whole vCPU, sweeps one, workers
    four on 1 GiB; the Python server runs as many threads; every function is capped at
    what the capacity model gives it at 100x, or at the operator's `--max-instances`."""
    capped = Target("demo-p", "europe-west1", "eur3", MODELS, max_instances=3)
    caps = capacity.instance_caps()
    assert max(caps.values()) > MAX_INSTANCES, "some function needs more than the least cap"
    for target in (TARGET, capped):
        steps = plan(target, tmp_path / str(target.max_instances))
        for entry in ENTRIES:
            cap = target.max_instances or capacity.instance_cap(entry.name, caps)
            [command] = deploys(steps, entry.name)
            cpu, memory, concurrency = EXPECTED_SIZING[kind_of(entry)]
            assert f"--cpu={cpu}" in command, entry.name
            assert f"--memory={memory}" in command, entry.name
            assert f"--concurrency={concurrency}" in command, entry.name
            assert f"--max-instances={cap}" in command, entry.name
            [env] = [arg for arg in command if arg.startswith("--set-env-vars=")]
            assert env.endswith(f",THREADS={concurrency}"), entry.name


def deploys(steps: list, name: str) -> list[list[str]]:  # type: ignore[type-arg]
    return [s.command for s in steps if s.command[:4] == ["gcloud", "functions", "deploy", name]]


@pytest.mark.pure
def test_the_dry_run_plan_deploys_each_entry_once_with_its_trigger_and_identity(
    tmp_path: Path,
) -> None:
    """Every registry entry is deployed once, with the identity its kind needs (the Gemini
    secret only where Gemini is called), triggers on their document pattern, the sweeps
    scheduled, and every step in the order that lets each find what it calls."""
    steps = plan(TARGET, tmp_path)
    for entry in ENTRIES:
        [command] = deploys(steps, entry.name)
        assert f"--entry-point={entry.name}" in command
        calls_gemini = isinstance(entry, TriggerEntry) and entry.calls_gemini
        assert ("--set-secrets=GEMINI_API_KEY=GEMINI_API_KEY:latest" in command) == calls_gemini
        account = "gemini" if calls_gemini else "api"
        assert f"--service-account=evidencia-{account}@demo-p.iam.gserviceaccount.com" in command
        if isinstance(entry, TriggerEntry):
            assert (
                "--trigger-event-filters=type=google.cloud.firestore.document.v1.created" in command
            )
            assert "--trigger-event-filters=database=(default)" in command
            assert f"--trigger-event-filters-path-pattern=document={entry.document}" in command
            assert "--trigger-location=eur3" in command
            assert "--no-allow-unauthenticated" in command
        else:
            assert "--trigger-http" in command
    assert not any(
        "GEMINI_API_KEY=" in arg and "secrets" not in arg for s in steps for arg in s.command
    )
    commands = [" ".join(s.command) for s in steps]
    assert any(
        c.startswith("gcloud scheduler jobs create http evidencia-psychologist-sweep")
        and "--schedule=* * * * *" in c
        for c in commands
    )
    assert any(
        c.startswith("firebase deploy") and "firestore:rules,firestore:indexes" in c
        for c in commands
    )
    invokers = [c for c in commands if "add-invoker-policy-binding" in c]
    order = [
        next(i for i, c in enumerate(commands) if predicate(c))
        for predicate in (
            lambda c: "--only=firestore:rules,firestore:indexes" in c,
            lambda c: "gcloud firestore indexes composite list" in c,
            lambda c: c.startswith("gcloud functions deploy"),
            lambda c: "--only=hosting" in c,
            lambda c: c.startswith("gcloud scheduler jobs"),
        )
    ]
    assert order == sorted(order)
    last_function = max(i for i, c in enumerate(commands) if c.startswith("gcloud functions"))
    assert last_function < order[3] < order[4]
    triggers = [e for e in ENTRIES if isinstance(e, TriggerEntry)]
    assert all(
        "evidencia-trigger@" in c for c in invokers if any(f" {e.name} " in c for e in triggers)
    )
    assert len(invokers) == len(triggers) + sum(1 for e in ENTRIES if isinstance(e, SweepEntry))


@pytest.mark.pure
def test_the_mcp_server_is_deployed_public_and_routed_at_mcp(tmp_path: Path) -> None:
    [command] = deploys(plan(TARGET, tmp_path), "mcp_server")
    assert "--allow-unauthenticated" in command
    assert "--service-account=evidencia-api@demo-p.iam.gserviceaccount.com" in command
    routed = hosting_rewrites(ENTRIES, "europe-west1")
    assert {
        "source": "/mcp",
        "function": {"functionId": "mcp_server", "region": "europe-west1"},
    } in (routed)


@pytest.mark.pure
def test_a_new_registry_entry_is_planned_without_touching_the_deploy_code(tmp_path: Path) -> None:
    extra = replace(
        next(e for e in ENTRIES if isinstance(e, TriggerEntry)),
        name="another_worker",
        document="things/{id}",
    )
    steps = plan(TARGET, tmp_path, (*ENTRIES, extra))
    [command] = deploys(steps, "another_worker")
    assert "--trigger-event-filters-path-pattern=document=things/{id}" in command


@pytest.mark.pure
def test_the_deploy_command_prints_its_plan_and_builds_the_bundle(tmp_path: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = evidencia(
            [
                "deploy",
                "--project",
                "demo-p",
                "--region",
                "europe-west1",
                "--dry-run",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    assert code == 0
    lines = printed.getvalue().splitlines()
    assert sum(line.startswith("gcloud functions deploy ") for line in lines) == len(ENTRIES)
    assert (tmp_path / "out" / "source" / "main.py").exists()
    routing = (tmp_path / "out" / "firebase" / "firebase.json").read_text()
    assert '"source": "/projects/*/hypotheses"' in routing
    assert "psychologist_sweep" not in routing
    base = "https://europe-west1-demo-p.cloudfunctions.net"
    assert f"{base}/research_status/" in printed.getvalue()
    assert f"{base}/psychologist_hypotheses_list/projects/{{projectId}}/hypotheses" in (
        printed.getvalue()
    )
    assert f"{base}/psychologist_sweep" not in printed.getvalue().split("# function URLs")[1]
    worker = next(line for line in lines if "research_run_worker" in line and "deploy" in line)
    config = settings()
    assert f"RESEARCH_GEMINI_MODEL={config.research_model}" in worker, "the host's default"
    assert f"AGENTCONNECT_GEMINI_MODEL={config.agentconnect_model}" in worker


@pytest.mark.pure
def test_every_public_route_has_a_hosting_rewrite() -> None:
    from cli.deploy import hosting_rewrites

    rewrites = hosting_rewrites(ENTRIES, "europe-west1")
    public = [e for e in ENTRIES if isinstance(e, RestEntry | McpEntry)]
    assert [r["function"]["functionId"] for r in rewrites] == [e.name for e in public]


@pytest.mark.pure
def test_the_lock_files_are_current_against_pyproject() -> None:
    from cli.lock import LOCKS, PYPROJECT, stale_reason

    assert [stale_reason(PYPROJECT, lock, extras) for lock, extras in LOCKS] == [None, None]


@pytest.mark.pure
def test_the_test_lock_pins_every_runtime_package_as_the_deployed_lock_does() -> None:
    from cli.lock import LOCK, TEST_LOCK, pins_of

    runtime, tested = pins_of(LOCK.read_text()), pins_of(TEST_LOCK.read_text())
    assert {name: tested.get(name) for name in runtime} == runtime
    assert {"pytest", "ruff", "mypy", "pytest-cov"} <= set(tested) - set(runtime)


@pytest.mark.pure
def test_a_changed_dependency_makes_the_lock_stale(tmp_path: Path) -> None:
    from cli.lock import LOCK, PYPROJECT, TEST_LOCK, stale_reason

    changed = tmp_path / "pyproject.toml"
    changed.write_text(PYPROJECT.read_text().replace('"tenacity>=8.2,<10"', '"tenacity>=9.9,<10"'))
    assert stale_reason(changed, LOCK) is not None
    tools = tmp_path / "tools.toml"
    tools.write_text(PYPROJECT.read_text().replace('"ruff==0.17.6"', '"ruff==0.17.7"'))
    assert stale_reason(tools, TEST_LOCK, ("test",)) is not None
    assert stale_reason(tools, LOCK) is None
    lines = LOCK.read_text().splitlines()
    pins = [i for i, line in enumerate(lines) if "==" in line and not line.startswith(" ")]
    assert pins
    assert all(lines[i + 1].strip().startswith("--hash=sha256:") for i in pins)


@pytest.mark.pure
def test_hosting_publishes_the_console_with_its_content_security_policy(tmp_path: Path) -> None:
    firebase = build_bundle(tmp_path / "bundle") / "firebase"
    public = firebase / "public"
    assert (public / "index.html").read_text() == (console.CONSOLE / "index.html").read_text()
    shipped = sorted(p.name for p in (public / "assets").iterdir())
    assert shipped == sorted(p.name for p in console.ASSETS.iterdir())
    config = json.loads((firebase / "firebase.json").read_text())
    [rule] = config["hosting"]["headers"]
    headers = {header["key"]: header["value"] for header in rule["headers"]}
    assert rule["source"] == "**"
    assert headers["Content-Security-Policy"] == console.CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in headers["Content-Security-Policy"]


@pytest.mark.pure
def test_the_deploy_sets_each_flows_model_from_its_flag_else_the_shared_one(tmp_path: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = evidencia(
            [
                "deploy",
                *("--project", "demo-p", "--region", "europe-west1", "--dry-run"),
                *("--gemini-model", "gemini-3.7-flash", "--agentconnect-model", "gemini-3.6-flash"),
                *("--out", str(tmp_path / "out")),
            ]
        )
    assert code == 0
    worker = next(line for line in printed.getvalue().splitlines() if "evaluation_worker" in line)
    assert "RESEARCH_GEMINI_MODEL=gemini-3.7-flash" in worker
    assert "PSYCHOLOGIST_GEMINI_MODEL=gemini-3.7-flash" in worker
    assert "AGENTCONNECT_GEMINI_MODEL=gemini-3.6-flash" in worker
