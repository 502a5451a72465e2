"""Test helpers: an HTTP client for the local host and a builder of tenants and users."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import flask
import requests
from flask.testing import FlaskClient

from cli.gemini_stand_in import GeminiTestServer
from cli.host import SECRET_HEADER, trigger_id
from cli.main import main as evidencia
from functions.registry import error_statuses, rest_entries
from shared.http import path_params
from shared.validation import issues_for


@dataclass
class Api:
    base_url: str
    secret: str = ""
    """The local host's secret, for its private routes and trigger deliveries."""
    session: requests.Session = field(default_factory=requests.Session)

    def private(self, path: str) -> requests.Response:
        """POST to a private route (a sweep) as the host's scheduler does."""
        return self.call("POST", path, headers={SECRET_HEADER: self.secret})

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> requests.Response:
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token}")
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        reply = self.session.request(
            method, self.base_url + path, data=data, headers=sent, timeout=30
        )
        assert_conforms(method, path, reply)
        return reply

    def post(self, path: str, body: Any, token: str | None, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, body, token, **kwargs)


def conformance_issues(method: str, path: str, status: int, body: Any) -> list[Any]:
    """Why a response breaks what the OpenAPI document declares for its operation and
    status (an undeclared status, or a body its schema refuses); [] for routes that are
    not public operations."""
    path = urlsplit(path).path
    for entry in rest_entries():
        if path in ("", "/") or path_params(entry.route, path) is None:
            continue
        operation = next((op for op in entry.operations if op.method == method), None)
        if operation is None:
            return [] if status == 405 else [f"{method} {path}: {status} where 405 is declared"]
        if status == operation.success_status:
            schema = operation.response_schema
        elif status in error_statuses(operation):
            schema = operation.error_schema
        else:
            return [f"{method} {path}: status {status} is not declared"]
        return issues_for(schema, body) if schema else []
    return []


def assert_conforms(method: str, path: str, reply: requests.Response) -> None:
    """Every response the suite receives is checked against the published document."""
    if not reply.headers.get("Content-Type", "").startswith("application/json"):
        return
    issues = conformance_issues(method, path, reply.status_code, reply.json())
    assert issues == [], (method, path, reply.status_code, issues, reply.text[:500])


def admin(*args: str) -> dict[str, Any]:
    """Run `evidencia admin ... --json` in-process and return its JSON output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = evidencia(["admin", *args, "--json"])
    assert code == 0, out.getvalue()
    printed = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    outputs = [line for line in printed if "severity" not in line]
    assert len(outputs) == 1, out.getvalue()
    parsed: dict[str, Any] = outputs[0]
    return parsed


@dataclass
class World:
    """Tenants and users made through the admin CLI, plus the Gemini script."""

    api: Api
    gemini: GeminiTestServer

    def tenant(self, kind: str = "workspace") -> str:
        tenant_id: str = admin("tenant", "create", "--kind", kind, "--name", f"test {kind}")["id"]
        return tenant_id

    def member(self, tenant_id: str, user: str, role: str) -> None:
        admin("member", "add", "--tenant", tenant_id, "--user", user, "--role", role)

    def token(
        self,
        user: str,
        capabilities: tuple[str, ...] = ("agent:research",),
        tenants: tuple[str, ...] = (),
        credential_class: str = "personal_access_token",
        expires_in: str | None = None,
    ) -> tuple[str, str]:
        args = ["token", "create", "--user", user, "--class", credential_class]
        for capability in capabilities:
            args += ["--capability", capability]
        for tenant in tenants:
            args += ["--tenant", tenant]
        args += ["--expires-in", expires_in] if expires_in else ["--no-expiry"]
        created = admin(*args)
        return created["token"], created["token_id"]

    def user(self, tenant_id: str, user: str, role: str, **kwargs: Any) -> str:
        self.member(tenant_id, user, role)
        return self.token(user, **kwargs)[0]


ROOT = Path(__file__).resolve().parent.parent
Configure = Callable[..., None]
"""The `configure` fixture: change settings for one test, e.g. `configure(X="1")`."""


def function_client(target: str) -> FlaskClient:
    """A test client of one deployed function, as functions-framework serves it."""
    import functions_framework

    app: flask.Flask = functions_framework.create_app(  # type: ignore[no-untyped-call]
        target=target, source=str(ROOT / "main.py")
    )
    return app.test_client()


def document(path: str) -> dict[str, Any]:
    """The stored document at `path`, which must exist."""
    from shared.clients import db

    data = db().document(path).get().to_dict()
    assert data is not None, f"{path} does not exist"
    return data


def wait_for(check: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll `check()` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def all_documents() -> dict[str, dict[str, Any]]:
    """Every document in the emulator, by path: to show a request wrote nothing."""
    from shared.clients import db

    found: dict[str, dict[str, Any]] = {}

    def walk(collections: Any) -> None:
        for collection in collections:
            for ref in collection.list_documents():
                snapshot = ref.get()
                if snapshot.exists:
                    found[ref.path] = snapshot.to_dict()
                walk(ref.collections())

    walk(db().collections())
    return found


def created_event(document: str, event_id: str = "redelivery") -> tuple[bytes, dict[str, str]]:
    """A document-created CloudEvent as the emulator sends it: base64 protobuf, binary mode."""
    from google.events.cloud.firestore import DocumentEventData

    message = DocumentEventData()
    message.value.name = f"projects/demo-evidencia/databases/(default)/documents/{document}"
    headers = {
        "ce-id": event_id,
        "ce-specversion": "1.0",
        "ce-source": "//firestore.googleapis.com/projects/demo-evidencia/databases/(default)",
        "ce-type": "google.cloud.firestore.document.v1.created",
        "ce-document": document,
        "Content-Type": "application/protobuf",
    }
    return base64.b64encode(DocumentEventData.serialize(message)), headers


def redeliver(api: Api, trigger: str, document: str, raw_protobuf: bool = False) -> int:
    """Deliver a created event for `document` to `trigger` again, as a duplicate would."""
    data, headers = created_event(document)
    if raw_protobuf:
        data = base64.b64decode(data)
    path = f"/functions/projects/demo-evidencia/triggers/{trigger_id(trigger, api.secret)}"
    url = api.base_url + path
    status: int = api.session.post(url, data=data, headers=headers, timeout=30).status_code
    return status
