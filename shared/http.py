"""The HTTP boundary every entry point goes through.

In order: request id, method, content type, size, JSON parse, bearer header present,
schema validation of body and parameters, token lookup, token grants, tenant role, then
the domain handler. No Firestore read happens before the request is known to be valid.
Domain code raises `ApiError`; anything else becomes a logged, unechoed `internal`.
"""

from __future__ import annotations

import re
import time
import traceback
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Protocol, TypeVar, cast

import flask
from werkzeug.datastructures import Headers
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, MapAdapter, Rule

from shared import auth, jsonbody, logs
from shared.clients import db
from shared.errors import ApiError, ErrorCode
from shared.ids import new_uuid
from shared.jsonbody import JsonObject
from shared.store import store_fault
from shared.validation import load_schema, validate

MAX_BODY_BYTES = 1024 * 1024
_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
_PARAM = re.compile(r"\{(\w+)\}")

Validated = TypeVar("Validated", bound=Mapping[str, Any])
"""A request or params schema's TypedDict (one API's `requests.py`)."""


@dataclass(frozen=True)
class Endpoint:
    """What one entry point accepts and who may call it."""

    method: str
    route: str
    capability: str | None
    """None (with the tenant) for an operation about the token itself."""
    role: str
    tenant_kind: str | None
    tenant_param: str | None
    body_schema: str | None = None
    params_schema: str | None = None
    classes: frozenset[auth.CredentialClass] = auth.USER_CLASSES


def validated_as(value: JsonObject, kind: type[Validated]) -> Validated:  # noqa: ARG001 - names the type
    """A body or parameters the boundary validated, as the TypedDict of their schema.

    Only a cast, and a safe one: no domain code runs before `checked_call` validated the
    value against the schema the registry names, and `tests/test_typed_requests.py` holds
    each schema's TypedDict to exactly that schema (its fields, which are required, their
    types)."""
    return cast(Validated, value)


@dataclass(frozen=True)
class Call:
    request_id: str
    principal: auth.Principal
    body: JsonObject
    """As validated; read it typed through `body_as`."""
    params: JsonObject
    """Path and query parameters as validated; read them typed through `params_as`."""
    headers: Headers
    decoded: object = None
    """What a `Codec` decoded of a body that is not JSON (else None)."""

    def body_as(self, kind: type[Validated]) -> Validated:
        """The body as its request schema's TypedDict (see `validated_as`)."""
        return validated_as(self.body, kind)

    def params_as(self, kind: type[Validated]) -> Validated:
        """The path and query parameters as their schema's TypedDict (see `validated_as`)."""
        return validated_as(self.params, kind)


@dataclass(frozen=True)
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Authorizer = Callable[[auth.Principal, Endpoint, str, JsonObject], None]
"""(principal, endpoint, tenant id, path and query parameters): raise unless allowed."""


class Codec(Protocol):
    """How an operation whose wire format is not ours (OTLP) reads its body and writes its
    answers, in the media type the request came in. The boundary reads the body (size,
    `Content-Encoding: gzip`) and has it decoded before any token lookup or read."""

    media_types: tuple[str, ...]
    max_decoded_bytes: int

    def decode(self, raw: bytes, media_type: str) -> object:
        """The body as the operation reads it; raises `ApiError` (400) when it does not decode."""
        ...

    def encode(self, body: Any, media_type: str) -> bytes:
        """A successful reply's body."""
        ...

    def encode_error(self, error: ApiError, request_id: str, media_type: str) -> bytes:
        """An error's body."""
        ...


def werkzeug_rule(route: str) -> str:
    """A registry route (`/projects/{projectId}/...`) as a Werkzeug rule (`<projectId>`)."""
    return _PARAM.sub(lambda m: f"<{m.group(1)}>", route)


@cache
def _route_map(route: str) -> MapAdapter:
    rule = Rule(werkzeug_rule(route), endpoint=route, strict_slashes=False)
    return Map([rule]).bind("local")


def path_params(route: str, path: str) -> dict[str, str] | None:
    """The route's parameters in `path`, or None when `path` is not this route. A deployed
    function is also called at its own URL: at `/` when its route takes no parameters."""
    if path in ("", "/") and not _PARAM.search(route):
        return {}
    try:
        _, params = _route_map(route).match(path, method="GET")
    except HTTPException:
        return None
    return {name: str(value) for name, value in params.items()}


def request_id_of(request: flask.Request) -> str:
    supplied = request.headers.get("x-request-id", "")
    return supplied if _REQUEST_ID.match(supplied) else new_uuid()


def _check_charset(request: flask.Request) -> None:
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise ApiError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE, "The body must be UTF-8 (RFC 8259), not " + charset
        )


def _read_json_body(request: flask.Request) -> JsonObject:
    if request.mimetype != "application/json":
        raise ApiError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "The body must be application/json.")
    _check_charset(request)
    raw = _read_sent(request)
    try:
        body = jsonbody.parse(raw)
    except jsonbody.JsonBodyError as error:
        raise ApiError(ErrorCode.INVALID_REQUEST, str(error), issues=error.issues or None) from None
    if not isinstance(body, dict):
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            "The body must be a JSON object.",
            issues=[{"path": [], "message": "Expected object", "code": "invalid_type"}],
        )
    return body


def _read_sent(request: flask.Request) -> bytes:
    """The body as sent; 413 past MAX_BODY_BYTES."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise ApiError(ErrorCode.PAYLOAD_TOO_LARGE, "The body is larger than 1 MiB.")
    raw = request.stream.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(ErrorCode.PAYLOAD_TOO_LARGE, "The body is larger than 1 MiB.")
    return raw


def _read_raw_body(request: flask.Request, limit: int) -> bytes:
    """The body as sent, then inflated when `Content-Encoding: gzip`; 413 past either limit."""
    raw = _read_sent(request)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding == "identity":
        return raw
    if encoding != "gzip":
        raise ApiError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"Content-Encoding {encoding} is not gzip or identity.",
        )
    inflater = zlib.decompressobj(wbits=31)
    try:
        inflated = inflater.decompress(raw, limit + 1)
    except zlib.error:
        raise ApiError(ErrorCode.INVALID_REQUEST, "The body is not valid gzip.") from None
    if len(inflated) > limit:
        raise ApiError(
            ErrorCode.PAYLOAD_TOO_LARGE, f"The body inflates to more than {limit} bytes."
        )
    if not inflater.eof:
        raise ApiError(ErrorCode.INVALID_REQUEST, "The gzip body is cut short.")
    return inflated


def _codec_media_type(request: flask.Request, codec: Codec) -> str:
    """The media type a codec's operation answers in: the request's when it is one of the
    codec's, else its first."""
    return request.mimetype if request.mimetype in codec.media_types else codec.media_types[0]


def _decoded_body(request: flask.Request, codec: Codec) -> object:
    if request.mimetype not in codec.media_types:
        raise ApiError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            "The body must be " + " or ".join(codec.media_types) + ".",
        )
    _check_charset(request)
    return codec.decode(_read_raw_body(request, codec.max_decoded_bytes), request.mimetype)


def _coerce_params(raw: dict[str, str], schema_name: str) -> JsonObject:
    """Path and query values arrive as strings; integers in the schema are read as such."""
    properties = load_schema(schema_name).get("properties", {})
    params: JsonObject = {}
    for name, value in raw.items():
        if properties.get(name, {}).get("type") == "integer" and re.fullmatch(r"-?\d{1,16}", value):
            params[name] = int(value)
        else:
            params[name] = value
    return params


def _params(request: flask.Request, endpoint: Endpoint) -> JsonObject:
    raw = path_params(endpoint.route, request.path)
    if raw is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"No operation is served at {request.path}.")
    for name in request.args:
        values = request.args.getlist(name)
        if len(values) > 1:
            raise ApiError(
                ErrorCode.INVALID_REQUEST,
                f"The query parameter {name} is given more than once.",
                issues=[{"path": [name], "message": "Repeated parameter", "code": "custom"}],
            )
        raw.setdefault(name, values[0])
    if endpoint.params_schema is None:
        if request.args:
            raise ApiError(ErrorCode.INVALID_REQUEST, "This operation takes no query parameters.")
        return raw
    return _coerce_params(raw, endpoint.params_schema)


def default_authorizer(
    principal: auth.Principal,
    endpoint: Endpoint,
    tenant_id: str,
    _params: JsonObject | None = None,
) -> None:
    if endpoint.capability is None or endpoint.tenant_kind is None:
        auth.check_credential_class(principal, endpoint.classes)
        return
    auth.check_token_grants(
        principal, capability=endpoint.capability, tenant_id=tenant_id, classes=endpoint.classes
    )
    auth.check_membership(
        db(), principal, kind=endpoint.tenant_kind, tenant_id=tenant_id, role=endpoint.role
    )


def _prepare(request: flask.Request, route: Route, request_id: str) -> Call:
    endpoint = route.endpoint
    if route.codec is not None:
        # An exporter without its header learns so before its body is read or judged.
        _params(request, endpoint)
        auth.bearer_token(request.headers.get("Authorization"))
    decoded = None if route.codec is None else _decoded_body(request, route.codec)
    reads_json = route.codec is None and endpoint.method in ("POST", "PUT")
    body = _read_json_body(request) if reads_json else {}
    params = _params(request, endpoint)
    token = auth.bearer_token(request.headers.get("Authorization"))
    call = checked_call(
        endpoint, route.authorizer, token, body, params, request_id, request.headers
    )
    return call if decoded is None else replace(call, decoded=decoded)


def checked_call(
    endpoint: Endpoint,
    authorizer: Authorizer,
    token: str,
    body: JsonObject,
    params: JsonObject,
    request_id: str,
    headers: Headers | None = None,
) -> Call:
    """A call checked as the boundary checks it, before any read: body and parameters
    against their schemas, then the token, its grants and the caller's role. Raises
    `ApiError`. HTTP requests and MCP tool calls both come through here."""
    if endpoint.body_schema is not None:
        validate(endpoint.body_schema, body)
    if endpoint.params_schema is not None:
        validate(endpoint.params_schema, params, "path and query parameters")
    if endpoint.tenant_kind is None or endpoint.tenant_param is None:
        tenant_id, tenant = "", None
    else:
        tenant_id = str(params.get(endpoint.tenant_param) or body.get(endpoint.tenant_param))
        tenant = (endpoint.tenant_kind, tenant_id)
    principal = auth.authenticate(db(), token, tenant)
    authorizer(principal, endpoint, tenant_id, params)
    return Call(request_id, principal, body, params, headers if headers is not None else Headers())


def _json_response(body: Any, status: int, headers: dict[str, str]) -> flask.Response:
    response = flask.Response(jsonbody.dumps(body), status=status, mimetype="application/json")
    for name, value in headers.items():
        response.headers[name] = value
    return response


@dataclass(frozen=True)
class Route:
    """What serves one method of an entry point."""

    endpoint: Endpoint
    handler: Callable[[Call], Reply]
    authorizer: Authorizer
    codec: Codec | None = None
    """Set when the body and answers are not JSON (see `Codec`)."""


def _route_for(request: flask.Request, routes: dict[str, Route]) -> Route:
    route = routes.get(request.method)
    if route is None:
        allowed = ", ".join(sorted(routes))
        raise ApiError(
            ErrorCode.METHOD_NOT_ALLOWED,
            f"Use {allowed} for this operation.",
            headers={"Allow": allowed},
        )
    return route


def handle_methods(request: flask.Request, routes: dict[str, Route]) -> flask.Response:
    """Run one request through the boundary and the domain handler of its method's route."""

    def produce(request_id: str) -> Reply:
        route = _route_for(request, routes)
        return route.handler(_prepare(request, route, request_id))

    codec = next((route.codec for route in routes.values() if route.codec is not None), None)
    if codec is None:
        return _respond(request, produce)
    return _respond(request, produce, _codec_writer(codec, _codec_media_type(request, codec)))


def handle_scheduled(request: flask.Request, job: Callable[[str], Reply]) -> flask.Response:
    """A job that Cloud Scheduler calls with POST and no body. It has no bearer token:
    the deployed function admits only the scheduler's service account (IAM), and it is
    never routed publicly."""

    def produce(request_id: str) -> Reply:
        if request.method != "POST":
            raise ApiError(
                ErrorCode.METHOD_NOT_ALLOWED, "Use POST for this job.", headers={"Allow": "POST"}
            )
        return job(request_id)

    return _respond(request, produce)


Writer = Callable[[Reply | ApiError, str], flask.Response]
"""(a reply or an error, the request id): the response on the wire."""


def _json_writer(outcome: Reply | ApiError, request_id: str) -> flask.Response:
    if isinstance(outcome, ApiError):
        return _json_response(outcome.body(request_id), outcome.status, outcome.headers)
    return _json_response(outcome.body, outcome.status, outcome.headers)


def _codec_writer(codec: Codec, media_type: str) -> Writer:
    def write(outcome: Reply | ApiError, request_id: str) -> flask.Response:
        if isinstance(outcome, ApiError):
            data = codec.encode_error(outcome, request_id, media_type)
            status, headers = int(outcome.status), outcome.headers
        else:
            data = codec.encode(outcome.body, media_type)
            status, headers = outcome.status, outcome.headers
        response = flask.Response(data, status=status, mimetype=media_type)
        response.headers.update(headers)
        return response

    return write


def _respond(
    request: flask.Request, produce: Callable[[str], Reply], write: Writer = _json_writer
) -> flask.Response:
    request_id = request_id_of(request)
    trace = logs.trace_of(
        request.headers.get("X-Cloud-Trace-Context"), request.headers.get("traceparent")
    )
    with logs.scope(request_id=request_id, **trace):
        return _respond_in_scope(request, request_id, produce, write)


def _respond_in_scope(
    request: flask.Request, request_id: str, produce: Callable[[str], Reply], write: Writer
) -> flask.Response:
    started = time.perf_counter()
    try:
        response = write(produce(request_id), request_id)
    except ApiError as error:
        response = write(error, request_id)
    except Exception as error:  # noqa: BLE001 - the one place where unknown faults become `internal`
        response = write(as_api_error(error), request_id)
    response.headers["x-request-id"] = request_id
    log_request(request, response.status_code, started)
    return response


def as_api_error(error: Exception) -> ApiError:
    """An unexpected fault as the caller sees it: Firestore's by its code (503, 409), any
    other `internal`, logged with its stack. HTTP requests and MCP tool calls share it."""
    known = store_fault(error)
    if known is None:
        logs.error("Unhandled error", cause=repr(error), stack_trace=traceback.format_exc())
        return ApiError(ErrorCode.INTERNAL, "An internal error occurred.")
    logs.warning("Firestore fault", cause=repr(error))
    return known


def log_request(
    request: flask.Request, status: int, started: float | None = None, **fields: Any
) -> None:
    """A request's one log line: severity by outcome, `httpRequest` with the full URL."""
    http_request: dict[str, object] = {
        "requestMethod": request.method,
        "requestUrl": request.url,
        "status": status,
        "userAgent": request.headers.get("User-Agent", ""),
    }
    if started is not None:
        http_request["latency"] = f"{time.perf_counter() - started:.6f}s"
    logs.log(
        logs.severity_of(status),
        f"{request.method} {request.path} {status}",
        httpRequest=http_request,
        **fields,
    )
