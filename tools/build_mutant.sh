#!/usr/bin/env bash
# Builds a copy of ./run with one planted bug, for debugging practice (book chapter 10):
#
#   tools/build_mutant.sh NAME SOURCE.cpp 'SED EXPRESSION'
#
# The source file is passed through sed into build/mutants/NAME.cpp, compiled
# with the Makefile's own compiler and flags, and linked with every other
# object `make` already built (so run `make` first) and the Makefile's
# libraries, into build/mutants/run-NAME. The real source is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then echo "usage: tools/build_mutant.sh NAME SOURCE.cpp 'SED EXPRESSION'"; exit 2; fi
name=$1 src=$2 expr=$3
dir=build/mutants
mkdir -p "$dir"
[ -f build/main.o ] || { echo "build_mutant: no build/main.o: run make first"; exit 1; }
# Ask make for a variable's value, so the flags and libraries stay the Makefile's.
var() { make -s --no-print-directory --eval "lantern-print-var: ; @echo \$($1)" lantern-print-var; }
CXX=$(var CXX) CXXFLAGS=$(var CXXFLAGS) LDLIBS=$(var LDLIBS)
sed "$expr" "$src" > "$dir/$name.cpp"
if cmp -s "$src" "$dir/$name.cpp"; then echo "build_mutant: the sed expression changed nothing in $src"; exit 1; fi
$CXX $CXXFLAGS -I. -c -o "$dir/$name.o" "$dir/$name.cpp"
objs=$(for o in $(var ENGINE_OBJS) build/main.o; do [ "$o" = "build/${src%.cpp}.o" ] || echo "$o"; done)
$CXX $CXXFLAGS -o "$dir/run-$name" "$dir/$name.o" $objs $LDLIBS
echo "built $dir/run-$name: $src with the change"
diff "$src" "$dir/$name.cpp" | sed -n 's/^[<>] */  &/p' || true
