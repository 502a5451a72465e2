"""The per-process container: settings read once from its environment, each thing built
once however many threads ask first, and a new container starting from nothing."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.instance import Instance

pytestmark = pytest.mark.pure


def test_settings_are_read_from_the_container_s_own_environment() -> None:
    container = Instance({"RESEARCH_MAX_ACTIVE_RUNS": "7"})
    assert container.settings.research_max_active_runs_per_workspace == 7
    assert Instance({}).settings.research_max_active_runs_per_workspace == 5


def test_a_setting_that_cannot_work_is_refused_at_first_use_and_every_use() -> None:
    container = Instance({"PSYCHOLOGIST_LEASE_SECONDS": "20"})
    for _ in range(2):
        with pytest.raises(ValueError, match="PSYCHOLOGIST_CALL_SECONDS"):
            _ = container.settings


def test_concurrent_first_asks_build_once_and_share_what_was_built() -> None:
    built: list[object] = []
    gate = threading.Barrier(8)

    def build(_: Instance) -> object:
        time.sleep(0.05)
        made = object()
        built.append(made)
        return made

    container = Instance({})

    def ask(_: int) -> object:
        gate.wait()
        return container.get(build)

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, range(8)))
    assert len(built) == 1
    assert all(each is built[0] for each in got)


def test_a_builder_reads_the_settings_of_the_container_that_builds() -> None:
    def limit(owner: Instance) -> int:
        return owner.settings.research_max_active_runs_per_workspace

    assert Instance({"RESEARCH_MAX_ACTIVE_RUNS": "3"}).get(limit) == 3
    assert Instance({"RESEARCH_MAX_ACTIVE_RUNS": "9"}).get(limit) == 9


def test_a_forgotten_thing_is_built_again_and_the_rest_is_kept() -> None:
    def first(_: Instance) -> object:
        return object()

    def second(_: Instance) -> object:
        return object()

    container = Instance({})
    kept, dropped = container.get(first), container.get(second)
    container.forget(second)
    assert container.get(first) is kept
    assert container.get(second) is not dropped
