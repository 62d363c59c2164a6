#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# The SIMD kernel files compile whatever the machine running the tests has:
#   1. cpu/x86/kernels_avx512.cpp with the explicit flags -mavx512f -mavx512bw
#      -mavx512vl -mavx512bf16 -mavx512vnni (on a baseline x86-64 target),
#      and the object holds what the file promises: 512-bit FMAs (zmm),
#      f16 widening and bf16 dot products (vdpbf16ps); quants_fast.cpp and
#      quants_packed.cpp with the same flags plus AVX2's, and their objects
#      hold the integer products' VNNI vpdpbusd on zmm (each is compiled for what
#      the flags say, so this is how its AVX-512 path is built at all);
#   2. kernels_avx512.cpp and kernels_avx2.cpp with no instruction-set flags
#      at all (-march=x86-64): their functions carry their own targets, so a
#      build for an old CPU still contains them (kernels_init picks them only
#      where cpuid reports them);
#   3. kernels_fast.cpp likewise, so the scalar twin builds everywhere.
# Skipped (reported) on a non-x86-64 machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(uname -m)" != x86_64 ]; then echo "skipped: not an x86-64 machine"; exit 77; fi
command -v objdump >/dev/null || { echo "skipped: objdump (binutils) is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CXX=${CXX:-g++}
base="-O2 -std=c++17 -Wall -Wextra -Wno-unused-parameter -fopenmp -march=x86-64 -I."
status=0
$CXX $base -mavx512f -mavx512bw -mavx512vl -mavx512bf16 -mavx512vnni -c cpu/x86/kernels_avx512.cpp -o $tmp/a.o
dis=$(objdump -d --no-show-raw-insn $tmp/a.o)
for insn in "vfmadd[0-9]*ps.*zmm" "vcvtph2ps.*zmm" "vdpbf16ps.*zmm"; do
    if grep -qE "$insn" <<<"$dis"; then echo "ok: explicit AVX-512 flags: kernels_avx512.o has $insn"
    else echo "FAIL: explicit AVX-512 flags: no $insn in kernels_avx512.o"; status=1; fi
done
# The block formats' tiles live in the ISA files and carry their targets:
# built for a baseline x86-64, without any -m flag, they are still there.
$CXX $base -c cpu/x86/quants_avx512.cpp -o $tmp/q.o
if grep -qE "vpdpbusd.*zmm" <<<"$(objdump -d --no-show-raw-insn $tmp/q.o)"; then
    echo "ok: baseline x86-64: quants_avx512.o has the block formats' vpdpbusd.*zmm"
else echo "FAIL: baseline x86-64: no vpdpbusd.*zmm in quants_avx512.o"; status=1; fi
$CXX $base -c cpu/x86/quants_avx2.cpp -o $tmp/q.o
if grep -qE "vpmaddubsw.*ymm" <<<"$(objdump -d --no-show-raw-insn $tmp/q.o)"; then
    echo "ok: baseline x86-64: quants_avx2.o has the block formats' vpmaddubsw.*ymm"
else echo "FAIL: baseline x86-64: no vpmaddubsw.*ymm in quants_avx2.o"; status=1; fi
for f in cpu/quants_fast.cpp cpu/quants_packed.cpp; do
    if $CXX $base -c $f -o $tmp/q.o && ! grep -qE "ymm|zmm" <<<"$(objdump -d --no-show-raw-insn $tmp/q.o)"; then
        echo "ok: $f (the drivers) compiles for baseline x86-64 and selects no SIMD code itself"
    else echo "FAIL: $f does not compile for baseline x86-64, or uses AVX registers"; status=1; fi
done
for f in cpu/x86/kernels_avx512.cpp cpu/x86/kernels_avx2.cpp cpu/x86/quants_avx512.cpp cpu/x86/quants_avx2.cpp cpu/kernels_fast.cpp; do
    if $CXX $base -c $f -o $tmp/b.o; then echo "ok: $f compiles for baseline x86-64 (no -m flags)"
    else echo "FAIL: $f does not compile for baseline x86-64"; status=1; fi
done
if grep -qE "ymm|zmm" <<<"$(objdump -d --no-show-raw-insn $tmp/b.o)"; then
    echo "FAIL: kernels_fast.cpp for baseline x86-64 uses AVX registers"; status=1
else echo "ok: the scalar twin for baseline x86-64 uses no AVX instruction"; fi
exit $status
