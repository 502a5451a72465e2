"""The index check applies production Firestore's rules; the whole suite's queries are
checked against `firestore.indexes.json` at the end of every full run (tests/conftest.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.cloud.firestore_v1 import FieldFilter

from tests.firestore_indexes import Indexes, QueryRecorder, Shape, problems, shape_of

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def hypotheses() -> Any:
    from shared.clients import db

    return db().collection("projects/p/hypotheses")


def index(group: str, *fields: tuple[str, str], scope: str = "COLLECTION") -> dict[str, Any]:
    return {
        "collectionGroup": group,
        "queryScope": scope,
        "fields": [{"fieldPath": f, "order": o} for f, o in fields],
    }


def indexes(tmp_path: Path, *composite: dict[str, Any], exempt: str | None = None) -> Indexes:
    overrides: list[dict[str, Any]] = [
        {"collectionGroup": "hypotheses", "fieldPath": exempt, "indexes": []}
    ]
    path = tmp_path / "indexes.json"
    path.write_text(json.dumps({"indexes": list(composite), "fieldOverrides": overrides}))
    return Indexes.load(path)


def test_inequalities_without_an_order_are_ordered_by_field_name(emulator: object) -> None:
    query = (
        hypotheses()
        .where(filter=FieldFilter("createdAt", ">=", NOW))
        .where(filter=FieldFilter("confiancaPercent", ">=", 20))
    )
    assert shape_of(query._to_protobuf()) == Shape(
        "hypotheses",
        False,
        frozenset(),
        (("confiancaPercent", "ASCENDING"), ("createdAt", "ASCENDING")),
    )


def test_an_index_in_the_wrong_order_does_not_serve_two_inequalities(
    emulator: object, tmp_path: Path
) -> None:
    query = (
        hypotheses()
        .where(filter=FieldFilter("createdAt", ">=", NOW))
        .where(filter=FieldFilter("confiancaPercent", ">=", 20))
    )
    wrong = indexes(
        tmp_path, index("hypotheses", ("createdAt", "ASCENDING"), ("confiancaPercent", "ASCENDING"))
    )
    assert problems([query._to_protobuf()], wrong)[0].startswith("no index serves")
    ordered = query.order_by("createdAt").order_by("confiancaPercent")
    assert problems([ordered._to_protobuf()], wrong) == []


def test_equalities_alone_and_one_ordered_field_need_no_composite_index(
    emulator: object, tmp_path: Path
) -> None:
    none = indexes(tmp_path)
    equal = (
        hypotheses()
        .where(filter=FieldFilter("status", "==", "accepted"))
        .where(filter=FieldFilter("agenteAlvo", "==", "a"))
    )
    ordered = hypotheses().order_by("createdAt", direction="DESCENDING")
    assert problems([equal._to_protobuf(), ordered._to_protobuf()], none) == []
    both = equal.order_by("createdAt")
    assert problems([both._to_protobuf()], none)[0].startswith("no index serves")


def test_a_collection_group_query_has_no_automatic_index(emulator: object, tmp_path: Path) -> None:
    from shared.clients import db

    group = db().collection_group("runs").where(filter=FieldFilter("lease_until", "<=", NOW))
    assert problems([group._to_protobuf()], indexes(tmp_path))[0].startswith("no index serves")


def test_an_exempted_field_serves_no_query(emulator: object, tmp_path: Path) -> None:
    ordered = hypotheses().order_by("createdAt")
    exempted = indexes(tmp_path, exempt="createdAt")
    assert problems([ordered._to_protobuf()], exempted)[0].startswith("no index serves")


def test_an_index_no_query_needs_is_named(emulator: object, tmp_path: Path) -> None:
    unused = indexes(
        tmp_path, index("hypotheses", ("status", "ASCENDING"), ("createdAt", "DESCENDING"))
    )
    assert problems([], unused) == [
        "no query of the suite needs the index hypotheses "
        "[('status', 'ASCENDING'), ('createdAt', 'DESCENDING')]"
    ]


def test_array_membership_is_served_only_by_an_array_field_of_the_index(
    emulator: object, tmp_path: Path
) -> None:
    from shared.clients import db

    query = (
        db()
        .collection("projects/p/outcomes")
        .where(filter=FieldFilter("agent", "==", "a"))
        .where(filter=FieldFilter("signal_kinds", "array_contains_any", ["task_reopened"]))
        .where(filter=FieldFilter("ended_at", ">=", NOW))
    )
    ordered = index("outcomes", ("agent", "ASCENDING"), ("signal_kinds", "ASCENDING"))
    ordered["fields"].append({"fieldPath": "ended_at", "order": "ASCENDING"})
    array = json.loads(json.dumps(ordered))
    array["fields"][1] = {"fieldPath": "signal_kinds", "arrayConfig": "CONTAINS"}
    assert problems([query._to_protobuf()], indexes(tmp_path, ordered))[0].startswith(
        "no index serves"
    )
    assert problems([query._to_protobuf()], indexes(tmp_path, array)) == []


def test_a_workers_queries_are_checked_by_the_run_as_the_worker_recorded_them(
    emulator: object, tmp_path: Path
) -> None:
    """Each test worker hands its queries to the run, which checks them all: one the
    index serves and one it does not, each sent twice, are handed over once each."""
    served = hypotheses().where(filter=FieldFilter("state", "==", "open")).order_by("createdAt")
    unserved = hypotheses().where(filter=FieldFilter("createdAt", ">=", NOW)).order_by("agent")
    worker = QueryRecorder()
    worker.queries += [q._to_protobuf() for q in (served, unserved, served, unserved)]
    run = QueryRecorder()
    run.absorb(worker.exported())
    known = indexes(
        tmp_path, index("hypotheses", ("state", "ASCENDING"), ("createdAt", "ASCENDING"))
    )
    assert len(run.queries) == 2
    assert problems(run.queries, known) == problems(worker.queries, known)
    assert len(problems(run.queries, known)) == 1


def test_a_nearest_neighbour_query_needs_a_vector_index_of_its_filter_and_dimension(
    emulator: object, tmp_path: Path
) -> None:
    from google.cloud.firestore_v1.base_vector_query import DistanceMeasure
    from google.cloud.firestore_v1.vector import Vector

    query = (
        hypotheses()
        .where(filter=FieldFilter("agent", "==", "builder"))
        .find_nearest(
            vector_field="embedding",
            query_vector=Vector([0.6, 0.8, 0.0]),
            distance_measure=DistanceMeasure.COSINE,
            limit=5,
        )
    )
    shape = shape_of(query._to_protobuf())
    assert shape.nearest == ("embedding", 3)
    vector = {"fieldPath": "embedding", "vectorConfig": {"dimension": 3, "flat": {}}}
    wrong = {**vector, "vectorConfig": {"dimension": 768, "flat": {}}}
    plain = index("hypotheses", ("agent", "ASCENDING"), ("embedding", "ASCENDING"))
    for served_by in (wrong, None):
        fields = [{"fieldPath": "agent", "order": "ASCENDING"}, served_by] if served_by else []
        held = indexes(tmp_path, plain, {**plain, "fields": fields} if fields else plain)
        assert held.serving(shape) is None
    right = {**plain, "fields": [{"fieldPath": "agent", "order": "ASCENDING"}, vector]}
    assert indexes(tmp_path, right).serving(shape) == [right]


def test_a_null_is_an_equality_and_not_null_an_inequality(emulator: object) -> None:
    """`== None` travels as a unary filter; the index that serves it treats it as an
    equality on the field, and `!= None` as an inequality, ordered by the field."""
    is_null = hypotheses().where(filter=FieldFilter("decidedAt", "==", None))
    assert shape_of(is_null._to_protobuf()) == Shape(
        "hypotheses", False, frozenset({"decidedAt"}), ()
    )
    not_null = hypotheses().where(filter=FieldFilter("decidedAt", "!=", None))
    assert shape_of(not_null._to_protobuf()) == Shape(
        "hypotheses", False, frozenset(), (("decidedAt", "ASCENDING"),)
    )
