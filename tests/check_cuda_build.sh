#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# The CUDA backend compiles and links, on any machine with nvcc, GPU or not,
# so it never rots: cuda/kernels_cuda.cu through nvcc, cuda/net_cuda.cpp and
# tests/test_cuda.cpp with -DLANTERN_CUDA (the rules and flags of `make
# cuda`, objects in build/cuda), linked with the CPU build's other objects
# and the static CUDA runtime into build/cuda/check_tests. Its cuda:* cases
# must pass; without a device they skip, saying so. Without nvcc: skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || NVCC=$(command -v nvcc || true)
if [ -z "$NVCC" ]; then
    echo "skipped: no nvcc"
    exit 77
fi
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
cuda_vars=(BUILD=build/cuda LANTERN_CUDA=1 NVCC="$NVCC" CUDA_HOME="$CUDA_HOME")

# A Makefile variable's value, so this script repeats no flags or file lists.
var() { make -s --no-print-directory --eval='print-%: ; @echo $($*)' "$@"; }

cuda_objs=(build/cuda/cuda/kernels_cuda.o build/cuda/cuda/net_cuda.o build/cuda/tests/test_cuda.o)
cpu_objs=()
for o in $(var print-ENGINE_OBJS) $(var print-TEST_OBJS); do
    case "$o" in build/cuda/net_cuda.o | build/tests/test_cuda.o) ;; *) cpu_objs+=("$o") ;; esac
done
make --no-print-directory "${cpu_objs[@]}"
make --no-print-directory "${cuda_vars[@]}" "${cuda_objs[@]}"
# shellcheck disable=SC2046  # the flags are meant to split into words
$(var print-CXX) $(var print-CXXFLAGS) -o build/cuda/check_tests "${cuda_objs[@]}" "${cpu_objs[@]}" \
    $(var "${cuda_vars[@]}" print-LDLIBS)
echo "linked build/cuda/check_tests with $("$NVCC" --version | tail -1)"

build/cuda/check_tests --no-version -tc='cuda:*'
