#!/usr/bin/env bash
# tests/check_grade_class.sh — tools/grade_class.sh grades a planted class right.
#
# Four planted students, all on the rmsnorm exercise: ada hands in a correct
# RMSNorm, bob the untouched stub, cy a file that does not compile, and dee
# a folder named for no exercise. The CSV must give ada every point, bob
# none, cy a build error naming the compiler's complaint, and dee one line
# on stderr saying what is wrong; the exit status is 1 because of dee.
set -u
cd "$(dirname "$0")/.."
[ -f models/tiny/model.safetensors ] || { echo "needs models/tiny (make models)"; exit 1; }
work=build/grade_test
rm -rf "$work"; mkdir -p "$work/class/ada/rmsnorm" "$work/class/bob/rmsnorm" "$work/class/cy/rmsnorm" "$work/class/dee/rmsnrom"
cat >"$work/class/ada/rmsnorm/stub.cpp" <<'CPP'
#include <cmath>
#include "kernels.h"
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double rms = std::sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) out[i] = (float)(x[i] / rms) * w[i];
}
CPP
cp chapters/rmsnorm/stub.cpp "$work/class/bob/rmsnorm/stub.cpp"
sed 's/out\[i\] = 0.0f;/out[i] = 0.0f/' chapters/rmsnorm/stub.cpp >"$work/class/cy/rmsnorm/stub.cpp"
cp chapters/rmsnorm/stub.cpp "$work/class/dee/rmsnrom/stub.cpp"

. tests/lib.sh
check_that() {  # what, command...: the command's status is the check's
    local what=$1; shift
    "$@"
    check "$what" $?
}
bash tools/grade_class.sh "$work/class" "$work/grades.csv" >"$work/out.txt" 2>"$work/err.txt"; rc=$?
cat "$work/out.txt" "$work/err.txt" | sed 's/^/      /'
echo "      --- $work/grades.csv:"; sed 's/^/      /' "$work/grades.csv" 2>/dev/null
check_that "exit status 1: one malformed submission" [ $rc = 1 ]
check_that "the header" grep -qx "student,exercise,points,max,groups_passed,groups,status" "$work/grades.csv"
check_that "ada's correct rmsnorm earns every point" grep -qx "ada,rmsnorm,5,5,4,4,pass" "$work/grades.csv"
check_that "bob's untouched stub earns none" grep -qx "bob,rmsnorm,0,5,0,4,not yet" "$work/grades.csv"
check_that "cy's file that does not compile: a build error naming the compiler's words" \
    grep -qE "^cy,rmsnorm,0,5,0,4,build error: .*(expected|error)" "$work/grades.csv"
check_that "dee's misnamed folder: one line on stderr" grep -qx "grade_class: .*/dee/rmsnrom: no exercise is named 'rmsnrom' (make exercise lists them)" "$work/err.txt"
check_that "dee's row says malformed" grep -q "^dee,rmsnrom,0,,,,malformed: " "$work/grades.csv"
check_that "five lines: the header and four submissions" [ "$(wc -l <"$work/grades.csv")" = 5 ]
# The points are the checker's own: its JSON for bob's stub says the same.
j=$(STUB="$work/class/bob/rmsnorm/stub.cpp" bash chapters/build_exercise.sh rmsnorm --json 2>/dev/null)
check_that "the checker's --json for bob: 0 of 5 points, 4 groups, a diagnosis per failed group" /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["points"] == 0 and j["points_possible"] == 5 and j["groups"] == 4 and not j["passed"], j
assert all(r["diagnosis"].startswith("FAIL  ") for r in j["results"]), j["results"]
assert "still the stub?" in j["results"][0]["diagnosis"]' "$j"
summary
