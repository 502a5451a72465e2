"""Session starts racing each other, with real threads against the local host.

All starts of one agent contend on its agent document (which holds the last `seq`); the
emulator serialises such transactions poorly, so a loser may answer `409` with
`Retry-After`. Every start that succeeds gets its own `seq`, with no gap.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.agentconnect.conftest import Connect


def test_20_session_starts_at_once_get_unique_contiguous_sequence_numbers(
    configured: Connect,
) -> None:
    body = {"title": "Race", "input": {"repo": "web"}}
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(
            pool.map(
                lambda _: configured.api.post(
                    configured.path("/sessions"), body, configured.member
                ),
                range(20),
            )
        )
    started = [reply.json()["seq"] for reply in replies if reply.status_code == 202]
    for reply in replies:
        assert reply.status_code == 202 or (
            reply.status_code in (409, 503) and "Retry-After" in reply.headers
        ), reply.text
    assert sorted(started) == list(range(1, len(started) + 1))
    assert len(started) >= 1
