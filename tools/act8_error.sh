#!/usr/bin/env bash
# What rounding the activations to 8 bits costs a quantized file
# (book/16-gguf-quantization.md): the fast kernels multiply the 4-6-bit
# weights by Q8_0-rounded activations, --kernels plain by the f32 ones.
#   tools/act8_error.sh FILE.gguf [MODEL] [N]   (default models/qwen2.5-0.5b, 64)
# 1. Logits of a 32-token batch, every position, against the bf16 folder
#    MODEL: normalized RMSE (RMSE / std of the bf16 logits) of the file with
#    f32 activations (plain) and with 8-bit activations (fast), and of the
#    two against each other; top-1 agreement.
# 2. Greedy generation of N tokens, fast against plain on the file: how long
#    they stay identical; teacher-forced: fast's top-1 at every step of
#    plain's greedy sequence (one batched forward), as tools/q8_error.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:?usage: tools/act8_error.sh FILE.gguf [MODEL] [N]}
model=${2:-models/qwen2.5-0.5b}
n=${3:-64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vocab=$(/usr/bin/python3 -c "import json; print(json.load(open('$model/config.json'))['vocab_size'])")
tokens=$(seq 1 32 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % 151000 }')
./run fwd "$model" --tokens "$tokens" --all --dump "$tmp/ref.bin" >/dev/null 2>&1
./run fwd "$file" --tokens "$tokens" --all --dump "$tmp/plain.bin" --kernels plain >/dev/null 2>&1
./run fwd "$file" --tokens "$tokens" --all --dump "$tmp/fast.bin" >/dev/null 2>&1
./run "$file" "Once upon a time" -n "$n" -t 0 --json --kernels plain 2>/dev/null >"$tmp/plain.json"
./run "$file" "Once upon a time" -n "$n" -t 0 --json 2>/dev/null >"$tmp/fast.json"
seq_ids=$(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(map(str, r["prompt_ids"] + r["ids"])))' "$tmp/plain.json")
./run fwd "$file" --tokens "$seq_ids" --all --dump "$tmp/forced.bin" >/dev/null 2>&1

/usr/bin/python3 - "$tmp" "$vocab" "$file" <<'EOF2'
import json, sys
import numpy as np
tmp, vocab, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda f: np.fromfile(tmp + "/" + f, dtype=np.float32).reshape(-1, vocab).astype(np.float64)
ref, plain, fast = load("ref.bin"), load("plain.bin"), load("fast.bin")
nrmse = lambda a, b: np.sqrt(((a - b) ** 2).mean()) / b.std()
top1 = lambda a, b: 100 * (a.argmax(1) == b.argmax(1)).mean()
print("%s, logits at 32 positions:" % name)
print("  f32 activations (plain) vs bf16 folder:  nRMSE %.3f, top-1 agree %.0f%%" % (nrmse(plain, ref), top1(plain, ref)))
print("  8-bit activations (fast) vs bf16 folder: nRMSE %.3f, top-1 agree %.0f%%" % (nrmse(fast, ref), top1(fast, ref)))
print("  fast vs plain on the file:               nRMSE %.3f, top-1 agree %.0f%%" % (nrmse(fast, plain), top1(fast, plain)))
p, f = json.load(open(tmp + "/plain.json")), json.load(open(tmp + "/fast.json"))
x, y = p["ids"], f["ids"]
same = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
print("greedy, %d tokens: fast and plain identical for the first %d" % (len(x), same))
forced = np.fromfile(tmp + "/forced.bin", dtype=np.float32).reshape(-1, vocab)
k = len(p["prompt_ids"])
pred = forced[k - 1:k - 1 + len(x)].argmax(axis=1)  # row i predicts token i + 1
print("teacher-forced: fast's top-1 equals plain's greedy token at %d of %d steps (%.1f%%)"
      % ((pred == np.array(x)).sum(), len(x), 100 * (pred == np.array(x)).mean()))
EOF2
