"""The selection report's mean tokens and cost per target and its interval, from the sums
an aggregation query returns: Student's t on the values joined with Cox's log-normal
interval, served from 30 sessions (its coverage: benchmarks/costs.py)."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from functions.outcomes.means import MIN_SESSIONS, Sums, mean_interval, t975

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
    )


@pytest.mark.parametrize(("freedom", "table"), [(20, 2.0860), (29, 2.0452), (99, 1.9842)])
def test_the_t_quantile_matches_its_table(freedom: int, table: float) -> None:
    assert t975(freedom) == pytest.approx(table, abs=2e-4)


def test_below_thirty_sessions_the_mean_is_served_alone() -> None:
    served = mean_interval(sums_of([1.0, 2.0, 3.0] * 9))
    assert (served.sessions, served.mean, served.low, served.high) == (27, 2.0, None, None)
    assert mean_interval(Sums(0, 0.0, 0.0)).mean is None


def test_the_interval_joins_students_t_and_coxs_log_normal_interval() -> None:
    values = [0.2 * (1.3**k) for k in range(MIN_SESSIONS)]
    served = mean_interval(sums_of(values))
    n, mean = len(values), statistics.fmean(values)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    logs = [math.log(value) for value in values]
    centre = statistics.fmean(logs) + statistics.variance(logs) / 2
    spread = math.sqrt(
        statistics.variance(logs) / n + statistics.variance(logs) ** 2 / (2 * (n - 1))
    )
    assert served.mean == pytest.approx(mean)
    assert served.low == pytest.approx(min(mean - half, math.exp(centre - t975(n - 1) * spread)))
    assert served.high == pytest.approx(max(mean + half, math.exp(centre + t975(n - 1) * spread)))
    assert (served.high or 0) > mean + half, "the skewed sample's upper end is Cox's, above t's"


def test_a_zero_cost_leaves_the_t_interval_alone_floored_at_zero() -> None:
    values = [0.0] * 20 + [1.0] * 10
    served = mean_interval(sums_of(values))
    n, mean = len(values), statistics.fmean(values)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    assert served.low == pytest.approx(max(0.0, mean - half))
    assert served.high == pytest.approx(mean + half)


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
