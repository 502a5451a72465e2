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

from benchmarks.trials import _harm, _two_sided
from functions.loop.randomization import (
    ArmCounts,
    needed,
    sample_ratio_mismatch,
    verdict_of,
)
from functions.loop.safe import (
    HARM,
    HIGHEST,
    LOWEST,
    Alternative,
    Table,
    alternatives,
    confidence_sequence,
    harm_found,
    log_e_value,
    point_log_e_value,
    ripr,
    sessions_needed,
)

pytestmark = pytest.mark.pure


def test_at_a_ratio_of_one_the_e_value_is_turner_ly_and_grunwalds_for_a_balanced_block() -> None:
    """One session in each arm (their block of na = nb = 1) against the alternative
    (0.2, 0.6): the treated session without the pattern, the control one with it. Their
    e-variable is p_a(y_a) p_b(y_b) / (p0(y_a) p0(y_b)) with p0 = (0.2 + 0.6) / 2 = 0.4:
    (0.8 x 0.6) / (0.6 x 0.4) = 2."""
    alternative = Alternative(0.2, 0.6, 1.0)
    assert ripr(0.2, 0.6, 1.0, 0.5) == pytest.approx(0.4)
    found = point_log_e_value(Table(0, 1, 1, 1), alternative, 1.0)
    assert math.exp(found) == pytest.approx(2.0)
    assert math.exp(point_log_e_value(Table(1, 1, 0, 1), alternative, 1.0)) == (
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


def test_at_any_arm_sizes_the_e_value_never_exceeds_one_on_average() -> None:
    """The e-value is taken at the arms' joined sizes, however unequal (sessions lost,
    a split away from the declared share): the expectation over every table of those sizes
    is at most 1 (exactly, by enumeration), which is what Turner, Ly and Grünwald's block
    design needs, so losses unrelated to the outcome cannot manufacture a verdict."""
    for n1, n0, ratio, p0 in itertools.product((1, 3, 7), (2, 9), (0.5, 1.0, 1.6), (0.1, 0.45)):
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
                total += chance * math.exp(point_log_e_value(Table(a, n1, b, n0), each, ratio))
            assert total <= 1 + 1e-9


def test_every_control_session_with_the_pattern_and_no_treated_one_reads_improved() -> None:
    """The issue's case: 21 control sessions all reopening their task, 19 treated none.
    The asymptotic sequence read no_clear_change with an interval to 7.7; the exact one
    excludes 1 by far."""
    verdict, shown = verdict_of(0, 19, 21, 21)
    assert verdict == "improved"
    assert shown["ratio"] == 0.0
    assert shown["low"] == 0.0
    assert isinstance(shown["high"], float)
    assert shown["high"] == pytest.approx(0.304, abs=5e-4)
    assert log_e_value(Table(0, 19, 21, 21), 1.0) > math.log(20 * 1000)


def test_the_sequence_narrows_holds_the_estimate_and_stays_open_where_data_cannot_close_it() -> (
    None
):
    small = confidence_sequence(Table(10, 50, 20, 50))
    large = confidence_sequence(Table(100, 500, 200, 500))
    for found in (small, large):
        assert found.ratio == pytest.approx(0.5)
        assert found.high is not None
        assert found.low is not None
        assert found.low < 0.5 < found.high
    assert large.high is not None
    assert large.low is not None
    assert small.high is not None
    assert small.low is not None
    assert large.high - large.low < small.high - small.low
    assert large.high < 1 < small.high
    none_in_control = confidence_sequence(Table(20, 20, 0, 20))
    assert none_in_control.ratio is None
    assert none_in_control.high is None
    assert none_in_control.low is not None
    assert none_in_control.low > 1
    assert verdict_of(20, 20, 0, 20)[0] == "worse"


def test_a_loss_unrelated_to_the_outcome_reads_no_verdict_where_the_declared_share_did() -> None:
    """The issue's case: 25 of 500 treated sessions against 35 of 700 control ones, 5 % in
    both, the treatment arm having lost a sixth. Read at a declared half it excluded 1
    ([1.51, 2.36], `worse`); at the arms' joined sizes its interval holds its estimate."""
    verdict, shown = verdict_of(25, 500, 35, 700)
    assert verdict == "no_clear_change"
    assert isinstance(shown["low"], float)
    assert isinstance(shown["high"], float)
    assert shown["low"] < 1.0 < shown["high"]


def test_an_estimate_past_the_searched_ratios_is_bounded_there_never_served_as_a_point() -> None:
    """Every ratio searched rejected: the sequence lies beyond the end the estimate is
    past (0 to LOWEST, or HIGHEST with no upper end), said as such."""
    below = confidence_sequence(Table(1, 100_000, 100_000, 100_000))
    assert (below.low, below.high, below.empty) == (0.0, LOWEST, False)
    above = confidence_sequence(Table(100_000, 100_000, 1, 100_000))
    assert (above.low, above.high, above.empty) == (HIGHEST, None, False)


@pytest.mark.no_cover  # 150 served reads of pure arithmetic: 5 s, and 23 s traced
def test_verdicts_need_a_session_an_arm_and_match_the_e_value_at_one_the_bench_reads() -> None:
    """The bench simulates the verdict as the e-value against a ratio of 1 reaching 20,
    on the estimate's side, and harm as the one-sided e-value reaching 20; the served
    verdict, read from the interval, and the guardrail's test agree on every table drawn as
    the design draws them, the arms split anywhere from a fifth to four fifths."""
    assert verdict_of(0, 0, 9, 9)[0] == "too_few_sessions"
    rng = random.Random(47)  # noqa: S311 - seeded tables for a test
    names = {-1: "improved", 1: "worse", 0: "no_clear_change"}
    harms = 0
    for _ in range(150):
        sessions = rng.randint(2, 240)
        split = rng.uniform(0.2, 0.8)
        n1 = sum(rng.random() < split for _ in range(sessions))
        n0 = sessions - n1
        if min(n1, n0) == 0:
            continue
        p0 = rng.random()
        p1 = min(1.0, p0 * rng.choice([0.2, 0.5, 1.0, 2.0, 3.0]))
        a = sum(rng.random() < p1 for _ in range(n1))
        b = sum(rng.random() < p0 for _ in range(n0))
        counts = [np.array([[float(x)]]) for x in (a, n1, b, n0)]
        simulated = names[int(_two_sided(*counts)[0, 0])]
        assert verdict_of(a, n1, b, n0)[0] == simulated, (a, n1, b, n0)
        harmed = bool(_harm(*counts)[0, 0])
        assert harm_found(Table(a, n1, b, n0)) == harmed, (a, n1, b, n0)
        harms += harmed
    assert harms > 5


def test_harm_bets_on_harm_alone_and_finds_it_sooner_than_the_two_sided_read() -> None:
    """30 of 100 control sessions and 45 of 100 treated ones: the two-sided read is not yet
    sure, the guardrail's one-sided test is; the mirror table finds no harm."""
    table = Table(45, 100, 30, 100)
    assert verdict_of(45, 100, 30, 100)[0] == "no_clear_change"
    assert log_e_value(table, 1.0, HARM) > log_e_value(table, 1.0)
    assert not harm_found(Table(30, 100, 45, 100))


def arm(assigned: int, joined: int, reopened: int = 0) -> ArmCounts:
    """Every session started long enough ago to be judged lost when not joined."""
    return ArmCounts(
        assigned, joined, 0, {"task_reopened": reopened}, due=assigned, due_joined=joined
    )


def test_a_sample_ratio_mismatch_is_flagged_when_one_arm_loses_more_beyond_chance() -> None:
    assert not sample_ratio_mismatch(arm(200, 190), arm(200, 189))
    assert sample_ratio_mismatch(arm(200, 150), arm(200, 190))
    assert not sample_ratio_mismatch(arm(0, 0), arm(200, 190))


def test_sessions_needed_grows_as_the_effect_shrinks_and_is_none_out_of_the_methods_reach() -> None:
    strong, moderate, mild = (sessions_needed(0.3, r, 0.5) for r in (0.3, 0.6, 0.75))
    assert strong is not None
    assert moderate is not None
    assert mild is not None
    assert strong < moderate < mild
    assert sessions_needed(0.3, 0.9, 0.5) is None
    rare, common = sessions_needed(0.05, 0.5, 0.5), sessions_needed(0.3, 0.5, 0.5)
    assert rare is not None
    assert common is not None
    assert rare > 4 * common
    unequal, equal = sessions_needed(0.3, 0.6, 0.2), sessions_needed(0.3, 0.6, 0.5)
    assert unequal is not None
    assert equal is not None
    assert unequal > equal
    harmful, mirror = sessions_needed(0.3, 1.5, 0.5, HARM), sessions_needed(0.45, 0.67, 0.5)
    assert harmful is not None
    assert mirror is not None
    assert harmful < mirror
    assert sessions_needed(0.3, 1.2, 0.5, HARM) is not None


def test_the_served_number_is_planned_on_every_kind_and_says_why_when_none_holds() -> None:
    """Two kinds both must improve: the number is at least either kind's alone; before a
    control session, or while none shows the pattern, it is None with its reason; fewer
    control sessions seen plan at a lower share, so more sessions."""
    assert needed(arm(0, 0), [0], 0.5, 0.7) == needed(arm(5, 0), [0], 0.5, 0.7)
    assert needed(arm(0, 0), [0], 0.5, 0.7).reason == "no_control_sessions"
    assert needed(arm(40, 40), [0], 0.5, 0.7).reason == "pattern_not_seen_in_control"
    assert needed(arm(40, 40), [12], 0.5, 0.95).reason == "beyond_reach"
    both = needed(arm(400, 400), [120, 40], 0.5, 0.6).sessions
    alone = [needed(arm(400, 400), [count], 0.5, 0.6).sessions for count in (120, 40)]
    assert both is not None
    assert None not in alone
    assert both > max(n for n in alone if n is not None)
    few, many = (
        needed(arm(40, 40), [12], 0.5, 0.6).sessions,
        needed(arm(400, 400), [120], 0.5, 0.6).sessions,
    )
    assert few is not None
    assert many is not None
    assert few > many
