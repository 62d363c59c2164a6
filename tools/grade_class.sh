#!/usr/bin/env bash
# tools/grade_class.sh — run a class's submissions through the exercise checkers, write a CSV.
#
#   bash tools/grade_class.sh SUBMISSIONS OUT.csv
#
# SUBMISSIONS holds one folder per student, and in it one folder per exercise
# (its name as in `make exercise`), holding the student's stub.cpp:
#
#   SUBMISSIONS/ada/rmsnorm/stub.cpp
#   SUBMISSIONS/ada/rope/stub.cpp
#   SUBMISSIONS/grace/rmsnorm/stub.cpp
#
# Each stub is built into the engine in place of the real function, exactly
# as `make exercise EX=NAME STUB=...` does, and its checker runs with --json.
# OUT.csv gets one row per submission:
#
#   student,exercise,points,max,groups_passed,groups,status
#
# points and max are the checker's (a group is worth 1, a whole-model group
# 2; max is what the engine's own function earns); status is pass, not yet,
# crash (the case it crashed in), build error (the compiler's first error),
# timeout, or malformed (what is wrong with the folder). Every build's full
# output is kept in OUT.logs/STUDENT.EXERCISE.log. A malformed submission
# also gets one line on stderr; the exit status is 1 when there was one,
# else 0, whatever the grades.
set -u
cd "$(dirname "$0")/.."
[ $# = 2 ] || { echo "usage: bash tools/grade_class.sh SUBMISSIONS_DIR OUT.csv"; exit 2; }
subs=$1 out=$2
case $subs in /*) ;; *) subs=$OLDPWD/$subs ;; esac
case $out in /*) ;; *) out=$OLDPWD/$out ;; esac
[ -d "$subs" ] || { echo "grade_class: $1: no such folder"; exit 2; }
[ -f models/tiny/model.safetensors ] || { echo "grade_class: models/tiny is missing: run make models"; exit 2; }
logs=${out%.csv}.logs
mkdir -p "$logs" || exit 2
LIMIT=${GRADE_TIMEOUT:-600}   # seconds one build and check may take

# The exercises build_exercise.sh knows: the first word of each line of its table.
exercises=$(sed -n '/^table="/,/^"/p' chapters/build_exercise.sh | awk 'NF > 1 { print $1 }')
# The Makefile's compiler, flags and objects, asked once (build_exercise.sh would ask per run).
var() { make -s --no-print-directory --eval "lantern-print-var: ; @echo \$($1)" lantern-print-var; }
export CXX=${CXX:-$(var CXX)} CXXFLAGS=${CXXFLAGS:-$(var CXXFLAGS)} LDLIBS=${LDLIBS:-$(var LDLIBS)}
export OBJS=${OBJS:-$(var ENGINE_OBJS)}

# field NAME < json: one value of the checker's JSON ("" when absent or null).
field() { /usr/bin/python3 -c 'import json, sys
try: v = json.loads(sys.stdin.read()).get(sys.argv[1])
except ValueError: v = None
print("" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$1"; }
# A CSV field: quoted when it holds a comma or a quote.
csv() { case $1 in *[,\"]*) printf '"%s"' "${1//\"/\"\"}" ;; *) printf '%s' "$1" ;; esac; }
row() { local IFS=; echo "$(csv "$1"),$(csv "$2"),$3,$4,$5,$6,$(csv "$7")" >>"$out.tmp"; }

bad=0
malformed() {  # student exercise why
    echo "grade_class: $3" >&2
    row "$1" "$2" 0 "" "" "" "malformed: $3"
    bad=1
}

# The most each exercise can earn: what the engine's own function earns (once per exercise).
declare -A max groups
reference() {
    local ex=$1 j
    [ -n "${max[$ex]:-}" ] && return
    j=$(timeout "$LIMIT" bash chapters/build_exercise.sh "$ex" --solution --json 2>"$logs/reference.$ex.log")
    max[$ex]=$(field points_possible <<<"$j")
    groups[$ex]=$(field groups <<<"$j")
    [ -n "${max[$ex]}" ] || { echo "grade_class: the reference of $ex did not run: see $logs/reference.$ex.log"; exit 1; }
}

echo "student,exercise,points,max,groups_passed,groups,status" >"$out.tmp"
n=0
for sdir in "$subs"/*; do
    [ -e "$sdir" ] || { echo "grade_class: $1 is empty" >&2; bad=1; break; }
    student=$(basename "$sdir")
    if [ ! -d "$sdir" ]; then
        malformed "$student" "" "$sdir: a file where a student's folder belongs (SUBMISSIONS/STUDENT/EXERCISE/stub.cpp)"
        continue
    fi
    [[ $student =~ ^[A-Za-z0-9._-]+$ ]] || { malformed "$student" "" "$sdir: a student's folder name is letters, digits, '.', '_' and '-'"; continue; }
    found=0
    for edir in "$sdir"/*; do
        [ -e "$edir" ] || break
        found=1
        ex=$(basename "$edir")
        if [ ! -d "$edir" ]; then malformed "$student" "$ex" "$edir: a file where an exercise's folder belongs"; continue; fi
        if ! grep -qx -- "$ex" <<<"$exercises"; then
            malformed "$student" "$ex" "$edir: no exercise is named '$ex' (make exercise lists them)"; continue
        fi
        if [ ! -f "$edir/stub.cpp" ]; then malformed "$student" "$ex" "$edir: no stub.cpp in it"; continue; fi
        reference "$ex"
        log=$logs/$student.$ex.log
        j=$(STUB="$edir/stub.cpp" timeout "$LIMIT" bash chapters/build_exercise.sh "$ex" --json 2>"$log"); rc=$?
        echo "$j" >>"$log"
        points=$(field points <<<"$j") passed=$(field groups_passed <<<"$j")
        if [ $rc = 124 ]; then status="timeout after $LIMIT s"; points=0 passed=0
        elif [ -z "$points" ]; then
            status="build error: $(grep -m1 -E 'error:|undefined reference|multiple definition' "$log" | sed "s|$edir/||" | cut -c1-160)"
            points=0 passed=0
        elif [ -n "$(field crash <<<"$j")" ]; then status="crash during: $(field crash <<<"$j")"
        elif [ "$(field passed <<<"$j")" = true ]; then status=pass
        else status="not yet"; fi
        row "$student" "$ex" "$points" "${max[$ex]}" "$passed" "${groups[$ex]}" "$status"
        n=$((n + 1))
        echo "graded $student $ex: $points of ${max[$ex]} ($status)"
    done
    [ $found = 1 ] || malformed "$student" "" "$sdir: no exercise folders in it (SUBMISSIONS/STUDENT/EXERCISE/stub.cpp)"
done
mv "$out.tmp" "$out"
echo "grade_class: $n submissions graded -> $out (logs in $logs)"
exit $bad
