"""The account API's path and query parameters, as validated against `schemas/account/`:
what `Call.params_as` hands a domain function. `tests/test_typed_requests.py` holds each
to its schema.

No `from __future__ import annotations` here: evaluated annotations let `NotRequired`
reach `__required_keys__`, which that test compares with each schema's `required`."""

from typing import NotRequired

from typing_extensions import TypedDict


class HomeParams(TypedDict):
    since: NotRequired[str]


REQUESTS: dict[str, type] = {"account/home.params": HomeParams}
