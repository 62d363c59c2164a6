#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# Lantern on 64-bit ARM, checked on an x86 machine: cross-compiled with
# Debian's aarch64-linux-gnu-g++ (arm64 libraries through multiarch) and run
# under qemu-aarch64 (user-mode emulation: ARM instructions, this machine's
# kernel). Emulated speed means nothing; only results are checked:
#   1. the unit tests, built for ARMv8.2 + dotprod + fp16 (the NEON kernels
#      with vdotq_s32), all passing under an emulated CPU that has them;
#   2. the kernel cases again with the kernels built for plain ARMv8.0 (no
#      dotprod), on an emulated Cortex-A53, which would fault on a dotprod
#      instruction;
#   3. tests/check_fast_vs_plain.sh with the ARM ./run: fast within the bound
#      of plain, bit-equal to the scalar twin (built without OpenMP, below);
#   4. ARM against x86: the logits of a 40-token forward pass, and a greedy
#      generation of 32 tokens, with the fast kernels on both.
# `make test-arm64` runs it; `make test` too when the tools are installed
# (tools/install_deps.sh installs them); without them it says it skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

CROSS=${CROSS:-aarch64-linux-gnu-g++}
QEMU=${QEMU:-$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)}
if ! command -v "$CROSS" >/dev/null || [ -z "$QEMU" ]; then
    echo "skipped: needs $CROSS and qemu-aarch64 (Debian: g++-aarch64-linux-gnu qemu-user-static)"
    exit 77
fi
if [ ! -e /usr/lib/aarch64-linux-gnu/libutf8proc.so ]; then
    echo "skipped: no arm64 libraries (Debian: dpkg --add-architecture arm64; apt-get install libutf8proc-dev:arm64 libpcre2-dev:arm64 libcpp-httplib-dev:arm64 libedit-dev:arm64)"
    exit 77
fi

# Without OpenMP (compat/omp.h: one thread, the same bits): qemu emulates
# every thread on the host's cores and makes their meetings slow, so several
# threads take several times longer than one. That the result does not
# depend on the thread count is checked on x86.
B=build/arm64
arm=(BUILD=$B CXX="$CROSS" ARCH=-march=armv8.2-a+dotprod+fp16 OPENMP=0)
# A Makefile variable's value, so this script repeats no flags or file lists.
var() { make -s --no-print-directory --eval='print-%: ; @echo $($*)' "$@"; }

echo "== building for aarch64 ($CROSS) into $B"
make --no-print-directory -s all build/unit_tests  # the x86 side, and build/gen_model the tests call
make --no-print-directory -s "${arm[@]}" $B/run $B/unit_tests

# The same tests, the NEON kernels compiled for ARMv8.0: one object again,
# linked with the other arm64 objects.
flags=$(var "${arm[@]}" print-CXXFLAGS | sed 's/-march=armv8.2-a+dotprod+fp16/-march=armv8-a/')
objs=$(var "${arm[@]}" print-ENGINE_OBJS | tr ' ' '\n' | grep -v '/kernels_neon.o$' | tr '\n' ' ')
# shellcheck disable=SC2086  # flag and file lists are meant to split into words
$CROSS $flags -c -o $B/kernels_neon_v80.o cpu/arm/kernels_neon.cpp
# shellcheck disable=SC2086
$CROSS $flags -o $B/unit_tests_v80 $objs $B/kernels_neon_v80.o $(var "${arm[@]}" print-TEST_OBJS) \
    $(var "${arm[@]}" print-LDLIBS)

status=0
echo "== unit tests, ARMv8.2 + dotprod + fp16 (qemu -cpu max)"
if "$QEMU" -cpu max $B/unit_tests --no-version 2>&1 | tail -3; then :; else status=1; fi
# Only cpu/arm/kernels_neon.cpp is built for ARMv8.0 (its code path without vdotq is
# chosen at compile time); the other objects keep ARMv8.2's fp16
# conversions, so the emulated CPU is still one that has them.
echo "== kernel tests, NEON built for ARMv8.0 (no dotprod), on qemu -cpu max"
if "$QEMU" -cpu max $B/unit_tests_v80 --no-version -tc='*matmul*,*Q8_0*,*vec_dot*,*attention*' 2>&1 | tail -3; then :; else status=1; fi

echo "== tests/check_fast_vs_plain.sh with the aarch64 ./run"
RUN="$QEMU -cpu max $B/run" bash tests/check_fast_vs_plain.sh || status=1

echo "== aarch64 against x86-64, fast kernels"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tokens=$(seq 1 40 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 104729) % 151000 }')
for model in models/tiny models/mha; do
    ./run fwd $model --tokens "$tokens" --all --dump $tmp/x86.bin >/dev/null 2>&1
    "$QEMU" -cpu max $B/run fwd $model --tokens "$tokens" --all --dump $tmp/arm.bin >/dev/null 2>&1
    if cmp -s $tmp/x86.bin $tmp/arm.bin; then echo "  ok: $model: logits at 40 positions bit-equal"
    else echo "  FAIL: $model: logits differ between x86-64 and aarch64"; status=1; fi
    gen=(--json -n 32 -t 0 "In the beginning")
    x=$(./run $model "${gen[@]}" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])')
    a=$("$QEMU" -cpu max $B/run $model "${gen[@]}" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])')
    if [ "$x" = "$a" ] && [ "$x" != "[]" ]; then echo "  ok: $model: greedy, 32 tokens, the same ids"
    else echo "  FAIL: $model: greedy ids differ"; echo "    x86   $x"; echo "    arm64 $a"; status=1; fi
done
exit $status
