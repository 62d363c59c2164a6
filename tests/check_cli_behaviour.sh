#!/usr/bin/env bash
# tests/check_cli_behaviour.sh — the command line as a person meets it: help
# for every subcommand, --version, both flag spellings, the "no prompt" and
# "no ids" errors, warnings for flags that would do nothing, and an
# exception that is not a LanternError still ends in one line and status 1.
set -u
cd "$(dirname "$0")/.."
[ -x ./run ] && [ -f models/tiny/model.safetensors ] || { echo "needs ./run and models/tiny (make && make models)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh

./run --help >"$T/h" 2>&1 && for sub in chat serve info fwd encode decode bench; do grep -q "^  $sub " "$T/h" || exit 1; done
check "./run --help lists every subcommand" $?
./run help >"$T/h2" 2>&1 && cmp -s "$T/h" "$T/h2"; check "./run help is ./run --help (not a prompt)" $?
ok=0
for sub in chat serve info fwd encode decode bench; do
    ./run $sub --help >"$T/s" 2>&1 && grep -q "^usage: ./run $sub" "$T/s" || { ok=1; echo "      $sub --help failed"; }
    ./run help $sub | cmp -s - "$T/s" || { ok=1; echo "      help $sub differs"; }
done
check "SUB --help and ./run help SUB print each subcommand's usage and flags" $ok
./run chat --help | grep -q -- "--json"; [ $? != 0 ]; check "chat --help does not offer --json, --raw or --stop" $?
./run serve --help | grep -q -- "--temp" && ./run serve --help | grep -q -- "--kv-type"; check "serve takes the sampling and engine flags" $?
./run --version | grep -q "^lantern "; check "--version" $?
# The bench names the CPU its numbers came from, and a comparison column
# it did not measure says so ("-" and a "not measured" line), per prompt length.
./run bench models/tiny --llama none --quant bf16 --prompts 8,16 --decode 2 --reps 1 >"$T/b" 2>&1
name=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //')
grep -qF "cpu        ${name:-unknown CPU}" "$T/b" && grep -q "llama.pp8 .*llama.pp16 " "$T/b" &&
    grep -q "^BF16 .* - .* - .* - .* -  " "$T/b" && grep -q "^llama.cpp  not measured: --llama none" "$T/b"
check "bench: a cpu line, and llama.cpp's columns (decode, each prompt) say not measured" $?
a=$(./run models/tiny "Hello" --no-gen-config -n 3 2>/dev/null)
b=$(./run models/tiny "Hello" --no-gen-config --n-predict=3 2>/dev/null)
c=$(./run models/tiny -p "Hello" --no-gen-config -n3 2>/dev/null)
d=$(./run -m models/tiny "Hello" --greedy --no-gen-config -c 64 -n 3 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$a" = "$d" ]; check "-n 3, --n-predict=3, -n3, -p, -m, -c and --greedy agree" $?
./run models/tiny "Hello" -s 5 -n 4 >"$T/g1" 2>"$T/g1.err"
./run models/tiny "Hello" -s 5 -n 4 -t 0.7 -k 20 --top-p 0.8 --repeat-penalty 1.1 --no-gen-config >"$T/g2" 2>/dev/null
cmp -s "$T/g1" "$T/g2" && grep -q "sampling: temperature 0.7 (generation_config.json)" "$T/g1.err"
check "generation_config.json applies by default" $?
./run models/tiny </dev/null >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 1 ] && grep -q "^error: no prompt given for the model models/tiny" "$T/e" && [ ! -s "$T/o" ]
check "a model folder without a prompt says no prompt" $?
./run models/tiny "Hi" --no-gen-config -n 1 --report "$T/myreport" >/dev/null 2>&1 && [ -s "$T/myreport" ]
check "--report NAME without .html is taken as the file name" $?
./run decode models/tiny >"$T/o" 2>"$T/e"; [ $? = 1 ] && grep -q "^error: decode: no token ids" "$T/e"
check "decode with no ids is an error" $?
./run models/tiny "Hi" -n 1 --threads 999 >/dev/null 2>"$T/e"; grep -q "more than the .* cores" "$T/e"
check "--threads above the core count warns" $?
./run models/tiny "Hi" -n 1 --trace-layers 9 -vv >/dev/null 2>"$T/e"; grep -q "trace-layers 9: the model has layers 0 to 3" "$T/e"
check "--trace-layers past the last layer warns" $?
./run models/tiny "Hi" -n 1 --trace-match attn >/dev/null 2>"$T/e"; grep -q "without -vv they do nothing" "$T/e"
check "trace filters without -vv warn" $?
./run models/tiny "Hi" -n 1 -q >"$T/o" 2>"$T/e"; [ ! -s "$T/e" ] && [ -s "$T/o" ]
check "-q: the text and nothing on stderr" $?
./run models/tiny --raw "$(printf 'word %.0s' $(seq 300))" --no-gen-config --ctx 100 -n 1 >/dev/null 2>"$T/e"
grep -q "context holds 100 (raise --ctx, up to 4096)" "$T/e"
check "a prompt past the context names what is possible" $?
./run encode models/tiny "中文 text" --pieces >"$T/p" 2>/dev/null
python3 - "$T/p" <<'PY'
import sys, unicodedata
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()[1:]
def width(s): return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in s)
cols = {width(l[:l.rindex(' "')]) for l in lines}
assert len(lines) >= 2 and len(cols) == 1, (lines, cols)
PY
check "encode --pieces aligns the third column by display width" $?
# -v on a terminal: the streamed text and the log share the screen, and a
# log line that follows text stopped mid-line starts on a line of its own.
# `script` gives the run a pseudo-terminal for both stdout and stderr.
if command -v script >/dev/null; then
    script -qec "./run models/tiny Hi -n 12 -v --threads 1 -s 3 --no-gen-config -t 1" /dev/null >"$T/tty" 2>&1
    python3 - "$T/tty" <<'PY'
import re, sys
raw = re.sub(rb"\x1b\[[0-9;]*m", b"", open(sys.argv[1], "rb").read()).decode("utf-8", "replace")
lines = raw.replace("\r\n", "\n").split("\n")
tags = re.compile(r"\[[EWIDT] (load|tok |fwd |attn|samp|key |http)\]")
mid = [l for l in lines if tags.search(l) and not tags.match(l)]
assert sum(1 for l in lines if tags.match(l)) > 20, "too few log lines: " + raw[:300]
assert not mid, "log lines that start mid-line: %r" % mid[:3]
PY
    check "-v on a terminal: every log line starts at the left edge" $?
else
    echo "skip  -v on a terminal (no script command)"
fi
summary
