"""`evidencia`: serve, admin, openapi."""

from __future__ import annotations

import argparse
import os
import sys

from cli import admin, deploy
from cli.emulator import EmulatorError


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="evidencia", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run every function locally on one port")
    serve.add_argument("--port", type=int, default=8080)
    openapi = commands.add_parser("openapi", help="regenerate schemas/openapi.json")
    openapi.add_argument("--check", action="store_true", help="fail if the file is stale")
    commands.add_parser("doctor", help="check Java, the Firestore emulator and Gemini settings")
    admin.add_parser(commands)
    deploy.add_parser(commands)
    return root


def doctor() -> None:
    """Say what the local host will use, or fail with what to install."""
    from cli.emulator import find_jar, find_java
    from shared.config import settings

    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        print(f"Firestore emulator: {external} (from FIRESTORE_EMULATOR_HOST)")
    else:
        print(f"Java: {find_java()}")
        print(f"Firestore emulator jar: {find_jar()}")
    gemini = settings()
    state = (
        f"configured, model {gemini.gemini_model}"
        if gemini.gemini_configured
        else ("not configured: set GEMINI_API_KEY (runs fail with not_configured until then)")
    )
    print(f"Gemini: {state}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "serve":
            from cli.host import serve

            serve(args.port)
        elif args.command == "deploy":
            return deploy.run(args)
        elif args.command == "doctor":
            doctor()
        elif args.command == "openapi":
            from cli.openapi import write

            return write(check=args.check)
        else:
            admin.run(args)
    except (admin.AdminError, EmulatorError) as error:
        print(f"evidencia: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
