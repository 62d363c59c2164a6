#!/usr/bin/env bash
# tests/check_cli_messages.sh — what a new user reads in the first hour, said
# once and right: a full context names the model's limit, the help says
# where a default comes from and lists every endpoint of the server, a
# damaged file's JSON error is Lantern's own words, and a timing taken on a
# busy machine says so.
# RUN=path/to/run runs them against another build (to see them fail there).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
RUN=${RUN:-./run}
M=models/tiny
[ -x "$RUN" ] && [ -f $M/model.safetensors ] && [ -f trained/kjv/model.safetensors ] ||
    { echo "needs ./run, models/tiny and trained/kjv (make && make models)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# --- a full context: the limit that a larger --ctx can reach, or the model's
$RUN fwd trained/kjv 3 5000 >/dev/null 2>"$T/e"
grep -qx "error: context full: 5000 + 1 tokens exceed the KV cache of 256 positions (256 is the model's limit)" "$T/e"
check "fwd past the default model's 256 positions names its limit, not --ctx" $?
$RUN fwd $M 3 500 --ctx 100 >/dev/null 2>"$T/e"
grep -qx "error: context full: 500 + 1 tokens exceed the KV cache of 100 positions (raise --ctx, up to 4096)" "$T/e"
check "fwd past a smaller --ctx says how far --ctx goes" $?
printf 'Hi\n' | $RUN chat $M --ctx 40 -n 100 -t 0 >/dev/null 2>"$T/e"
grep -qx "context full: the reply was cut at 40 positions (raise --ctx, up to 4096); /reset starts over." "$T/e"
check "a chat reply cut by a full context says how far --ctx goes" $?

# --- the help: each default said once, and where it comes from
$RUN --help >"$T/h" 2>&1
[ "$(grep -c -- "--gen-config " "$T/h")" = 1 ] && [ "$(grep -- "--gen-config " "$T/h" | grep -o "default" | wc -l)" = 1 ]
check "--gen-config's help says it is the default once" $?
ok=0
for flag in "-t, --temp" "-k, --top-k" "--top-p" "--repeat-penalty"; do
    grep -q -- "^  $flag .*(default: the model's generation_config.json, else [0-9.]*)$" "$T/h" ||
        { ok=1; echo "      $(grep -- "^  $flag " "$T/h")"; }
done
check "the sampling values generation_config.json sets: the help names it as their default's source" $ok

# --- serve --help: every route the server answers
$RUN serve --help >"$T/s" 2>&1
routes=$(grep -oE 'svr\.(Get|Post)\("[^"]*"' serve/server.cpp | sed -E 's/svr\.(Get|Post)\("//; s/"$//' | sort -u)
ok=0
[ "$(echo "$routes" | wc -l)" -ge 7 ] || ok=1
for r in $routes; do grep -qE "^  (GET|POST) +$r( |$)" "$T/s" || { ok=1; echo "      serve --help lacks $r"; }; done
check "serve --help lists every endpoint of serve/server.cpp ($(echo $routes))" $ok

# --- a damaged safetensors header: one line, Lantern's words, said once
mkdir -p "$T/bad"
cp $M/config.json $M/generation_config.json "$T/bad/"
python3 - $M/model.safetensors "$T/bad/model.safetensors" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[8:10] = b"[{"
open(sys.argv[2], "wb").write(b)
PY
$RUN info "$T/bad" >/dev/null 2>"$T/e"; rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/e")" = 1 ] && [ "$(grep -o "JSON" "$T/e" | wc -l)" = 1 ] && ! grep -q "exception\|parse_error\|last read" "$T/e" &&
    grep -q "model.safetensors: header (from byte 8): invalid JSON at offset 2: '_', expected a string in quotes$" "$T/e"
ok=$?
[ $ok = 0 ] || sed 's/^/      /' "$T/e"
check "a damaged safetensors header: the place and what was expected, once" $ok

# --- timings on a busy machine say so (LANTERN_LOADAVG: a load set by the test)
echo "100.00 90.00 80.00 9/999 4242" >"$T/busy"
echo "0.00 0.00 0.00 1/999 4242" >"$T/idle"
LANTERN_LOADAVG="$T/busy" $RUN $M hi -n 4 >/dev/null 2>"$T/e"
grep -A1 "decode .* tok/s" "$T/e" | grep -q "load average 100.0 on [0-9]* cores: other programs are running, expect lower numbers"
check "generate's timing line on a busy machine: the load-average note follows it" $?
LANTERN_LOADAVG="$T/idle" $RUN $M hi -n 4 >/dev/null 2>"$T/e"
grep -q "tok/s" "$T/e" && ! grep -q "load average" "$T/e"
check "on a quiet machine: no note" $?
LANTERN_LOADAVG="$T/busy" $RUN encode $M "Hello world" --time >/dev/null 2>"$T/e"
grep -q "load average 100.0" "$T/e"
check "encode --time on a busy machine: the same note" $?
LANTERN_LOADAVG="$T/busy" $RUN $M hi -n 2 --report "$T/r.html" >/dev/null 2>&1
grep -q "Note: load average 100.0 on [0-9]* cores" "$T/r.html"
check "the HTML report's timings on a busy machine: the same note" $?
summary
