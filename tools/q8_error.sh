#!/usr/bin/env bash
# How far a cheaper arithmetic moves the model from the default (bf16
# weights, f32 activations): Q8_0 weights unless told otherwise
# (book/11-performance.md).
#   tools/q8_error.sh [MODEL] [N] [FLAGS...]   (default models/qwen2.5-0.5b, 256, --quant q8_0)
#   tools/q8_error.sh models/qwen2.5-0.5b 256 --kernels bf16dot
# 1. Logits of a 64-token batch, every position: max, median and rms of
#    |variant - default| over the vocabulary, relative to the spread (std)
#    of the default logits.
# 2. Greedy generation of N tokens with each (pure argmax: --no-gen-config
#    drops the model's repetition penalty): how long they stay identical.
# 3. Teacher-forced agreement: the variant's top-1 at every step of the
#    default's greedy sequence (one batched forward over prompt + its
#    tokens), so that one early difference does not hide all the later
#    agreement.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/qwen2.5-0.5b}
n=${2:-256}
shift $(($# < 2 ? $# : 2))
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--quant q8_0)
name=${flags[-1]}  # q8_0, bf16dot, ...: what the lines call the variant
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vocab=$(/usr/bin/python3 -c "import json; print(json.load(open('$model/config.json'))['vocab_size'])")

tokens=$(seq 1 64 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % 151000 }')
./run fwd "$model" --tokens "$tokens" --all --dump "$tmp/ref.bin" >/dev/null 2>&1
./run fwd "$model" --tokens "$tokens" --all --dump "$tmp/var.bin" "${flags[@]}" >/dev/null 2>&1

./run "$model" "Once upon a time" -n "$n" -t 0 --no-gen-config --json 2>/dev/null >"$tmp/ref.json"
./run "$model" "Once upon a time" -n "$n" -t 0 --no-gen-config --json "${flags[@]}" 2>/dev/null >"$tmp/var.json"
seq_ids=$(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(map(str, r["prompt_ids"] + r["ids"])))' "$tmp/ref.json")
./run fwd "$model" --tokens "$seq_ids" --all --dump "$tmp/forced.bin" "${flags[@]}" >/dev/null 2>&1

/usr/bin/python3 - "$tmp" "$vocab" "$name" <<'PY'
import json, sys
import numpy as np
tmp, vocab, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
a = np.fromfile(tmp + "/ref.bin", dtype=np.float32).reshape(-1, vocab)
b = np.fromfile(tmp + "/var.bin", dtype=np.float32).reshape(-1, vocab)
d = np.abs(a - b) / a.std(axis=1, keepdims=True)
print("logits, 64 positions: max |%s - default| / std: median over positions %.3f, worst %.3f; "
      "median |%s - default| / std %.4f; rms %.4f; top-1 agree %.0f%%"
      % (name, np.median(d.max(axis=1)), d.max(), name, np.median(d), np.sqrt((d ** 2).mean()),
         100 * (a.argmax(1) == b.argmax(1)).mean()))
ref, var = json.load(open(tmp + "/ref.json")), json.load(open(tmp + "/var.json"))
x, y = ref["ids"], var["ids"]
same = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
print("greedy, %d tokens: identical for the first %d" % (len(x), same))
forced = np.fromfile(tmp + "/forced.bin", dtype=np.float32).reshape(-1, vocab)
p = len(ref["prompt_ids"])
pred = forced[p - 1:p - 1 + len(x)].argmax(axis=1)  # row i predicts token i + 1
print("teacher-forced: %s's top-1 equals the default's greedy token at %d of %d steps (%.1f%%)"
      % (name, (pred == np.array(x)).sum(), len(x), 100 * (pred == np.array(x)).mean()))
PY
