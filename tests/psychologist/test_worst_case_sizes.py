"""Documents built from the largest inputs and outputs the contracts accept stay within
Firestore's 1 MiB, by construction rather than by luck."""

from __future__ import annotations

import json

from cli.gemini_stand_in import Recorded, Reply
from shared.budgets import stored_size
from tests.api import Configure, document
from tests.psychologist.conftest import Log, Psychologist, hypothesis
from tests.psychologist.test_analysis_flow import SESSION

WIDE = "\U0001d538" * 2000
"""The longest text field the model may return, in a script of four UTF-8 bytes a
character: 8,000 bytes."""
MISSING = [f"01JC4Z8QK3M7YV2N5T9B0PX{n:03d}" for n in range(50)]


def seven_maximal_rejections(_request: Recorded) -> Reply:
    wide = hypothesis(
        "dev-api",
        MISSING,
        termination=WIDE,
        observacao=WIDE,
        hipotese=WIDE,
        sugestao=WIDE,
    )
    return Reply(text=json.dumps({"hypotheses": [wide] * 7}, ensure_ascii=False))


def test_an_analysis_rejecting_every_maximal_hypothesis_of_many_calls_fits_its_document(
    psy: Psychologist, configure: Configure
) -> None:
    configure(PSYCHOLOGIST_INPUT_TOKEN_BUDGET="3000", PSYCHOLOGIST_OUTPUT_TOKEN_LIMIT="60000")
    log = Log()
    for index in range(600):
        log.add("dev-api", "tool.call", task=f"T-{index % 7}", tool="pytest", note="x" * 40)
    for start in range(0, 600, 500):
        assert psy.ingest(SESSION, log.events[start : start + 500]).status_code == 200
    psy.world.gemini.respond_with(seven_maximal_rejections)
    analysis = psy.settled(psy.analyse(SESSION))
    calls = analysis["counts"]["calls"]
    assert calls >= 6
    assert analysis["counts"]["rejected"] == 7 * calls
    assert 0 < len(analysis["rejected"]) < analysis["counts"]["rejected"]
    stored = document(f"projects/{psy.project}/analyses/{analysis['id']}")
    assert stored_size(stored["rejected"]) <= 256 * 1024
    assert stored_size(stored) < 1_048_576
    first = analysis["rejected"][0]
    assert first["hypothesis"]["truncated"] is True
    assert len(first["hypothesis"]["clipped"].encode()) <= 16 * 1024


def test_a_hypothesis_citing_50_of_the_largest_events_fits_its_document(
    psy: Psychologist,
) -> None:
    log = Log()
    integers = [1] * 2700
    assert len(json.dumps({"n": integers})) <= 8192
    cited = [log.add("dev-api", "tool.call", n=integers)["id"] for _ in range(50)]
    assert psy.ingest(SESSION, log.events).status_code == 200
    psy.world.gemini.answer_json({"hypotheses": [hypothesis("dev-api", cited)]})
    analysis = psy.settled(psy.analyse(SESSION))
    assert analysis["status"] == "completed", analysis
    (stored_id,) = analysis["hypothesisIds"]
    stored = document(f"projects/{psy.project}/hypotheses/{stored_id}")
    assert stored_size(stored) < 1_048_576
    copies = stored["evidence_events"]
    assert [event["id"] for event in copies] == cited
    assert copies[0] == log.events[0]
    assert "data" not in copies[-1]
