#!/usr/bin/env bash
# tests/check_batching.sh — ./run serve --parallel: continuous batching end
# to end, on loopback only (tests/server/batching.py is the client side).
#
#   1. the same answers: 8 requests of different lengths, greedy and seeded,
#      alone and then 8 at once joining one after another: byte-identical;
#      logprobs / top_logprobs
#   2. prefix reuse: prompts with a common beginning share its KV blocks
#      and answer as ./run --raw does; a chat's second turn shares the first
#   3. load: 64 clients against 8 slots and a queue of 16, hang-ups
#      mid-prefill and mid-decode; afterwards /metrics shows 0 slots busy and
#      0 KV blocks used
#   4. shutdown with 4 streams in flight: each gets an error event, the
#      server exits 0
set -u
cd "$(dirname "$0")/.."
MODEL=models/tiny
. tests/server/lib.sh
needs ./run "$MODEL/model.safetensors" curl
TMP=$(mktemp -d)
trap 'stop_servers; rm -rf "$TMP"' EXIT

start_server same --parallel 8 --batch-tokens 64
timeout 300 python3 tests/server/batching.py same "$URL" || fail "same answers"
curl -s "$URL/metrics" | grep -q '^lantern_kv_blocks_used 0$' || fail "/metrics: blocks still used after the answers"
echo "ok   /metrics: lantern_kv_blocks_used 0 after the answers"

start_server prefix --parallel 4 --batch-tokens 32 --no-gen-config
timeout 300 python3 tests/server/batching.py prefix "$URL" "$MODEL" || fail "prefix reuse"

start_server load --parallel 8 --queue 16 --batch-tokens 64
timeout 300 python3 tests/server/batching.py load "$URL" || fail "load"
grep -q "the client went away" "$TMP/load.log" || fail "no 'client went away' in the log"
echo "ok   the log says the clients went away"

start_server stop --parallel 4
timeout 120 python3 tests/server/batching.py inflight "$URL" >"$TMP/inflight.out" &
CLIENTS=$!
for _ in $(seq 1 300); do grep -q running "$TMP/inflight.out" && break; sleep 0.1; done
grep -q running "$TMP/inflight.out" || fail "the 4 streams did not start: $(cat "$TMP/inflight.out")"
kill -TERM "$SERVER"
wait "$CLIENTS" || fail "shutdown: $(cat "$TMP/inflight.out")"
cat "$TMP/inflight.out" | grep -v running
wait "$SERVER"
rc=$?
[ $rc = 0 ] || fail "the server exited with $rc after SIGTERM"
echo "ok   the server exited 0 after SIGTERM with requests in flight"

# Bad flags are one-line errors.
out=$(./run serve "$MODEL" --parallel 0 2>&1); [ $? != 0 ] && echo "$out" | grep -q -- "--parallel" || fail "--parallel 0: $out"
out=$(./run serve "$MODEL" --parallel 8 --batch-tokens 4 2>&1); [ $? != 0 ] && echo "$out" | grep -q -- "--batch-tokens" || fail "--batch-tokens 4: $out"
echo "ok   --parallel 0 and --batch-tokens below --parallel are refused"
echo "all batching checks passed"
