#!/usr/bin/env bash
# tests/sanitize.sh BUILD_DIR SANITIZERS  (what `make sanitize` runs)
#
# address,undefined: the unit tests and the command-line checks
# (check_cli_errors, check_hostile_files, check_tokenizer_cli) with the
# sanitized ./run. thread: the server's concurrency checks (check_server:
# eight clients at once, hang-ups, a full queue, shutdown) and
# check_hostile_server. Any sanitizer report fails. Prints the time taken.
set -u
cd "$(dirname "$0")/.."
build=$1 kind=$2
start=$(date +%s)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
ln -sf "$build/run" run
trap 'ln -sf build/run run' EXIT
failed=""
run() {  # name, command...
    local name=$1; shift
    if "$@" >"$build/$name.log" 2>&1; then echo "PASS $name"
    else echo "FAIL $name (last lines of $build/$name.log):"; tail -15 "$build/$name.log" | sed 's/^/    /'; failed="$failed $name"; fi
}
if [ "$kind" = thread ]; then
    run check_server bash tests/check_server.sh
    HOSTILE_RSS_MIB=512 run check_hostile_server bash tests/check_hostile_server.sh
else
    run unit_tests "$build/unit_tests" --no-version
    for t in check_cli_errors check_hostile_files check_tokenizer_cli; do run $t bash tests/$t.sh; done
fi
echo "sanitize ($kind): $(( $(date +%s) - start )) s${failed:+, failed:$failed}"
[ -z "$failed" ]
