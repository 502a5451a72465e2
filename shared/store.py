"""Firestore helpers every API uses: typed reads, the transaction runner and conditioned
commits, and Firestore faults as API errors."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from google.api_core import exceptions, gapic_v1
from google.cloud import firestore
from google.cloud.firestore_v1._helpers import decode_dict
from proto.datetime_helpers import (  # type: ignore[import-untyped] # proto-plus has no types
    DatetimeWithNanoseconds,  # the class of every time the library's snapshots carry
)

from shared.clients import db
from shared.errors import ApiError, ErrorCode, not_found
from shared.retention import is_expired

T = TypeVar("T")
Stored = TypeVar("Stored", bound=Mapping[str, Any])
"""A stored document's type (a TypedDict of one API's `documents.py`)."""
Snapshot = firestore.DocumentSnapshot[Any]

Changes = dict[str, Any]
"""What an `update` or a merging `set` writes: field paths to values or sentinels
(`Increment`, `DELETE_FIELD`), which no document type can describe."""

TRANSACTION_TRIES = 8
FIRST_BACKOFF_S = 0.02
MAX_BACKOFF_S = 0.5
RETRY_AFTER_UNAVAILABLE_S = 5


def writable(document: Mapping[str, Any]) -> Changes:
    """A typed document as the plain dict Firestore's writers take."""
    return dict(document)


def document(*path: str) -> firestore.DocumentReference:
    """The document at `path`, given as segments (`"projects", p, "sessions", s`)."""
    ref: firestore.DocumentReference = db().document(*path)
    return ref


def collection(*path: str) -> firestore.CollectionReference:
    """The collection at `path`, given as segments."""
    ref: firestore.CollectionReference = db().collection(*path)
    return ref


def read_all(
    refs: Iterable[firestore.DocumentReference], transaction: firestore.Transaction | None = None
) -> dict[str, Snapshot]:
    """Every document in one batched read, by path (a missing one is a snapshot that does
    not exist).

    The request is the library's own (`get_all`'s), and so are the snapshots, but made from
    the raw answers: the library reads each answer through its proto-plus wrappers and then
    deep-copies the fields it has just decoded, which together cost about a tenth of a warm
    evaluation read's CPU. A snapshot here is made for one read (see `read_fields`)."""
    client = db()
    request, by_name, options = client._prep_get_all(  # noqa: SLF001 - get_all's own request
        list(refs), None, transaction, gapic_v1.method.DEFAULT, None
    )
    answers = client._firestore_api.batch_get_documents(  # noqa: SLF001 - get_all's own call
        request=request,
        metadata=client._rpc_metadata,  # noqa: SLF001 - get_all's own metadata
        **options,
    )
    snapshots = (_snapshot(answer._pb, by_name, client) for answer in answers)  # noqa: SLF001
    return {snapshot.reference.path: snapshot for snapshot in snapshots}


def _snapshot(
    answer: Any, by_name: dict[str, firestore.DocumentReference], client: firestore.Client
) -> Snapshot:
    """One answer of a batched read (a `BatchGetDocumentsResponse` protobuf) as the
    snapshot the library's `_parse_batch_get` makes of it, its fields not copied again."""
    read_time = DatetimeWithNanoseconds.from_timestamp_pb(answer.read_time)
    result = answer.WhichOneof("result")
    if result == "missing":
        return Snapshot(by_name[answer.missing], None, False, read_time, None, None)
    if result != "found":
        raise ValueError(f"A batched read answered {result}, neither found nor missing.")
    found = answer.found
    snapshot = Snapshot(
        by_name[found.name],
        None,
        True,
        read_time,
        DatetimeWithNanoseconds.from_timestamp_pb(found.create_time),
        DatetimeWithNanoseconds.from_timestamp_pb(found.update_time),
    )
    snapshot._data = decode_dict(found.fields, client)  # noqa: SLF001 - its own, not copied
    return snapshot


def as_stored(data: Mapping[str, Any], kind: type[Stored]) -> Stored:  # noqa: ARG001 - names the type
    """Data this project wrote (a document as read, a job as claimed, a document with its
    changes applied) as the type it was stored as: the one place that trusts the store."""
    return cast(Stored, data)


def read_fields(snapshot: Snapshot) -> dict[str, Any] | None:
    """The document's fields as the read decoded them; None when it does not exist.

    `to_dict()` deep-copies every value so that a caller cannot change the snapshot, which
    costs more CPU than the rest of a read's handling (a quarter of a status call's). A
    snapshot here is made for one read and dropped after it, so its fields are handed on."""
    data: dict[str, Any] | None = snapshot._data if snapshot.exists else None  # noqa: SLF001
    return data


def data_as(snapshot: Snapshot, kind: type[Stored]) -> Stored | None:
    """The document as the type this project stored it as; None when it does not exist."""
    data = read_fields(snapshot)
    return as_stored(data, kind) if data is not None else None


def stream_as(
    query: firestore.Query | firestore.CollectionReference, kind: type[Stored]
) -> dict[str, Stored]:
    """What a query finds, by document id in the order it answered, as their stored type."""
    return {s.id: as_stored(read_fields(s) or {}, kind) for s in query.stream()}


def counted(query: Any) -> int:
    """How many documents `query` matches, by one aggregation query (no document read)."""
    [[result]] = query.count(alias="n").get()
    return int(result.value)


def read_as(
    ref: firestore.DocumentReference,
    kind: type[Stored],
    transaction: firestore.Transaction | None = None,
) -> Stored | None:
    """One document read on its own, as its stored type; None when it does not exist."""
    return data_as(ref.get(transaction=transaction), kind)


def live_as(snapshot: Snapshot, kind: type[Stored], what: str) -> Stored:
    """The document as its stored type; `404` naming `what` when it does not exist or is
    past its `expires_at` (Firestore deletes expired documents up to a day late)."""
    found = data_as(snapshot, kind)
    if found is None or is_expired(found):
        raise not_found(what)
    return found


def _lost_to_contention(error: Exception) -> bool:
    return isinstance(error, exceptions.Aborted) or (
        isinstance(error, ValueError) and isinstance(error.__cause__, exceptions.Aborted)
    )


def transact(apply: Callable[[firestore.Transaction], T]) -> T:
    """Run `apply` in a transaction and return what it returns.

    A transaction that loses to a concurrent one is tried again after a random backoff
    (the library itself retries at once, which keeps contending writers in lockstep);
    after `TRANSACTION_TRIES` the contention error is raised, and the API answers 409."""
    transactional = firestore.transactional(apply)
    for attempt in range(TRANSACTION_TRIES):
        try:
            result: T = transactional(db().transaction(max_attempts=1))
        except (exceptions.Aborted, ValueError) as error:
            if not _lost_to_contention(error) or attempt == TRANSACTION_TRIES - 1:
                raise
            ceiling = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2**attempt)
            time.sleep(random.uniform(0, ceiling))  # noqa: S311 - jitter, not a secret
        else:
            return result
    raise AssertionError("unreachable: the last try returns or raises")


PRECONDITION_LOST = (exceptions.AlreadyExists, exceptions.FailedPrecondition, exceptions.NotFound)
"""How a commit conditioned on what it read fails when another writer came first."""

CONDITIONED_TRIES = 50
"""Each lost conditioned commit means another writer's commit landed, so a burst of this
many writers on one document all get through; past it the loss answers 409."""


def commit_if_unchanged(plan: Callable[[firestore.WriteBatch], T]) -> T:
    """Read, decide and write without a transaction: `plan` reads what it needs, adds its
    writes to the batch, each conditioned on the document as it was read (see
    `write_if_unchanged`), and returns the answer. The batch commits atomically; when a
    condition fails another writer came first, and `plan` runs again at once on fresh
    reads (no backoff: the writer that won is done, not waiting to retry). No read takes
    a lock, so requests that read the same documents never wait for each other.

    After `CONDITIONED_TRIES` the loss is raised as contention (the API answers 409)."""
    for _ in range(CONDITIONED_TRIES):
        batch = db().batch()
        result = plan(batch)
        if len(batch) == 0:
            return result
        try:
            batch.commit()
        except PRECONDITION_LOST:
            continue
        return result
    raise exceptions.Aborted("Every conditioned commit lost to a concurrent writer.")  # type: ignore[no-untyped-call]


def unchanged_since(snapshot: firestore.DocumentSnapshot[Any]) -> Any:
    """The write option that holds a write to the document as `snapshot` read it."""
    return db().write_option(last_update_time=snapshot.update_time)


def write_if_unchanged(
    batch: firestore.WriteBatch, snapshot: firestore.DocumentSnapshot[Any], data: Changes
) -> None:
    """Write every field of `data` to the document `snapshot` read, if it is still as read:
    created when it was missing, else updated (a superseded one, such as an expired
    Idempotency-Key, is taken over)."""
    if snapshot.exists:
        batch.update(snapshot.reference, data, option=unchanged_since(snapshot))
    else:
        batch.create(snapshot.reference, data)


UNREACHABLE = (exceptions.RetryError, exceptions.ServiceUnavailable, exceptions.DeadlineExceeded)


def _unreachable(error: BaseException | None) -> bool:
    """Whether Firestore could not be reached in time. A transaction that could not even
    begin surfaces as the library's `ValueError` about rolling back a transaction with no
    id, raised while it handled the unreachable error: that error is its context."""
    if isinstance(error, UNREACHABLE):
        return True
    return isinstance(error, ValueError) and _unreachable(error.__context__)


def store_fault(error: Exception) -> ApiError | None:
    """The API's answer to a Firestore fault: unreachable or out of time is `503`, a
    transaction that lost to contention `409`, both with `Retry-After`; None otherwise."""
    if _lost_to_contention(error):
        return ApiError(
            ErrorCode.CONFLICT,
            "The request met a concurrent change to the same data; retry it.",
            headers={"Retry-After": "1"},
        )
    if _unreachable(error):
        return ApiError(
            ErrorCode.UNAVAILABLE,
            "The database did not answer in time; retry shortly.",
            headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE_S)},
        )
    return None
