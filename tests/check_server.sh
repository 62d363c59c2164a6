#!/usr/bin/env bash
# tests/check_server.sh — ./run serve end to end, on loopback only.
#
#   1. the official OpenAI client (npm `openai`): chat completion, streamed
#      and not, equal to `./run`'s text for the same settings and seed
#   2. curl on the raw endpoints: /health, /v1/models, /v1/completions, SSE;
#      a request without settings gets the server's defaults (the model's
#      generation_config.json under serve's own sampling flags), as ./run
#   3. curl on bad requests: each gets an OpenAI-style JSON error, 4xx
#   4. eight clients at once, two that hang up mid-stream, a malformed body
#   5. a full queue answers 503; a client that leaves stops its generation;
#      --report and --trace-json are written at shutdown and hold every request
# Servers pick a free port themselves (--port 0) and are always killed.
set -u
cd "$(dirname "$0")/.."
MODEL=models/tiny

. tests/server/lib.sh
needs ./run "$MODEL/model.safetensors" tools/node_modules/openai curl node
TMP=$(mktemp -d)
trap 'stop_servers; rm -rf "$TMP"' EXIT

# post PATH BODY: prints the status code; the body lands in $TMP/body.
post() { curl -s --max-time 60 -o "$TMP/body" -w '%{http_code}' "$URL$1" -H 'Content-Type: application/json' --data-binary "$2"; }
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

# The main server leaves generation_config.json out, so that a request
# with OpenAI's fields compares with ./run --no-gen-config.
start_server main --no-gen-config
echo "server at $URL"

# 1. The OpenAI client against the CLI.
./run "$MODEL" "Hi" --no-gen-config -n 20 -t 0.8 -k 40 -s 7 --threads 1 --json >"$TMP/cli.json" 2>/dev/null || fail "./run --json failed"
node tests/server/openai_client.js "$URL/v1" "$TMP/cli.json" || fail "OpenAI client checks"

# 2. Raw endpoints.
[ "$(curl -s "$URL/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = ok ] || fail "/health"
ok "/health says ok"
curl -s "$URL/v1/models" | grep -q "\"id\":\"$MODEL\"" || fail "/v1/models does not list $MODEL"
ok "/v1/models lists $MODEL"
./run "$MODEL" "In the beginning" --no-gen-config --raw -n 8 -t 0 --threads 1 --json >"$TMP/raw.json" 2>/dev/null
code=$(post /v1/completions '{"prompt": "In the beginning", "max_tokens": 8, "temperature": 0}')
[ "$code" = 200 ] || fail "/v1/completions: HTTP $code"
[ "$(json_field "$TMP/body" 'd["choices"][0]["text"]')" = "$(json_field "$TMP/raw.json" 'd["text"]')" ] ||
    fail "/v1/completions text differs from ./run --raw"
ok "/v1/completions equals ./run --raw (greedy)"
# The stream, as bytes: a role event, the text in pieces (several tokens'
# text may share one event when the model is faster than the reader), an
# event with the finish reason, data: [DONE]. Same text as the answer.
GREEDY='{"messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0'
post /v1/chat/completions "$GREEDY}" >/dev/null
curl -sN --max-time 60 "$URL/v1/chat/completions" -d "$GREEDY, \"stream\": true}" >"$TMP/sse"
python3 - "$TMP/sse" "$TMP/body" <<'PY' || fail "SSE stream: $(head -c 600 "$TMP/sse")"
import json, sys
raw = open(sys.argv[1]).read()
events = raw.split("\n\n")
assert events[-1] == "", "the stream must end with a blank line"
data = [e[len("data: "):] for e in events[:-1]]
assert all(e.startswith("data: ") for e in events[:-1]), "every event is one data: line"
assert data[-1] == "[DONE]", "the last event is data: [DONE]"
chunks = [json.loads(d) for d in data[:-1]]
assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
assert chunks[-1]["choices"][0]["finish_reason"] == "length" and chunks[-1]["choices"][0]["delta"] == {}
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
assert text == json.load(open(sys.argv[2]))["choices"][0]["message"]["content"], "streamed text differs"
print("ok   curl -N: data: events (role, %d with text, finish), then data: [DONE]; same text as unstreamed" % (len(chunks) - 2))
PY

# A second server with the model's generation_config.json (temperature 0.7,
# top-k 20, top-p 0.8, repetition penalty 1.1) and two flags over it: a
# request that names no setting is answered as `./run` answers with the
# same flags; one that names them gets its own. "model" may be the folder's
# name alone.
MAIN_URL=$URL
start_server defaults -k 5 -s 11
./run "$MODEL" "Hi" -k 5 -s 11 -n 12 --threads 1 --json >"$TMP/dflt.json" 2>/dev/null || fail "./run -k 5 -s 11 failed"
code=$(post /v1/chat/completions '{"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12}')
[ "$code" = 200 ] || fail "defaults server: HTTP $code: $(head -c 300 "$TMP/body")"
[ "$(json_field "$TMP/body" 'd["choices"][0]["message"]["content"]')" = "$(json_field "$TMP/dflt.json" 'd["text"]')" ] ||
    fail "a request without settings differs from ./run -k 5 -s 11 (generation_config.json applied by both)"
ok "a request without settings = ./run with serve's flags over generation_config.json"
curl -s "$URL/props" >"$TMP/props.json"
[ "$(json_field "$TMP/props.json" 'list(map(d["default_generation_settings"].get, ["temperature", "top_k", "top_p", "repeat_penalty", "seed"]))')" = "[0.7, 5, 0.8, 1.1, 11]" ] ||
    fail "/props does not give serve's flags over generation_config.json: $(cat "$TMP/props.json")"
ok "/props: the defaults a request without settings gets (temperature 0.7 from generation_config.json, top-k 5 from -k)"
./run "$MODEL" "Hi" -t 0 --no-gen-config -n 12 --threads 1 --json >"$TMP/greedy.json" 2>/dev/null || fail "./run -t 0 failed"
code=$(post /v1/chat/completions '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12, "temperature": 0, "repeat_penalty": 1}')
[ "$code" = 200 ] && [ "$(json_field "$TMP/body" 'd["choices"][0]["message"]["content"]')" = "$(json_field "$TMP/greedy.json" 'd["text"]')" ] ||
    fail "temperature 0 and repeat_penalty 1 in the request did not override the defaults"
ok "the request's own fields win over the defaults"
URL=$MAIN_URL

# 3. Bad requests: status, error.param, error.code. Tab separated.
long=$(python3 -c 'print("word " * 5000)')
printf '%s' "{\"messages\": [{\"role\": \"user\", \"content\": \"$long\"}]}" >"$TMP/long.json"
python3 -c 'import sys; sys.stdout.write("{\"prompt\": \"" + "x" * (1 << 20) + "\"}")' >"$TMP/huge.json"
CHAT=/v1/chat/completions
HI='"messages": [{"role": "user", "content": "Hi"}]'
while IFS=$'\t' read -r path body want_status want_param want_code; do
    [ -n "$path" ] || continue
    case "$body" in @*) code=$(curl -s --max-time 60 -o "$TMP/body" -w '%{http_code}' "$URL$path" --data-binary "$body");;
                    *) code=$(post "$path" "$body");; esac
    [ "$code" = "$want_status" ] || fail "$path $body: HTTP $code, expected $want_status: $(head -c 300 "$TMP/body")"
    got=$(json_field "$TMP/body" 'sorted(d["error"].keys()) == ["code", "message", "param", "type"] and d["error"]["message"] != "" and "%s %s" % (d["error"]["param"], d["error"]["code"])') ||
        fail "$path $body: not an OpenAI error object: $(head -c 300 "$TMP/body")"
    [ "$got" = "$want_param $want_code" ] || fail "$path $body: got param/code '$got', expected '$want_param $want_code'"
    ok "$want_status $want_param/$want_code: ${body:0:60}"
done <<EOF
$CHAT	{"messages": [	400	None	invalid_json
$CHAT	[1, 2]	400	None	invalid_json
$CHAT	{"max_tokens": 5}	400	messages	missing_required_parameter
$CHAT	{"messages": []}	400	messages	empty_array
$CHAT	{"messages": "Hi"}	400	messages	invalid_type
$CHAT	{"messages": [{"role": "wizard", "content": "Hi"}]}	400	messages[0].role	invalid_value
$CHAT	{"messages": [{"role": "user", "content": 42}]}	400	messages[0].content	invalid_type
$CHAT	{"messages": [{"content": "Hi"}]}	400	messages[0].role	invalid_type
$CHAT	{$HI, "temperature": -0.5}	400	temperature	invalid_value
$CHAT	{$HI, "temperature": "hot"}	400	temperature	invalid_type
$CHAT	{$HI, "top_p": 0}	400	top_p	invalid_value
$CHAT	{$HI, "top_p": 1.5}	400	top_p	invalid_value
$CHAT	{$HI, "max_tokens": 0}	400	max_tokens	invalid_value
$CHAT	{$HI, "max_tokens": "5"}	400	max_tokens	invalid_type
$CHAT	{$HI, "seed": -1}	400	seed	invalid_value
$CHAT	{$HI, "stop": 5}	400	stop	invalid_type
$CHAT	{$HI, "stream": "yes"}	400	stream	invalid_type
$CHAT	{$HI, "n": 2}	400	n	invalid_value
$CHAT	{$HI, "tools": [{"type": "function", "function": {"name": "f"}}]}	400	tools	unsupported_parameter
$CHAT	{$HI, "tool_choice": "none"}	400	tool_choice	unsupported_parameter
$CHAT	{"model": "gpt-4o", $HI}	404	model	model_not_found
$CHAT	{"model": 7, $HI}	400	model	invalid_type
$CHAT	@$TMP/long.json	400	messages	context_length_exceeded
/v1/completions	{"max_tokens": 5}	400	prompt	missing_required_parameter
/v1/completions	@$TMP/huge.json	413	None	request_too_large
/v1/nowhere	{}	404	None	not_found
EOF
curl -sf "$URL/health" >/dev/null || fail "the server died on bad requests"
ok "the server is still up after the bad requests"
# A prompt longer than the context says how far --ctx goes, as the command line does (net.h: ctx_hint).
msg=$(curl -s -H 'Content-Type: application/json' --data @"$TMP/long.json" "$URL/v1/chat/completions")
grep -qE "the context holds [0-9]+ \((raise --ctx, up to [0-9]+|[0-9]+ is the model's limit)\)" <<<"$msg" ||
    fail "a prompt over the context: no limit named in $msg"
ok "a prompt over the context names how far --ctx goes"

# 4. Concurrency, hang-ups, a malformed body in between.
node tests/server/concurrent.js "$URL/v1" || fail "concurrency checks"
grep -q "the client went away" "$TMP/main.log" || fail "no 'client went away' in the log"
ok "the log says the clients went away"
grep -qE 'POST /v1/chat/completions 200 \| 30 prompt \+ 20 completion tokens \(length\) \| [0-9.]+ ms' "$TMP/main.log" ||
    fail "no request log line with method, path, status, tokens and time"
ok "each request is logged: method, path, status, tokens, time"

# 5. A queue of one: a long stream holds the model, one request waits, the
# next is refused. Then the stream's client leaves and the waiting one runs.
start_server queue --parallel 1 --queue 1 --report "$TMP/report.html" --trace-json "$TMP/trace.json"
curl -sN --max-time 60 "$URL/v1/chat/completions" \
    -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":100000,"stream":true}' >"$TMP/long.sse" &
LONG=$!
PIDS="$PIDS $LONG"
for _ in $(seq 1 100); do grep -q content "$TMP/long.sse" 2>/dev/null && break; sleep 0.1; done
grep -q content "$TMP/long.sse" || fail "the long stream did not start"
post /v1/chat/completions "{$HI, \"max_tokens\": 4, \"temperature\": 0}" >"$TMP/waiter.code" &
WAITER=$!
for _ in $(seq 1 100); do curl -s "$URL/health" | grep -q '"waiting":1' && break; sleep 0.1; done
code=$(curl -s -o "$TMP/busy" -w '%{http_code}' --max-time 10 "$URL/v1/chat/completions" -d "{$HI, \"max_tokens\": 4}")
[ "$code" = 503 ] && grep -q queue_full "$TMP/busy" || fail "a full queue answered $code: $(cat "$TMP/busy")"
ok "a full queue answers 503 queue_full"
kill "$LONG"
wait "$WAITER"
[ "$(cat "$TMP/waiter.code")" = 200 ] || fail "the waiting request got HTTP $(cat "$TMP/waiter.code")"
grep -qE "request 1: the client went away; generation stopped after [0-9]+ tokens" "$TMP/queue.log" ||
    fail "the abandoned stream was not stopped"
ok "the stream's client left: its generation stopped, the waiting request ran"
# --report and --trace-json are written when the server stops: every step
# of the run, so both requests that ran are in them.
kill -TERM "$SERVER"
wait "$SERVER" || fail "the server exited with $? after SIGTERM"
python3 - "$TMP/trace.json" <<'EOF' || fail "--trace-json does not hold both requests"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
ran = {e["args"]["request"] for e in ev if e.get("ph") == "X" and e.get("cat") in ("prefill", "decode")}
sys.exit(0 if ran == {1, 2} else "requests in the trace: %s" % sorted(ran))
EOF
grep -q "id='batch'" "$TMP/report.html" && grep -q "data-request='2'" "$TMP/report.html" ||
    fail "--report: no batch view with request 2"
ok "--report and --trace-json, written at shutdown, hold both requests that ran"
echo "all server checks passed"
