#!/usr/bin/env bash
# How far Q8_0 weights move the model from bf16 (book/11-performance.md).
#   tools/q8_error.sh [MODEL] [N]       (default models/qwen2.5-0.5b, 256)
# 1. Logits of a 64-token batch, every position: max and median |q8 - bf16|
#    over the vocabulary, relative to the spread (std) of the bf16 logits.
# 2. Greedy generation of N tokens with each: how long they stay identical.
# 3. Teacher-forced agreement: Q8_0's top-1 at every step of bf16's greedy
#    sequence (one batched forward over prompt + bf16's tokens), so that one
#    early difference does not hide all the later agreement.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/qwen2.5-0.5b}
n=${2:-256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vocab=$(/usr/bin/python3 -c "import json; print(json.load(open('$model/config.json'))['vocab_size'])")

tokens=$(seq 1 64 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % 151000 }')
./run fwd "$model" --tokens "$tokens" --all --dump "$tmp/bf16.bin" >/dev/null 2>&1
./run fwd "$model" --tokens "$tokens" --all --dump "$tmp/q8.bin" --quant q8_0 >/dev/null 2>&1

./run "$model" "Once upon a time" -n "$n" -t 0 --json 2>/dev/null >"$tmp/bf16.json"
./run "$model" "Once upon a time" -n "$n" -t 0 --json --quant q8_0 2>/dev/null >"$tmp/q8.json"
seq_ids=$(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(map(str, r["prompt_ids"] + r["ids"])))' "$tmp/bf16.json")
./run fwd "$model" --tokens "$seq_ids" --all --dump "$tmp/forced.bin" --quant q8_0 >/dev/null 2>&1

/usr/bin/python3 - "$tmp" "$vocab" <<'EOF'
import json, sys
import numpy as np
tmp, vocab = sys.argv[1], int(sys.argv[2])
a = np.fromfile(tmp + "/bf16.bin", dtype=np.float32).reshape(-1, vocab)
b = np.fromfile(tmp + "/q8.bin", dtype=np.float32).reshape(-1, vocab)
d = np.abs(a - b) / a.std(axis=1, keepdims=True)
print("logits, 64 positions: max |q8 - bf16| / std: median over positions %.3f, worst %.3f; "
      "median |q8 - bf16| / std %.4f; top-1 agree %.0f%%"
      % (np.median(d.max(axis=1)), d.max(), np.median(d), 100 * (a.argmax(1) == b.argmax(1)).mean()))
bf, q8 = json.load(open(tmp + "/bf16.json")), json.load(open(tmp + "/q8.json"))
x, y = bf["ids"], q8["ids"]
same = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
print("greedy, %d tokens: identical for the first %d" % (len(x), same))
forced = np.fromfile(tmp + "/forced.bin", dtype=np.float32).reshape(-1, vocab)
p = len(bf["prompt_ids"])
pred = forced[p - 1:p - 1 + len(x)].argmax(axis=1)  # row i predicts token i + 1
print("teacher-forced: Q8_0's top-1 equals bf16's greedy token at %d of %d steps (%.1f%%)"
      % ((pred == np.array(x)).sum(), len(x), 100 * (pred == np.array(x)).mean()))
EOF
