#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# tests/check_portable_build.sh — the build is not tied to GCC on Debian.
#
# Builds the engine and the unit tests with clang++ in build/clang, through
# the Makefile's macOS branch: BREW_PREFIX points at a Homebrew-shaped
# folder (include/, lib/ with cpp-httplib, opt/libomp/ with LLVM's OpenMP
# runtime), so the flags a Mac gets -- -Xpreprocessor -fopenmp -lomp, the
# prefix's include and lib folders -- compile and link here. Then:
#   1. the unit tests pass in the clang build;
#   2. a greedy generation gives the same token ids as the GCC build;
#   3. a CXXFLAGS given on the command line adds to the required flags
#      (the build still says -std=c++17).
# (OpenMP off, compat/omp.h, is built by tests/check_arm64.sh.)
set -u
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "FAIL: clang++ missing (make deps)"; exit 1; }
[ -x ./run ] && [ -f models/tiny/model.safetensors ] || { echo "FAIL: needs ./run and models/tiny (make && make models)"; exit 1; }
omp_h=$(ls /usr/lib/llvm-*/lib/clang/*/include/omp.h 2>/dev/null | head -1)
omp_so=$(ls /usr/lib/llvm-*/lib/libomp.so 2>/dev/null | head -1)
httplib=$(ls /usr/lib/*/libcpp-httplib.so 2>/dev/null | head -1)
[ -n "$omp_h" ] && [ -n "$omp_so" ] && [ -n "$httplib" ] || { echo "FAIL: needs libomp-dev and libcpp-httplib-dev (make deps)"; exit 1; }

B=build/clang
brew=$B/brew-prefix
rm -rf "$brew"
mkdir -p "$brew/include" "$brew/lib" "$brew/opt/libomp/include" "$brew/opt/libomp/lib"
ln -s "$httplib" "$brew/lib/"
ln -s "$omp_h" "$brew/opt/libomp/include/omp.h"
ln -s "$omp_so" "$brew/opt/libomp/lib/libomp.so"
. tests/lib.sh

start=$(date +%s)
nice make --no-print-directory V=1 CXX=clang++ BUILD=$B BREW_PREFIX="$PWD/$brew" CXXFLAGS="-O2" \
    $B/run $B/unit_tests >$B.log 2>&1
rc=$?
[ $rc = 0 ] || tail -20 $B.log
check "clang++ builds ./run and the unit tests through the Homebrew layout ($(( $(date +%s) - start )) s)" $rc
grep -q -- "-Xpreprocessor -fopenmp" $B.log && grep -q -- "-lomp" $B.log && grep -q -- "-std=c++17.*-O2" $B.log
check "the macOS flags were used (-Xpreprocessor -fopenmp, -lomp), CXXFLAGS=-O2 added after -std=c++17" $?
export LD_LIBRARY_PATH="$(dirname "$omp_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ $rc = 0 ]; then
    $B/unit_tests --no-version >$B.unit.log 2>&1
    rc=$?
    [ $rc = 0 ] || tail -20 $B.unit.log
    check "unit tests in the clang build: $(grep -o 'test cases:.*' $B.unit.log | head -1)" $rc
    ids() { "$1" models/tiny "In the beginning" --no-gen-config -n 24 --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])'; }
    a=$(ids ./run) b=$(ids $B/run)
    [ -n "$a" ] && [ "$a" = "$b" ]
    check "greedy ids from the clang build equal the GCC build's" $?
fi
summary
