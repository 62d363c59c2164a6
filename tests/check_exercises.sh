#!/usr/bin/env bash
# tests/check_exercises.sh — every exercise's checker can fail and can pass.
#
# For each exercise under chapters/ (chapters/README.md):
#   - the untouched stub.cpp must build and its checker must say NOT YET
#     (exit 1): a checker that passes a stub checks nothing;
#   - the engine's own function in the stub's place (SOLUTION=1) must build
#     and its checker must say PASS (exit 0): a checker that fails the real
#     code is wrong;
#   - other correct versions (tests/data/exercise_solutions/) must pass too;
#   - a known slip (tests/data/exercise_slips/) must fail with a message
#     that names it.
# Builds reuse build/exercise/ between runs; each run takes a few seconds
# once the engine's files there are compiled.
set -u
cd "$(dirname "$0")/.."
[ -f models/tiny/model.safetensors ] || { echo "needs models/tiny (make models)"; exit 1; }
# Every exercise of chapters/build_exercise.sh's table (EXERCISES=... runs some).
exercises=${EXERCISES:-$(sed -n '/^table="/,/^"/p' chapters/build_exercise.sh | awk 'NF > 1 { print $1 }')}
[ -n "$exercises" ] || { echo "no exercises found in chapters/build_exercise.sh"; exit 1; }
failed=0
for ex in $exercises; do
    log=build/exercise/$ex.solution.log
    mkdir -p build/exercise
    make -s --no-print-directory exercise EX="$ex" SOLUTION=1 >"$log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q "^PASS  $ex" "$log"; then echo "ok    $ex: the reference passes its checker"
    else echo "FAIL  $ex: the reference does not pass (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi

    log=build/exercise/$ex.stub.log
    make --no-print-directory exercise EX="$ex" >"$log" 2>&1; rc=$?
    # make exercise ends on the verdict with status 0; the checker itself says
    # 1 (run again for the first exercise only: each run takes seconds).
    checker=0
    [ "$ex" != "${exercises%%[[:space:]]*}" ] || build/exercise/$ex/check >/dev/null 2>&1 || checker=$?
    if [ $rc = 0 ] && [ "$(tail -1 "$log" | cut -c1-$((9 + ${#ex})))" = "NOT YET  $ex" ] && [ "$ex" != "${exercises%%[[:space:]]*}" -o $checker = 1 ]
    then echo "ok    $ex: the untouched stub fails its checker, which make exercise ends on (status 0; the checker's 1)"
    else echo "FAIL  $ex: the stub should build and fail its checker (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi
done

# Other correct versions: the engine's matmul_plain is not tiled; a tiled one
# must pass the tiled-matmul checker as well.
log=build/exercise/tiled-matmul.tiled.log
STUB=tests/data/exercise_solutions/tiled-matmul.cpp make -s --no-print-directory exercise EX=tiled-matmul >"$log" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "^PASS  tiled-matmul" "$log"; then echo "ok    tiled-matmul: a tiled solution passes its checker"
else echo "FAIL  tiled-matmul: the tiled solution does not pass (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi

# A real kernel for cuda-rope (its SOLUTION=1 is the CPU twin, which runs no thread).
log=build/exercise/cuda-rope.kernel.log
STUB=tests/data/exercise_solutions/cuda-rope.cpp make -s --no-print-directory exercise EX=cuda-rope >"$log" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "^PASS  cuda-rope" "$log"; then echo "ok    cuda-rope: a kernel of one thread per pair passes its checker"
else echo "FAIL  cuda-rope: the kernel solution does not pass (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi

# Known slips (tests/data/exercise_slips/): each checker must fail them and
# say what the slip is, not only that something differs.
slips="
rope   rope_intdiv.cpp          integer division
top-p  top_p_no_tiebreak.cpp    equal logits are ordered by id
q8_0   q8_0_rint.cpp            halves away from zero
tiled-matmul tiled_matmul_partials.cpp  added up in partial sums
layer  layer_no_bias.cpp        you forgot the bias
layer  layer_norm_in_place.cpp  adds to x itself, not to its normed copy
layer  layer_no_ablate.cpp      not tapped: attn.out, mlp.down
scheduler scheduler_slot_order.cpp  by request id, not by slot index
q4     q4_k_no_top_bits.cpp     their top 2 bits
cuda-rope cuda_rope_no_bound.cpp  must return before touching vec
cuda-rope cuda_rope_shared_pair.cpp  depends on which thread runs first
lens   lens_no_norm.cpp         you forgot the final norm
lens   lens_wrong_row.cpp       the capture is depth-major
"
while read -r ex file says; do
    [ -n "$ex" ] || continue
    log=build/exercise/$ex.slip.${file%.cpp}.log
    STUB=tests/data/exercise_slips/$file make -s --no-print-directory exercise EX="$ex" >"$log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q "^NOT YET  $ex" "$log" && grep -qF "$says" "$log"; then
        echo "ok    $ex: the slip in $file fails and is named (\"$says\")"
    else echo "FAIL  $ex: $file should fail with a message containing \"$says\" (rc=$rc), last lines of $log:"
        tail -15 "$log" | sed 's/^/      /'; failed=1; fi
done <<<"$slips"
exit $failed
