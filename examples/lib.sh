# Helpers the walkthroughs share. Source it; it needs curl and the project's .venv.
#
#   PORT            the port `make run PORT=...` serves on (default 8080)
#   EVIDENCIA_URL   the host, when it is not http://127.0.0.1:$PORT
#   EVIDENCIA       the evidencia command (default .venv/bin/evidencia of this checkout)
#   SCHEDULE_INTERVAL_S  how often the host runs its sweeps, as it was given (default 5 s):
#                   an abnormal end's analysis waits on the sweep to collect its batch

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
URL=${EVIDENCIA_URL:-http://127.0.0.1:${PORT:-8080}}
EVIDENCIA=${EVIDENCIA:-$ROOT/.venv/bin/evidencia}
PYTHON=$(dirname "$EVIDENCIA")/python
PORT=${URL##*:}
SWEEP_S=${SCHEDULE_INTERVAL_S:-5}
BODY=$(mktemp)
REPLY_FILE=$(mktemp)
trap 'rm -f "$BODY" "$REPLY_FILE"' EXIT

step() { printf '\n== %s\n' "$*"; }

if ! curl -sS -o /dev/null --max-time 5 "$URL/openapi.json" 2>/dev/null; then
  echo "No Evidencia host answers at $URL: start one with 'make run LOCAL_MODEL=1', and give this script the same PORT=... (or EVIDENCIA_URL=...) when it serves elsewhere." >&2
  exit 1
fi

# evidencia admin, against the emulator of the host on $PORT, with output for scripts (which
# leaves out its stderr line naming the Firestore: said once here instead)
admin() { "$EVIDENCIA" admin --port "$PORT" "$@" --json; }
echo "admin commands: $EVIDENCIA admin --port $PORT (the Firestore emulator of the host on port $PORT)"

# field PATH: the value at a dotted PATH (list indexes as numbers) of the JSON on stdin
field() {
  "$PYTHON" -c 'import json, sys
value = json.load(sys.stdin)
for part in sys.argv[1].split(".") if sys.argv[1] else []:
    value = value[int(part)] if isinstance(value, list) else value[part]
print(value if isinstance(value, str) else json.dumps(value))' "$1"
}

# new_ulid [ISO time]: a ULID (for session and event ids), at a given time if one is given
new_ulid() {
  "$PYTHON" -c 'import sys
from datetime import datetime
from ulid import ULID
print(ULID.from_datetime(datetime.fromisoformat(sys.argv[1])) if len(sys.argv) > 1 else ULID())' "$@"
}

# labelled [KEY...]: the JSON object on stdin as "key value, key value" (the named keys
# alone, in that order, when keys are given); nested values stay JSON
labelled() {
  "$PYTHON" -c 'import json, sys
value = json.load(sys.stdin)
keys = sys.argv[1:] or list(value)
print(", ".join("%s %s" % (k, value[k] if isinstance(value[k], str) else json.dumps(value[k])) for k in keys))' "$@"
}

# first_line FILE: the first line a background process writes to FILE (its address),
# waiting up to 10 s for it
first_line() {
  local line=
  for _ in $(seq 100); do
    line=$(head -n 1 "$1")
    [ -n "$line" ] && break
    sleep 0.1
  done
  echo "$line"
}

new_uuid() { "$PYTHON" -c 'import uuid; print(uuid.uuid4())'; }

# api METHOD PATH TOKEN [BODY] [HEADER...]: the response body on stdout; fails (printing
# the body) unless the status is 2xx. The status is kept in $STATUS.
api() {
  local method=$1 path=$2 token=$3 body=${4:-}
  shift 4 || shift $#
  local args=(-sS -o "$BODY" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token")
  for header in "$@"; do args+=(-H "$header"); done
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-binary "$body"); fi
  STATUS=$(curl "${args[@]}" "$URL$path")
  if [ "${STATUS:0:1}" != 2 ] && [ "${ALLOW_STATUS:-}" != "$STATUS" ]; then
    echo "$method $path answered $STATUS: $(cat "$BODY")" >&2
    return 1
  fi
  cat "$BODY"
}

# wait_until SECONDS WHAT PYTHON_CONDITION METHOD PATH TOKEN [BODY]: says on stderr what it
# waits for and for how long at most, then calls every 0.2 s until the condition on the
# parsed body `r` holds (409, not ready yet, is called again); prints the last body. Gives up
# after SECONDS, saying so.
wait_until() {
  local seconds=$1 what=$2 condition=$3
  shift 3
  echo "waiting for $what: at most $seconds s" >&2
  local start=${EPOCHREALTIME/[.,]/}
  local deadline=$((start + seconds * 1000000))
  while [ "${EPOCHREALTIME/[.,]/}" -lt "$deadline" ]; do
    ALLOW_STATUS=409 api "$@" >"$REPLY_FILE"
    if [ "$STATUS" != 409 ] && "$PYTHON" -c "import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if ($condition) else 1)" "$REPLY_FILE"; then
      local waited=$(((${EPOCHREALTIME/[.,]/} - start) / 100000))
      echo "ready after $((waited / 10)).$((waited % 10)) s" >&2
      cat "$REPLY_FILE"
      echo
      return 0
    fi
    sleep 0.2
  done
  echo "gave up waiting for $what after $seconds s (the last answer: $STATUS $(cat "$REPLY_FILE"))" >&2
  return 1
}

# How long a worker started by a document's create event takes under the local model is
# well under a second; a minute leaves room for a loaded machine and a real Gemini call.
WORKER_WAIT_S=60
# An abnormal end's analysis goes to the Batch API; the sweep collects it at its next run.
ANALYSIS_WAIT_S=$((WORKER_WAIT_S + 2 * SWEEP_S))
ANALYSIS_WAITS_ON="the analysis (an abnormal end's analysis is collected from the Batch API by the sweep, every $SWEEP_S s)"

# token USER CAPABILITY TENANT: a token for USER with one capability in one tenant, a day long
token() {
  admin token create --user "$1" --class personal_access_token --capability "$2" \
    --tenant "$3" --expires-in 1d --json | field token
}

# org_and_project NAME ADMIN MEMBER: an org and a project of that name, ADMIN an admin and
# MEMBER a member of both; sets O and P to their ids (where the loop's walkthroughs start)
org_and_project() {
  O=$(admin tenant create --kind org --name "$1" --json | field id)
  P=$(admin tenant create --kind project --name "$1" --json | field id)
  local tenant
  for tenant in "$O" "$P"; do
    admin member add --tenant "$tenant" --user "$2" --role admin >/dev/null
    admin member add --tenant "$tenant" --user "$3" --role member >/dev/null
  done
}

# loop_token USER: a token for USER in the org and the project alike (agent:connect and
# agent:psychologist, no tenant selected), a day long
loop_token() {
  admin token create --user "$1" --class personal_access_token --capability agent:connect \
    --capability agent:psychologist --expires-in 1d --json | field token
}
