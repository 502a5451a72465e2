"""`evidencia serve`, `evidencia admin` and `evidencia openapi` as an operator runs them."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from cli.emulator import free_port
from cli.openapi import render
from shared.clients import db
from shared.validation import SCHEMAS_DIR
from tests.api import admin
from tests.test_serve_hygiene import environment

ROOT = Path(__file__).resolve().parent.parent
EVIDENCIA = Path(sys.executable).with_name("evidencia")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@pytest.mark.pure
def test_the_committed_openapi_document_is_current() -> None:
    assert (SCHEMAS_DIR / "openapi.json").read_text(encoding="utf-8") == render(), (
        "schemas/openapi.json is stale: run 'make openapi'"
    )


def test_serve_starts_its_own_emulator_serves_and_stops_everything_on_ctrl_c(
    tmp_path: Path,
) -> None:
    """`evidencia serve` as a user runs it: it starts its own emulator, prints its URL and
    the emulator's address, serves OpenAPI, `evidencia admin` finds and writes to that
    emulator, and on Ctrl-C the host and the emulator stop and the state file is gone."""
    port = free_port()
    env = environment(tmp_path)
    env.pop("GEMINI_API_KEY", None)
    process = subprocess.Popen(
        [str(EVIDENCIA), "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        while not any(line.startswith("Private routes") for line in lines):
            line = process.stdout.readline()
            assert line, "serve exited early: " + "".join(lines)
            lines.append(line)
        emulator_host = (
            next(x for x in lines if x.startswith("FIRESTORE_EMULATOR_HOST="))
            .split("=", 1)[1]
            .strip()
        )
        assert f"Evidencia local host: http://127.0.0.1:{port}\n" in lines
        assert "Gemini: not configured (runs fail not_configured)\n" in lines
        assert answers(f"http://127.0.0.1:{port}/openapi.json")
        [commands] = [line for line in lines if line.startswith("Commands: ")]
        typed = commands.split()[1]
        assert (ROOT / typed).samefile(EVIDENCIA), "the banner's evidencia runs as printed"
        assert f"{typed} admin token create --user USER" in "".join(lines)

        found = subprocess.run(
            [str(EVIDENCIA), "admin", "tenant", "create", "--kind", "org", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        org = json.loads(found.stdout)["id"]
        probe = urllib.request.Request(
            f"http://{emulator_host}/v1/projects/demo-evidencia/databases/(default)/documents/orgs/{org}",
            headers={"Authorization": "Bearer owner"},
        )
        with urllib.request.urlopen(probe, timeout=5) as reply:
            assert reply.status == 200, "admin wrote into the emulator that serve started"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        process.stdout.close()
    assert not answers(f"http://{emulator_host}/"), "the emulator stopped with serve"
    assert not answers(f"http://127.0.0.1:{port}/openapi.json")
    assert not (tmp_path / f"evidencia-serve-{os.getuid()}-{port}.json").exists()


def test_token_create_prints_the_token_once_with_its_id(emulator: object) -> None:
    created = admin(
        "token",
        "create",
        "--user",
        "ana",
        "--class",
        "user_session",
        "--capability",
        "agent:research",
        "--expires-in",
        "2h",
    )
    assert created["token"].startswith(f"evd_{created['token_id']}_")


def test_member_add_refuses_an_unknown_tenant(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    assert (
        main(["admin", "member", "add", "--tenant", "nope", "--user", "u", "--role", "viewer"]) == 1
    )
    assert "No workspace, project or org" in capsys.readouterr().err


def test_an_unparseable_duration_is_refused(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    with pytest.raises(SystemExit):
        main(
            [
                "admin",
                "token",
                "create",
                "--user",
                "u",
                "--class",
                "user_session",
                "--capability",
                "agent:research",
                "--expires-in",
                "soon",
            ]
        )
    assert "is not a duration" in capsys.readouterr().err


def test_a_tenant_id_belongs_to_one_kind_only(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    workspace = admin("tenant", "create", "--kind", "workspace")["id"]
    capsys.readouterr()
    for kind in ("project", "org", "workspace"):
        assert main(["admin", "tenant", "create", "--kind", kind, "--id", workspace]) == 1
        assert "already taken by a workspace" in capsys.readouterr().err
    legacy = "01JC4Z8QK3M7YV2N5T9B0PXHRA"
    db().document(f"projects/{legacy}").set({"kind": "project", "name": "stored before"})
    assert main(["admin", "tenant", "create", "--kind", "org", "--id", legacy]) == 1
    assert "already taken by a project" in capsys.readouterr().err


def test_member_commands_name_the_kind_they_acted_on(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    project = admin("tenant", "create", "--kind", "project")["id"]
    added = admin("member", "add", "--tenant", project, "--user", "ana", "--role", "viewer")
    assert added["kind"] == "project"
    assert (
        main(
            [
                "admin",
                "member",
                "add",
                "--tenant",
                project,
                "--kind",
                "org",
                "--user",
                "ana",
                "--role",
                "viewer",
            ]
        )
        == 1
    )
    assert f"No org has the id {project}" in capsys.readouterr().err
    assert main(["admin", "member", "remove", "--tenant", project, "--user", "ana"]) == 0
    assert f"ana removed from project {project}" in capsys.readouterr().out


def test_token_create_refuses_a_tenant_that_does_not_exist(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    args = ["admin", "token", "create", "--user", "u", "--class", "user_session"]
    args += ["--capability", "agent:research", "--tenant", "nope", "--no-expiry"]
    assert main(args) == 1
    assert "No workspace, project or org has the id nope" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kind", "bad_id"),
    [("workspace", "nope"), ("project", "has/slash"), ("org", "x" * 129), ("project", "a b")],
)
def test_tenant_create_refuses_ids_the_api_paths_refuse(
    emulator: object, capsys: pytest.CaptureFixture[str], kind: str, bad_id: str
) -> None:
    from cli.main import main

    assert main(["admin", "tenant", "create", "--kind", kind, "--id", bad_id]) == 1
    assert f"A {kind} id must be" in capsys.readouterr().err


def _options(parser: argparse.ArgumentParser, path: str = "evidencia") -> Iterator[tuple[str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield path, action


@pytest.mark.pure
def test_every_option_of_every_command_says_what_it_does() -> None:
    from cli.main import parser

    silent = [
        f"{path} {'/'.join(action.option_strings) or action.dest}"
        for path, action in _options(parser())
        if not action.help
    ]
    assert silent == []


@pytest.mark.pure
def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"evidencia {version('evidencia')}"


TOKEN = ["admin", "token", "create", "--user", "ana", "--class", "user_session"]


def test_a_token_needs_an_expiry_or_an_explicit_no_expiry(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    with pytest.raises(SystemExit):
        main([*TOKEN, "--capability", "agent:research"])
    assert "--expires-in --no-expiry" in capsys.readouterr().err
    created = admin(*TOKEN[1:], "--capability", "agent:research", "--no-expiry")
    assert created["expires_in_s"] is None


def test_token_create_says_which_tenants_the_token_covers(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    project = admin("tenant", "create", "--kind", "project")["id"]
    capsys.readouterr()
    assert main([*TOKEN, "--capability", "agent:psychologist", "--expires-in", "1h"]) == 0
    assert "covers: every tenant its user is a member of" in capsys.readouterr().out
    args = [*TOKEN, "--capability", "agent:psychologist", "--tenant", project, "--expires-in", "1h"]
    assert main(args) == 0
    assert f"covers: tenants {project}; expires in 1:00:00" in capsys.readouterr().out


def test_list_commands_show_tenants_members_and_tokens_but_never_a_secret(
    emulator: object,
) -> None:
    org = admin("tenant", "create", "--kind", "org", "--name", "Acme")["id"]
    admin("member", "add", "--tenant", org, "--user", "lia", "--role", "admin")
    created = admin(*TOKEN[1:4], "lia", *TOKEN[5:], "--capability", "agent:connect", "--no-expiry")
    assert {"id": org, "kind": "org", "name": "Acme"} in admin("tenant", "list")["tenants"]
    assert admin("tenant", "list", "--kind", "workspace")["tenants"] == [
        t for t in admin("tenant", "list")["tenants"] if t["kind"] == "workspace"
    ]
    assert admin("member", "list", "--tenant", org)["members"] == [{"user": "lia", "role": "admin"}]
    admin("token", "revoke", created["token_id"])
    listed = admin("token", "list", "--user", "lia")
    [token] = listed["tokens"]
    assert token["token_id"] == created["token_id"]
    assert token["revoked_at"] is not None
    printed = json.dumps(listed)
    assert created["token"] not in printed
    assert created["token"].split("_", 2)[2].rsplit(".", 1)[0] not in printed
    assert "hash" not in printed


def test_admin_without_a_host_or_an_emulator_refuses_real_firestore_unless_named(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FIRESTORE_EMULATOR_HOST"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    done = subprocess.run(
        [str(EVIDENCIA), "admin", "tenant", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "No local host of this checkout is running" in done.stderr
    assert "--project PROJECT" in done.stderr
    assert "Traceback" not in done.stderr


def test_admin_says_which_firestore_it_wrote_to(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    assert main(["admin", "tenant", "create", "--kind", "org"]) == 0
    assert f"Firestore: the emulator at {os.environ['FIRESTORE_EMULATOR_HOST']}" in (
        capsys.readouterr().err
    )


def test_admin_asked_for_json_leaves_stderr_to_errors_so_scripts_print_the_target_once(
    emulator: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """A walkthrough makes three to eight admin calls: each once said which Firestore."""
    from cli.main import main

    assert main(["admin", "tenant", "create", "--kind", "org", "--json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out.splitlines()[-1])["kind"] == "org"
    assert "Firestore:" not in said.err


def test_doctor_reports_as_json_and_names_the_local_model_when_it_will_answer() -> None:
    env = {k: v for k, v in os.environ.items() if k != "FIRESTORE_EMULATOR_HOST"}
    env.pop("GEMINI_API_KEY", None)
    for flags, said in (([], "not configured"), (["--local-model"], "local development model")):
        done = subprocess.run(
            [str(EVIDENCIA), "doctor", "--json", *flags],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        found = json.loads(done.stdout)
        assert {"Java", "Firestore emulator jar", "Gemini"} <= set(found)
        assert said in found["Gemini"]


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (None, "gemini-3.8-flash (ga, thinking_level MEDIUM by default)"),
        ("gemini-2.5-flash", "RETIRED on the developer backend"),
        ("gemini-9-experimental", "gemini-9-experimental (not in shared/models.py"),
    ],
)
def test_doctor_names_the_model_and_how_its_profile_asks_it(model: str | None, said: str) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("FIRESTORE_EMULATOR_HOST", "GEMINI_MODEL")
    }
    if model:
        env["GEMINI_MODEL"] = model
    done = subprocess.run(
        [str(EVIDENCIA), "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = json.loads(done.stdout)["Gemini model"]
    assert said in line
    assert len(line) <= 200, line


def doctor_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in env.items() if k != "FIRESTORE_EMULATOR_HOST"}
    return subprocess.run(
        [str(EVIDENCIA), "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def only_on_path(tmp_path: Path, **tools: str) -> dict[str, str]:
    """An environment whose PATH holds only the named tools (name: the file it runs), with
    the emulator's jar named directly (gcloud, which finds it, is left off PATH)."""
    from cli.emulator import find_jar

    folder = tmp_path / "bin"
    folder.mkdir(parents=True)
    for name, target in tools.items():
        (folder / name).symlink_to(target)
    return {**os.environ, "PATH": str(folder), "FIRESTORE_EMULATOR_JAR": str(find_jar())}


def test_doctor_says_a_busy_port_and_how_to_pick_another_without_failing() -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = doctor_run(dict(os.environ), "--port", str(port))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Port {port}: in use (by a running host?): make run needs it; make run PORT=" in (
        done.stdout
    )


def test_doctor_names_each_missing_tool_make_test_needs_and_how_to_install_it(
    tmp_path: Path,
) -> None:
    java = shutil.which("java")
    assert java is not None
    done = doctor_run(only_on_path(tmp_path, java=java))
    assert done.returncode == 0, "make run needs neither Node.js nor Chromium"
    lines = done.stdout.splitlines()
    assert "Node.js and npm: MISSING node, npm, npx: make test needs them" in done.stdout
    assert "'sudo apt-get install -y nodejs npm'" in done.stdout
    assert "Chromium: MISSING: make test's console tests need it" in done.stdout
    assert any(line.startswith("Java: ") and "(Java " in line for line in lines), done.stdout


def test_doctor_fails_on_a_missing_or_too_old_java_and_says_what_to_install(
    tmp_path: Path,
) -> None:
    missing = doctor_run(only_on_path(tmp_path))
    assert missing.returncode == 1
    assert "Java: MISSING: Java was not found on PATH" in missing.stdout
    old = tmp_path / "old-java"
    old.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    old.chmod(0o755)
    too_old = doctor_run(only_on_path(tmp_path / "old", java=str(old)))
    assert too_old.returncode == 1
    assert "is Java 8; the Firestore emulator needs 11 or newer" in too_old.stdout
