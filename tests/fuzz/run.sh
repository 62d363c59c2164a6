#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS BUILD_DIR [NAME...]  (what `make fuzz` runs)
#
# For each libFuzzer target (all of BUILD_DIR/fuzz_* unless NAMEs are given):
#   1. replay its committed corpus, tests/fuzz/corpus/NAME (every seed must pass);
#   2. fuzz for SECONDS, starting from that corpus; new interesting inputs go
#      to BUILD_DIR/work/NAME, a failing input to BUILD_DIR/crashes/NAME-*.
# Reproduce a saved crash: BUILD_DIR/NAME BUILD_DIR/crashes/NAME-crash-...
# Ends with one line per target and exits 1 if any failed.
set -u
cd "$(dirname "$0")/../.."
seconds=$1 build=$2; shift 2
names=("$@")
[ ${#names[@]} -gt 0 ] || for f in "$build"/fuzz_*; do [ -x "$f" ] && names+=("$(basename "$f")"); done
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/crashes"
summary="" failed=0
for name in "${names[@]}"; do
    bin=$build/$name corpus=tests/fuzz/corpus/$name work=$build/work/$name log=$build/$name.log
    mkdir -p "$work"
    if ! "$bin" -runs=0 "$corpus" >"$log" 2>&1; then
        summary+="FAIL $name: a committed seed fails (log: $log)"$'\n'; failed=1; continue
    fi
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$build/crashes/$name-" -print_final_stats=1 "$work" "$corpus" >>"$log" 2>&1
    rc=$?
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    if [ $rc = 0 ]; then summary+="ok   $name: ${runs:-?} inputs in ${seconds} s, no failure"$'\n'
    else
        summary+="FAIL $name: rc=$rc after ${runs:-?} inputs; input saved in $build/crashes/ (log: $log)"$'\n'; failed=1
        grep -m3 -E "ERROR|runtime error|fuzz check failed|terminate called|SUMMARY" "$log" | sed 's/^/       /' >>/dev/stderr
    fi
done
printf '%s' "$summary"
exit $failed
