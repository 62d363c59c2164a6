#!/usr/bin/env bash
# tests/check_lens.sh — ./run lens and --ablate from the command line.
#
# On trained/kjv (4 layers that learned real text; models/tiny when it is
# missing): the text tables and --json agree with each other and with ./run
# fwd (the lens's last depth is the model's own prediction), the
# attribution adds up to the logit, --rank-heads' numbers are what
# --ablate gives for the same part, --ablate changes what ./run generates,
# and a Qwen3 folder and a GGUF file work too. Bad flags get one line on
# stderr that starts "error:" and names the flag; never a crash.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x ./run ] || { echo "./run is not built (make)"; exit 1; }
[ -f models/qwen3-tiny/model.safetensors ] || { echo "needs models/ (make models)"; exit 1; }
model=trained/kjv
[ -f $model/model.safetensors ] || model=models/tiny
t=build/check_lens; rm -rf $t; mkdir -p $t
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
prompt="And God said, Let there be"

echo "== text"
./run lens $model "$prompt" --raw -q >$t/text.txt 2>$t/err || { cat $t/err; bad "lens exited $?"; }
layers=$(grep -c '^  layer [0-9]' $t/text.txt)
grep -q '^  embed ' $t/text.txt && [ "$layers" -ge 1 ] && ok "the lens table has the embedding and $layers layers" ||
    bad "no lens table: $(head -5 $t/text.txt)"
grep -q 'direct logit attribution' $t/text.txt && grep -q '^    sum ' $t/text.txt && ok "the attribution is printed" ||
    bad "no attribution in the text output"

echo "== --json against the text and against ./run fwd"
./run lens $model "$prompt" --raw -q --json --top 3 >$t/last.json 2>$t/err || { cat $t/err; bad "lens --json exited"; }
./run lens $model "$prompt" --raw -q --json --pos all >$t/all.json 2>$t/err || { cat $t/err; bad "lens --json --pos all exited"; }
ids=$(/usr/bin/python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["prompt_ids"])))' $t/last.json)
./run fwd $model --tokens "$ids" --json -q >$t/fwd.json 2>$t/err || { cat $t/err; bad "fwd exited"; }
/usr/bin/python3 - $t/last.json $t/all.json $t/fwd.json "$layers" <<'PY' && ok "the JSON agrees with the table and with fwd" || bad "the JSON is wrong (above)"
import json, math, sys
last, every, fwd, layers = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), int(sys.argv[4])
problems = []
p = last["positions"]
if len(p) != 1 or p[0]["pos"] != len(last["prompt_ids"]) - 1: problems.append("the default position is not the last")
if len(every["positions"]) != len(every["prompt_ids"]): problems.append("--pos all does not give every position")
for q in every["positions"] + p:
    lens = q["lens"]
    if len(lens) != layers + 1: problems.append("%d depths, not %d" % (len(lens), layers + 1))
    out = lens[-1]
    # No --target: the target is the model's top token, rank 1 at the last depth.
    if out["top"][0]["id"] != q["target"]["id"] or out["target_rank"] != 1: problems.append("last depth's top is not the target")
    a = q["attribution"]
    total = a["embed"] + sum(l["attn"] + l["mlp"] for l in a["layers"])
    logit = q["target"]["logit"]
    if abs(a["total"] - logit) > 1e-4 * abs(logit) + 1e-4 or abs(total - a["total"]) > 1e-4 * abs(logit) + 1e-4:
        problems.append("attribution %g (terms %g) is not the logit %g" % (a["total"], total, logit))
    for l in a["layers"]:
        if abs(sum(l["heads"]) - l["attn"]) > 1e-3 * (abs(l["attn"]) + 1): problems.append("heads do not add up to attn")
if len(p[0]["lens"][0]["top"]) != 3: problems.append("--top 3 not honoured")
# fwd's top logit at the last position is the lens's top token at the last depth.
if fwd["tokens"][-1]["top"][0]["id"] != p[0]["lens"][-1]["top"][0]["id"]: problems.append("fwd's top token differs")
if problems: print("\n".join(problems))
sys.exit(1 if problems else 0)
PY

echo "== --rank-heads against --ablate"
./run lens $model "$prompt" --raw -q --json --target " light" --rank-heads >$t/rank.json 2>$t/err || { cat $t/err; bad "--rank-heads exited"; }
part=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ablation"][0]["part"])' $t/rank.json)
./run lens $model "$prompt" --raw -q --json --target " light" --ablate "$part" >$t/ablated.json 2>$t/err || { cat $t/err; bad "--ablate $part exited"; }
/usr/bin/python3 - $t/rank.json $t/ablated.json "$part" <<'PY' && ok "the most harmful part ($part) gives the same log p under --ablate" || bad "--rank-heads and --ablate disagree (above)"
import json, math, sys
rank, abl, part = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
r = rank["ablation"]
layers = len(rank["positions"][0]["attribution"]["layers"])
heads = len(rank["positions"][0]["attribution"]["layers"][0]["heads"])
problems = []
if len(r) != layers * (heads + 1): problems.append("%d parts ranked, not %d" % (len(r), layers * (heads + 1)))
if any(r[i]["delta"] > r[i + 1]["delta"] for i in range(len(r) - 1)): problems.append("not sorted by delta")
if abl["ablated"] != part: problems.append("ablated says %r" % abl["ablated"])
lp = math.log(abl["positions"][0]["lens"][-1]["target_prob"])
if abs(lp - r[0]["logprob"]) > 1e-4 * max(1, abs(lp)): problems.append("log p %g under --ablate, %g in the ranking" % (lp, r[0]["logprob"]))
base = math.log(rank["positions"][0]["lens"][-1]["target_prob"])
if abs(r[0]["logprob"] - r[0]["delta"] - base) > 1e-4 * max(1, abs(base)): problems.append("delta is not the change from the whole network")
if problems: print("\n".join(problems))
sys.exit(1 if problems else 0)
PY

echo "== --ablate in generation"
a=$(./run $model "$prompt" --raw -n 12 -t 0 -q 2>/dev/null)
b=$(./run $model "$prompt" --raw -n 12 -t 0 -q --ablate 0.mlp 2>/dev/null)
c=$(./run $model "$prompt" --raw -n 12 -t 0 -q --ablate 1.0 --ablate 2.1 2>/dev/null)
[ -n "$a" ] && [ "$a" != "$b" ] && [ "$a" != "$c" ] && [ "$b" != "$c" ] && ok "ablations change the generated text" ||
    bad "the generated text did not change: '$a' / '$b' / '$c'"

echo "== Qwen3, and a GGUF file"
./run lens models/qwen3-tiny "Hello there" -q --json >$t/qwen3.json 2>$t/err && /usr/bin/python3 -c '
import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if len(j["positions"][0]["lens"]) == 5 else 1)' $t/qwen3.json &&
    ok "Qwen3 (models/qwen3-tiny): 5 depths" || { cat $t/err; bad "lens on models/qwen3-tiny"; }
./run convert $model $t/m.gguf --type q8_0 -q >/dev/null 2>$t/err || { cat $t/err; bad "convert to GGUF"; }
./run lens $t/m.gguf "$prompt" --raw -q --ablate 1.mlp >$t/gguf.txt 2>$t/err && grep -q 'ablated: 1.mlp' $t/gguf.txt &&
    ok "a q8_0 GGUF file, with --ablate" || { cat $t/err; bad "lens on a GGUF file"; }

echo "== bad input: one line, naming the flag"
expect_error() {  # pattern, command...
    local pattern=$1; shift
    "$@" >$t/out 2>$t/err; local rc=$?
    local lines; lines=$(grep -c "^error:" $t/err)
    if [ $rc -eq 0 ] || [ $rc -ge 128 ] || [ "$lines" != 1 ] || ! grep -q -- "$pattern" $t/err; then
        bad "$* -> rc=$rc, stderr: $(cat $t/err)"
    else
        ok "$* -> $(grep '^error:' $t/err)"
    fi
}
expect_error "\-\-ablate 99.0: the model has layers 0 to" ./run lens $model "x" --ablate 99.0
expect_error "\-\-ablate \"x\": expected LAYER.HEAD or LAYER.mlp" ./run lens $model "x" --ablate x
expect_error "\-\-ablate 0.99: layer 0 has heads 0 to" ./run fwd $model 5 0 --ablate 0.99
expect_error "\-\-ablate \"1.\": expected" ./run $model "x" --ablate 1.
expect_error "\-\-target \"zqxjvwk\" is [0-9]* tokens" ./run lens $model "x" --target zqxjvwk
expect_error "\-\-target: the text is empty" ./run lens $model "x" --target ""
expect_error "\-\-pos 999: the prompt has" ./run lens $model "x" --raw --pos 999
expect_error "\-\-pos: \"abc\" is not a position" ./run lens $model "x" --pos abc
expect_error "\-\-rank-heads: choose one position" ./run lens $model "x" --pos all --rank-heads
expect_error "lens: no prompt given" ./run lens $model
expect_error "\-\-ablate: the server" ./run serve $model --ablate 0.1 --port 0
expect_error "unknown flag \"--ablate\" for ./run bench" ./run bench $model --ablate 0.1

if [ $fails = 0 ]; then echo "OK: check_lens"; else echo "FAILED: check_lens ($fails)"; fi
[ $fails = 0 ]
