"""The local host: every entry point of the registry on one port, as deployed.

HTTP entry points are served at their public paths; the emulator delivers document-created
CloudEvents to `/functions/projects/{project}/triggers/{name}`, and each goes to its
`@functions_framework.cloud_event` function exactly as Eventarc would call it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flask
from cloudevents.http import from_http
from werkzeug.exceptions import HTTPException
from werkzeug.serving import BaseWSGIServer, make_server

import main
from cli import emulator as emulator_module
from functions.registry import ENTRIES, Entry, http_entries, scheduled_entries, trigger_entries
from shared import logs
from shared.errors import ApiError, ErrorCode
from shared.http import request_id_of

OPENAPI = Path(__file__).resolve().parent.parent / "schemas" / "openapi.json"
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_CODE_BY_STATUS = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED}


def _werkzeug_rule(route: str) -> str:
    return route.replace("{", "<").replace("}", ">")


def _http_view(entry: Entry) -> Callable[..., Any]:
    def view(**_params: str) -> Any:
        return getattr(main, entry.name)(flask.request)

    view.__name__ = entry.name
    return view


class InFlight:
    """How many trigger deliveries are being handled, so a caller can wait for quiet."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def __enter__(self) -> None:
        with self._changed:
            self._count += 1

    def __exit__(self, *_exc: object) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._count == 0, timeout=timeout)


def _trigger_view(entry: Entry, in_flight: InFlight) -> Callable[[], Any]:
    def view() -> Any:
        event = from_http(dict(flask.request.headers), flask.request.get_data())
        logs.info(
            "Event delivered",
            trigger=entry.name,
            event_id=event["id"],
            document=event.get("document"),
        )
        with in_flight:
            getattr(main, entry.name)(event)
        return "OK"

    view.__name__ = entry.name
    return view


def _error(error: HTTPException) -> flask.Response:
    request_id = request_id_of(flask.request)
    status = error.code or 500
    api_error = ApiError(_CODE_BY_STATUS.get(status, ErrorCode.INTERNAL), error.description or "")
    response = flask.jsonify(api_error.body(request_id))
    response.status_code = status
    response.headers["x-request-id"] = request_id
    return response


def _probe_view(probes: Probes) -> Callable[[], Any]:
    def view() -> Any:
        event = from_http(dict(flask.request.headers), flask.request.get_data())
        probes.saw(str(event.get("document", "")).rsplit("/", 1)[-1])
        return "OK"

    return view


def build_app(project_id: str, in_flight: InFlight, probes: Probes) -> flask.Flask:
    app = flask.Flask("evidencia")
    for entry in http_entries():
        assert entry.route is not None
        app.add_url_rule(
            _werkzeug_rule(entry.route),
            endpoint=entry.name,
            view_func=_http_view(entry),
            methods=ALL_METHODS,
        )
    for entry in trigger_entries():
        app.add_url_rule(
            f"/functions/projects/{project_id}/triggers/{entry.name}",
            endpoint=entry.name,
            view_func=_trigger_view(entry, in_flight),
            methods=["POST"],
        )
    app.add_url_rule(
        f"/functions/projects/{project_id}/triggers/{PROBE_TRIGGER}",
        endpoint=PROBE_TRIGGER,
        view_func=_probe_view(probes),
        methods=["POST"],
    )
    app.add_url_rule(
        "/openapi.json",
        endpoint="openapi",
        view_func=lambda: flask.Response(OPENAPI.read_bytes(), mimetype="application/json"),
    )
    app.register_error_handler(HTTPException, _error)
    return app


def register_triggers(emulator: emulator_module.Emulator) -> None:
    for entry in trigger_entries():
        assert entry.document is not None
        emulator.register_trigger(entry.name, entry.document)
    emulator.register_trigger(PROBE_TRIGGER, f"{PROBE_COLLECTION}/{{probeId}}")


class Scheduler:
    """Runs every scheduled entry point (Cloud Scheduler's job in production) on an interval."""

    def __init__(self, app: flask.Flask, interval_s: float) -> None:
        self.app = app
        self.interval_s = interval_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        if self.interval_s > 0 and scheduled_entries():
            self.thread.start()

    def _loop(self) -> None:
        client = self.app.test_client()
        while not self.stopped.wait(self.interval_s):
            for entry in scheduled_entries():
                assert entry.route is not None
                client.post(entry.route)

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join(timeout=30)


class LocalHost:
    """The app on a werkzeug server in a background thread, with its emulator."""

    def __init__(
        self,
        port: int,
        emulator: emulator_module.Emulator,
        owns_emulator: bool,
        schedule_interval_s: float | None = None,
        listener: socket.socket | None = None,
    ) -> None:
        from shared.config import settings

        self.port = port
        self.emulator = emulator
        self.owns_emulator = owns_emulator
        self.in_flight = InFlight()
        self.probes = Probes()
        app = build_app(emulator.project_id, self.in_flight, self.probes)
        fd = listener.fileno() if listener is not None else None
        self.server: BaseWSGIServer = make_server("127.0.0.1", port, app, threaded=True, fd=fd)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        interval = (
            settings().schedule_interval_s if schedule_interval_s is None else schedule_interval_s
        )
        self.scheduler = Scheduler(app, interval)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalHost:
        register_triggers(self.emulator)
        self.thread.start()
        self.scheduler.start()
        return self

    def delivered_probe(self, timeout: float) -> bool:
        """Create a probe document and wait for its event: once it is here, the events of
        the writes made before it have been handed over too."""
        from shared.clients import db
        from shared.ids import new_ulid

        probe_id = new_ulid()
        db().collection(PROBE_COLLECTION).document(probe_id).create({"at": probe_id})
        return self.probes.wait_for(probe_id, timeout)

    def stop(self) -> None:
        self.scheduler.stop()
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(timeout=10)
        self.server.server_close()
        if self.owns_emulator:
            self.emulator.stop()


class HostError(RuntimeError):
    pass


def bind(port: int) -> socket.socket:
    """The host's listening socket, bound before anything else starts."""
    try:
        return socket.create_server(("127.0.0.1", port))
    except OSError as error:
        raise HostError(
            f"Port {port} cannot be used ({error.strerror}); pick another with --port."
        ) from None


def open_host(port: int, listener: socket.socket) -> LocalHost:
    """The emulator named by FIRESTORE_EMULATOR_HOST, or a new one delivering to `port`."""
    from shared.config import settings

    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        project_id = settings().project_id or emulator_module.PROJECT_ID
        emulator = emulator_module.Emulator(host=external, project_id=project_id)
        return LocalHost(port, emulator, owns_emulator=False, listener=listener)
    emulator = emulator_module.start(functions_port=port)
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
    try:
        return LocalHost(port, emulator, owns_emulator=True, listener=listener)
    except BaseException:
        emulator.stop()
        raise


def _runtime_dir() -> Path:
    return Path(os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp")  # noqa: S108 - per-user names below


def state_file(port: int) -> Path:
    return _runtime_dir() / f"evidencia-serve-{os.getuid()}-{port}.json"


def write_state(host: LocalHost) -> None:
    state_file(host.port).write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "port": host.port,
                "url": host.url,
                "firestore_emulator_host": host.emulator.host,
            }
        )
    )


def running_hosts() -> dict[int, str]:
    """The emulator of each running `evidencia serve`, by its port."""
    found: dict[int, str] = {}
    for path in _runtime_dir().glob(f"evidencia-serve-{os.getuid()}-*.json"):
        try:
            state = json.loads(path.read_text())
            os.kill(int(state["pid"]), 0)
        except (OSError, ValueError, KeyError):
            continue
        found[int(state["port"])] = str(state["firestore_emulator_host"])
    return found


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def serve(port: int) -> None:
    from shared.config import settings

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # also when started in the background
    listener = bind(port)
    host: LocalHost | None = None
    try:
        host = open_host(port, listener).start()
        if not host.owns_emulator:
            check_delivery(host)
        write_state(host)
        print(f"Evidencia local host: {host.url}", flush=True)
        print(f"FIRESTORE_EMULATOR_HOST={host.emulator.host}", flush=True)
        configured = (
            "configured"
            if settings().gemini_configured
            else "not configured (runs fail not_configured)"
        )
        print(f"Gemini: {configured}", flush=True)
        print(
            f"{len(ENTRIES)} entry points; OpenAPI at {host.url}/openapi.json. Ctrl-C stops.",
            flush=True,
        )
        logs.info("Local host started", url=host.url, emulator=host.emulator.host)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        if host is not None:
            host.stop()
            state_file(port).unlink(missing_ok=True)
        listener.close()


PROBE_TRIGGER = "evidencia_delivery_probe"
PROBE_COLLECTION = "evidencia_delivery_probes"
PROBE_WAIT_S = 10.0


class Probes:
    """Delivery probes the host has received, by document id."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._changed = threading.Condition()

    def saw(self, document_id: str) -> None:
        with self._changed:
            self._seen.add(document_id)
            self._changed.notify_all()

    def wait_for(self, document_id: str, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: document_id in self._seen, timeout=timeout)


def suitable_emulator_command(port: int) -> str:
    jar = "JAR"
    with contextlib.suppress(emulator_module.EmulatorError):
        jar = str(emulator_module.find_jar())
    return " ".join(emulator_module.command(jar, "java", 8181, functions_port=port))


def check_delivery(host: LocalHost) -> None:
    """Fail unless the emulator delivers document-created events to this host: a probe
    document is created and its event must arrive."""
    if not host.delivered_probe(PROBE_WAIT_S):
        raise HostError(
            f"The Firestore emulator at {host.emulator.host} does not deliver trigger events to "
            f"this host (port {host.port}), so runs, analyses and evaluations would never start. "
            "Start an emulator that delivers to it, then point FIRESTORE_EMULATOR_HOST at it "
            f"(port 8181 here):\n  {suitable_emulator_command(host.port)}"
        )
