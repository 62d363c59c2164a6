#!/usr/bin/env bash
# tests/check_quiet_build.sh — the build prints one short line a file
# ("CXX common.cpp", "LINK build/run"), as the Linux kernel's does, not the
# compiler's full command; `make V=1` prints the full commands, `make -s`
# nothing. Builds one small object and one generated file into a fresh
# folder each way.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
unset MAKEFLAGS MFLAGS MAKELEVEL  # as typed in a shell, whatever make runs this check
T=$(mktemp -d build/quiet.XXXXXX)
trap 'rm -rf "$T"' EXIT
targets() { echo "$1/common.o $1/serve_page.inc"; }

make --no-print-directory BUILD="$T/q" $(targets "$T/q") >"$T/q.out" 2>&1
check_eq "the default build: one short line a file" "$(printf 'CXX common.cpp\nGEN %s/q/serve_page.inc' "$T")" "$(cat "$T/q.out")"
make --no-print-directory BUILD="$T/v" V=1 $(targets "$T/v") >"$T/v.out" 2>&1
grep -q -- "-std=c++17 .* -c -o $T/v/common.o common.cpp" "$T/v.out" && ! grep -q "^CXX " "$T/v.out"
check "make V=1: the full compiler command, no short line" $?
make -s --no-print-directory BUILD="$T/s" $(targets "$T/s") >"$T/s.out" 2>&1
check_eq "make -s: nothing" "" "$(cat "$T/s.out")"
[ -f "$T/q/common.o" ] && [ -f "$T/v/common.o" ] && [ -f "$T/s/common.o" ]
check "each way built the object" $?
summary
