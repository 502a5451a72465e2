"""`evidencia`: serve the functions locally, manage tenants and tokens, check the setup,
regenerate the OpenAPI document, the capacity model and the lock file, deploy, and launch
a coding agent under the loop (`evidencia launch`, which imports none of the rest, so that
it starts at once)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import cache
from importlib.metadata import version


@cache
def parser() -> argparse.ArgumentParser:
    """Built once a process: argparse's construction (its messages looked up through
    gettext's catalogues) costs more than any command it parses."""
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
    lock = commands.add_parser(
        "lock", help="regenerate requirements.lock (runtime dependencies pinned with hashes)"
    )
    lock.add_argument("--check", action="store_true", help="fail if the lock is stale")
    doctor_command = commands.add_parser(
        "doctor", help="check Java, the Firestore emulator and Gemini settings"
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
        "launch",
        add_help=False,
        help="run a coding agent as AgentConnect chooses, observed by the Psychologist "
        "(evidencia launch --help)",
    )
    return root


def doctor(port: int, as_json: bool = False, local_model: bool = False) -> None:
    """Say what the local host will use, or fail with what to install."""
    from cli.emulator import find_jar, find_java
    from cli.host import flow_models, model_line
    from shared.instance import settings

    found: dict[str, str] = {}
    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        found["Firestore emulator"] = f"{external} (from FIRESTORE_EMULATOR_HOST)"
        found[f"Trigger delivery to port {port}"] = probe_delivery(port)
    else:
        found["Java"] = str(find_java())
        found["Firestore emulator jar"] = str(find_jar())
    gemini = settings()
    found["Gemini"] = (
        "the local development model (--local-model): made-up answers, model evidencia-local"
        if local_model
        else "configured, models "
        + ", ".join(f"{flow} {model}" for flow, model in flow_models(gemini).items())
        if gemini.gemini_configured
        else "not configured: set GEMINI_API_KEY (runs fail with not_configured until then), "
        "or serve with --local-model to see every flow complete with made-up answers"
    )
    found["Gemini model"] = model_line(gemini)
    if as_json:
        print(json.dumps(found))
    else:
        for name, value in found.items():
            print(f"{name}: {value}")


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
    return run(argv)


def run(argv: list[str]) -> int:
    from cli import admin, deploy
    from cli.emulator import EmulatorError
    from cli.host import HostError

    args = parser().parse_args(argv)
    try:
        if args.command == "serve":
            from cli.host import serve

            serve(args.port, local_model=args.local_model)
        elif args.command == "deploy":
            return deploy.run(args)
        elif args.command == "doctor":
            doctor(args.port, args.json, args.local_model)
        elif args.command == "lock":
            from cli.lock import write as write_lock

            return write_lock(check=args.check)
        elif args.command == "openapi":
            from cli.openapi import write

            return write(check=args.check)
        elif args.command in ("capacity", "performance"):
            from cli import capacity, performance

            write_page = capacity.write if args.command == "capacity" else performance.write
            return write_page(check=args.check)
        else:
            admin.run(args)
    except (admin.AdminError, EmulatorError, HostError) as error:
        print(f"evidencia: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
