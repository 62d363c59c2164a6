# tests/lib.sh — what the tests/check_*.sh scripts share; each sources it:
#   . "$(dirname "$0")/lib.sh"
#
#   check NAME STATUS        "ok    NAME" when STATUS is 0, else "FAIL  NAME"
#   check_eq NAME WANT GOT   the same for two strings; a failure shows both
#   skip WHY...              "skipped: WHY" and exit 77: the check cannot run
#                            here (a missing tool or CPU feature), which
#                            tests/run_all.sh counts as skipped, never passed
#   summary                  the last line, "N passed, N failed"; its status
#                            is the script's: 0 when nothing failed
passed=0 failed=0
check() {
    if [ "$2" = 0 ]; then
        echo "ok    $1"
        passed=$((passed + 1))
    else
        echo "FAIL  $1"
        failed=$((failed + 1))
    fi
}
check_eq() {
    if [ "$2" == "$3" ]; then check "$1" 0; else check "$1: expected [$2], got [$3]" 1; fi
}
skip() {
    echo "skipped: $*"
    exit 77
}
summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
}
