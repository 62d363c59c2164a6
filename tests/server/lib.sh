# tests/server/lib.sh — sourced by the checks that start `./run serve`.
#
# serve LOG ARGS...: starts `./run serve ARGS... --port 0` (a free loopback
# port) with its stderr in LOG, and waits (30 s at most) for the line that
# says where it listens. Sets SERVER (the pid; also added to PIDS, for a
# cleanup that kills them all), PORT and URL. Returns 1 if the server
# exited or never said it was listening; LOG says why.
PIDS=${PIDS:-}

# needs THING...: what a check cannot run without. A path (./run, a model's
# file, a node package) must exist; a bare word is a program on PATH. The
# first one missing fails the check with the command that provides it.
needs() {
    local t
    for t in "$@"; do
        case "$t" in
            */*) [ -e "$t" ] || { echo "FAIL: $t missing (make, make models, make deps)"; exit 1; } ;;
            *) command -v "$t" >/dev/null || { echo "FAIL: $t is not installed (make deps)"; exit 1; } ;;
        esac
    done
}
ok() { echo "ok   $*"; }

serve() {
    local log=$1; shift
    ./run serve "$@" --port 0 2>"$log" &
    SERVER=$!
    PIDS="$PIDS $SERVER"
    PORT="" URL=""
    for _ in $(seq 1 300); do
        PORT=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$log")
        [ -n "$PORT" ] && { URL="http://127.0.0.1:$PORT"; return 0; }
        kill -0 "$SERVER" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# For a check that starts several servers on $MODEL, with their logs in the
# folder $TMP: stop_servers kills and waits for every one started, fail
# prints the logs' last lines and exits 1, and start_server NAME FLAGS...
# starts one (log $TMP/NAME.log, one thread) and waits until /health answers.
stop_servers() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
}
fail() { echo "FAIL: $*"; for f in "$TMP"/*.log; do [ -e "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }
# browser ARGS...: headless Chromium (its profile in $TMP, its log on
# stderr), for the checks that open a page.
browser() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$TMP/profile" --enable-logging=stderr --log-level=0 "$@"
}
start_server() {
    local name=$1; shift
    serve "$TMP/$name.log" "$MODEL" --threads 1 "$@" || fail "$name: the server did not start"
    curl -sf --max-time 5 "$URL/health" >/dev/null || fail "$name: /health does not answer"
}
