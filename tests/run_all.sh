#!/usr/bin/env bash
# Runs one tier of the tests and ends with one line: "N passed, N failed, N skipped".
#   tests/run_all.sh unit    the doctest cases alone (build/unit_tests; each case counts once)
#   tests/run_all.sh quick   the unit tests and every tests/check_*.sh without a "# tier: all"
#                            line: what a contributor runs before each commit (make test)
#   tests/run_all.sh all     every check (make test-all): fuzzing, sanitizers, ARM under
#                            qemu, the clang build, the whole book run and in Chromium, llama.cpp
# A check passes with exit 0 and fails with any other status except 77, which says it could
# not run here (a missing tool or CPU feature; its output says which): that counts as
# skipped, never as passed.
cd "$(dirname "$0")/.."
tier=${1:-quick}
case "$tier" in unit | quick | all) ;; *) echo "usage: tests/run_all.sh [unit|quick|all]" >&2; exit 2 ;; esac
passed=0; failed=0; skipped=0; failed_names=""; skipped_names=""

out=$(./build/unit_tests --no-version 2>&1); rc=$?
echo "$out" | grep -E "ERROR|FAILED|error:|test cases" | head -40
line=$(echo "$out" | grep -E "^\[doctest\] test cases:" | tail -1)
p=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
s=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) skipped.*/\1/p')
if [ -z "$p" ]; then failed=$((failed+1)); failed_names="$failed_names unit_tests(crashed rc=$rc)";
else passed=$((passed+p)); failed=$((failed+f)); skipped=$((skipped+${s:-0})); [ "$f" = 0 ] || failed_names="$failed_names unit_tests"; fi

if [ "$tier" != unit ]; then
    for t in tests/check_*.sh; do
        [ -e "$t" ] || continue
        if [ "$tier" = quick ] && grep -q "^# tier: all" "$t"; then continue; fi
        name=$(basename "$t" .sh)
        log="build/$name.log"
        t0=$(date +%s)
        bash "$t" >"$log" 2>&1; rc=$?
        dt=$(( $(date +%s) - t0 ))
        if [ $rc = 0 ]; then
            passed=$((passed+1)); echo "PASS $name ($dt s)"
        elif [ $rc = 77 ]; then
            skipped=$((skipped+1)); skipped_names="$skipped_names $name"
            echo "SKIP $name ($dt s): $(grep -i "skip" "$log" | tail -1)"
        else
            failed=$((failed+1)); failed_names="$failed_names $name"
            echo "FAIL $name ($dt s; last lines of $log):"; tail -15 "$log" | sed 's/^/    /'
        fi
    done
fi
[ -z "$skipped_names" ] || echo "skipped:$skipped_names"
[ -z "$failed_names" ] || echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
