"""`evidencia serve` binds before it starts anything, leaves nothing behind, keeps one state
file per host, and refuses an emulator that would never deliver its triggers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli.emulator import Emulator, free_port

ROOT = Path(__file__).resolve().parent.parent
EVIDENCIA = Path(sys.executable).with_name("evidencia")


def processes_naming(text: str) -> list[int]:
    """Ids of running processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in command:
            found.append(int(entry.name))
    return found


def environment(tmp_path: Path, emulator_host: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FIRESTORE_EMULATOR_HOST"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    env["DELIVERY_PROBE_S"] = "2"  # an emulator that delivers does so in milliseconds
    if emulator_host is not None:
        env["FIRESTORE_EMULATOR_HOST"] = emulator_host
    return env


@contextmanager
def serving(port: int, env: dict[str, str]) -> Iterator[str]:
    """A running `evidencia serve` on `port`; yields the emulator host it printed."""
    process = subprocess.Popen(
        [str(EVIDENCIA), "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        printed: list[str] = []
        while True:
            line = process.stdout.readline()
            assert line, "serve exited early: " + "".join(printed)
            printed.append(line)
            if line.startswith("FIRESTORE_EMULATOR_HOST="):
                yield line.split("=", 1)[1].strip()
                break
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        process.stdout.close()


def evidencia(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`evidencia ARGS` run to its end, as an operator would."""
    return subprocess.run(
        [str(EVIDENCIA), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_on_a_busy_port_fails_at_once_and_starts_no_emulator(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = evidencia(environment(tmp_path), "serve", "--port", str(port))
    assert result.returncode == 1
    assert f"Port {port} cannot be used" in result.stderr
    assert processes_naming(f"--functions_emulator=127.0.0.1:{port}") == []
    assert list(tmp_path.iterdir()) == []


def test_two_hosts_side_by_side_keep_their_own_emulator_and_state(
    tmp_path: Path, emulator: Emulator
) -> None:
    env = environment(tmp_path)
    first_port, second_port = free_port(), free_port()
    with serving(first_port, env) as first, serving(second_port, env) as second:
        assert first != second
        states = {
            json.loads(path.read_text())["port"]: json.loads(path.read_text())
            for path in tmp_path.glob("evidencia-serve-*.json")
        }
        assert states[first_port]["firestore_emulator_host"] == first
        assert states[second_port]["firestore_emulator_host"] == second
        ambiguous = evidencia(env, "admin", "tenant", "create", "--kind", "org", "--json")
        assert ambiguous.returncode == 1
        assert "say which with --port" in ambiguous.stderr
        created = evidencia(
            env, "admin", "--port", str(second_port), "tenant", "create", "--kind", "org", "--json"
        )
        assert created.returncode == 0, created.stderr
        org = json.loads(created.stdout)["id"]
        assert Emulator(second).document_exists(f"orgs/{org}")
        assert not Emulator(first).document_exists(f"orgs/{org}")
        named = environment(tmp_path, emulator.host)
        explicit = evidencia(named, "admin", "tenant", "create", "--kind", "org")
        assert explicit.returncode == 0, explicit.stderr
        assert f"the emulator at {emulator.host} (FIRESTORE_EMULATOR_HOST)" in explicit.stderr
        elsewhere = explicit.stdout.split()[-1]
        assert emulator.document_exists(f"orgs/{elsewhere}")
        hosts = (Emulator(first), Emulator(second))
        assert not any(host.document_exists(f"orgs/{elsewhere}") for host in hosts)
    assert list(tmp_path.glob("evidencia-serve-*.json")) == []
    for port in (first_port, second_port):
        assert processes_naming(f"--functions_emulator=127.0.0.1:{port}") == []


def test_serve_refuses_an_emulator_that_does_not_deliver_its_triggers(
    tmp_path: Path, emulator: Emulator
) -> None:
    port = free_port()
    result = evidencia(environment(tmp_path, emulator.host), "serve", "--port", str(port))
    assert result.returncode == 1
    assert "does not deliver trigger events" in result.stderr
    assert f"--functions_emulator=127.0.0.1:{port}" in result.stderr
    assert list(tmp_path.glob("evidencia-serve-*.json")) == []


def test_doctor_reports_an_emulator_that_does_not_deliver_triggers(
    tmp_path: Path, emulator: Emulator
) -> None:
    result = evidencia(environment(tmp_path, emulator.host), "doctor", "--port", str(free_port()))
    assert result.returncode == 1
    assert "does not deliver trigger events" in result.stderr


def test_serve_accepts_an_emulator_that_delivers_its_triggers(tmp_path: Path) -> None:
    from cli.emulator import start

    port = free_port()
    delivering = start(functions_port=port)
    try:
        with serving(port, environment(tmp_path, delivering.host)) as used:
            assert used == delivering.host
    finally:
        delivering.stop()


@pytest.mark.parametrize(
    "signals", [(signal.SIGINT, signal.SIGTERM), (signal.SIGHUP,)], ids=["twice", "hangup"]
)
def test_a_host_stopped_by_a_second_signal_or_a_closed_terminal_still_stops_its_emulator(
    tmp_path: Path, signals: tuple[signal.Signals, ...]
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [str(EVIDENCIA), "serve", "--port", str(port)],
        cwd=ROOT,
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    with process.stderr:
        printed = []
        for line in process.stderr:
            printed.append(line)
            if line.startswith("FIRESTORE_EMULATOR_HOST="):
                break
        else:
            raise AssertionError("serve never started: " + "".join(printed))
        for sent in signals:
            process.send_signal(sent)
        said = process.stderr.read()
        process.wait(timeout=30)
    left = processes_naming(f"--functions_emulator=127.0.0.1:{port}")
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert (process.returncode, "Traceback" in said, left) == (0, False, []), said
    assert list(tmp_path.glob("evidencia-serve-*.json")) == []


@pytest.mark.pure
def test_tools_count_only_the_hosts_started_from_their_own_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.host import CHECKOUT, running_hosts

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    for port, checkout in ((4001, str(CHECKOUT)), (4002, "/elsewhere/evidencia")):
        state = {"pid": os.getpid(), "checkout": checkout, "port": port}
        state["firestore_emulator_host"] = f"127.0.0.1:{port + 1000}"
        (tmp_path / f"evidencia-serve-{os.getuid()}-{port}.json").write_text(json.dumps(state))
    assert running_hosts() == {4001: "127.0.0.1:5001"}


def test_an_emulator_whose_free_port_was_taken_before_it_bound_starts_on_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cli import emulator as emulator_module

    with socket.create_server(("127.0.0.1", 0)) as taken:
        held = taken.getsockname()[1]
        ports = iter([held])
        monkeypatch.setattr(emulator_module, "free_port", lambda: next(ports, None) or free_port())
        started = emulator_module.start()
        try:
            assert started.port != held
            assert started.document_exists("nothing/here") is False
        finally:
            started.stop()
        with pytest.raises(emulator_module.PortTakenError, match=f"Port {held} is in use"):
            emulator_module.start(port=held)
