#!/usr/bin/env bash
# The loop's lifecycle: an accepted hypothesis about an AgentConnect agent, a randomised
# trial of its suggestion over sessions started through AgentConnect and logged to the
# Psychologist, the suggestion adopting itself into the agent's standing instructions as a
# new version once the trial reads improved, and a rollback. Run against
# `make run LOCAL_MODEL=1`.
. "$(dirname "$0")/lib.sh"

# Sessions each arm gets here. Every control session reopening its task and no treated one
# is a contrast that seven an arm read as improved (six and seven do too, should one session
# go missing); a real, partial effect needs far more (the trial's sessionsNeeded says how
# many). The arm is a hash of the trial and the session id: sessions start until both have
# their seven.
PER_ARM=7
# The sessions' analyses are collected from the Batch API by one sweep; a later one reads
# the trial and adopts it.
ADOPTION_WAIT_S=$((ANALYSIS_WAIT_S + SWEEP_S))

# session_events SESSION REOPENS: a session's log as the events endpoint takes it, dev-api
# opening task T-1 and reopening it REOPENS times, a minute apart, ending now
session_events() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
from datetime import datetime, timedelta, timezone
from ulid import ULID
reopens = int(sys.argv[2])
kinds = ["task.opened"] + ["task.reopened"] * reopens
start = datetime.now(timezone.utc) - timedelta(minutes=len(kinds))
events = []
for i, kind in enumerate(kinds):
    at = start + timedelta(minutes=i)
    events.append({"id": str(ULID.from_datetime(at)), "agent": "dev-api", "type": kind,
                   "at": at.isoformat().replace("+00:00", "Z"), "taskId": "T-1"})
print(json.dumps({"events": events}))
PY
}

# log_and_end SESSION REOPENS STATE: the session's log sent to the project, then its end
log_and_end() {
  api POST "/projects/$P/sessions/$1/events" "$ANA" "$(session_events "$1" "$2")" >/dev/null
  api POST "/projects/$P/sessions/$1/end" "$ANA" "{\"state\": \"$3\"}" >/dev/null
}

# start_session TITLE: a session start through AgentConnect; its answer on stdout
start_session() {
  local id
  id=$(new_ulid)
  api POST "/v1/orgs/$O/agents/$A/sessions" "$ANA" \
    "{\"sessionId\": \"$id\", \"title\": \"$1\", \"input\": {\"repo\": \"web\"}}"
}

# served: "instructions vN" for the session start answer on stdin
served() {
  "$PYTHON" -c 'import json, sys
i = json.load(sys.stdin)["instructions"]
print("instructions v%s: %s" % (i["version"], json.dumps(i["text"])) if i else "no instructions")'
}

step "1. an org's agent linked to a project; olga decides in both (admin), ana runs sessions (member)"
org_and_project "Lifecycle demo" olga ana
OLGA=$(loop_token olga)
ANA=$(loop_token ana)
A=$(new_uuid)
echo "org $O, project $P, agent $A"
api PUT "/v1/orgs/$O/agents/$A/model-selection" "$OLGA" '{
  "decision": {"decisionId": "caa985ad-f12f-4ef1-943f-c1812738ec7a",
    "question": {"type": "boolean", "instructions": "Does the task need deep reasoning about a bug?"},
    "rules": [{"model": "gemini-2.5-pro", "effort": "high", "when": {"type": "boolean", "thresholds": {"true": 0.8}}}]},
  "steps": [],
  "default": {"runtime": "local", "model": "gemini-2.5-flash", "effort": "low", "permissionMode": "default", "fastMode": true}}' \
  | "$PYTHON" -c 'import json, sys; print("selection version", json.load(sys.stdin)["version"])'
api PUT "/v1/orgs/$O/agents/$A/outcome-source" "$OLGA" "{\"projectId\": \"$P\", \"agent\": \"dev-api\"}" \
  | "$PYTHON" -c 'import json, sys; s = json.load(sys.stdin); print("outcome source: project", s["projectId"], "agent", s["agent"])'

step "2. standing instructions, version 1: what every session start serves"
V1_TEXT="Keep every change small, and say which tests you ran."
api PUT "/v1/orgs/$O/agents/$A/instructions" "$OLGA" \
  "{\"text\": \"$V1_TEXT\", \"reason\": \"Our house rules.\"}" | labelled version text reason

step "3. a hypothesis about dev-api: a session reopens its task three times and crashes; its analysis"
S=$(new_ulid)
echo "stored: $(api POST "/projects/$P/sessions/$S/events" "$ANA" "$(session_events "$S" 3)" | labelled)"
ANALYSIS=$(api POST "/projects/$P/sessions/$S/end" "$ANA" \
  '{"state":"closed_abnormally","cause":"crash"}' | field analysisId)
DONE=$(wait_until "$ANALYSIS_WAIT_S" "$ANALYSIS_WAITS_ON" 'r["status"] in ("completed", "failed")' GET "/projects/$P/analyses/$ANALYSIS" "$OLGA")
[ "$(echo "$DONE" | field status)" = completed ] || { echo "the analysis failed" >&2; exit 1; }
HYPOTHESES=$(api GET "/projects/$P/hypotheses?sessionId=$S&status=proposed" "$OLGA")
echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys
for h in json.load(sys.stdin):
    print("-", h["agenteAlvo"] + ":", h["hipotese"], "suggests:", h["sugestao"])'
HYPOTHESIS=$(echo "$HYPOTHESES" | "$PYTHON" -c 'import json, sys
found = [h for h in json.load(sys.stdin) if "closes tasks" in h["hipotese"]]
print(json.dumps(found[0]) if found else sys.exit("no hypothesis on the reopened task"))')
H=$(echo "$HYPOTHESIS" | field id)
SUGGESTION=$(echo "$HYPOTHESIS" | field sugestao)

step "4. olga accepts the hypothesis on the reopened task: its suggestion may now be tried"
api POST "/projects/$P/hypotheses/$H/decision" "$OLGA" \
  '{"status":"accepted","reason":"The task was reopened three times: its criteria were not checked before closing."}' \
  | "$PYTHON" -c 'import json, sys; h = json.load(sys.stdin); print(h["status"], "by", h["decidedBy"]["userId"] + ":", h["hipotese"])'

step "5. a trial of its suggestion for the agent, started with autoAdopt"
T=$(api POST "/projects/$P/hypotheses/$H/trials" "$OLGA" \
  "{\"orgId\": \"$O\", \"agentId\": \"$A\", \"autoAdopt\": true}" | tee "$REPLY_FILE" | field id)
labelled status share autoAdopt <"$REPLY_FILE"
echo "trial $T"

step "6. sessions start through AgentConnect: each is given an arm, and the instructions in force"
declare -A ARMS=() COUNT=([treatment]=0 [control]=0)
ORDER=()
while [ "${COUNT[treatment]}" -lt "$PER_ARM" ] || [ "${COUNT[control]}" -lt "$PER_ARM" ]; do
  STARTED=$(start_session "Fix the login bug")
  read -r SESSION ARM < <(echo "$STARTED" | "$PYTHON" -c 'import json, sys
s = json.load(sys.stdin)
print(s["sessionId"], s["trials"][0]["arm"] if s["trials"] else "")')
  [ -n "$ARM" ] || { echo "session $SESSION started with no trial" >&2; exit 1; }
  if [ "${COUNT[$ARM]}" = 0 ]; then
    echo "a $ARM session is served $(echo "$STARTED" | served)"
    if [ "$ARM" = treatment ]; then
      echo "  and the suggestion to add after them: $(echo "$STARTED" | field trials.0.sugestao)"
    fi
  fi
  ARMS[$SESSION]=$ARM
  ORDER+=("$SESSION")
  COUNT[$ARM]=$((COUNT[$ARM] + 1))
done
echo "sessions started: treatment ${COUNT[treatment]}, control ${COUNT[control]}"

step "7. each is logged here under its own id and ended: control reopens its task, treatment does not"
for SESSION in "${ORDER[@]}"; do
  if [ "${ARMS[$SESSION]}" = treatment ]; then
    log_and_end "$SESSION" 0 closed
  else
    log_and_end "$SESSION" 2 closed_abnormally
  fi
done
echo "sessions ended: treatment ${COUNT[treatment]} closed, control ${COUNT[control]} closed_abnormally"

step "8. the sweep reads the trial: improved, so the suggestion adopts itself"
# The trial may adopt itself before the last sessions' analyses are in: the wait is for both.
TRIAL=$(wait_until "$ADOPTION_WAIT_S" "the adoption (the sweep, every $SWEEP_S s, collects the sessions' analyses, then reads the trial)" \
  "r['status'] == 'stopped' and sum(a['sessions'] for a in r['effect']['arms'].values()) == ${#ORDER[@]}" \
  GET "/projects/$P/hypotheses/$H/trials/$T" "$OLGA")
echo "$TRIAL" | "$PYTHON" -c 'import json, sys
t = json.load(sys.stdin)
print("status", t["status"] + ", stopped by", t["stoppedBy"] + ":", t["stopReason"])
print("verdict", t["verdict"], "on", ", ".join(t["effect"]["basis"]))
for arm in ("treatment", "control"):
    a, k = t["effect"]["arms"][arm], t["effect"]["signalKinds"]["task_reopened"]
    print("  %s: sessions %d, reopened share %s, abnormal ends %d" % (arm, a["sessions"], k[arm], a["abnormalEnds"]))
k = t["effect"]["signalKinds"]["task_reopened"]
print("reopened ratio, treatment over control:", k["ratio"], "95%% sequence [%s, %s]" % (k["low"], k["high"]))
if (t["stoppedBy"], t["adoptedAs"]) != ("autoAdopt", 2):
    sys.exit("the trial was not adopted as version 2")
print("adopted as instructions version", t["adoptedAs"])'

step "9. the instructions now: version 2 is version 1 then the suggestion, from the trial"
CURRENT=$(api GET "/v1/orgs/$O/agents/$A/instructions" "$ANA")
echo "$CURRENT" | "$PYTHON" -c 'import json, sys
i = json.load(sys.stdin)
print("version", i["version"], "reason", json.dumps(i["reason"]))
print("from: trial", i["from"]["trialId"], "hypothesis", i["from"]["hypothesisId"])
print("text", json.dumps(i["text"]))'
echo "$CURRENT" | V1="$V1_TEXT" SUGGESTION="$SUGGESTION" T="$T" H="$H" "$PYTHON" -c 'import json, os, sys
i = json.load(sys.stdin)
if i["version"] != 2 or i["text"] != os.environ["V1"] + "\n\n" + os.environ["SUGGESTION"]:
    sys.exit("version 2 is not version 1 then the suggestion")
if (i["from"]["trialId"], i["from"]["hypothesisId"]) != (os.environ["T"], os.environ["H"]):
    sys.exit("version 2 does not name its trial and hypothesis")'
echo "the versions, newest first, each with its sessions in the project:"
api GET "/v1/orgs/$O/agents/$A/instructions/versions" "$ANA" | "$PYTHON" -c 'import json, sys
for v in json.load(sys.stdin):
    s = v["sessions"]
    print("  version", v["version"], "from", "trial " + v["from"]["trialId"] if v["from"] else "a person",
          "- sessions", s["joined"], "abnormal ends", s["abnormalEnds"])'
echo "the next session start is served $(start_session "Fix the signup bug" | served)"

step "10. a rollback: version 3 serves version 1's text again"
api PUT "/v1/orgs/$O/agents/$A/instructions" "$OLGA" \
  '{"fromVersion": 1, "reason": "Rolled back while the team reviews the new rule."}' \
  | labelled version text reason from
echo "the next session start is served $(start_session "Fix the logout bug" | served)"
