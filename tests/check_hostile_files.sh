#!/usr/bin/env bash
# Hostile model files through the command line: config.json,
# generation_config.json, tokenizer.json and tokenizer_config.json written as
# an attacker would. Each must give one "error:" line naming the file and the
# key, exit 1, and never a crash (exit >= 128: a signal, e.g. SIGSEGV from a
# stack overflow or SIGABRT from an exception that escaped main).
#   RUN=path/to/run bash tests/check_hostile_files.sh   tests another binary
set -uo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-./run}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fails=0
expect_error() {  # pattern, command...
    local pattern=$1; shift
    "$@" >$t/out 2>$t/err; local rc=$?
    local lines; lines=$(grep -c "^error:" $t/err)
    if [ $rc -ne 1 ] || [ "$lines" != 1 ] || ! grep -q -- "$pattern" $t/err; then
        echo "FAIL: ${*:0:8} -> rc=$rc, stderr:"; head -c 400 $t/err; echo; fails=$((fails+1))
    else
        echo "ok: $(grep '^error:' $t/err | head -c 200)"
    fi
}
PY=/usr/bin/python3
deep() { $PY -c "print('['*$1 + ']'*$1)"; }  # $1 nested arrays

# A copy of models/tiny whose JSON files each case overwrites; the weights
# are linked, not copied.
m=$t/m; mkdir -p $m
for f in config.json generation_config.json tokenizer.json tokenizer_config.json; do cp models/tiny/$f $m/; done
ln -s "$PWD/models/tiny/model.safetensors" $m/model.safetensors
config_with() {  # key, raw JSON value: config.json with that key set
    printf '%s' "$2" >$t/value
    $PY - "$1" $t/value models/tiny/config.json >$m/config.json <<'END'
import json, sys
j = json.load(open(sys.argv[3]))
j[sys.argv[1]] = "@@"
print(json.dumps(j).replace('"@@"', open(sys.argv[2]).read()))
END
}

# config.json
config_with x 1e400;                      expect_error 'config.json: invalid JSON' $RUN info $m
config_with tie_word_embeddings '"yes"';  expect_error 'config.json: "tie_word_embeddings" must be true or false' $RUN info $m
config_with torch_dtype 16;               expect_error 'config.json: "torch_dtype" must be a string' $RUN info $m
config_with num_hidden_layers 2000000000; expect_error 'config.json: "num_hidden_layers" must be an integer in \[1, 4096\]' $RUN info $m
config_with hidden_size 4294967304;       expect_error 'config.json: "hidden_size" must be an integer .*not 4294967304' $RUN info $m
config_with model_type "$(deep 100000)" ;  expect_error 'config.json: JSON nested deeper than 64 levels' $RUN info $m
config_with model_type '[["qwen2"]]';     expect_error 'config.json: "model_type" must be a string' $RUN info $m
cp models/tiny/config.json $m/

# generation_config.json (read by --gen-config)
echo '{"temperature": "hot"}' >$m/generation_config.json
expect_error 'generation_config.json: "temperature" must be a number' $RUN $m "Hi" --gen-config -n 2
echo '{"top_k": 1e30}' >$m/generation_config.json
expect_error 'generation_config.json: "top_k" must be an integer' $RUN $m "Hi" --gen-config -n 2
echo '{"do_sample": "no"}' >$m/generation_config.json
expect_error 'generation_config.json: "do_sample" must be true or false' $RUN $m "Hi" --gen-config -n 2
echo "{\"x\": $(deep 100000)}" >$m/generation_config.json
expect_error 'generation_config.json: JSON nested deeper than 64 levels' $RUN $m "Hi" --gen-config -n 2
cp models/tiny/generation_config.json $m/

# tokenizer.json: the hand-written scanner and the small sections
$PY - $m/tokenizer.json <<'END'
import sys
p = sys.argv[1]
s = open(p).read()
open(p, 'w').write('{"x": ' + '[' * 100000 + ']' * 100000 + ', ' + s.lstrip()[1:])
END
expect_error 'tokenizer.json: JSON nested deeper than 64 levels' $RUN encode $m "hi"
cp models/tiny/tokenizer.json $m/
$PY - $m/tokenizer.json <<'END'
import json, sys
j = json.load(open(sys.argv[1])); j["added_tokens"][0]["id"] = 4e92
open(sys.argv[1], 'w').write(json.dumps(j))
END
expect_error 'tokenizer.json: "added_tokens\[0\].id" must be an integer' $RUN encode $m "hi"
cp models/tiny/tokenizer.json $m/

# tokenizer_config.json is optional: a damaged one is a warning, and the
# run goes on (exit 0, no crash).
echo "{\"chat_template\": $(deep 100000)}" >$m/tokenizer_config.json
$RUN encode $m "hi" >$t/out 2>$t/err; rc=$?
if [ $rc = 0 ] && grep -q "tokenizer_config.json: JSON nested deeper than 64 levels; ignored" $t/err; then
    echo "ok: damaged tokenizer_config.json is a warning"
else echo "FAIL: damaged tokenizer_config.json -> rc=$rc"; head -c 300 $t/err; fails=$((fails+1)); fi

[ $fails = 0 ] && echo "all hostile files refused cleanly"
[ $fails = 0 ]
