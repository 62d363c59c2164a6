#!/usr/bin/env bash
# tests/check_generate.sh — generation and chat end to end, through ./run on
# models/tiny (random weights, real tokenizer: the text is nonsense, the
# behaviour is what is checked). Exit 0 when every check passes.
set -u
cd "$(dirname "$0")/.."
M=models/tiny
RUN=./run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

[ -x "$RUN" ] && [ -f "$M/model.safetensors" ] || { echo "needs ./run and $M (make && make models)"; exit 1; }

# --- reproducibility -------------------------------------------------------
# Greedy where a check needs it: --no-gen-config leaves the sampler at its
# defaults (temperature 0) instead of the model's generation_config.json.
$RUN $M --no-gen-config "Tell me a story" -t 0.8 -s 7 -n 16 >"$T/a" 2>/dev/null
$RUN $M --no-gen-config "Tell me a story" -t 0.8 -s 7 -n 16 >"$T/b" 2>/dev/null
$RUN $M --no-gen-config "Tell me a story" -t 0.8 -s 8 -n 16 >"$T/c" 2>/dev/null
cmp -s "$T/a" "$T/b"; check "same seed, byte-identical output" $?
[ -s "$T/a" ] && ! cmp -s "$T/a" "$T/c"; check "another seed at -t 0.8, other output" $?

# --- greedy is argmax of ./run fwd, step by step ---------------------------
$RUN $M --no-gen-config "Hello" -n 5 --json >"$T/g.json" 2>/dev/null
seq=$(json "$T/g.json" "','.join(map(str, d['prompt_ids']))")
ok=0
for want in $(json "$T/g.json" "' '.join(map(str, d['ids']))"); do
    $RUN fwd $M --tokens "$seq" --json >"$T/f.json" 2>/dev/null
    got=$(json "$T/f.json" "d['tokens'][-1]['top'][0]['id']")
    [ "$got" = "$want" ] || { ok=1; echo "      argmax $got, generated $want"; }
    seq="$seq,$got"
done
check "greedy output = argmax of ./run fwd logits" $ok

# --- stdout is the text only; prefill modes agree -------------------------
$RUN $M --no-gen-config "Hello" -n 24 >"$T/greedy.txt" 2>"$T/greedy.err"
$RUN $M --no-gen-config "Hello" -n 24 --json >"$T/greedy.json" 2>/dev/null
json "$T/greedy.json" "d['text']" | head -c -1 >"$T/greedy.fromjson"
cmp -s "$T/greedy.txt" "$T/greedy.fromjson"; check "stdout carries exactly the generated text" $?
$RUN $M --no-gen-config "Hello" -n 24 --prefill stepwise >"$T/stepwise.txt" 2>/dev/null
cmp -s "$T/greedy.txt" "$T/stepwise.txt"; check "--prefill stepwise gives the same text as batched" $?
grep -q "prompt 30 tokens, generated 24 tokens (length)" "$T/greedy.err" &&
    grep -q "first token after .* ms | prefill .* tok/s | decode .* tok/s" "$T/greedy.err"
check "summary on stderr: tokens, time to first token, prefill and decode speed" $?
python3 - "$T/greedy.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) >= {"text", "prompt_ids", "ids", "finish_reason", "timings"}, d.keys()
assert d["finish_reason"] == "length" and len(d["ids"]) == 24 and len(d["prompt_ids"]) == 30
assert set(d["timings"]) >= {"ttft_ms", "prefill_tok_s", "decode_tok_s"}
EOF
check "--json: text, prompt ids, generated ids, finish reason, timings" $?

# --- stop strings ------------------------------------------------------------
# A token boundary: where the output of -n k is a byte prefix of the -n 24
# output. The stop string is the character before it and the one after.
ok=1
for k in 2 3 4 5 6 7 8; do
    $RUN $M --no-gen-config "Hello" -n $k >"$T/k.txt" 2>/dev/null
    stop=$(python3 - "$T/k.txt" "$T/greedy.txt" <<'EOF'
import sys
k, full = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
if k and full.startswith(k) and len(full) > len(k):
    a, b = k.decode(), full[len(k):].decode("utf-8", "replace")
    if a[-1] != "\ufffd" and b[0] not in "\ufffd\n" and not a[-1].isspace():
        print(a[-1] + b[0])
EOF
)
    [ -n "$stop" ] || continue
    $RUN $M --no-gen-config "Hello" -n 24 --stop "$stop" >"$T/s.txt" 2>/dev/null
    python3 - "$T/greedy.txt" "$T/s.txt" "$stop" <<'EOF' && ok=0
import sys
full, got, stop = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3].encode()
assert got == full[:full.index(stop)], (got, full, stop)
EOF
    echo "      stop string $(printf %q "$stop") across the boundary after token $k"
    break
done
check "--stop across a token boundary cuts at its first byte" $ok

stop=$(python3 -c "import sys; t=open(sys.argv[1],encoding='utf-8',errors='replace').read(); print(next((c for c in t if ord(c)>127 and c!='\ufffd'),''))" "$T/greedy.txt")
if [ -n "$stop" ]; then
    $RUN $M --no-gen-config "Hello" -n 24 --stop "$stop" >"$T/m.txt" 2>/dev/null
    $RUN $M --no-gen-config "Hello" -n 24 --stop "$stop" --json >"$T/m.json" 2>/dev/null
    python3 - "$T/greedy.txt" "$T/m.txt" "$stop" "$T/m.json" <<'EOF'
import json, sys
full, got, stop = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3].encode()
assert len(stop) > 1 and got == full[:full.index(stop)], (got, stop)
assert json.load(open(sys.argv[4]))["finish_reason"] == "stop_string"
EOF
    check "multi-byte UTF-8 stop string $stop" $?
else
    check "multi-byte UTF-8 stop string (no multi-byte character in the greedy output)" 1
fi

# --- the context limit -----------------------------------------------------
$RUN $M --no-gen-config "Hello" -n 100 --ctx 35 --json >"$T/ctx.json" 2>"$T/ctx.err"
[ $? = 0 ] && [ "$(json "$T/ctx.json" "d['finish_reason'], len(d['ids'])")" = "context 6" ] &&
    grep -q "context full" "$T/ctx.err"
check "a full context stops with finish_reason context and a message" $?

# --- logging -----------------------------------------------------------------
$RUN $M --no-gen-config "Hello" -n 4 -v >/dev/null 2>"$T/v.err"
grep -qx "\[I key \] ═══ Phase 1: Prefill (processing 30 prompt tokens) ═══" "$T/v.err" &&
    grep -qx "\[I key \] ═══ Phase 2: Decode (autoregressive generation) ═══" "$T/v.err" &&
    [ "$(grep -c "top-5:" "$T/v.err")" = 4 ]
check "-v: phase banners and one line per sampled token with its top-5" $?

# --- --gen-config ----------------------------------------------------------
# models/tiny/generation_config.json: temperature 0.7, top_k 20, top_p 0.8, repetition_penalty 1.1
$RUN $M --no-gen-config "Hello" --gen-config -s 3 -n 12 >"$T/gc.txt" 2>/dev/null
$RUN $M --no-gen-config "Hello" -t 0.7 -k 20 --top-p 0.8 --repeat-penalty 1.1 -s 3 -n 12 >"$T/flags.txt" 2>/dev/null
$RUN $M --no-gen-config "Hello" --gen-config -t 0 --repeat-penalty 1 -n 12 >"$T/gc0.txt" 2>/dev/null
head -c "$(wc -c <"$T/gc0.txt")" "$T/greedy.txt" >"$T/greedy12.txt"
cmp -s "$T/gc.txt" "$T/flags.txt" && ! cmp -s "$T/gc.txt" "$T/greedy12.txt" && cmp -s "$T/gc0.txt" "$T/greedy12.txt"
check "--gen-config adopts generation_config.json, flags override it" $?

# --- chat through a pipe -------------------------------------------------
printf 'Hello\n/quit\n' | $RUN chat $M -n 6 >"$T/c1.out" 2>/dev/null
printf 'Hello\nWho are you?\n/reset\nHello\n' | $RUN chat $M -v -n 6 >"$T/c2.out" 2>"$T/c2.err"
python3 - "$T/c1.out" "$T/c2.out" <<'EOF'
import sys
one, three = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert len(one) > 1 and three.startswith(one) and three.endswith(one) and len(three) > 2 * len(one)
EOF
check "chat: replies on stdout, /reset starts the same conversation again" $?
delta=$($RUN $M --raw $'<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n<|im_start|>assistant\n' -n 0 --json 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['prompt_tokens'])")
python3 - "$T/c2.err" "$delta" <<'EOF'
import re, sys
err, delta = open(sys.argv[1]).read(), int(sys.argv[2])
prefill = [int(n) for n in re.findall(r"Prefill \(processing (\d+) prompt tokens\)", err)]
finish = re.findall(r"generated \d+ tokens \((\w+)\)", err)
# The first reply's last token was sampled but not fed back when it ended
# by length; turn 2 prefills it together with its own text.
pending = 1 if finish[0] == "length" else 0
assert prefill == [30, delta + pending, 30], (prefill, delta, finish)
EOF
check "chat: the second turn prefills only its own $delta tokens (+ the pending reply token)" $?

# --- bad input -----------------------------------------------------------
for args in "--top-p 2" "--temp -1" "-n abc" "--no-such-flag" "--raw --system hi" "-k"; do
    $RUN $M --no-gen-config "Hello" $args >"$T/e.out" 2>"$T/e.err"
    rc=$?
    [ $rc != 0 ] && [ "$(wc -l <"$T/e.err")" = 1 ] && grep -q "^error: " "$T/e.err" && [ ! -s "$T/e.out" ]
    check "bad flag '$args': one error line, exit $rc" $?
done
$RUN $M --no-gen-config "Hello" -k -1 -t 0.5 -n 2 >/dev/null 2>&1; check "negative top-k is allowed (off)" $?

# With top-k off, random weights give the padded embedding rows (ids past the
# tokenizer's last token) real probability; they must never be sampled.
$RUN $M --no-gen-config "Hi" -t 1 -k 0 -n 300 -s 1 --json >"$T/pad.json" 2>"$T/pad.err" &&
    [ "$(json "$T/pad.json" "len(d['ids'])")" = 300 ]
check "sampling never picks padded vocabulary rows (top-k off, 300 tokens)" $?

$RUN --help >"$T/help" 2>&1
ok=$?
for f in -t --temp -k --top-k --top-p -s --seed -n --n-predict --repeat-penalty --frequency-penalty \
         --presence-penalty --repeat-last-n --stop --system --raw --ctx --gen-config --json -v -vv --prefill; do
    grep -qE "^  (.*, )?$f[ ,]" "$T/help" || { ok=1; echo "      --help lacks $f"; }
done
[ "$(grep -E "^  -" "$T/help" | grep -v -- "--help" | grep -vc "(default: ")" = 0 ] || ok=1
check "--help lists every flag with its default" $ok

summary
