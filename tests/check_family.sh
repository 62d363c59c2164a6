#!/usr/bin/env bash
# The Qwen family beyond one file, end to end through ./run:
#   1. a broken sharded folder (a shard missing, a tensor only in the index,
#      a tensor in two shards) is one "error:" line naming the file, exit 1;
#   2. the Qwen2.5-7B shape (2 of its 28 layers, untied head, 3 shards; vocab
#      cut to 8192 so the float64 reference fits in memory) and the
#      Qwen3-0.6B shape (2 layers, head_dim 128) are recognised by `run info`
#      and their logits match the PyTorch reference (tools/compare_torch.py);
#   3. --no-think appends Qwen3's empty think block to the prompt, and only
#      for Qwen3;
#   4. `./run serve` on a Qwen3 folder uses Qwen3's template: a chat request
#      gets the prompt and the greedy answer of `./run` (with
#      chat_template_kwargs.enable_thinking false: those of --no-think).
set -uo pipefail
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
err_is() {  # dir, expected text: exit 1 and one error line containing the text
    local out rc
    out=$(./run info "$1" 2>&1 >/dev/null); rc=$?
    [ $rc = 1 ] && [ "$(echo "$out" | grep -c '^error:')" = 1 ] && echo "$out" | grep -q -- "$2" || { echo "  got (exit $rc): $out"; return 1; }
}
gen() { build/gen_model "$@" >/dev/null; }

# --- 1. broken shards -------------------------------------------------------
gen --preset tiny --shards 3 --out "$T/s"
./run info "$T/s" >/dev/null 2>&1; check "a 3-shard folder loads" $?
cp -r "$T/s" "$T/a"; rm "$T/a/model-00002-of-00003.safetensors"
err_is "$T/a" "model-00002-of-00003.safetensors (listed in .*) is missing"; check "a missing shard is named" $?
cp -r "$T/s" "$T/b"
sed -i 's/"weight_map": {/"weight_map": {\n    "model.extra.weight": "model-00003-of-00003.safetensors",/' "$T/b/model.safetensors.index.json"
err_is "$T/b" "tensor model.extra.weight is listed in .* but the shard has no such tensor"; check "a tensor only in the index is named" $?
cp -r "$T/s" "$T/c"; cp "$T/c/model-00002-of-00003.safetensors" "$T/c/model-00003-of-00003.safetensors"
err_is "$T/c" "is also in model-00002-of-00003.safetensors"; check "a tensor in two shards is named" $?

# --- 2. the big shapes, few layers -------------------------------------------
gen --preset qwen2.5-7b --layers 2 --vocab 8192 --shards 3 --out "$T/q7"
info=$(./run info "$T/q7" 2>/dev/null)
echo "$info" | grep -q "^family     Qwen2.5-7B shape, 2 of its 28 layers; untied head$"; check "run info: Qwen2.5-7B shape, untied" $?
echo "$info" | grep -q "^shard 3 "; check "run info: 3 shards listed" $?
gen --preset qwen3-0.6b --layers 2 --vocab 8192 --out "$T/q3"
./run info "$T/q3" 2>/dev/null | grep -q "^family     Qwen3-0.6B shape, 2 of its 28 layers; tied head$"; check "run info: Qwen3-0.6B shape" $?
/usr/bin/python3 tools/compare_torch.py --quick --models "$T/q7,$T/q3" --tokens-below 8192; check "7B and Qwen3-0.6B shapes match the PyTorch reference" $?

# --- 3. --no-think -------------------------------------------------------------
ids() { ./run "$@" -n 1 -t 0 --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["prompt_ids"])))'; }
think=$(ids models/qwen3-tiny "Hi")
nothink=$(ids models/qwen3-tiny "Hi" --no-think)
block=$(./run encode models/qwen3-tiny $'<think>\n\n</think>\n\n' 2>/dev/null)
[ -n "$think" ] && [ "$nothink" = "$think $block" ]; check "--no-think appends <think>\\n\\n</think>\\n\\n to Qwen3's prompt" $?
[ "$(ids models/tiny "Hi")" = "$(ids models/tiny "Hi" --no-think)" ]; check "--no-think leaves Qwen2.5's template alone" $?
echo "$think" | grep -q "^151644 "; check "Qwen3's prompt starts with the user turn (no default system message)" $?

# --- 4. serve: Qwen3's template ------------------------------------------------
. tests/server/lib.sh
serve "$T/serve.log" models/qwen3-tiny --threads 1 -t 0
port=$PORT
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$T"' EXIT
served() {  # extra JSON fields -> "prompt_tokens text"
    curl -s --max-time 60 "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
        --data-binary "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 6$1}" |
        /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["usage"]["prompt_tokens"], json.dumps(d["choices"][0]["message"]["content"]))'
}
cli() {  # flags -> "prompt_tokens text"
    ./run models/qwen3-tiny "Hi" -t 0 -n 6 --json "$@" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["prompt_ids"]), json.dumps(d["text"]))'
}
same() { [ -n "$1" ] && [ "$1" = "$2" ] || { echo "  served: $1; ./run: $2"; return 1; }; }
a=$(served ""); b=$(cli)
same "$a" "$b"; check "serve on Qwen3: the prompt length and answer of ./run" $?
a=$(served ', "chat_template_kwargs": {"enable_thinking": false}'); b=$(cli --no-think)
same "$a" "$b"; check "serve on Qwen3: enable_thinking false is --no-think" $?

summary
