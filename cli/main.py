"""`evidencia`: serve the functions locally, manage tenants and tokens, check the setup,
regenerate the OpenAPI document, the capacity model and the lock file, deploy, and launch
a coding agent under the loop (`evidencia launch`, which imports none of the rest, so that
it starts at once)."""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import argparse

# argparse, subprocess, shutil, re and importlib.metadata are imported where they are used:
# `evidencia hook`, which every hand-started session's start waits on, needs none of them.


@cache
def parser() -> argparse.ArgumentParser:
    """Built once a process: argparse's construction (its messages looked up through
    gettext's catalogues) costs more than any command it parses."""
    import argparse
    from importlib.metadata import version

    from cli import admin, deploy

    root = argparse.ArgumentParser(prog="evidencia", description=__doc__)
    root.add_argument("--version", action="version", version=f"evidencia {version('evidencia')}")
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run every function locally on one port")
    serve.add_argument("--port", type=int, default=8080, help="the port to serve on")
    serve.add_argument(
        "--local-model",
        action="store_true",
        help="answer Gemini calls with the local development model (made-up answers built "
        "from each prompt's data, model version evidencia-local) instead of Gemini",
    )
    serve.add_argument(
        "--data",
        type=Path,
        help="keep the emulator's documents in this folder: imported at start, exported at "
        "Ctrl-C (make run keeps them in .local-data); without it they go with the host",
    )
    serve.add_argument(
        "--clean",
        action="store_true",
        help="with --data: wipe the documents kept there and start empty",
    )
    openapi = commands.add_parser("openapi", help="regenerate schemas/openapi.json")
    openapi.add_argument("--check", action="store_true", help="fail if the file is stale")
    capacity = commands.add_parser(
        "capacity", help="regenerate docs/capacity.md from the bench's results and the prices"
    )
    capacity.add_argument("--check", action="store_true", help="fail if the file is stale")
    performance = commands.add_parser(
        "performance", help="regenerate docs/performance.md from the bench's results"
    )
    performance.add_argument("--check", action="store_true", help="fail if the file is stale")
    runtimes = commands.add_parser(
        "runtimes", help="regenerate docs/agentconnect.md's launcher table from RUNTIMES"
    )
    runtimes.add_argument("--check", action="store_true", help="fail if the table is stale")
    sources = commands.add_parser(
        "sources", help="regenerate docs/otlp.md's table of sources from the rows"
    )
    sources.add_argument("--check", action="store_true", help="fail if the table is stale")
    lock = commands.add_parser(
        "lock", help="regenerate requirements.lock (runtime dependencies pinned with hashes)"
    )
    lock.add_argument("--check", action="store_true", help="fail if the lock is stale")
    doctor_command = commands.add_parser(
        "doctor",
        help="check what make run and make test need (Java 11+, the Firestore emulator, "
        "a free port, Node.js and npm, Chromium) and the Gemini settings",
    )
    doctor_command.add_argument(
        "--port",
        type=int,
        default=8080,
        help="the port `evidencia serve` will use: with FIRESTORE_EMULATOR_HOST set, doctor "
        "checks that this emulator delivers trigger events to it",
    )
    doctor_command.add_argument(
        "--json", action="store_true", help="print the findings as one JSON object"
    )
    doctor_command.add_argument(
        "--local-model",
        action="store_true",
        help="check for a host that will answer with the local development model",
    )
    admin.add_parser(commands)
    deploy.add_parser(commands)
    commands.add_parser(
        "hooks",
        add_help=False,
        help="bring sessions started by hand into the loop through the agents' own hooks "
        "(evidencia hooks --help)",
    )
    commands.add_parser(
        "launch",
        add_help=False,
        help="run a coding agent as AgentConnect chooses, observed by the Psychologist "
        "(evidencia launch --help)",
    )
    return root


JAVA_NEEDED = 11
"""The oldest Java the Firestore emulator runs on (17 is what CI uses)."""


class Finding(NamedTuple):
    value: str
    blocks_run: bool = False
    """True when `make run` cannot work until it is fixed (doctor then exits 1)."""


def java_version(java: str) -> int | None:
    """The major version `java -version` names (8 for "1.8.0_392"), None if it names none."""
    import re
    import subprocess

    try:
        said = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(?:1\.)?(\d+)', said.stderr + said.stdout)
    return int(match.group(1)) if match else None


def check_java() -> Finding:
    from cli.emulator import EmulatorError, find_java

    try:
        java = find_java()
    except EmulatorError as error:
        return Finding(f"MISSING: {error}", blocks_run=True)
    major = java_version(java)
    if major is None:
        return Finding(f"{java}, whose version could not be read ('java -version')")
    if major < JAVA_NEEDED:
        return Finding(
            f"{java} is Java {major}; the Firestore emulator needs {JAVA_NEEDED} or newer: "
            "'sudo apt-get install -y openjdk-17-jre-headless', first on PATH",
            blocks_run=True,
        )
    return Finding(f"{java} (Java {major})")


def check_jar() -> Finding:
    from cli.emulator import EmulatorError, find_jar

    try:
        return Finding(str(find_jar()))
    except EmulatorError as error:
        return Finding(f"MISSING: {error}", blocks_run=True)


def check_port(port: int) -> Finding:
    from cli.host import HostError, bind

    try:
        bind(port).close()
    except HostError:
        return Finding(
            f"in use (by a running host?): make run needs it; make run PORT={port + 1} "
            "picks another (make test needs none)"
        )
    return Finding("free")


def check_node() -> Finding:
    import shutil
    import subprocess

    found = [tool for tool in ("node", "npm", "npx") if shutil.which(tool) is None]
    if found:
        return Finding(
            f"MISSING {', '.join(found)}: make test needs them (the console's format check, the "
            "real MCP and agent clients): 'sudo apt-get install -y nodejs npm'"
        )
    version_said = subprocess.run(
        ["node", "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    return Finding(f"node {version_said}, npm (for make test)")


def check_chromium() -> Finding:
    import shutil

    found = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not found:
        return Finding(
            "MISSING: make test's console tests need it; make test installs Debian's chromium "
            "as root or with password-less sudo, else 'sudo apt-get install -y chromium' "
            "(or CHROMIUM=/path/to/chromium)"
        )
    return Finding(f"{found} (for make test)")


def doctor(port: int, as_json: bool = False, local_model: bool = False) -> int:
    """Say what the local host and the suite will use, one line each, and how to fix what
    is missing; 1 when `make run` cannot work."""
    from cli.host import flow_models, model_line
    from shared.instance import settings

    found: dict[str, Finding] = {}
    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        found["Firestore emulator"] = Finding(f"{external} (from FIRESTORE_EMULATOR_HOST)")
        found[f"Trigger delivery to port {port}"] = Finding(probe_delivery(port))
    else:
        found["Java"] = check_java()
        found["Firestore emulator jar"] = check_jar()
        found[f"Port {port}"] = check_port(port)
    found["Node.js and npm"] = check_node()
    found["Chromium"] = check_chromium()
    gemini = settings()
    found["Gemini"] = Finding(
        "the local development model (--local-model): made-up answers, model evidencia-local"
        if local_model
        else "configured, models "
        + ", ".join(f"{flow} {model}" for flow, model in flow_models(gemini).items())
        if gemini.gemini_configured
        else "not configured: set GEMINI_API_KEY (runs fail with not_configured until then), "
        "or serve with --local-model to see every flow complete with made-up answers"
    )
    found["Gemini model"] = Finding(model_line(gemini))
    if as_json:
        print(json.dumps({name: finding.value for name, finding in found.items()}))
    else:
        for name, finding in found.items():
            print(f"{name}: {finding.value}")
    return 1 if any(finding.blocks_run for finding in found.values()) else 0


def probe_delivery(port: int) -> str:
    """Whether the emulator delivers trigger events to a host on `port` (checked with a
    short-lived host there); raises `HostError` when it does not."""
    from cli.emulator import Emulator
    from cli.host import HostError, LocalHost, bind, check_delivery
    from shared.instance import settings

    try:
        listener = bind(port)
    except HostError:
        return "not checked: the port is in use (by a running host?)"
    emulator = Emulator(os.environ["FIRESTORE_EMULATOR_HOST"], settings().project_id or "")
    host = LocalHost(port, emulator, owns_emulator=False, schedule_interval_s=0, listener=listener)
    try:
        host.start()
        check_delivery(host)
    finally:
        host.stop()
        listener.close()
    return "ok"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["launch"]:
        from cli import launch

        return launch.main(argv[1:])
    if argv[:1] == ["hook"]:
        from cli import hook

        return hook.main(argv[1:])
    if argv[:1] == ["hooks"]:
        from cli import hooks

        return hooks.main(argv[1:])
    return run(argv)


def run(argv: list[str]) -> int:
    from cli import admin, deploy
    from cli.emulator import EmulatorError
    from cli.host import HostError

    args = parser().parse_args(argv)
    status = 0
    try:
        if args.command == "serve":
            from cli.host import serve

            serve(args.port, local_model=args.local_model, data=args.data, clean=args.clean)
        elif args.command == "deploy":
            return deploy.run(args)
        elif args.command == "doctor":
            status = doctor(args.port, args.json, args.local_model)
        elif args.command == "lock":
            from cli.lock import write as write_lock

            return write_lock(check=args.check)
        elif args.command == "openapi":
            from cli.openapi import write

            return write(check=args.check)
        elif args.command in ("capacity", "performance", "sources", "runtimes"):
            from cli import capacity, performance, runtimes_table, sources_table

            pages = {
                "capacity": capacity.write,
                "performance": performance.write,
                "sources": sources_table.write,
                "runtimes": runtimes_table.write,
            }
            return pages[args.command](check=args.check)
        else:
            admin.run(args)
    except (admin.AdminError, EmulatorError, HostError) as error:
        print(f"evidencia: {error}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
