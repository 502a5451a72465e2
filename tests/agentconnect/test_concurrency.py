"""Session starts racing each other, with real threads against the local host.

Starts of one agent race for its next `seq` by creating the evaluation at that number
only if it is absent; a start that lost reads again at once. A burst of `CONDITIONED_TRIES`
starts (50) all land, each with its own `seq`, with no gap.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from shared.clients import db
from shared.store import CONDITIONED_TRIES
from tests.agentconnect.conftest import AGENT, Connect


def test_a_burst_of_50_session_starts_all_land_with_contiguous_sequence_numbers(
    configured: Connect,
) -> None:
    assert CONDITIONED_TRIES == 50
    body = {"title": "Race", "input": {"repo": "web"}}
    with ThreadPoolExecutor(max_workers=CONDITIONED_TRIES) as pool:
        replies = list(
            pool.map(
                lambda _: configured.api.post(
                    configured.path("/sessions"), body, configured.member
                ),
                range(CONDITIONED_TRIES),
            )
        )
    assert [r.status_code for r in replies] == [202] * CONDITIONED_TRIES, [r.text for r in replies]
    assert sorted(reply.json()["seq"] for reply in replies) == list(range(1, CONDITIONED_TRIES + 1))
    agent = db().document(f"orgs/{configured.org}/agents/{AGENT}").get()
    assert agent.get("last_seq") == CONDITIONED_TRIES
