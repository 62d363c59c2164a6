#!/usr/bin/env bash
# tests/server/with_server.sh 'COMMAND' [MODEL] [serve flags...]
#
# Starts `./run serve` on a free loopback port, runs COMMAND with bash and
# $URL set to the server (http://127.0.0.1:PORT), then stops the server.
# Exits with COMMAND's status; the server's log goes to stderr only when
# something failed. For the book's "Try it" lines and for quick experiments:
#
#   bash tests/server/with_server.sh 'curl -s $URL/health'
set -u
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: bash tests/server/with_server.sh 'COMMAND' [MODEL] [serve flags...]" >&2; exit 2; }
cmd=$1; shift
log=$(mktemp)
./run serve --port 0 "$@" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 300); do  # 30 s at most
    port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$log")
    [ -n "$port" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then cat "$log" >&2; echo "with_server: the server did not start" >&2; exit 1; fi
URL="http://127.0.0.1:$port" bash -c "$cmd"
rc=$?
[ $rc = 0 ] || { echo "--- server log:" >&2; cat "$log" >&2; }
exit $rc
