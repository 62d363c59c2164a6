#!/usr/bin/env bash
# tests/check_batch_trace.sh — `./run serve --report --trace-json` shows the
# batch: which sequences ran in each scheduler step.
#
# A server with --parallel 4 and both files on models/tiny; four streaming
# clients of different lengths (tests/server/batching.py trace): three at
# once, a fourth once the first is decoding. Then the server is stopped,
# which writes the files, and
#   1. the Chrome trace: some step holds two or more sequences, every
#      per-slot slice is on its slot's track, each request's sampled tokens
#      are exactly the tokens its stream received, the request that came
#      later starts in a later step (batching.py trace-check);
#   2. the report: a batch view with a cell for every per-slot slice of the
#      trace and every request in it, opened in headless Chromium with no
#      JavaScript error;
#   3. the book's figure of the batch (tools/figures.py batch) can be drawn
#      from this trace, so the figure's reader follows the trace's format.
set -u
cd "$(dirname "$0")/.."
MODEL=models/tiny
. tests/server/lib.sh
needs ./run "$MODEL/model.safetensors" chromium
TMP=$(mktemp -d)
trap 'stop_servers; rm -rf "$TMP"' EXIT

start_server batch --parallel 4 --report "$TMP/report.html" --trace-json "$TMP/trace.json"
timeout 120 python3 tests/server/batching.py trace "$URL" "$TMP/got.json" || fail "the clients"
kill -TERM "$SERVER"
wait "$SERVER" || fail "the server exited with $? after SIGTERM"
[ -s "$TMP/trace.json" ] && [ -s "$TMP/report.html" ] || fail "the server wrote no trace or no report when it stopped"
python3 tests/server/batching.py trace-check - "$TMP/trace.json" "$TMP/got.json" || fail "the trace"

# The report's batch view: one cell per per-slot slice of the trace, the
# same requests, the same steps.
python3 - "$TMP/trace.json" "$TMP/report.html" <<'EOF' || fail "the report's batch view"
import json, re, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("prefill", "decode")]
html = open(sys.argv[2]).read()
if "<section id='batch'>" not in html:
    sys.exit("no batch section in the report")
cells = re.findall(r"<rect [^>]*class='cell (b-prefill|b-decode)' data-request='(\d+)' data-step='(\d+)'", html)
want = sorted(("b-" + e["args"]["phase"], str(e["args"]["request"]), str(e["args"]["step"])) for e in ev)
if sorted(cells) != want:
    sys.exit("the batch view has %d cells, the trace %d slices" % (len(cells), len(want)))
print("ok   the report's batch view: %d cells, one per sequence per step, as in the trace" % len(cells))
EOF

browser --dump-dom "file://$TMP/report.html" >"$TMP/report.dom" 2>"$TMP/chromium.log"
status=$(grep -o 'id="report-status"[^>]*>[^<]*' "$TMP/report.dom" | sed 's/.*>//')
grep -i uncaught "$TMP/chromium.log" | head -3 | grep . && fail "uncaught JavaScript error in the report"
case "$status" in
    REPORT_OK*batch\ cells) ok "the report opens in headless Chromium: $status" ;;
    *) fail "the report's script said: '$status'" ;;
esac

/usr/bin/python3 tools/figures.py batch --trace "$TMP/trace.json" --out "$TMP" >/dev/null || fail "tools/figures.py batch cannot draw this trace"
grep -q "data-request" "$TMP/fig-batch.svg" || fail "the figure drawn from this trace has no cells"
ok "tools/figures.py batch draws this trace"
echo "all batch trace checks passed"
