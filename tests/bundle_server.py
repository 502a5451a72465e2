"""Serves entry points of the deploy bundle in the current folder, each on its own port,
through the app functions-framework builds for a target (`create_app`, what its
`functions-framework --target` command serves): `python bundle_server.py NAME=PORT ...`.

Run by the bundle's own virtual environment, so it imports nothing of the project but
what the bundle holds. One interpreter for every name: fifty-odd `functions-framework`
processes, each importing the same libraries, cost a minute of both cores."""

from __future__ import annotations

import sys
import threading

import functions_framework
from werkzeug.serving import make_server


def serve(pairs: list[str]) -> None:
    for pair in pairs:
        name, port = pair.split("=")
        app = functions_framework.create_app(target=name, source="main.py")  # type: ignore[no-untyped-call]
        server = make_server("127.0.0.1", int(port), app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    serve(sys.argv[1:])
