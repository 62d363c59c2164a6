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
. tests/server/lib.sh
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -f "$log"' EXIT
if ! serve "$log" "$@"; then cat "$log" >&2; echo "with_server: the server did not start" >&2; exit 1; fi
URL=$URL bash -c "$cmd"
rc=$?
[ $rc = 0 ] || { echo "--- server log:" >&2; cat "$log" >&2; }
exit $rc
