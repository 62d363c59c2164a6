#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-batched-bench natively for this
# machine, once, under build/llama.cpp, so `./run bench` (and the serving
# benchmark) can measure it beside Lantern in the same run on the same
# weights. llama.cpp is never a runtime dependency: without
# this binary the bench column says "not measured".
#
# The source comes from the npm package node-llama-cpp (pinned 3.21.1), which
# ships llama.cpp's source as a git bundle. About 3.5 minutes on 2 cores.
#   bash tools/build_llama_bench.sh        -> build/llama.cpp/bin/llama-bench, llama-batched-bench
#   bash tools/build_llama_bench.sh avx2   -> build/llama.cpp-avx2/bin/...: built for AVX2 + FMA + F16C
#       only, whatever this CPU has, to set beside `./run bench --kernels avx2` (the AVX2 code of both
#       engines on one machine; an AVX2-only CPU also differs in clock, caches and bandwidth)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/llama.cpp
ISA=(-DGGML_NATIVE=ON)
case "${1:-native}" in
    native) ;;
    avx2) OUT=build/llama.cpp-avx2
          ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF) ;;
    *) echo "build_llama_bench: unknown build '$1' (native or avx2)" >&2; exit 1 ;;
esac
# Built without AMX, the matrix tiles of Intel's Xeons since 2023: on such a
# VM llama.cpp's AMX Q8_0 kernel stopped with "Illegal instruction" (its
# first tileloadd) on the first quantized prefill, so llama-bench measured
# nothing. Without it llama.cpp runs its AVX-512 code, the instructions
# Lantern uses too. (An explicit -mno-amx-* wins over -march=native.)
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
    ISA+=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
fi
BIN=$OUT/bin/llama-bench
if [ -x "$BIN" ] && [ -x "$OUT/bin/llama-batched-bench" ]; then echo "$BIN (already built)"; exit 0; fi
for tool in git cmake npm; do
    command -v $tool >/dev/null || { echo "build_llama_bench: '$tool' is not installed" >&2; exit 1; }
done
mkdir -p "$OUT"
NPM=build/llama.cpp/npm  # one copy of the source package for both builds
BUNDLE=$NPM/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -f "$BUNDLE" ]; then
    echo "fetching node-llama-cpp@3.21.1 from npm (its source bundle) ..."
    mkdir -p "$NPM"
    (cd "$NPM" && npm i -E --no-save --no-audit --no-fund --ignore-scripts node-llama-cpp@3.21.1 >/dev/null)
fi
[ -f "$BUNDLE" ] || { echo "build_llama_bench: $BUNDLE missing after npm install" >&2; exit 1; }
rm -rf "$OUT/src"
git clone -q "$BUNDLE" "$OUT/src"
cmake -S "$OUT/src" -B "$OUT/cmake" -DCMAKE_BUILD_TYPE=Release "${ISA[@]}" -DGGML_OPENMP=ON \
      -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
nice cmake --build "$OUT/cmake" --target llama-bench llama-batched-bench -j "${JOBS:-2}" >/dev/null
mkdir -p "$OUT/bin"
cp "$OUT/cmake/bin/llama-bench" "$OUT/cmake/bin/llama-batched-bench" "$OUT/bin/"
# llama-bench links llama.cpp's shared libraries; keep them beside it.
cp -P "$OUT"/cmake/bin/*.so* "$OUT/bin/" 2>/dev/null || true
echo "$BIN"
