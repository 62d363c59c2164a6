#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# GGUF files written by `./run convert` against llama.cpp itself (npm
# node-llama-cpp 3.21.1, its prebuilt CPU library): llama.cpp loads every
# file, and its log-probabilities on the file agree with Lantern's on the
# same file as closely as two correct engines can.
#
# What "closely" means (normalized RMSE = RMSE of the log-probabilities /
# std of the reference logits, over positions and vocabulary):
#   f32                 llama.cpp computes in f32 too:                < 1e-3
#   f16, bf16           llama.cpp rounds activations to f16/bf16:      < 0.05
#   q8_0                both engines round activations to Q8_0 blocks:  < 0.15
#   4-, 5-, 6-bit       well below the quantization error itself (llama.cpp
#                       on the file against Lantern on the f32 file): < 1/2 of it.
#                       Both engines round activations to 8 bits: Lantern to
#                       Q8_0 blocks of 32 for every format, llama.cpp too for
#                       Q4_0/Q5_0/Q8_0 (measured 1e-4 apart) but to Q8_1 for
#                       Q4_1/Q5_1 and to Q8_K (blocks of 256) for the k-quants,
#                       which alone gives 0.024-0.032 on these models, while the
#                       quantization error is 0.07 (Q6_K) to 0.32 (Q4_0).
# A dequantization bug shows up as an error as large as the quantization
# error or larger. tiny (hidden 64) makes every k-quant fall back, so the
# k-quants run on a generated model whose rows are multiples of 256.
# Qwen3 (qwen3-tiny: QK-norm, no q/k/v biases, head_dim 32 != 64 / 4) goes
# through llama.cpp's qwen3 architecture under the same limits; and for both
# architectures' f32 files, llama.cpp's argmax after every token of
# Lantern's 16-token greedy continuation is the token Lantern chose: the
# greedy continuations are identical.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d tools/node_modules/node-llama-cpp ]; then echo "skipped: tools/node_modules/node-llama-cpp is not installed"; exit 77; fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    echo "skipped: node-llama-cpp needs Node.js 20 or later; this machine has $(node --version)"; exit 77
fi
work=build/gguf_llama
mkdir -p $work
[ -f $work/k256/model.safetensors ] && [ $work/k256/model.safetensors -nt build/gen_model ] ||
    build/gen_model --preset tiny --dtype f32 --hidden 256 --intermediate 512 --layers 2 --heads 4 --kv-heads 2 --seed 7 --out $work/k256 >/dev/null
ids=$(./run encode models/tiny "In the beginning God created the heaven and the earth. And the earth was" 2>/dev/null | tr ' ' ,)
pairs=()
add() {  # model name type
    local f=$work/$2-$3.gguf
    ./run convert "$1" $f --type $3 2>/dev/null
    ./run fwd $f --tokens "$ids" --dump $work/$2-$3.lantern 2>/dev/null >/dev/null
    pairs+=($f $work/$2-$3.llama)
}
for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do add models/tiny-f32 tiny $t; done
for t in f32 q4_k q5_k q6_k q4_k_m; do add $work/k256 k256 $t; done
for t in f32 bf16 q8_0; do add models/qwen3-tiny-f32 qwen3 $t; done
VOCAB=151936 node tools/llama_logprobs.mjs "$ids" "${pairs[@]}" >/dev/null
# Greedy: Lantern's prompt and continuation as one id list, written next to
# llama.cpp's log-probabilities on the same ids.
for model in tiny qwen3; do
    ./run $work/$model-f32.gguf "In the beginning" --raw -t 0 --no-gen-config -n 16 --json 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; o=json.load(sys.stdin); print(",".join(map(str, o["prompt_ids"] + o["ids"])), len(o["prompt_ids"]))' \
        >$work/$model-greedy.ids
    VOCAB=151936 node tools/llama_logprobs.mjs "$(cut -d' ' -f1 $work/$model-greedy.ids)" $work/$model-f32.gguf $work/$model-greedy.llama >/dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
work = sys.argv[1]
def lantern(name):
    x = np.fromfile(f"{work}/{name}.lantern", dtype=np.float32).astype(np.float64)
    return x.reshape(-1, 151936)
def llama(name):
    return np.fromfile(f"{work}/{name}.llama", dtype=np.float64).reshape(-1, 151936)
def logsoftmax(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
def nrmse(lp, ref_logits):  # lp: log-probabilities; ref: logits
    ref = logsoftmax(ref_logits)
    ok = np.isfinite(lp)
    return np.sqrt(np.mean((lp[ok] - ref[ok]) ** 2)) / ref_logits.std()
fails = 0
for model, types in (("tiny", "f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1"), ("k256", "f32 q4_k q5_k q6_k q4_k_m"),
                     ("qwen3", "f32 bf16 q8_0")):
    f32 = lantern(f"{model}-f32")
    for t in types.split():
        same = nrmse(llama(f"{model}-{t}"), lantern(f"{model}-{t}"))
        quant = nrmse(llama(f"{model}-{t}"), f32)
        limit = {"f32": 1e-3, "f16": 0.05, "bf16": 0.05, "q8_0": 0.15}.get(t, quant / 2)
        ok = same < limit
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {model:5s} {t:7s} Lantern vs llama.cpp {same:.5f} (limit {limit:.5f}); llama.cpp vs f32 {quant:.5f}")
for model in ("tiny", "qwen3"):
    ids, n_prompt = open(f"{work}/{model}-greedy.ids").read().split()
    ids, n_prompt = [int(x) for x in ids.split(",")], int(n_prompt)
    want = ids[n_prompt:]
    got = list(llama(f"{model}-greedy").argmax(axis=1)[n_prompt - 1:-1])
    ok = len(want) == 16 and got == want
    fails += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {model:5s} f32     greedy, {len(want)} tokens: " +
          ("identical" if ok else f"Lantern {want} llama.cpp {got}"))
sys.exit(1 if fails else 0)
PY
echo "check_gguf_llama: all files loaded by llama.cpp and agree"
