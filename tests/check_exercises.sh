#!/usr/bin/env bash
# tests/check_exercises.sh — every exercise's checker can fail and can pass.
#
# For each exercise under chapters/ (chapters/README.md):
#   - the untouched stub.cpp must build and its checker must say NOT YET
#     (exit 1): a checker that passes a stub checks nothing;
#   - the engine's own function in the stub's place (SOLUTION=1) must
#     build and its checker must say PASS (exit 0): a checker that fails
#     the real code is wrong.
# Builds reuse build/exercise/ between runs; each run takes a few seconds
# once the engine's files there are compiled.
set -u
cd "$(dirname "$0")/.."
[ -f models/tiny/model.safetensors ] || { echo "needs models/tiny (make models)"; exit 1; }
exercises="safetensors rmsnorm rope attention bpe rng top-p"
failed=0
for ex in $exercises; do
    log=build/exercise/$ex.solution.log
    mkdir -p build/exercise
    make -s --no-print-directory exercise EX="$ex" SOLUTION=1 >"$log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q "^PASS  $ex" "$log"; then echo "ok    $ex: the reference passes its checker"
    else echo "FAIL  $ex: the reference does not pass (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi

    log=build/exercise/$ex.stub.log
    make -s --no-print-directory exercise EX="$ex" >"$log" 2>&1; rc=$?
    if [ $rc != 0 ] && grep -q "^NOT YET  $ex" "$log"; then echo "ok    $ex: the untouched stub fails its checker"
    else echo "FAIL  $ex: the stub should build and fail its checker (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; failed=1; fi
done
exit $failed
