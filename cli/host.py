"""The local host: every entry point of the registry on one port, as deployed.

HTTP entry points are served at their public paths; the emulator delivers document-created
CloudEvents to `/functions/projects/{project}/triggers/{name}`, and each goes to its
`@functions_framework.cloud_event` function exactly as Eventarc would call it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.error
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import flask
from cloudevents.http import from_http
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

import main
from cli import console
from cli import emulator as emulator_module
from cli.gemini_stand_in import GeminiTestServer
from functions.registry import (
    ENTRIES,
    HttpEntry,
    SweepEntry,
    TriggerEntry,
    http_entries,
    scheduled_entries,
    trigger_entries,
)
from shared import jsonbody, logs
from shared.config import Settings
from shared.errors import ApiError, ErrorCode
from shared.http import log_request, request_id_of, werkzeug_rule
from shared.ids import new_uuid
from shared.models import PROFILES, Control, profile_of

CHECKOUT = Path(__file__).resolve().parent.parent
"""The folder this code runs from: a host's state names it, so that tools find only the
hosts started from their own checkout."""
OPENAPI = CHECKOUT / "schemas" / "openapi.json"
ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
"""Every method reaches the entry point, which answers what it does not serve with 405."""
_CODE_BY_STATUS = {
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    414: ErrorCode.INVALID_REQUEST,
}
SECRET_HEADER = "X-Evidencia-Local-Secret"  # noqa: S105 - a header name, not a secret
"""Private routes (the sweeps) answer only calls that carry the host's secret; trigger
deliveries are routed under a path that holds it."""


def _http_view(entry: HttpEntry, secret: str) -> Callable[..., Any]:
    def view(**_params: str) -> Any:
        if isinstance(entry, SweepEntry) and flask.request.headers.get(SECRET_HEADER) != secret:
            raise NotFound(f"No operation is served at {flask.request.path}.")
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


def _trigger_view(entry: TriggerEntry, in_flight: InFlight) -> Callable[[], Any]:
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


def error_response(status: int, message: str, request_id: str) -> tuple[bytes, dict[str, str]]:
    """The API's JSON error body and headers for a status the host itself answers."""
    api_error = ApiError(_CODE_BY_STATUS.get(status, ErrorCode.INTERNAL), message)
    body = {**api_error.body(request_id), "error": HTTPStatus(status).phrase}
    return jsonbody.dumps(body).encode(), {
        "Content-Type": "application/json",
        "x-request-id": request_id,
    }


def _error(error: HTTPException) -> flask.Response:
    status = error.code or 500
    request_id = request_id_of(flask.request)
    log_request(flask.request, status, request_id=request_id)
    body, headers = error_response(status, error.description or "", request_id)
    response = flask.Response(body, status=status, headers=headers)
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        response.headers["Allow"] = ", ".join(sorted(error.valid_methods))
    return response


class _RequestHandler(WSGIRequestHandler):
    """Werkzeug's handler, answering what it refuses itself (an oversized request line)
    with the API's JSON error instead of an HTML page."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        body, headers = error_response(code, message or explain or "", new_uuid())
        self.send_response(code, message)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and code >= HTTPStatus.OK:
            self.wfile.write(body)


def _probe_view(probes: Probes) -> Callable[[], Any]:
    def view() -> Any:
        event = from_http(dict(flask.request.headers), flask.request.get_data())
        probes.saw(str(event.get("document", "")).rsplit("/", 1)[-1])
        return "OK"

    return view


def trigger_id(name: str, secret: str) -> str:
    """The id a trigger is registered under with the emulator, which delivers its events
    to `/functions/projects/{project}/triggers/{id}`: only the emulator knows the path."""
    return f"{name}-{secret}"


def build_app(project_id: str, in_flight: InFlight, probes: Probes, secret: str) -> flask.Flask:
    app = flask.Flask("evidencia")
    for entry in http_entries():
        app.add_url_rule(
            werkzeug_rule(entry.route),
            endpoint=entry.name,
            view_func=_http_view(entry, secret),
            methods=ALL_METHODS,
            provide_automatic_options=False,
        )
    triggers = [(entry.name, _trigger_view(entry, in_flight)) for entry in trigger_entries()]
    for name, view in [*triggers, (PROBE_TRIGGER, _probe_view(probes))]:
        app.add_url_rule(
            f"/functions/projects/{project_id}/triggers/{trigger_id(name, secret)}",
            endpoint=name,
            view_func=view,
            methods=["POST"],
            provide_automatic_options=False,
        )
    app.add_url_rule(
        "/openapi.json",
        endpoint="openapi",
        view_func=lambda: flask.Response(OPENAPI.read_bytes(), mimetype="application/json"),
        provide_automatic_options=False,
    )
    console.add_routes(app)
    app.register_error_handler(HTTPException, _error)
    return app


def register_triggers(emulator: emulator_module.Emulator, secret: str) -> None:
    for entry in trigger_entries():
        emulator.register_trigger(trigger_id(entry.name, secret), entry.document)
    emulator.register_trigger(trigger_id(PROBE_TRIGGER, secret), f"{PROBE_COLLECTION}/{{probeId}}")


class Scheduler:
    """Runs every scheduled entry point (Cloud Scheduler's job in production) on an interval."""

    def __init__(self, app: flask.Flask, interval_s: float, secret: str) -> None:
        self.app = app
        self.secret = secret
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
                client.post(entry.route, headers={SECRET_HEADER: self.secret})

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
        data: emulator_module.DataFolder | None = None,
    ) -> None:
        from shared.instance import settings

        self.port = port
        self.emulator = emulator
        self.owns_emulator = owns_emulator
        self.data = data if owns_emulator else None
        """Where the emulator's documents are kept when the host stops (its own emulator only)."""
        self.started_empty: str | None = None
        """When `serve` started this host on an empty database, so that a token made before
        then is gone: a refused token's message then says so."""
        self.in_flight = InFlight()
        self.probes = Probes()
        self.secret = secrets.token_hex(16)
        app = build_app(emulator.project_id, self.in_flight, self.probes, self.secret)
        app.after_request(self._hint_on_a_refused_token)
        fd = listener.fileno() if listener is not None else None
        self.server: BaseWSGIServer = make_server(
            "127.0.0.1", port, app, threaded=True, fd=fd, request_handler=_RequestHandler
        )
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        interval = (
            settings().schedule_interval_s if schedule_interval_s is None else schedule_interval_s
        )
        self.scheduler = Scheduler(app, interval, self.secret)

    def _hint_on_a_refused_token(self, response: flask.Response) -> flask.Response:
        if self.started_empty is None or response.status_code != HTTPStatus.UNAUTHORIZED:
            return response
        body = response.get_json(silent=True)
        if isinstance(body, dict) and "invalid, expired or revoked" in str(body.get("message")):
            body["message"] = (
                f"{body['message']} If it was made before this local host started empty at "
                f"{self.started_empty}, it went with the old data: make a new one with "
                f"{command_path()} admin token create."
            )
            response.set_data(jsonbody.dumps(body))
        return response

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalHost:
        logs.setup()
        register_triggers(self.emulator, self.secret)
        self.thread.start()
        self.scheduler.start()
        return self

    def delivered_probe(self, timeout: float) -> bool:
        """Create a probe document and wait for its event: once it is here, the events of
        the writes made before it have been handed over too."""
        from shared.clients import db
        from shared.ids import new_ulid

        probe_id = new_ulid()
        # The probe's own time, not a request's 5 s: the first write to an emulator just
        # started, on a busy machine, took longer (serve then stopped with a traceback).
        db().collection(PROBE_COLLECTION).document(probe_id).create(
            {"at": probe_id}, timeout=timeout
        )
        return self.probes.wait_for(probe_id, timeout)

    def stop(self) -> None:
        self.scheduler.stop()
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(timeout=10)
        self.server.server_close()
        if self.data is not None:
            self.keep_data(self.data)
        if self.owns_emulator:
            self.emulator.stop()

    def keep_data(self, data: emulator_module.DataFolder) -> None:
        try:
            data.keep(self.emulator)
        except (OSError, urllib.error.URLError) as error:
            _say(f"Local data: NOT kept: the emulator's export to {data.path} failed ({error})")
        else:
            _say(f"Local data: kept in {data.path} for the next start")


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


def open_host(
    port: int,
    listener: socket.socket,
    data: emulator_module.DataFolder | None = None,
    clean: bool = False,
) -> LocalHost:
    """The emulator named by FIRESTORE_EMULATOR_HOST, or a new one delivering to `port`,
    holding the documents kept in `data` (none when `clean`: those are wiped first)."""
    from shared.instance import settings

    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        project_id = settings().project_id or emulator_module.PROJECT_ID
        emulator = emulator_module.Emulator(host=external, project_id=project_id)
        return LocalHost(port, emulator, owns_emulator=False, listener=listener)
    if data is not None and clean:
        data.wipe()
    seed = data.kept() if data is not None else None
    emulator = emulator_module.start(functions_port=port, seed=seed, own_session=data is not None)
    os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host
    try:
        return LocalHost(port, emulator, owns_emulator=True, listener=listener, data=data)
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
                "checkout": str(CHECKOUT),
                "port": host.port,
                "url": host.url,
                "firestore_emulator_host": host.emulator.host,
            }
        )
    )


def running_hosts() -> dict[int, str]:
    """The emulator of each running `evidencia serve` started from this checkout, by its
    port (hosts of other checkouts on the same machine are not this project's)."""
    found: dict[int, str] = {}
    for path in _runtime_dir().glob(f"evidencia-serve-{os.getuid()}-*.json"):
        try:
            state = json.loads(path.read_text())
            os.kill(int(state["pid"]), 0)
        except (OSError, ValueError, KeyError):
            continue
        if state.get("checkout") == str(CHECKOUT):
            found[int(state["port"])] = str(state["firestore_emulator_host"])
    return found


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Ctrl-C, a stop, and a closed terminal: each stops the host and what it started."""
_STOPPING: list[int] = []
"""The stop signal received, once one has been."""


def _interrupt(signum: int, _frame: object) -> None:
    """Stops the host at the first signal; a second one (Ctrl-C pressed twice) must not
    cut its clean-up short and strand the emulator."""
    if not _STOPPING:
        _STOPPING.append(signum)
        raise KeyboardInterrupt


def flow_models(config: Settings) -> dict[str, str]:
    """The model each flow asks."""
    return {
        "research": config.research_model,
        "psychologist": config.psychologist_model,
        "agentconnect": config.agentconnect_model,
    }


def model_line(config: Settings) -> str:
    """Which model answers each flow and how it is asked, in short (its profile in
    shared/models.py and docs/gemini.md say the rest), on which backend."""
    backend = config.gemini_backend
    described: dict[str, list[str]] = {}
    for flow, model in flow_models(config).items():
        profile = profile_of(model)
        if profile.name not in PROFILES:
            text = f"{model} (not in shared/models.py: no thinking or logprobs parameter)"
        else:
            thinking = profile.thinking
            how = {
                Control.LEVEL: f"thinking_level {thinking.default_level} by default",
                Control.BUDGET: "thinking_budget",
                Control.NONE: "no thinking parameter",
            }[thinking.control]
            retired = "" if profile.served_by(backend) else f", RETIRED on the {backend} backend"
            text = f"{profile.name} ({profile.stage}, {how}{retired})"
        described.setdefault(text, []).append(flow)
    flows = "; ".join(f"{', '.join(flows)}: {text}" for text, flows in described.items())
    return f"{flows}; {backend} backend"


def command_path() -> str:
    """How to type `evidencia` from the current folder: it lives in the venv, not on PATH."""
    script = Path(sys.executable).with_name("evidencia")
    with contextlib.suppress(ValueError):
        return str(script.relative_to(Path.cwd()))
    return str(script)


def _use_local_model() -> GeminiTestServer:
    """Start the local development model and point this process's Gemini client at it."""
    from cli import local_model
    from shared.instance import renew

    model = local_model.start()
    os.environ["GEMINI_BASE_URL"] = model.url
    os.environ["GEMINI_API_KEY"] = os.environ.get("GEMINI_API_KEY") or "evidencia-local"
    os.environ["GOOGLE_GENAI_USE_VERTEXAI"] = "false"
    renew()
    return model


def _say(line: str) -> None:
    """What the operator reads goes to stderr; stdout carries only the JSON log lines."""
    print(line, file=sys.stderr, flush=True)


def data_line(host: LocalHost, data: emulator_module.DataFolder | None, restored: bool) -> str:
    """Whether the documents outlive this host, and how to change that."""
    if not host.owns_emulator:
        return "Local data: that of the emulator FIRESTORE_EMULATOR_HOST names, left as it is"
    if data is None:
        return (
            "Local data: not kept: tenants and tokens go when the host stops "
            "(--data FOLDER keeps them; make run keeps them in .local-data)"
        )
    if restored:
        return (
            f"Local data: restored from {data.path} and kept there at Ctrl-C "
            "(the default of make run; make run CLEAN=1, or --clean, starts empty)"
        )
    return (
        f"Local data: started empty (nothing kept in {data.path} yet, or --clean): tokens "
        "made before this start are refused as invalid; kept there at Ctrl-C"
    )


def serve(
    port: int, local_model: bool = False, data: Path | None = None, clean: bool = False
) -> None:
    from shared.instance import settings

    logs.setup()
    for stop in STOP_SIGNALS:
        signal.signal(stop, _interrupt)  # SIGINT also when started in the background
    listener = bind(port)
    host: LocalHost | None = None
    folder = emulator_module.DataFolder(data) if data is not None else None
    model = _use_local_model() if local_model else None
    try:
        restored = folder is not None and not clean and folder.kept() is not None
        host = open_host(port, listener, folder, clean)
        host.start()  # bound first: a start that fails still stops the emulator it opened
        if not host.owns_emulator:
            check_delivery(host)
        if host.owns_emulator and not restored:
            host.started_empty = time.strftime("%H:%M:%S")
        write_state(host)
        evidencia = command_path()
        _say(f"Evidencia local host: {host.url}")
        _say(f"FIRESTORE_EMULATOR_HOST={host.emulator.host}")
        _say(data_line(host, folder, restored))
        configured = (
            "configured"
            if settings().gemini_configured
            else "not configured (runs fail not_configured)"
        )
        if model is not None:
            configured = (
                f"the local development model at {model.url} (--local-model): answers are "
                "made up from each prompt's own data and carry model version evidencia-local"
            )
        _say(f"Gemini: {configured}")
        _say(f"Gemini model: {model_line(settings())}")
        _say(
            f"Commands: {evidencia} doctor, {evidencia} admin tenant list (evidencia is in the "
            "venv, not on PATH: '. .venv/bin/activate' puts it there; in this checkout, "
            "make admin ARGS='tenant list' works too)"
        )
        _say(
            f"Review console: {host.url}/ (sign in with a token: {evidencia} admin token create "
            "--user USER --class user_session --capability CAPABILITY --expires-in 1d)"
        )
        _say(f"{len(ENTRIES)} entry points; OpenAPI at {host.url}/openapi.json. Ctrl-C stops.")
        every = f"run every {host.scheduler.interval_s:g} s" if host.scheduler.interval_s else "off"
        _say(f"Private routes (the sweeps, {every}) need the header {SECRET_HEADER}: {host.secret}")
        logs.info("Local host started", url=host.url, emulator=host.emulator.host)
        while True:
            time.sleep(0.5)  # waking now and then runs the handler of a signal another thread took
    except KeyboardInterrupt:
        pass
    finally:
        if host is not None:
            host.stop()
            state_file(port).unlink(missing_ok=True)
        if model is not None:
            model.stop()
        listener.close()


PROBE_TRIGGER = "evidencia_delivery_probe"
PROBE_COLLECTION = "evidencia_delivery_probes"


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
    from shared.instance import settings

    if not host.delivered_probe(settings().delivery_probe_s):
        raise HostError(
            f"The Firestore emulator at {host.emulator.host} does not deliver trigger events to "
            f"this host (port {host.port}), so runs, analyses and evaluations would never start. "
            "Start an emulator that delivers to it, then point FIRESTORE_EMULATOR_HOST at it "
            f"(port 8181 here):\n  {suitable_emulator_command(host.port)}"
        )
