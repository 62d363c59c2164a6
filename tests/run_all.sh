#!/usr/bin/env bash
# Runs every test suite and ends with one line: "N passed, N failed".
#   - build/unit_tests: the doctest cases (tests/*.cpp); each case counts once
#   - tests/check_*.sh: end-to-end checks (PyTorch comparison, CLI, report,
#     server, book); each script counts once, exit 0 = passed
cd "$(dirname "$0")/.."
passed=0; failed=0; failed_names=""

out=$(./build/unit_tests --no-version 2>&1); rc=$?
echo "$out" | grep -E "ERROR|FAILED|error:|test cases" | head -40
line=$(echo "$out" | grep -E "^\[doctest\] test cases:" | tail -1)
p=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
if [ -z "$p" ]; then failed=$((failed+1)); failed_names="$failed_names unit_tests(crashed rc=$rc)";
else passed=$((passed+p)); failed=$((failed+f)); [ "$f" = 0 ] || failed_names="$failed_names unit_tests"; fi

for t in tests/check_*.sh; do
    [ -e "$t" ] || continue
    name=$(basename "$t" .sh)
    log="build/$name.log"
    t0=$(date +%s)
    if bash "$t" >"$log" 2>&1; then
        passed=$((passed+1)); echo "PASS $name ($(( $(date +%s) - t0 )) s)"
    else
        failed=$((failed+1)); failed_names="$failed_names $name"
        echo "FAIL $name ($(( $(date +%s) - t0 )) s; last lines of $log):"; tail -15 "$log" | sed 's/^/    /'
    fi
done
[ -z "$failed_names" ] || echo "failed:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
