#!/usr/bin/env bash
# tools/gpu_check.sh — everything about the CUDA backend that needs a GPU,
# in one run (book/14-cuda.md, "Observe and verify"). On a machine with an
# NVIDIA GPU and the CUDA toolkit, from the repository root:
#
#   bash tools/gpu_check.sh            # ~5 minutes on 16 cores and an H200
#
#   1. build: `make all` (the CPU ./run and the model generator), `make cuda`
#   2. models: the generated test models, the 0.5B-shaped one included
#   3. the cuda:* unit tests: every kernel against the CPU, logits at every
#      position, graph on/off, greedy 64 tokens (under compute-sanitizer's
#      memcheck too, when it is installed)
#   4. ./run fwd --dump, CPU against GPU (plain and fast kernels), on every
#      model: worst |difference| over the logits' standard deviation
#   5. greedy 64 tokens through the command line, CPU against GPU
#   6. the bench: copy bandwidth, prefill and decode tok/s, achieved GB/s
#
# Results go to $OUT (the device tool's output folder) or build/gpu_check:
# gpu_check.log (all of it) and summary.txt (the lines for the book's
# table). The last line is "GPU CHECK: PASS" or "GPU CHECK: FAIL (...)".
# Needs nothing from the network: the Qwen tokenizer is used when
# models/qwen-tokenizer is there (carry it), else the CLI greedy step is
# skipped and the unit tests' greedy case stands alone.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu_check}
mkdir -p "$OUT"
LOG=$OUT/gpu_check.log
SUM=$OUT/summary.txt
: >"$LOG"
: >"$SUM"
J=$(nproc 2>/dev/null || echo 4)
failures=""

say() { echo "$*" | tee -a "$LOG"; }
note() { say "$*"; echo "$*" >>"$SUM"; }
fail_step() { failures="$failures $1"; say "FAIL: $1"; }
run() { "$@" >>"$LOG" 2>&1; }  # a command, its output to the log only

say "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi -L 2>&1 | tee -a "$LOG"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$SUM" >>"$LOG"
command -v python3 >/dev/null || { say "GPU CHECK: FAIL (the comparisons need python3)"; exit 1; }
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || NVCC=$(command -v nvcc || true)
[ -n "$NVCC" ] || { say "GPU CHECK: FAIL (no nvcc: install the CUDA toolkit or set NVCC)"; exit 1; }
"$NVCC" --version | tail -1 | sed 's/^/nvcc: /' | tee -a "$SUM" >>"$LOG"

# The GPU's compute capability picks the nvcc target (sm_90 for H100/H200).
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
ARCH="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
[ -n "$cap" ] && ARCH="-gencode arch=compute_$cap,code=sm_$cap"
say "== 1. build (make all, make cuda; -j$J; $ARCH)"
if ! run make -j"$J" all || ! run make -j"$J" cuda NVCC="$NVCC" CUDA_ARCH="$ARCH"; then
    tail -30 "$LOG"
    say "GPU CHECK: FAIL (build; see $LOG)"
    exit 1
fi
BIN=build/cuda/run
TESTS=build/cuda/unit_tests

say "== 2. models"
TOK=models/qwen-tokenizer
[ -f $TOK/tokenizer.json ] || { say "(no $TOK: models without a tokenizer, CLI greedy skipped)"; TOK=/nonexistent; }
gen() {  # name, args...
    local dir=models/$1
    shift
    [ -f "$dir/model.safetensors" ] || run build/gen_model --tokenizer "$TOK" --out "$dir" "$@"
}
gen tiny --preset tiny
gen tiny-f32 --preset tiny --dtype f32
gen mha --preset mha
gen qwen2.5-0.5b --preset qwen2.5-0.5b
MODELS="models/tiny models/tiny-f32 models/mha models/qwen2.5-0.5b"
[ -f trained/kjv/model.safetensors ] && MODELS="$MODELS trained/kjv"

say "== 3. unit tests (cuda:*)"
if run $TESTS --no-version -tc='cuda:*'; then
    note "unit tests cuda:*: $(grep -E '^\[doctest\] test cases' "$LOG" | tail -1)"
else
    grep -E "ERROR|FAILED|error:|test cases" "$LOG" | tail -20
    fail_step "unit-tests"
fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$SAN" ]; then
    if run timeout 300 "$SAN" --tool memcheck --error-exitcode 9 $TESTS --no-version \
        -tc='cuda: matmul*,cuda: rmsnorm*,cuda: RoPE*,cuda: attention*,cuda: embedding*,cuda: the decode graph*'; then
        note "compute-sanitizer memcheck: clean"
    else
        fail_step "memcheck"
    fi
else
    say "(no compute-sanitizer: memcheck skipped)"
fi

say "== 4. logits, CPU vs GPU (./run fwd --all --dump)"
# Worst |a - b| over all logits, divided by the standard deviation of a,
# and how many rows pick a different argmax.
compare() {
    python3 - "$1" "$2" "$3" <<'EOF'
import array, math, sys
a, b, V = array.array('f'), array.array('f'), int(sys.argv[3])
a.frombytes(open(sys.argv[1], 'rb').read())
b.frombytes(open(sys.argv[2], 'rb').read())
assert len(a) == len(b) and len(a) % V == 0, "dump sizes differ"
n, rows = len(a), len(a) // V
mean = math.fsum(a) / n
std = math.sqrt(max(0.0, math.fsum(x * x for x in a) / n - mean * mean))
worst = max(abs(x - y) for x, y in zip(a, b))
argmax = lambda v, r: (lambda row: row.index(max(row)))(v[r * V:(r + 1) * V])
flips = sum(1 for r in range(rows) if argmax(a, r) != argmax(b, r))
print(f"{worst / std:.2e} {flips}/{rows}")
EOF
}
IDS=$(python3 -c "print(','.join(str((i * 7919 + 13) % 151000) for i in range(40)))")
for m in $MODELS; do
    V=$(python3 -c "import json; print(json.load(open('$m/config.json'))['vocab_size'])")
    ids=$(python3 -c "print(','.join(str(int(x) % $V) for x in '$IDS'.split(',')))")
    # the CPU reference: the fast kernels (all cores); they equal PyTorch's float64 to ~1e-5 x std
    run $BIN fwd "$m" --tokens "$ids" --all --dump "$OUT/cpu.bin" --device cpu || { fail_step "fwd-cpu $m"; continue; }
    for k in plain fast; do
        if ! run $BIN fwd "$m" --tokens "$ids" --all --dump "$OUT/gpu.bin" --device cuda --kernels $k; then
            fail_step "fwd-cuda-$k $m"
            continue
        fi
        read -r ratio flips <<<"$(compare "$OUT/cpu.bin" "$OUT/gpu.bin" "$V")"
        note "logits $m $k: max|diff|/std $ratio, argmax differs in $flips rows"
        python3 -c "import sys; sys.exit(0 if float('$ratio') <= 1e-3 else 1)" || fail_step "logits $m $k"
    done
    # one token far into the context: RoPE at large positions, a sequence starting mid-cache
    P=$(python3 -c "import json; print(min(20000, json.load(open('$m/config.json'))['max_position_embeddings'] - 1))")
    run $BIN fwd "$m" 100 "$P" --dump "$OUT/cpu1.bin" --device cpu &&
        run $BIN fwd "$m" 100 "$P" --dump "$OUT/gpu1.bin" --device cuda &&
        read -r ratio flips <<<"$(compare "$OUT/cpu1.bin" "$OUT/gpu1.bin" "$V")" &&
        note "logits $m token 100 at position $P, fast: max|diff|/std $ratio" &&
        python3 -c "import sys; sys.exit(0 if float('$ratio') <= 1e-3 else 1)" || fail_step "fwd pos $P $m"
done
rm -f "$OUT"/cpu*.bin "$OUT"/gpu*.bin

say "== 5. greedy 64 tokens, CPU vs GPU (./run -t 0 -n 64 --json)"
ids_of() { python3 -c "import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['ids'])"; }
for m in $MODELS; do
    [ -f "$m/tokenizer.json" ] || { say "($m has no tokenizer.json: skipped)"; continue; }
    cpu=$($BIN "$m" "In the beginning" -t 0 -n 64 --json --device cpu 2>>"$LOG" | ids_of)
    gpu=$($BIN "$m" "In the beginning" -t 0 -n 64 --json --device cuda 2>>"$LOG" | ids_of)
    if [ -n "$cpu" ] && [ "$cpu" = "$gpu" ]; then
        note "greedy $m: identical ($(echo "$cpu" | tr -cd ',' | wc -c | awk '{print $1 + 1}') tokens)"
    else
        say "cpu: $cpu"
        say "gpu: $gpu"
        fail_step "greedy $m"
    fi
done

say "== 6. bench (0.5B-shaped model, bf16)"
if LANTERN_BENCH_MODEL=models/qwen2.5-0.5b run $TESTS --no-version -tc='cuda: bench' --no-skip -s; then
    grep -E "MESSAGE: (plain|fast) on" "$LOG" | sed 's/.*MESSAGE: /bench: /' | tee -a "$SUM"
else
    fail_step "bench"
fi
if $BIN bench --help 2>&1 | grep -q -- "--device"; then
    run $BIN bench models/qwen2.5-0.5b --device cuda && note "./run bench --device cuda: see $LOG" || fail_step "run-bench"
fi

echo
cat "$SUM"
if [ -z "$failures" ]; then
    say "GPU CHECK: PASS"
else
    say "GPU CHECK: FAIL ($failures )"
    exit 1
fi
