"""The selection report's mean tokens and cost per target and its interval, from the sums
an aggregation query returns: Student's t on the values, Hall's skewness-corrected t and
Cox's log-normal interval joined, served from 30 sessions (its coverage:
benchmarks/costs.py)."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from functions.loop.means import MIN_SESSIONS, Sums, mean_interval, t975

pytestmark = pytest.mark.pure


def sums_of(values: list[float]) -> Sums:
    positive = [value for value in values if value > 0]
    return Sums(
        len(values),
        sum(values),
        sum(value * value for value in values),
        len(positive),
        sum(math.log(value) for value in positive),
        sum(math.log(value) ** 2 for value in positive),
        sum(value**3 for value in values),
    )


def students(values: list[float]) -> tuple[float, float]:
    n, mean = len(values), statistics.fmean(values)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean - half, mean + half


def coxs(values: list[float]) -> tuple[float, float]:
    """Cox's interval on the positive values' logarithms, their share's binomial variance
    joined on the log scale when some values are 0 (the delta-log-normal mean)."""
    n, logs = len(values), [math.log(value) for value in values if value > 0]
    share, variance = len(logs) / n, statistics.variance(logs)
    centre = math.log(share) + statistics.fmean(logs) + variance / 2
    spread = math.sqrt(
        (1 - share) / (n * share) + variance / len(logs) + variance**2 / (2 * (len(logs) - 1))
    )
    return math.exp(centre - t975(n - 1) * spread), math.exp(centre + t975(n - 1) * spread)


def halls(values: list[float]) -> tuple[float, float]:
    """Hall (1992): the studentised mean T bent by g(T) = T + aT^2 + a^2 T^3 / 3 + b, with
    a = skewness / (3 sqrt n) and b = skewness / (6 sqrt n); the interval is every mu whose
    g(T) lies within t's quantile, found here by bisection on g, not by its inverse."""
    n, mean, sd = len(values), statistics.fmean(values), statistics.stdev(values)
    skewness = statistics.fmean([(v - mean) ** 3 for v in values]) / sd**3
    a, b, se = skewness / (3 * math.sqrt(n)), skewness / (6 * math.sqrt(n)), sd / math.sqrt(n)

    def solve(level: float) -> float:
        low, high = -1e3, 1e3
        for _ in range(200):
            middle = (low + high) / 2
            bent = middle + a * middle**2 + a * a * middle**3 / 3 + b
            low, high = (middle, high) if bent < level else (low, middle)
        return low

    quantile = t975(n - 1)
    return mean - solve(quantile) * se, mean - solve(-quantile) * se


@pytest.mark.parametrize(("freedom", "table"), [(20, 2.0860), (29, 2.0452), (99, 1.9842)])
def test_the_t_quantile_matches_its_table(freedom: int, table: float) -> None:
    assert t975(freedom) == pytest.approx(table, abs=2e-4)


def test_below_thirty_sessions_the_mean_is_served_alone() -> None:
    served = mean_interval(sums_of([1.0, 2.0, 3.0] * 9))
    assert (served.sessions, served.mean, served.low, served.high) == (27, 2.0, None, None)
    assert mean_interval(Sums(0, 0.0, 0.0)).mean is None


def test_the_interval_joins_students_t_halls_and_coxs_log_normal_interval() -> None:
    values = [0.2 * (1.3**k) for k in range(MIN_SESSIONS)]
    served = mean_interval(sums_of(values))
    parts = [students(values), halls(values), coxs(values)]
    assert served.mean == pytest.approx(statistics.fmean(values))
    assert served.low == pytest.approx(min(low for low, _ in parts))
    assert served.high == pytest.approx(max(high for _, high in parts))
    assert (served.high or 0) > students(values)[1], "the skewed sample's upper end is above t's"


def test_one_runaway_session_in_forty_reaches_the_true_mean_through_halls_interval() -> None:
    """Nine in ten sessions at $0.20 and a runaway at $5.00 (true mean $0.68): a sample of
    forty with one runaway has a mean of $0.32, and neither t's nor Cox's upper end reaches
    $0.68; Hall's, bent by the sample's skewness, does, with a true $0 in the sample too."""
    runaway = [0.2] * 39 + [5.0]
    served = mean_interval(sums_of(runaway))
    assert max(students(runaway)[1], coxs(runaway)[1]) < 0.68
    assert served.high == pytest.approx(halls(runaway)[1])
    assert (served.high or 0) > 0.68
    with_zero = [0.0] + [0.2] * 38 + [5.0]
    served = mean_interval(sums_of(with_zero))
    assert served.high == pytest.approx(halls(with_zero)[1])
    assert (served.high or 0) > 0.68


def test_with_true_zeros_coxs_interval_is_scaled_by_the_positive_share_floored_at_zero() -> None:
    """Twenty sessions at $0 and ten at $1: the positive ones do not vary, so Cox's
    interval is the positive share's alone, joined with t's and Hall's."""
    values = [0.0] * 20 + [1.0] * 10
    served = mean_interval(sums_of(values))
    parts = [students(values), halls(values), coxs(values)]
    assert coxs(values)[1] > 1 / 3
    assert served.low == pytest.approx(max(0.0, min(low for low, _ in parts)))
    assert served.high == pytest.approx(max(high for _, high in parts))


def test_the_report_sums_every_figure_an_outcome_record_keeps_of_what_it_spent() -> None:
    """The worker's record of a session's spending and the report's sums name the same
    fields, so that what is stored is what is summed."""
    from functions.agentconnect.report import SPENT_FIELDS
    from functions.psychologist.worker import spent

    session: Any = {"usage": {"input_tokens": 900, "output_tokens": 100, "cost_usd": 0.25}}
    kept = spent(session)
    assert (kept["usage_reported"], kept["cost_reported"]) == (1, 1)
    assert set(kept) - {"usage_reported", "cost_reported"} == set(SPENT_FIELDS)
    assert (kept["log_tokens"], kept["log_cost_usd"]) == (math.log(1000), math.log(0.25))
    tokens_alone: Any = {"usage": {"input_tokens": 900, "output_tokens": 100}}
    uncosted = spent(tokens_alone)
    assert uncosted["cost_reported"] == 0
    assert not {name for name in uncosted if "cost_usd" in name}
