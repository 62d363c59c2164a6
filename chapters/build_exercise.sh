#!/usr/bin/env bash
# chapters/build_exercise.sh — build one exercise into the engine and run its checker.
#
#   make exercise EX=rmsnorm              your chapters/rmsnorm/stub.cpp
#   make exercise EX=rmsnorm SOLUTION=1   the engine's own rmsnorm in its place (must pass)
#   make exercise EX=rmsnorm JSON=1       the checker's result as one JSON object on stdout
#                                         (the build's lines go to stderr): tools/grade_class.sh
# make exercise ends on the checker's verdict, with status 0 after NOT YET
# (--verdict); the checker itself, --json and tools/grade_class.sh exit 1.
#
# (or: bash chapters/build_exercise.sh rmsnorm [--solution] [--json], after `make`)
#
# How a student's function gets into the engine. Say the exercise replaces
# function f, which lives in the engine file src.cpp. src.cpp is compiled
# once, with -fPIC: position-independent code must let another definition
# of a function win (a shared library can be overridden), so the compiler
# does not inline f into its callers in src.cpp — every call really goes to
# "the symbol f", which the linker can point elsewhere. Then objcopy, which
# edits the symbol table of an object file, makes the copies that are
# linked with every other object of build/:
#
#   src.engine.o   f made *weak*: a default the linker drops as soon as a
#                  normal f exists. The rest of src.cpp is the engine's.
#   reference.o    f renamed f_reference, everything else weak (so this
#                  second copy of src.cpp loses every clash to the first).
#   student.o      your stub.cpp, with f renamed f_student. With
#                  --solution: reference.o with f renamed f_student instead,
#                  the real code standing where yours would.
#   checker.o      chapters/NAME/checker.cpp. It defines f itself, forwarding
#                  to f_reference or f_student, so it can compare the two on
#                  the same inputs and run the whole engine once with each.
#
# A C++ name in an object file is "mangled": _Z, the length of the name,
# the name, then the argument types (rmsnorm(float*, ...) is
# _Z7rmsnormPfPKfS1_if). Renaming f to f_student is rewriting that prefix.
set -euo pipefail
cd "$(dirname "$0")/.."

# The exercises: NAME  engine file  functions the student writes.
table="
safetensors  model.cpp            parse_safetensors
rmsnorm      kernels.cpp          rmsnorm
rope         kernels.cpp          apply_rope
attention    kernels.cpp          attention_head_plain
bpe          tokenizer.cpp        bpe_word
rng          sampler.cpp          rng_next rng_uniform sample_roulette
top-p        sampler.cpp          apply_top_p
q8_0         kernels.cpp          quantize_row_q8_0
tiled-matmul kernels.cpp          matmul_plain
layer        net.cpp              decoder_layer
scheduler    serve/scheduler.cpp  plan_step
q4           gguf/quants.cpp      dequantize_block_q4_0 dequantize_block_q4_k
watch        logging.cpp          stats_add mean_row_entropy_bits
bug-hunt     kernels.cpp          softmax swiglu vec_dot_plain vec_axpy_plain
cuda-rope    kernels.cpp          apply_rope
family       arch.cpp             arch_by_model_type
rope-hard    kernels.cpp          apply_rope
attention-hard kernels.cpp        attention_head_plain
bpe-hard     tokenizer.cpp        bpe_word
lens         lens/lens.cpp        lens_layer
"
usage() {
    echo "usage: make exercise EX=NAME [SOLUTION=1]     NAME is one of:"
    echo "$table" | awk 'NF { f = $3; for (i = 4; i <= NF; i++) f = f " " $i; printf "    %-12s %s: %s\n", $1, $2, f }'
    exit 2
}
ex=${1:-}
solution=0 json=0 verdict=0
for a in "${@:2}"; do
    case $a in
        --solution) solution=1 ;;
        --json) json=1 ;;
        --verdict) verdict=1 ;;  # make exercise: NOT YET is an answer, not a failed run (below)
        *) echo "build_exercise: unknown option '$a' (--solution, --json, --verdict)"; exit 2 ;;
    esac
done
# With --json, stdout carries the checker's JSON alone: the build talks on stderr.
[ $json = 1 ] && exec 3>&1 1>&2
line=$(echo "$table" | awk -v ex="$ex" '$1 == ex')
[ -n "$ex" ] && [ -n "$line" ] || usage
read -r _ src funcs <<<"$line"
base=${src%.cpp}
stem=$(basename "$base")  # the engine file's name without its folder

# The compiler, flags, libraries and engine objects are the Makefile's
# (`make exercise` passes them); asked from make when run by hand.
var() { make -s --no-print-directory --eval "lantern-print-var: ; @echo \$($1)" lantern-print-var; }
CXX=${CXX:-$(var CXX)}
CXXFLAGS=${CXXFLAGS:-$(var CXXFLAGS)}
LDLIBS=${LDLIBS:-$(var LDLIBS)}
OBJS=${OBJS:-$(var ENGINE_OBJS)}
for o in $OBJS; do
    [ -f "$o" ] || { echo "build_exercise: $o is missing: run make first"; exit 1; }
done

dir=build/exercise/$ex
mkdir -p "$dir"
headers=$(ls *.h */*.h chapters/$ex/*.h 2>/dev/null || true)  # an exercise may have a header of its own
# stale OUT INPUTS...: true when OUT is missing or older than an input.
stale() {
    local out=$1; shift
    [ -f "$out" ] || return 0
    for f in "$@"; do [ "$f" -nt "$out" ] && return 0; done
    return 1
}
# renamed SUFFIX OBJECT: objcopy options renaming each f defined in OBJECT
# to f + SUFFIX (the argument types after the name stay as they are).
renamed() {
    local f sym
    for f in $funcs; do
        for sym in $(nm --defined-only "$2" | awk '{ print $3 }' | grep "^_Z${#f}$f" || true); do
            echo "--redefine-sym=$sym=_Z$(( ${#f} + ${#1} ))$f$1${sym#"_Z${#f}$f"}"
        done
    done
}

echo "== exercise $ex: $funcs (from $src)"

# The engine's file, compiled once (shared by the exercises of one file),
# and its three copies.
pic=build/exercise/$stem.pic.o
if [ -f "chapters/reference/$base.o" ]; then
    # A student pack (make student-pack): $src holds the stubs; the real file
    # ships compiled, and that is the reference.
    cp "chapters/reference/$base.o" "$pic"
elif stale "$pic" "$src" $headers; then
    echo "   compiling $src (-fPIC)"
    $CXX $CXXFLAGS -fPIC -I. -c -o "$pic.tmp" "$src"
    mv "$pic.tmp" "$pic"
fi
weaken=()
for f in $funcs; do weaken+=(--weaken-symbol="_Z${#f}$f*"); done
objcopy --wildcard "${weaken[@]}" "$pic" "$dir/$stem.engine.o"
objcopy $(renamed _reference "$pic") --weaken "$pic" "$dir/reference.o"
engine_objs=("$dir/reference.o" "$dir/$stem.engine.o")

if [ $solution = 1 ] && [ -f "tests/data/exercise_solutions/$ex.cpp" ]; then
    # An exercise whose answer the engine does not hold (family: a row the
    # table lacks) has its solution there.
    echo "   SOLUTION=1: tests/data/exercise_solutions/$ex.cpp stands in for the stub"
    STUB=tests/data/exercise_solutions/$ex.cpp solution=0
fi
if [ $solution = 1 ]; then
    echo "   SOLUTION=1: the engine's own $funcs stand in for the stub"
    objcopy $(renamed _student "$pic") --weaken "$pic" "$dir/solution.o"
    student=$dir/solution.o
else
    stub=${STUB:-chapters/$ex/stub.cpp}    # STUB=file: another attempt (tests/check_exercises.sh, grading)
    [ -f "$stub" ] || { echo "build_exercise: $stub: no such file"; exit 2; }
    # The object is named by the stub's content: two students' files of the
    # same name and age never share it.
    stub_o=$dir/stub-$(sha1sum <"$stub" | cut -c1-12).o
    if stale "$stub_o" "$stub" $headers; then
        echo "   compiling $stub"
        $CXX $CXXFLAGS -I. -c -o "$stub_o" "$stub"
    fi
    objcopy $(renamed _student "$stub_o") "$stub_o" "$dir/student.o"
    student=$dir/student.o
fi

# A harder variant (rope-hard) runs its base exercise's checker under its own
# name: its checker.cpp includes ../rope/checker.cpp.
checker=$dir/checker.o
if stale "$checker" "chapters/$ex/checker.cpp" "chapters/${ex%-hard}/checker.cpp" $headers; then
    echo "   compiling chapters/$ex/checker.cpp"
    $CXX $CXXFLAGS -I. -DEXERCISE_NAME="\"$ex\"" -c -o "$checker" "chapters/$ex/checker.cpp"
fi
others=$(for o in $OBJS; do [ "$o" = "build/$base.o" ] || echo "$o"; done)
$CXX $CXXFLAGS -o "$dir/check" "$checker" "$student" "${engine_objs[@]}" $others $LDLIBS

echo "== running the checker"
[ $json = 1 ] && exec "$dir/check" --json >&3
# The checker's status is 1 after NOT YET, for scripts (--json, grade_class.sh
# and the checker binary keep it). Under make, status 1 would add a line
# "make: *** [Makefile:...: exercise] Error 1" after the verdict, which reads
# as a broken build: with --verdict, NOT YET ends the run with status 0.
if [ $verdict = 1 ]; then
    rc=0
    "$dir/check" || rc=$?
    [ $rc = 1 ] && exit 0
    exit $rc
fi
exec "$dir/check"
