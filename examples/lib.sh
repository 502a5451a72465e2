# Helpers the walkthroughs share. Source it; it needs curl and the project's .venv.
#
#   PORT            the port `make run PORT=...` serves on (default 8080)
#   EVIDENCIA_URL   the host, when it is not http://127.0.0.1:$PORT
#   EVIDENCIA       the evidencia command (default .venv/bin/evidencia of this checkout)
#   POLL_TRIES      how many times to poll a pending result, 0.2 s apart (default 100)

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
URL=${EVIDENCIA_URL:-http://127.0.0.1:${PORT:-8080}}
EVIDENCIA=${EVIDENCIA:-$ROOT/.venv/bin/evidencia}
PYTHON=$(dirname "$EVIDENCIA")/python
PORT=${URL##*:}
POLL_TRIES=${POLL_TRIES:-100}
BODY=$(mktemp)
REPLY_FILE=$(mktemp)
trap 'rm -f "$BODY" "$REPLY_FILE"' EXIT

step() { printf '\n== %s\n' "$*"; }

if ! curl -sS -o /dev/null --max-time 5 "$URL/openapi.json" 2>/dev/null; then
  echo "No Evidencia host answers at $URL: start one with 'make run LOCAL_MODEL=1', and give this script the same PORT=... (or EVIDENCIA_URL=...) when it serves elsewhere." >&2
  exit 1
fi

# evidencia admin, against the emulator of the host on $PORT
admin() { "$EVIDENCIA" admin --port "$PORT" "$@"; }

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

# poll_until PYTHON_CONDITION METHOD PATH TOKEN [BODY]: call until the condition on the
# parsed body `r` (None while the answer is 409) holds; prints the last body.
poll_until() {
  local condition=$1
  shift
  for _ in $(seq "$POLL_TRIES"); do
    ALLOW_STATUS=409 api "$@" >"$REPLY_FILE"
    if [ "$STATUS" != 409 ] && "$PYTHON" -c "import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if ($condition) else 1)" "$REPLY_FILE"; then
      cat "$REPLY_FILE"
      echo
      return 0
    fi
    sleep 0.2
  done
  echo "gave up after $POLL_TRIES tries: $condition" >&2
  return 1
}

# token USER CAPABILITY TENANT: a token for USER with one capability in one tenant, a day long
token() {
  admin token create --user "$1" --class personal_access_token --capability "$2" \
    --tenant "$3" --expires-in 1d --json | field token
}
