"""From a trial to the agent's standing instructions, through HTTP: adopting what a trial
proved, a trial adopting itself, the guardrail stopping a harmful one, and trials of a
pattern's suggestion read on the pattern's own rate per arm.

A few sessions run through the whole loop; the counts that decide a verdict, too many to
run in the suite, are outcome records as a session start and an analysis write them (and,
for a pattern, as a join to the pattern writes them)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.loop import store as outcome_store
from functions.psychologist.patterns import store as patterns_store
from shared.clients import db
from tests.agentconnect.conftest import AGENT, DEFAULT
from tests.api import assert_conforms, document
from tests.loop.linked import AGENT_NAME, PRO, Loop, key
from tests.loop.tried import IMPROVED, NO_CHANGE, WORSE, Tried, seed_arms

SUGGESTION = "Add an explicit definition-of-done criterion to the instruction."


def put_instructions(loop: Loop, text: str) -> Any:
    body = {"text": text, "reason": "Our house rules."}
    return loop.connect.api.call(
        "PUT", loop.connect.path("/instructions"), body, loop.connect.admin
    )


def current_instructions(loop: Loop) -> dict[str, Any]:
    reply = loop.connect.api.call(
        "GET", loop.connect.path("/instructions"), token=loop.connect.viewer
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def trial_of(tried: Tried, trial: str) -> dict[str, Any]:
    reply = tried.loop.connect.api.call("GET", tried.path(f"/trials/{trial}"), token=tried.admin)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def adopt(tried: Tried, trial: str, token: str | None = None) -> Any:
    path = tried.path(f"/trials/{trial}/adopt")
    return tried.loop.connect.api.post(path, {}, token or tried.admin)


def sweep(loop: Loop) -> dict[str, Any]:
    reply = loop.connect.api.private("/internal/psychologist/sweep")
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_adopt_is_refused_until_the_verdict_reads_improved_then_makes_the_next_version(
    tried: Tried,
) -> None:
    """Version 1 is a person's; a trial of the accepted suggestion runs; adopt answers 409
    while the verdict reads no clear change, and once it reads improved makes version 2
    (version 1's text, then the suggestion), naming the trial, stops the trial and records
    the version on it. The next session is served version 2; adopting again changes
    nothing; only an admin of the org adopts."""
    loop = tried.loop
    assert put_instructions(loop, "Keep every change small.").status_code == 200
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, NO_CHANGE)
    refused = adopt(tried, trial)
    assert refused.status_code == 409
    assert "no_clear_change" in refused.json()["message"]
    assert current_instructions(loop)["version"] == 1
    seed_arms(loop, trial, IMPROVED)
    outsider = loop.connect.world.user(loop.project, "mel", "admin")
    assert adopt(tried, trial, token=outsider).status_code == 403
    adopted = adopt(tried, trial)
    assert adopted.status_code == 200, adopted.text
    assert_conforms(
        "POST", "/projects/{projectId}/hypotheses/{hypothesisId}/trials/{trialId}/adopt", adopted
    )
    body = adopted.json()
    assert (body["status"], body["adoptedAs"], body["verdict"]) == ("stopped", 2, "improved")
    assert body["stopReason"] == "Adopted as instructions version 2"
    current = current_instructions(loop)
    assert current["version"] == 2
    assert current["text"] == f"Keep every change small.\n\n{SUGGESTION}"
    assert current["from"] == {
        "trialId": trial,
        "hypothesisId": tried.hypothesis,
        "patternId": None,
    }
    assert current["reason"] == f"Adopted from trial {trial}"
    history = loop.connect.api.call(
        "GET", loop.connect.path("/instructions/versions"), token=loop.connect.viewer
    ).json()
    assert [(v["version"], v["createdBy"], v["from"] is None) for v in history] == [
        (2, body["stoppedBy"], False),
        (1, history[1]["createdBy"], True),
    ]
    started = loop.connect.start("after the adoption", sessionId="after-adoption")
    assert started["instructions"] == {"version": 2, "text": current["text"]}
    assert started["trials"] == [], "an adopted trial assigns no more"
    again = adopt(tried, trial)
    assert (again.status_code, again.json()["adoptedAs"]) == (200, 2)
    assert current_instructions(loop)["version"] == 2


def test_a_trial_started_with_auto_adopt_adopts_itself_at_the_first_sweep_reading_improved(
    tried: Tried,
) -> None:
    loop = tried.loop
    trial = tried.start_trial(autoAdopt=True).json()
    assert trial["autoAdopt"] is True
    seed_arms(loop, trial["id"], NO_CHANGE)
    assert sweep(loop)["trials"] == []
    assert trial_of(tried, trial["id"])["status"] == "running"
    seed_arms(loop, trial["id"], IMPROVED)
    assert sweep(loop)["trials"] == [f"{trial['id']}:adopted"]
    read = trial_of(tried, trial["id"])
    assert (read["status"], read["stoppedBy"], read["adoptedAs"]) == ("stopped", "autoAdopt", 1)
    assert current_instructions(loop)["text"] == SUGGESTION
    assert loop.connect.start("next", sessionId="after-auto")["instructions"]["version"] == 1
    assert sweep(loop)["trials"] == [], "a stopped trial is not watched"


def test_a_trial_reading_worse_is_stopped_by_the_guardrail_and_assigns_no_more(
    tried: Tried,
) -> None:
    """The guardrail stops it at the sweep, says why, adopts nothing, and a person may
    start another."""
    loop = tried.loop
    trial = tried.start_trial(autoAdopt=True).json()["id"]
    seed_arms(loop, trial, WORSE)
    assert sweep(loop)["trials"] == [f"{trial}:guardrail"]
    read = trial_of(tried, trial)
    assert (read["status"], read["stoppedBy"], read["verdict"]) == ("stopped", "guardrail", "worse")
    assert read["stopReason"].startswith("Stopped by the guardrail")
    assert read["adoptedAs"] is None
    started = loop.connect.start("after the guardrail", sessionId="after-guardrail")
    assert (started["trials"], started["instructions"]) == ([], None)
    assert adopt(tried, trial).status_code == 409
    assert tried.start_trial().status_code == 201


def test_a_running_trial_keeps_running_when_the_instructions_change_under_it(
    tried: Tried,
) -> None:
    """Both arms are served the version in force at their start, so the comparison stays
    randomised within every version; each session keeps the version it ran under, and the
    project's sessions read shows it (none for a session AgentConnect did not start)."""
    loop = tried.loop
    assert put_instructions(loop, "Version one.").status_code == 200
    trial = tried.start_trial().json()["id"]
    first = loop.connect.start("under one", sessionId="under-1")
    assert put_instructions(loop, "Version two.").status_code == 200
    second = loop.connect.start("under two", sessionId="under-2")
    for started, version in ((first, 1), (second, 2)):
        loop.connect.frozen(started["seq"])
        assert [t["trialId"] for t in started["trials"]] == [trial]
        assert started["instructions"]["version"] == version
        record = outcome_store.outcome_ref(loop.project, started["sessionId"], AGENT_NAME)
        assert document(record.path)["selection"]["instructions_version"] == version
        loop.log_and_end(started["sessionId"], "closed")
    assert trial_of(tried, trial)["status"] == "running"
    listed = loop.connect.api.call("GET", f"/projects/{loop.project}/sessions", token=tried.admin)
    assert listed.status_code == 200, listed.text
    assert_conforms("GET", "/projects/{projectId}/sessions", listed)
    versions = {row["sessionId"]: row["instructionsVersion"] for row in listed.json()}
    assert versions == {"h-1": None, "under-1": 1, "under-2": 2}


@pytest.fixture
def pattern(tried: Tried) -> str:
    """An accepted pattern of the linked agent's failures, as a refresh writes it."""
    now = datetime.now(UTC)
    pattern_id = "01KPATTERN0000000000000000"
    patterns_store.pattern_ref(tried.loop.project, pattern_id).set(
        {
            "id": pattern_id,
            "agent": AGENT_NAME,
            "status": "open",
            "title": "Tasks reopened after they were called done",
            "description": "The agent calls a task done before its checks pass.",
            "sugestao": "Say what done means before you start.",
            "matching": 12,
            "total": 40,
            "window": {"since": now - timedelta(days=30), "until": now},
            "first_seen": now - timedelta(days=9),
            "last_seen": now,
            "trial_id": None,
        }
    )
    path = f"/projects/{tried.loop.project}/patterns/{pattern_id}/decision"
    decided = tried.loop.connect.api.post(path, {"status": "accepted"}, tried.admin)
    assert decided.status_code == 200, decided.text
    return pattern_id


def test_a_pattern_trial_reads_the_patterns_own_rate_per_arm_and_resolves_it_when_improved(
    tried: Tried, pattern: str
) -> None:
    loop, api = tried.loop, tried.loop.connect.api
    base = f"/projects/{loop.project}/patterns/{pattern}"
    sent = {"orgId": loop.connect.org, "agentId": AGENT, "share": 0.5}
    started = api.post(f"{base}/trials", sent, tried.admin)
    assert started.status_code == 201, started.text
    assert_conforms("POST", "/projects/{projectId}/patterns/{patternId}/trials", started)
    trial = started.json()
    assert (trial["patternId"], trial["hypothesisId"]) == (pattern, None)
    assert api.post(f"{base}/trials", sent, tried.admin).status_code == 409
    started_session = loop.connect.start("a task", sessionId="p-0")
    loop.connect.frozen(started_session["seq"])  # its record counts it assigned from now on
    assigned = started_session["trials"]
    assert [(t["patternId"], t["hypothesisId"], t["sugestao"]) for t in assigned] == [
        (pattern, None, "Say what done means before you start.")
    ]
    seed_arms(loop, trial["id"], IMPROVED, pattern=pattern)
    read = api.call("GET", f"{base}/trials/{trial['id']}", token=tried.admin)
    assert read.status_code == 200, read.text
    assert_conforms("GET", "/projects/{projectId}/patterns/{patternId}/trials/{trialId}", read)
    effect = read.json()["effect"]
    assert effect["basis"] == ["pattern"]
    rate = effect["pattern"]
    assert (rate["treatment"], rate["control"]) == (
        {"matching": 0, "sessions": 40},
        {"matching": 20, "sessions": 40},
    )
    assert rate["verdict"] == effect["verdict"] == "improved"
    assert rate["high"] < 1
    detail = api.call("GET", base, token=tried.admin).json()
    assert detail["trial"]["rate"] == rate
    assert detail["pattern"]["trialId"] == trial["id"]
    assert detail["pattern"]["status"] == "accepted", "resolved only once the sweep reads it"
    assert sweep(loop)["trials"] == [f"{trial['id']}:resolved"]
    assert api.call("GET", base, token=tried.admin).json()["pattern"]["status"] == "resolved"
    why = {"reason": "The trial proved it."}
    adopted = api.post(f"{base}/trials/{trial['id']}/adopt", why, tried.admin)
    assert adopted.status_code == 200, adopted.text
    current = current_instructions(loop)
    assert current["from"] == {"trialId": trial["id"], "hypothesisId": None, "patternId": pattern}
    assert current["reason"] == "The trial proved it."


def test_a_pattern_trial_needs_an_accepted_pattern_with_a_suggestion(
    tried: Tried, pattern: str
) -> None:
    loop, api = tried.loop, tried.loop.connect.api
    base = f"/projects/{loop.project}/patterns"
    sent = {"orgId": loop.connect.org, "agentId": AGENT}
    missing = api.post(f"{base}/01KQ0000000000000000000000/trials", sent, tried.admin)
    assert missing.status_code == 404
    ref = patterns_store.pattern_ref(loop.project, pattern)
    ref.update({"sugestao": None})
    refused = api.post(f"{base}/{pattern}/trials", sent, tried.admin)
    assert refused.status_code == 409
    assert "no suggestion" in refused.json()["message"]
    ref.update({"sugestao": "Say what done means.", "status": "dismissed"})
    assert api.post(f"{base}/{pattern}/trials", sent, tried.admin).status_code == 409
    assert "running_trial" not in document(ref.path)


def seed_versions(loop: Loop, rows: dict[int | None, tuple[int, int]]) -> None:
    """Ended sessions of the agent under each instructions version (None: before any),
    `showing` of them ending abnormally with reopened tasks."""
    batch = db().batch()
    for version, (sessions, showing) in rows.items():
        for index in range(sessions):
            shows = index < showing
            selection = {
                "org_id": loop.connect.org,
                "agent_id": AGENT,
                "instructions_version": version,
            }
            record: dict[str, Any] = {
                "selection": selection,
                "abnormal_end": int(shows),
                "signal_kinds": ["task_reopened"] if shows else [],
            }
            ref = outcome_store.outcome_ref(loop.project, f"v{version}-{index}", AGENT_NAME)
            batch.set(ref, record)
    batch.commit()


def test_each_version_shows_its_sessions_and_an_adopted_trial_reads_before_against_after(
    tried: Tried,
) -> None:
    """Version 1 (a person's) and version 2 (adopted) each list their sessions' abnormal
    ends with an interval; the adopted trial reads its basis under version 1 against
    version 2, said to be an association."""
    loop = tried.loop
    assert put_instructions(loop, "Keep every change small.").status_code == 200
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, IMPROVED)
    assert adopt(tried, trial).json()["adoptedAs"] == 2
    seed_versions(loop, {1: (30, 12), 2: (30, 3)})
    listed = loop.connect.api.call(
        "GET", loop.connect.path("/instructions/versions"), token=loop.connect.viewer
    )
    assert listed.status_code == 200, listed.text
    assert_conforms("GET", "/v1/orgs/{orgId}/agents/{id}/instructions/versions", listed)
    rates = {v["version"]: v["sessions"] for v in listed.json()}
    assert (rates[1]["joined"], rates[1]["abnormalEnds"]) == (30, 12)
    assert (rates[2]["joined"], rates[2]["abnormalEnds"]) == (30, 3)
    assert rates[2]["low"] < rates[2]["abnormalShare"] == 0.1 < rates[2]["high"]
    after = trial_of(tried, trial)["afterAdoption"]
    assert (after["before"]["version"], after["after"]["version"]) == (1, 2)
    assert (after["before"]["showing"], after["after"]["showing"]) == (12, 3)
    assert after["ratio"] == 0.25
    assert "association" in after["note"]


def test_versions_of_an_unlinked_agent_list_no_sessions(tried: Tried) -> None:
    loop = tried.loop
    assert put_instructions(loop, "Keep every change small.").status_code == 200
    unlinked = loop.connect.api.call(
        "DELETE", loop.connect.path("/outcome-source"), token=loop.connect.admin
    )
    assert unlinked.status_code == 200
    listed = loop.connect.api.call(
        "GET", loop.connect.path("/instructions/versions"), token=loop.connect.viewer
    ).json()
    assert [v["sessions"] for v in listed] == [None]


def test_the_selection_report_counts_each_target_per_instructions_version(
    tried: Tried,
) -> None:
    """Sessions before any version, under version 1 and under version 2, each started,
    logged and ended: the report counts each version's joined sessions and abnormal ends,
    per target within it ("deep" titles go to one target, the others to the default)."""
    loop = tried.loop

    def run(title: str, state: str) -> None:
        started = loop.connect.start(title, sessionId=f"r-{title}")
        loop.connect.frozen(started["seq"])
        loop.log_and_end(started["sessionId"], state)

    run("deep-0", "closed_abnormally")
    run("plain-0", "closed")
    assert put_instructions(loop, "Version one.").json()["version"] == 1
    run("deep-1", "closed")
    run("plain-1", "closed_abnormally")
    assert put_instructions(loop, "Version two.").json()["version"] == 2
    run("deep-2", "closed")
    run("plain-2", "closed_abnormally")
    run("plain-2b", "closed")
    report = loop.report()
    rows = {row["version"]: row for row in report["byInstructions"]}
    assert list(rows) == [None, 1, 2]
    counts = {v: (row["sessions"], row["abnormalEnds"]["count"]) for v, row in rows.items()}
    assert counts == {None: (2, 1), 1: (2, 1), 2: (3, 1)}
    per_target = {t["targetKey"]: t["sessions"] for t in rows[2]["targets"]}
    assert per_target == {key(PRO): 1, key(DEFAULT): 2}
    assert any("instructions version" in caveat for caveat in report["caveats"])


def test_adoptions_racing_each_other_make_one_version(tried: Tried) -> None:
    """Two sweeps and two admins' adopts at once, on one trial reading improved: one
    transaction makes the version, the others find the trial adopted."""
    loop = tried.loop
    trial = tried.start_trial(autoAdopt=True).json()["id"]
    seed_arms(loop, trial, IMPROVED)
    with ThreadPoolExecutor(max_workers=4) as pool:
        sweeps = [pool.submit(sweep, loop) for _ in range(2)]
        adopts = [pool.submit(adopt, tried, trial) for _ in range(2)]
        assert all(done.result()["trials"] in ([], [f"{trial}:adopted"]) for done in sweeps)
        assert [done.result().json()["adoptedAs"] for done in adopts] == [1, 1]
    versions = loop.connect.api.call(
        "GET", loop.connect.path("/instructions/versions"), token=loop.connect.viewer
    ).json()
    assert [v["version"] for v in versions] == [1]
    assert current_instructions(loop)["text"] == SUGGESTION


def test_an_adoption_past_the_instructions_limit_is_refused_and_writes_nothing(
    tried: Tried,
) -> None:
    """Version 1 holds nearly 8,000 characters: with the suggestion after it, the next
    version would pass the limit, so adopt answers 409 and the trial runs on."""
    loop = tried.loop
    assert put_instructions(loop, "x" * 7990).status_code == 200
    trial = tried.start_trial().json()["id"]
    seed_arms(loop, trial, IMPROVED)
    refused = adopt(tried, trial)
    assert refused.status_code == 409
    assert "8,000" in refused.json()["message"]
    assert current_instructions(loop)["version"] == 1
    read = trial_of(tried, trial)
    assert (read["status"], read["adoptedAs"]) == ("running", None)
