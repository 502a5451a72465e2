"""The one error model: a code enum, one table from code to HTTP status, one exception."""

from __future__ import annotations

from enum import StrEnum
from http import HTTPStatus
from typing import NotRequired, TypedDict


class ErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    RATE_LIMITED = "rate_limited"
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"


STATUS_BY_CODE: dict[ErrorCode, HTTPStatus] = {
    ErrorCode.INVALID_REQUEST: HTTPStatus.BAD_REQUEST,
    ErrorCode.UNAUTHENTICATED: HTTPStatus.UNAUTHORIZED,
    ErrorCode.FORBIDDEN: HTTPStatus.FORBIDDEN,
    ErrorCode.NOT_FOUND: HTTPStatus.NOT_FOUND,
    ErrorCode.METHOD_NOT_ALLOWED: HTTPStatus.METHOD_NOT_ALLOWED,
    ErrorCode.CONFLICT: HTTPStatus.CONFLICT,
    ErrorCode.PAYLOAD_TOO_LARGE: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
    ErrorCode.RATE_LIMITED: HTTPStatus.TOO_MANY_REQUESTS,
    ErrorCode.INTERNAL: HTTPStatus.INTERNAL_SERVER_ERROR,
    ErrorCode.UNAVAILABLE: HTTPStatus.SERVICE_UNAVAILABLE,
}


class Issue(TypedDict):
    """One broken rule of a request: where (a JSON path as keys and indexes) and why."""

    path: list[str | int]
    message: str
    code: str


class ErrorBody(TypedDict):
    """The published error shape (`schemas/error.json`)."""

    error: str
    message: str
    code: str
    request_id: str
    issues: NotRequired[list[Issue]]


class ApiError(Exception):
    """A failure the caller should see, with a code from the table above."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        issues: list[Issue] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.issues = issues
        self.headers = headers or {}

    @property
    def status(self) -> HTTPStatus:
        return STATUS_BY_CODE[self.code]

    def body(self, request_id: str) -> ErrorBody:
        body: ErrorBody = {
            "error": self.status.phrase,
            "message": self.message,
            "code": self.code.value,
            "request_id": request_id,
        }
        if self.issues is not None:
            body["issues"] = self.issues
        return body


def not_found(what: str) -> ApiError:
    return ApiError(ErrorCode.NOT_FOUND, f"{what} was not found.")


def conflict(why: str) -> ApiError:
    return ApiError(ErrorCode.CONFLICT, why)
