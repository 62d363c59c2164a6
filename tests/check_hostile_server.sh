#!/usr/bin/env bash
# tests/check_hostile_server.sh — hostile clients against ./run serve, on
# 127.0.0.1 only, bounded in count (a few hundred connections) and time
# (about a minute): nested JSON, bad framing, oversize bodies and heads,
# slowloris, connect/close storms, more connections than the limit,
# abandoned streaming and non-streaming requests, invalid UTF-8 -- then a
# normal request must get the same text as ./run. The server's RSS before
# and after is printed and bounded (tests/server/hostile_client.py).
set -u
cd "$(dirname "$0")/.."
MODEL=models/tiny
. tests/server/lib.sh
needs ./run "$MODEL/model.safetensors"
TMP=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

./run "$MODEL" "Hi" -n 12 -t 0 --no-gen-config --threads 1 --json >"$TMP/cli.json" 2>/dev/null || { echo "FAIL: ./run --json"; exit 1; }
expected=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["text"], end="")' "$TMP/cli.json")

serve "$TMP/server.log" "$MODEL" --threads 1 --queue 4 --no-gen-config
pid=$SERVER port=$PORT
[ -n "$port" ] || { cat "$TMP/server.log"; echo "FAIL: the server did not start"; exit 1; }

timeout 180 /usr/bin/python3 tests/server/hostile_client.py "$port" "$pid" "$expected"
rc=$?
if ! kill -0 $pid 2>/dev/null; then echo "FAIL: the server died"; rc=1; fi
went=$(grep -c "the client went away" "$TMP/server.log")
echo "server log: $went requests noted as abandoned by their client"
[ "$went" -ge 6 ] || { echo "FAIL: expected the 6 abandoned requests in the log"; rc=1; }
[ $rc = 0 ] || { echo "--- server log (last 30 lines):"; tail -30 "$TMP/server.log"; }
exit $rc
