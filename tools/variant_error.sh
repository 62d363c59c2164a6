#!/usr/bin/env bash
# How far a variant of the arithmetic moves the model from a baseline: other
# weights (--quant q8_0, a GGUF file), other kernels (--kernels bf16dot; the
# default kernels against --kernels plain on a quantized file), another KV
# type. Chapters 12 and 16 quote it; tools/quant_table.sh uses its first line.
#   tools/variant_error.sh [-n N] [-p P] BASELINE [FLAGS...] -- VARIANT [FLAGS...]
#   tools/variant_error.sh models/qwen2.5-0.5b -- models/qwen2.5-0.5b --quant q8_0
#   tools/variant_error.sh -n 64 q4_0.gguf --kernels plain -- q4_0.gguf
# BASELINE and VARIANT are each a model (a folder or a .gguf file) and the
# ./run flags it runs with.
# 1. The logits at every position of one P-token batch (default 64): the
#    normalized RMSE (the RMSE of variant - baseline over all positions and
#    the vocabulary, divided by the standard deviation of the baseline's
#    logits); the same differences as |diff| / std: their median, the largest
#    at each position (median over positions, and the worst); how often both
#    pick the same top token.
# 2. Greedy generation of N tokens (default 256; 0 skips 2 and 3) with each,
#    pure argmax (--no-gen-config drops a model's repetition penalty): how
#    long they stay identical.
# 3. Teacher-forced agreement: the variant's top token at every step of the
#    baseline's greedy sequence (one batched forward over prompt + tokens), so
#    that one early difference does not hide all the later agreement.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: tools/variant_error.sh [-n N] [-p P] BASELINE [FLAGS...] -- VARIANT [FLAGS...]"
n=256 p=64
while [ $# -gt 0 ]; do
    case "$1" in
        -n) n=${2:?$usage}; shift 2 ;;
        -p) p=${2:?$usage}; shift 2 ;;
        *) break ;;
    esac
done
base=() var=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do base+=("$1"); shift; done
[ $# -gt 0 ] || { echo "$usage" >&2; exit 1; }
shift
var=("$@")
[ ${#base[@]} -gt 0 ] && [ ${#var[@]} -gt 0 ] || { echo "$usage" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Run ./run with the baseline's or the variant's model and flags: the model
# first, then the command's own arguments, then the flags.
run_as() {  # run_as base|var COMMAND ARGS...  (COMMAND: fwd or "" for generate)
    local -n s=$1; local cmd=$2; shift 2
    if [ -n "$cmd" ]; then ./run "$cmd" "${s[0]}" "$@" "${s[@]:1}"
    else ./run "${s[0]}" "$@" "${s[@]:1}"; fi
}

# P token ids spread over the vocabulary (a folder's config.json says how large it is; 151,000 is
# within Qwen's, for a GGUF file).
vocab=$(/usr/bin/python3 -c 'import json, os, sys
f = os.path.join(sys.argv[1], "config.json")
print(min(151000, json.load(open(f))["vocab_size"]) if os.path.isfile(f) else 151000)' "${base[0]}")
tokens=$(seq 1 "$p" | awk -v v="$vocab" '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % v }')
declare -A what=([base]=baseline [var]=variant)
for s in base var; do
    run_as $s fwd --tokens "$tokens" --all --dump "$tmp/$s.bin" >"$tmp/log" 2>&1 ||
        { echo "error: ./run fwd failed for the ${what[$s]}: $(tail -1 "$tmp/log")" >&2; exit 1; }
done
if [ "$n" -gt 0 ]; then
    for s in base var; do
        run_as $s "" "Once upon a time" -n "$n" -t 0 --no-gen-config --json 2>"$tmp/log" >"$tmp/$s.json" ||
            { echo "error: ./run failed for the ${what[$s]}: $(tail -1 "$tmp/log")" >&2; exit 1; }
    done
    seq_ids=$(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(map(str, r["prompt_ids"] + r["ids"])))' "$tmp/base.json")
    run_as var fwd --tokens "$seq_ids" --all --dump "$tmp/forced.bin" >"$tmp/log" 2>&1 ||
        { echo "error: ./run fwd failed for the variant: $(tail -1 "$tmp/log")" >&2; exit 1; }
fi

/usr/bin/python3 - "$tmp" "$p" "$n" <<'PY'
import json, os, sys
import numpy as np
tmp, p, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
load = lambda f: np.fromfile(os.path.join(tmp, f), dtype=np.float32).astype(np.float64).reshape(p, -1)
a, b = load("base.bin"), load("var.bin")
if a.shape != b.shape:
    sys.exit("error: the baseline has %d logits per position, the variant %d" % (a.shape[1], b.shape[1]))
d = np.abs(b - a) / a.std()
print("logits at %d positions: nRMSE %.4f; |variant - baseline| / std: median %.4f, largest per position "
      "median %.3f, worst %.3f; top-1 agree %.0f%%"
      % (p, np.sqrt((d ** 2).mean()), np.median(d), np.median(d.max(axis=1)), d.max(),
         100 * (a.argmax(1) == b.argmax(1)).mean()))
if n > 0:
    ref, var = json.load(open(tmp + "/base.json")), json.load(open(tmp + "/var.json"))
    x, y = ref["ids"], var["ids"]
    same = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
    print("greedy, %d tokens: identical for the first %d" % (len(x), same))
    forced = np.fromfile(tmp + "/forced.bin", dtype=np.float32).reshape(-1, a.shape[1])
    k = len(ref["prompt_ids"])
    pred = forced[k - 1:k - 1 + len(x)].argmax(axis=1)  # row i predicts token i + 1
    print("teacher-forced: the variant's top-1 equals the baseline's greedy token at %d of %d steps (%.1f%%)"
          % ((pred == np.array(x)).sum(), len(x), 100 * (pred == np.array(x)).mean()))
PY
