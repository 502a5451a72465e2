"""The trial's exact, anytime-valid read held at what its reference defines: the safe
test for two-by-two tables of Turner, Ly and Grünwald (JSPI 2024), whose e-variable at a
ratio of 1 is the alternative's likelihood over the pooled share's, has expectation
exactly 1 under every null, and is inverted into a confidence sequence for the ratio."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from benchmarks.trials import _safe_verdicts
from functions.outcomes.safe import (
    Alternative,
    Table,
    alternatives,
    confidence_sequence,
    log_e_value,
    point_log_e_value,
    ripr,
    sessions_needed,
)
from functions.outcomes.trials import verdict_of

pytestmark = pytest.mark.pure


def test_at_a_ratio_of_one_the_e_value_is_turner_ly_and_grunwalds_for_a_balanced_block() -> None:
    """One session in each arm (their block of na = nb = 1) against the alternative
    (0.2, 0.6): the treated session without the pattern, the control one with it. Their
    e-variable is p_a(y_a) p_b(y_b) / (p0(y_a) p0(y_b)) with p0 = (0.2 + 0.6) / 2 = 0.4:
    (0.8 x 0.6) / (0.6 x 0.4) = 2."""
    alternative = Alternative(0.2, 0.6, 1.0)
    assert ripr(0.2, 0.6, 1.0, 0.5) == pytest.approx(0.4)
    found = point_log_e_value(Table(0, 1, 1, 1), alternative, 1.0, 0.5)
    assert math.exp(found) == pytest.approx(2.0)
    assert math.exp(point_log_e_value(Table(1, 1, 0, 1), alternative, 1.0, 0.5)) == (
        pytest.approx((0.2 * 0.4) / (0.4 * 0.6))
    )


@pytest.mark.parametrize("ratio", [0.3, 1.0, 2.5, 40.0])
@pytest.mark.parametrize("share", [0.5, 0.2])
def test_one_session_s_e_variable_has_expectation_exactly_one_under_every_null(
    ratio: float, share: float
) -> None:
    """Whatever the control share p0 under H0(ratio), summing Q / P over the four
    outcomes of a session (arm drawn with the trial's share) gives 1: the RIPr makes the
    expectation flat in p0. A control share other than the RIPr's does not."""
    for each in alternatives(ratio)[::7]:
        c = ripr(each.treated_share, each.control_share, ratio, share)
        assert 0 < c < min(1.0, 1 / ratio)
        for p0 in np.linspace(1e-4, min(1.0, 1 / ratio) - 1e-4, 9):
            expected = 0.0
            for arm_share, chance, bet, null in (
                (share, ratio * p0, each.treated_share, ratio * c),
                (1 - share, p0, each.control_share, c),
            ):
                expected += arm_share * (
                    chance * bet / null + (1 - chance) * (1 - bet) / (1 - null)
                )
            assert expected == pytest.approx(1.0, abs=1e-9)
    each = alternatives(ratio)[3]
    off = ripr(each.treated_share, each.control_share, ratio, share) * 0.8
    chance = min(1.0, 1 / ratio) - 1e-4
    skewed = share * (
        ratio * chance * each.treated_share / (ratio * off)
        + (1 - ratio * chance) * (1 - each.treated_share) / (1 - ratio * off)
    ) + (1 - share) * (
        chance * each.control_share / off + (1 - chance) * (1 - each.control_share) / (1 - off)
    )
    assert skewed > 1.0


def test_at_fixed_arm_sizes_the_e_value_never_exceeds_one_on_average() -> None:
    """The before/after read takes its windows' sizes as given and the after window's
    share of sessions as the share: the expectation over every table of those sizes is at
    most 1 (exactly, by enumeration), which is what Turner, Ly and Grünwald's block design
    needs."""
    for n1, n0, ratio, p0 in itertools.product((3, 7), (2, 9), (0.5, 1.0, 1.6), (0.1, 0.45)):
        share = n1 / (n1 + n0)
        for each in alternatives(ratio)[::11]:
            total = 0.0
            for a, b in itertools.product(range(n1 + 1), range(n0 + 1)):
                chance = (
                    math.comb(n1, a)
                    * (ratio * p0) ** a
                    * (1 - ratio * p0) ** (n1 - a)
                    * math.comb(n0, b)
                    * p0**b
                    * (1 - p0) ** (n0 - b)
                )
                total += chance * math.exp(
                    point_log_e_value(Table(a, n1, b, n0), each, ratio, share)
                )
            assert total <= 1 + 1e-9


def test_every_control_session_with_the_pattern_and_no_treated_one_reads_improved() -> None:
    """The issue's case: 21 control sessions all reopening their task, 19 treated none.
    The asymptotic sequence read no_clear_change with an interval to 7.7; the exact one
    excludes 1 by far."""
    verdict, shown = verdict_of(0, 19, 21, 21, 0.5)
    assert verdict == "improved"
    assert shown["ratio"] == 0.0
    assert shown["low"] == 0.0
    assert shown["high"] is not None
    assert shown["high"] < 0.3
    assert log_e_value(Table(0, 19, 21, 21), 1.0, 0.5) > math.log(20 * 1000)


def test_the_sequence_narrows_holds_the_estimate_and_stays_open_where_data_cannot_close_it() -> (
    None
):
    small = confidence_sequence(Table(10, 50, 20, 50), 0.5)
    large = confidence_sequence(Table(100, 500, 200, 500), 0.5)
    for found in (small, large):
        assert found.ratio == pytest.approx(0.5)
        assert found.high is not None
        assert found.low < 0.5 < found.high
    assert large.high is not None
    assert small.high is not None
    assert large.high - large.low < small.high - small.low
    assert large.high < 1 < small.high
    none_in_control = confidence_sequence(Table(20, 20, 0, 20), 0.5)
    assert none_in_control.ratio is None
    assert none_in_control.high is None
    assert none_in_control.low > 1
    assert verdict_of(20, 20, 0, 20, 0.5)[0] == "worse"


def test_verdicts_need_a_session_an_arm_and_match_the_e_value_at_one_the_bench_reads() -> None:
    """The bench simulates the verdict as the e-value against a ratio of 1 reaching 20,
    on the estimate's side; the served verdict, read from the interval, agrees on every
    table drawn as the design draws them (arms by a fair coin)."""
    assert verdict_of(0, 0, 9, 9, 0.5)[0] == "too_few_sessions"
    rng = random.Random(47)  # noqa: S311 - seeded tables for a test
    names = {-1: "improved", 1: "worse", 0: "no_clear_change"}
    for _ in range(150):
        sessions = rng.randint(2, 240)
        n1 = sum(rng.random() < 0.5 for _ in range(sessions))
        n0 = sessions - n1
        if min(n1, n0) == 0:
            continue
        p0 = rng.random()
        p1 = min(1.0, p0 * rng.choice([0.2, 0.5, 1.0, 2.0]))
        a = sum(rng.random() < p1 for _ in range(n1))
        b = sum(rng.random() < p0 for _ in range(n0))
        counts = [np.array([[float(x)]]) for x in (a, n1, b, n0)]
        simulated = names[int(_safe_verdicts(*counts)[0, 0])]
        assert verdict_of(a, n1, b, n0, 0.5)[0] == simulated, (a, n1, b, n0)


def test_sessions_needed_is_never_missing_and_grows_as_the_effect_shrinks() -> None:
    strong, moderate, mild = (sessions_needed(30, 100, r, 0.5) for r in (0.3, 0.6, 0.8))
    assert strong < moderate < mild
    assert sessions_needed(0, 0, 0.7, 0.5) > 2
    assert sessions_needed(0, 40, 0.7, 0.5) > sessions_needed(12, 40, 0.7, 0.5)
    assert sessions_needed(50, 100, 0.7, 0.2) > sessions_needed(50, 100, 0.7, 0.5)
