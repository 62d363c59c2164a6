#!/usr/bin/env bash
# chapters/build_exercise.sh — build one exercise into the engine and run its checker.
#
#   make exercise EX=rmsnorm              your chapters/rmsnorm/stub.cpp
#   make exercise EX=rmsnorm SOLUTION=1   the engine's own rmsnorm in its place (must pass)
#
# (or: bash chapters/build_exercise.sh rmsnorm [--solution], after `make`)
#
# How a student's function gets into the engine. Say the exercise replaces
# function f, which lives in the engine file src.cpp. Four objects are built
# in build/exercise/, and linked with every other object of build/:
#
#   src.engine.o  src.cpp compiled with -fPIC. Position-independent code has
#                 to let another definition of a function win (a shared
#                 library may be overridden), so the compiler stops inlining
#                 f into its callers in src.cpp: every call really goes to
#                 "the symbol f". objcopy then makes that f *weak*, a default
#                 the linker drops as soon as a normal f exists.
#   reference.o   src.cpp compiled with -Df=f_reference: the engine's own f,
#                 renamed so it can sit next to yours. Everything else in it
#                 is made weak, so this second copy of src.cpp loses every
#                 name clash against src.engine.o.
#   student.o     your stub.cpp compiled with -Df=f_student. With --solution
#                 it is reference.o with f_reference renamed to f_student:
#                 the real code, standing where yours would.
#   checker.o     chapters/NAME/checker.cpp. It defines f itself, forwarding
#                 to f_reference or f_student, so it can compare the two on
#                 the same inputs and run the whole engine once with each.
set -euo pipefail
cd "$(dirname "$0")/.."

# The exercises: NAME  engine file  functions the student writes.
table="
safetensors  model.cpp      parse_safetensors
rmsnorm      kernels.cpp    rmsnorm
rope         kernels.cpp    apply_rope
attention    kernels.cpp    attention_head
bpe          tokenizer.cpp  bpe_word
rng          sampler.cpp    rng_next rng_uniform sample_roulette
top-p        sampler.cpp    apply_top_p
"
usage() {
    echo "usage: make exercise EX=NAME [SOLUTION=1]     NAME is one of:"
    echo "$table" | awk 'NF { printf "    %-12s %s (%s)\n", $1, $2, substr($0, index($0, $3)) }'
    exit 2
}
ex=${1:-}
solution=0
[ "${2:-}" = --solution ] && solution=1
line=$(echo "$table" | awk -v ex="$ex" '$1 == ex')
[ -n "$ex" ] && [ -n "$line" ] || usage
read -r _ src funcs <<<"$line"
base=${src%.cpp}

# The compiler, flags, libraries and engine objects are the Makefile's
# (`make exercise` passes them); asked from make when run by hand.
var() { make -s --no-print-directory --eval "lantern-print-var: ; @echo \$($1)" lantern-print-var; }
CXX=${CXX:-$(var CXX)}
CXXFLAGS=${CXXFLAGS:-$(var CXXFLAGS)}
LDLIBS=${LDLIBS:-$(var LDLIBS)}
OBJS=${OBJS:-$(var ENGINE_OBJS) build/run_lib.o}
for o in $OBJS; do
    [ -f "$o" ] || { echo "build_exercise: $o is missing: run make first"; exit 1; }
done

dir=build/exercise/$ex
mkdir -p "$dir"
headers=$(ls *.h chapters/*.h)
# stale OUT INPUTS...: true when OUT is missing or older than an input.
stale() {
    local out=$1; shift
    [ -f "$out" ] || return 0
    for f in "$@"; do [ "$f" -nt "$out" ] && return 0; done
    return 1
}
# A C++ function's name in the object file: _Z, the name's length, the name,
# then the argument types. mangled PREFIX lists the symbols starting so.
mangled() { nm --defined-only "$1" | awk '{ print $3 }' | grep "^_Z${#2}$2" || true; }

echo "== exercise $ex: $funcs (from $src)"

# 1. The engine's file, f weak. Shared by the exercises of one file.
engine=build/exercise/$base.engine.o
if stale "$engine" "$src" $headers; then
    echo "   compiling $src (-fPIC)"
    $CXX $CXXFLAGS -fPIC -I. -c -o "$engine.tmp" "$src"
    mv "$engine.tmp" "$engine"
fi
weakened=$dir/$base.engine.o
weaken=()
for f in $funcs; do weaken+=(--weaken-symbol="_Z${#f}$f*"); done
objcopy --wildcard "${weaken[@]}" "$engine" "$weakened"

# 2. The reference: f renamed f_reference, everything else weak.
ref=$dir/reference.o
if stale "$ref" "$src" $headers; then
    echo "   compiling $src as the reference"
    renames=()
    for f in $funcs; do renames+=("-D$f=${f}_reference"); done
    $CXX $CXXFLAGS -I. "${renames[@]}" -c -o "$ref.tmp" "$src"
    objcopy --weaken "$ref.tmp" "$ref"
    rm -f "$ref.tmp"
fi

# 3. The student: the stub, or the reference under the student's names.
student=$dir/student.o
if [ $solution = 1 ]; then
    redefine=()
    for f in $funcs; do
        for sym in $(mangled "$ref" "${f}_reference"); do
            rest=${sym#"_Z$(( ${#f} + 10 ))${f}_reference"}   # the argument types
            redefine+=(--redefine-sym "$sym=_Z$(( ${#f} + 8 ))${f}_student$rest")
        done
    done
    objcopy "${redefine[@]}" "$ref" "$student"
    echo "   SOLUTION=1: the engine's own $funcs stand in for the stub"
else
    stub=chapters/$ex/stub.cpp
    renames=()
    for f in $funcs; do renames+=("-D$f=${f}_student"); done
    echo "   compiling $stub"
    $CXX $CXXFLAGS -I. "${renames[@]}" -c -o "$student" "$stub"
fi

# 4. The checker, and the link.
checker=$dir/checker.o
if stale "$checker" "chapters/$ex/checker.cpp" $headers; then
    echo "   compiling chapters/$ex/checker.cpp"
    $CXX $CXXFLAGS -I. -c -o "$checker" "chapters/$ex/checker.cpp"
fi
others=$(for o in $OBJS; do [ "$o" = "build/$base.o" ] || echo "$o"; done)
$CXX $CXXFLAGS -o "$dir/check" "$checker" "$student" "$ref" "$weakened" $others $LDLIBS

echo "== running the checker"
exec "$dir/check"
