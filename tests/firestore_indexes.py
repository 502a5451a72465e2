"""Production Firestore's index rules, checked against every query the suite sends.

The emulator serves any query; production answers `FAILED_PRECONDITION` to one that no
index serves. Every `RunQuery` and `RunAggregationQuery` the tests make is recorded at the
client's channel and checked against `firestore.indexes.json` by the documented rules:

- the order is completed as Firestore completes it (`StructuredQuery.order_by`): every
  inequality field not ordered explicitly is appended in lexicographic order of its name,
  with the direction of the last explicit order (ascending when there is none), then
  `__name__`;
- a query with equality filters only, or with one ordered field and no equality, is
  served by the automatic single-field indexes, which exist at collection scope only
  and not for a field whose `fieldOverrides` entry turns its indexes off;
- anything else needs a composite index of the same collection group and scope whose
  fields are the equality fields (in any order) followed by the completed order;
- an `array-contains` or `array-contains-any` filter counts as an equality whose index
  field is an array one (`arrayConfig: CONTAINS`) instead of an ordered one.

Composite indexes that Firestore could merge (zig-zag) are not modelled, so the check can
only ask for more indexes than production strictly needs, never fewer.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.cloud.firestore_v1.types import StructuredQuery

INDEXES = Path(__file__).resolve().parent.parent / "firestore.indexes.json"
Operator = StructuredQuery.FieldFilter.Operator
CONTAINS = {Operator.ARRAY_CONTAINS, Operator.ARRAY_CONTAINS_ANY}
EQUALITY = {Operator.EQUAL, Operator.IN, *CONTAINS}
INEQUALITY = {
    Operator.LESS_THAN,
    Operator.LESS_THAN_OR_EQUAL,
    Operator.GREATER_THAN,
    Operator.GREATER_THAN_OR_EQUAL,
    Operator.NOT_EQUAL,
    Operator.NOT_IN,
}
NAME = "__name__"


@dataclass(frozen=True)
class Shape:
    """What decides which index serves a query."""

    collection: str
    group: bool
    equalities: frozenset[str]
    order: tuple[tuple[str, str], ...]
    """The completed order without the final `__name__`."""
    contains: frozenset[str] = frozenset()
    """The equality fields filtered by array membership."""
    nearest: tuple[str, int] | None = None
    """A nearest-neighbour query's vector field and the query vector's dimension."""

    def __str__(self) -> str:
        scope = "collection group" if self.group else "collection"
        order = ", ".join(f"{field} {direction}" for field, direction in self.order)
        arrays = f" (array membership on {sorted(self.contains)})" if self.contains else ""
        nearest = (
            f", nearest by {self.nearest[0]} ({self.nearest[1]} dimensions)" if self.nearest else ""
        )
        return (
            f"{scope} {self.collection}: equal on {sorted(self.equalities) or 'nothing'}"
            f"{arrays}, ordered by {order or 'nothing'}{nearest}"
        )


def _filters(where: StructuredQuery.Filter) -> list[StructuredQuery.FieldFilter]:
    kind = StructuredQuery.Filter.pb(where).WhichOneof("filter_type")
    if kind is None:
        return []
    if kind == "composite_filter":
        composite = where.composite_filter
        if composite.op != StructuredQuery.CompositeFilter.Operator.AND:
            raise ValueError("OR filters are not checked")
        return [f for sub in composite.filters for f in _filters(sub)]
    if kind == "unary_filter":
        return [_as_field_filter(where.unary_filter)]
    return [where.field_filter]


UNARY = StructuredQuery.UnaryFilter.Operator
UNARY_AS = {
    UNARY.IS_NULL: Operator.EQUAL,
    UNARY.IS_NAN: Operator.EQUAL,
    UNARY.IS_NOT_NULL: Operator.NOT_EQUAL,
    UNARY.IS_NOT_NAN: Operator.NOT_EQUAL,
}
"""`== None` (and NaN) is an equality for the indexes that serve it, `!= None` an inequality
(https://firebase.google.com/docs/firestore/query-data/queries#not_equal_)."""


def _as_field_filter(unary: StructuredQuery.UnaryFilter) -> StructuredQuery.FieldFilter:
    return StructuredQuery.FieldFilter(field=unary.field, op=UNARY_AS[unary.op])


def shape_of(query: StructuredQuery) -> Shape:
    (source,) = query.from_
    filters = _filters(query.where)
    equalities = frozenset(f.field.field_path for f in filters if f.op in EQUALITY)
    contains = frozenset(f.field.field_path for f in filters if f.op in CONTAINS)
    unknown = [f.op for f in filters if f.op not in EQUALITY | INEQUALITY]
    if unknown:
        raise ValueError(f"operators not checked: {unknown}")
    order = [(o.field.field_path, o.direction.name) for o in query.order_by]
    direction = order[-1][1] if order else "ASCENDING"
    ordered = {field for field, _ in order}
    unordered = sorted(
        {f.field.field_path for f in filters if f.op in INEQUALITY} - ordered - {NAME}
    )
    order += [(field, direction) for field in unordered]
    order = [(field, way) for field, way in order if field != NAME]
    return Shape(
        source.collection_id,
        source.all_descendants,
        equalities,
        tuple(order),
        contains,
        _nearest(query),
    )


def _nearest(query: StructuredQuery) -> tuple[str, int] | None:
    """A `find_nearest` query's vector field and dimension: it needs a vector index."""
    if not StructuredQuery.pb(query).HasField("find_nearest"):
        return None
    nearest = query.find_nearest
    values = nearest.query_vector.map_value.fields["value"].array_value.values
    return nearest.vector_field.field_path, len(values)


@dataclass(frozen=True)
class Indexes:
    composite: list[dict[str, Any]]
    exempt: frozenset[tuple[str, str]]
    """(collection group, field) whose automatic single-field indexes are turned off."""

    @classmethod
    def load(cls, path: Path = INDEXES) -> Indexes:
        data = json.loads(path.read_text())
        exempt = frozenset(
            (o["collectionGroup"], o["fieldPath"])
            for o in data.get("fieldOverrides", [])
            if o.get("indexes") == []
        )
        return cls(data["indexes"], exempt)

    def serving(self, shape: Shape) -> list[dict[str, Any]] | None:
        """The composite indexes that serve `shape` ([] when single-field indexes do);
        None when nothing does."""
        fields = [*shape.equalities, *(field for field, _ in shape.order)]
        if any((shape.collection, field) in self.exempt for field in fields):
            return None
        if (
            shape.nearest is None
            and not shape.group
            and (not shape.order or (not shape.equalities and len(shape.order) == 1))
        ):
            return []
        scope = "COLLECTION_GROUP" if shape.group else "COLLECTION"
        found = [index for index in self.composite if _serves(index, shape, scope)]
        return found or None


def _serves(index: dict[str, Any], shape: Shape, scope: str) -> bool:
    if index["collectionGroup"] != shape.collection or index["queryScope"] != scope:
        return False
    if shape.nearest is not None:
        return _serves_nearest(index, shape)
    fields = [(f["fieldPath"], f.get("order")) for f in index["fields"]]
    equal = len(shape.equalities)
    arrays = {f["fieldPath"] for f in index["fields"] if f.get("arrayConfig") == "CONTAINS"}
    prefix = {field for field, _ in fields[:equal]}
    return (
        prefix == shape.equalities
        and prefix & arrays == shape.contains
        and tuple(fields[equal:]) == shape.order
    )


def _serves_nearest(index: dict[str, Any], shape: Shape) -> bool:
    """A vector index: the pre-filter's equality fields, then the vector field of the
    query's dimension (https://firebase.google.com/docs/firestore/vector-search)."""
    assert shape.nearest is not None
    *prefix, last = index["fields"]
    vector = last.get("vectorConfig") or {}
    return (
        {field["fieldPath"] for field in prefix} == shape.equalities
        and not shape.order
        and last["fieldPath"] == shape.nearest[0]
        and vector.get("dimension") == shape.nearest[1]
    )


class QueryRecorder(
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Records the structured query of every RunQuery and RunAggregationQuery."""

    def __init__(self) -> None:
        self.queries: list[StructuredQuery] = []
        self.lock = threading.Lock()

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        method = details.method.rsplit("/", 1)[-1]
        query = None
        if method == "RunQuery":
            query = request.structured_query
        elif method == "RunAggregationQuery":
            query = request.structured_aggregation_query.structured_query
        if query is not None:
            with self.lock:
                self.queries.append(StructuredQuery(query))
        return continuation(details, request)

    def exported(self) -> list[bytes]:
        """The distinct queries recorded, serialised: what a test worker hands the run."""
        with self.lock:
            return sorted({StructuredQuery.serialize(query) for query in self.queries})

    def absorb(self, exported: list[bytes]) -> None:
        """Add the queries another worker recorded."""
        with self.lock:
            self.queries += [StructuredQuery.deserialize(query) for query in exported]


def problems(queries: list[StructuredQuery], indexes: Indexes) -> list[str]:
    """Every query no index serves, and every composite index no query needed."""
    found: list[str] = []
    used: set[int] = set()
    for shape in sorted({shape_of(query) for query in queries}, key=str):
        serving = indexes.serving(shape)
        if serving is None:
            found.append(f"no index serves the query on {shape}")
        else:
            used.update(id(index) for index in serving)
    found += [
        f"no query of the suite needs the index {index['collectionGroup']} "
        f"{[(f['fieldPath'], f.get('order')) for f in index['fields']]}"
        for index in indexes.composite
        if id(index) not in used
    ]
    return found
