"""An org's Gemini spend has a ceiling: past it, a session starts on its default target."""

from __future__ import annotations

from shared.clients import db
from shared.validation import issues_for
from tests.agentconnect.conftest import DEFAULT, Connect, answer
from tests.api import Configure


def org_tokens(connect: Connect) -> int:
    shards = db().collection(f"orgs/{connect.org}/usage").stream()
    return sum((shard.to_dict() or {}).get("tokens_used", 0) for shard in shards)


def test_a_start_past_the_orgs_token_budget_freezes_the_default_target_without_gemini(
    configured: Connect, configure: Configure
) -> None:
    configure(AGENTCONNECT_ORG_TOKEN_BUDGET="100")
    configured.world.gemini.answer_json(answer(True, 0.9), usage=(90, 10), thoughts=0)
    first = configured.frozen(configured.start()["seq"])
    assert first["outcome"] == "selected"
    assert org_tokens(configured) == 100 == configured.world.gemini.reported_tokens()
    second = configured.start("Another task")
    body = configured.frozen(second["seq"])
    assert issues_for("agentconnect/evaluation", body) == []
    assert (body["outcome"], body["target"]) == ("fallback", DEFAULT)
    assert "budget_exhausted" in body["reason"]
    assert body["usage"] == {"inputTokens": 0, "outputTokens": 0}
    assert len(configured.world.gemini.requests) == 1
