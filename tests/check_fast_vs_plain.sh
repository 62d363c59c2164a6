#!/usr/bin/env bash
# The fast kernels change the speed, not the answer. End to end, on
# models/tiny (grouped-query attention) and models/mha (one KV head per
# query head), both BF16:
#   1. logits of --kernels fast within 1e-4 x std of --kernels plain at every
#      position of a 40-token batch (the bound of tools/compare_torch.py);
#   2. the same logits, bit for bit, for --threads 1 and --threads 2, and for
#      every kernel set this CPU runs (scalar, avx2, avx512, neon; the others are
#      reported as skipped): one summation order everywhere;
#   3. greedy generation, 64 tokens: identical ids for plain and fast, for 1
#      and 2 threads, and for batched and stepwise prefill;
#   4. reported, not required: Q8_0 and f16/bf16 KV cache against bf16/f32, and
#      --kernels bf16dot against fast (logit deviation, greedy agreement);
#      bf16dot's own logits must still be the same for 1 and 2 threads.
set -euo pipefail
cd "$(dirname "$0")/.."
# The program under test; tests/check_arm64.sh passes the aarch64 build
# under the emulator (RUN="qemu-aarch64-static build/arm64/run").
RUN=${RUN:-./run}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tokens=$(seq 1 40 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % 151000 }')

# compare A B TOL: max over positions of max|A-B| / std(B row); fails above TOL
# (TOL=report only prints).
compare() {
    /usr/bin/python3 - "$1" "$2" "$3" "$4" <<'EOF'
import sys
import numpy as np
a_path, b_path, tol, vocab = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
a = np.fromfile(a_path, dtype=np.float32).reshape(-1, vocab)
b = np.fromfile(b_path, dtype=np.float32).reshape(-1, vocab)
ratio = np.abs(a - b).max(axis=1) / b.std(axis=1)
agree = (a.argmax(axis=1) == b.argmax(axis=1)).mean()
print("    worst position %d: max|diff| / std = %.2e, argmax agree %.0f%% over %d positions"
      % (ratio.argmax(), ratio.max(), 100 * agree, len(ratio)))
if tol != "report" and not ratio.max() <= float(tol):
    print("    FAIL: above %s" % tol)
    sys.exit(1)
EOF
}

fwd() {  # model out.bin flags...
    local model=$1 out=$2; shift 2
    $RUN fwd "$model" --tokens "$tokens" --all --dump "$out" "$@" >/dev/null 2>&1
}

ids() {  # model flags...: the generated ids of a 64-token greedy run
    local model=$1; shift
    $RUN "$model" "Once upon a time" -n 64 -t 0 --json "$@" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))'
}

status=0
for model in models/tiny models/mha; do
    vocab=$(/usr/bin/python3 -c "import json; print(json.load(open('$model/config.json'))['vocab_size'])")
    echo "== $model"
    fwd $model $tmp/plain.bin --kernels plain --threads 1
    fwd $model $tmp/fast1.bin --kernels fast --threads 1
    fwd $model $tmp/fast2.bin --kernels fast --threads 2
    fwd $model $tmp/scalar2.bin --kernels scalar --threads 2
    echo "  fast vs plain, 40 positions (tolerance 1e-4 x std):"
    compare $tmp/fast1.bin $tmp/plain.bin 1e-4 $vocab || status=1
    if cmp -s $tmp/fast1.bin $tmp/fast2.bin; then echo "  ok: --threads 1 and 2 give identical logits"
    else echo "  FAIL: --threads 1 and 2 differ"; status=1; fi
    if cmp -s $tmp/fast1.bin $tmp/scalar2.bin; then echo "  ok: fast (SIMD) and scalar give identical logits"
    else echo "  FAIL: fast and scalar differ"; status=1; fi
    for set in avx2 avx512 neon; do
        if ! $RUN fwd $model --tokens 1 --kernels $set >/dev/null 2>&1; then
            echo "  skipped: this CPU does not run --kernels $set"
        elif fwd $model $tmp/set.bin --kernels $set --threads 2 && cmp -s $tmp/set.bin $tmp/scalar2.bin; then
            echo "  ok: --kernels $set and scalar give identical logits"
        else echo "  FAIL: --kernels $set and scalar differ"; status=1; fi
    done

    plain=$(ids $model --kernels plain --threads 1)
    fast=$(ids $model --kernels fast --threads 2)
    fast1=$(ids $model --kernels fast --threads 1)
    stepwise=$(ids $model --kernels fast --prefill stepwise)
    n=$(echo $plain | wc -w)
    if [ "$n" -ge 1 ] && [ "$plain" = "$fast" ] && [ "$fast" = "$fast1" ] && [ "$fast" = "$stepwise" ]; then
        echo "  ok: greedy, $n tokens: plain, fast x 1/2 threads, batched/stepwise prefill agree"
    else
        echo "  FAIL: greedy tokens differ"; echo "    plain    $plain"; echo "    fast     $fast"
        echo "    fast x1  $fast1"; echo "    stepwise $stepwise"; status=1
    fi

    echo "  reported: Q8_0 weights against bf16 (fast kernels):"
    if fwd $model $tmp/q8.bin --kernels fast --quant q8_0; then
        compare $tmp/q8.bin $tmp/fast1.bin report $vocab
        q8=$(ids $model --quant q8_0)
        /usr/bin/python3 -c '
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
n = min(len(a), len(b))
same = next((i for i in range(n) if a[i] != b[i]), n)
print("    greedy: first %d of %d tokens identical to bf16" % (same, max(len(a), len(b))))' "$q8" "$fast"
    else
        echo "    skipped: a matrix has a column count that is not a multiple of 32 (the Q8_0 block)"
    fi
    for kv in f16 bf16 q8_0; do
        echo "  reported: KV cache $kv against f32:"
        if fwd $model $tmp/kv.bin --kernels fast --kv-type $kv; then
            compare $tmp/kv.bin $tmp/fast1.bin report $vocab
        else
            echo "    skipped: the heads are not a multiple of 32 values (the Q8_0 block)"
        fi
    done
    # bf16dot rounds the activations to bf16: not the other sets' bits, but
    # its own are the same for any thread count
    if $RUN fwd $model --tokens 1 --kernels bf16dot >/dev/null 2>&1; then
        fwd $model $tmp/bd1.bin --kernels bf16dot --threads 1
        fwd $model $tmp/bd2.bin --kernels bf16dot --threads 2
        if cmp -s $tmp/bd1.bin $tmp/bd2.bin; then echo "  ok: --kernels bf16dot: --threads 1 and 2 give identical logits"
        else echo "  FAIL: --kernels bf16dot: --threads 1 and 2 differ"; status=1; fi
        echo "  reported: --kernels bf16dot (activations rounded to bf16) against fast:"
        compare $tmp/bd2.bin $tmp/fast1.bin report $vocab
    else
        echo "  skipped: this CPU does not run --kernels bf16dot"
    fi
done
exit $status
