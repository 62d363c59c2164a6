#!/usr/bin/env bash
# Decode cost per token as CPU time, Lantern against llama.cpp's llama-bench
# on the same GGUF file, one thread each (book/16-gguf-quantization.md).
#   tools/decode_cpu_time.sh FILE.gguf... (REPS=3, LLAMA=build/llama.cpp/bin/llama-bench)
# Wall-clock tok/s on a machine other programs share mostly measures how
# often the scheduler ran the benchmark; the CPU time it used does not count
# the waiting. Each side runs twice with different amounts of decoding and
# the difference is divided by the extra tokens, so loading the file,
# warming up and the prompt cancel out:
#   llama-bench -p 0 -n 64, -r 1 against -r 3:        128 more tokens
#   ./run FILE "Once upon a time" -t 0, -n 16 against -n 80: 64 more tokens
# The median of REPS such pairs is printed (ms of CPU per token), and the
# ratio llama.cpp / Lantern (above 1: Lantern uses less CPU per token).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
LLAMA=${LLAMA:-build/llama.cpp/bin/llama-bench}
[ $# -ge 1 ] || { echo "usage: tools/decode_cpu_time.sh FILE.gguf..." >&2; exit 1; }
[ -x "$LLAMA" ] || { echo "error: $LLAMA is not built (bash tools/build_llama_bench.sh)" >&2; exit 1; }
command -v perf >/dev/null || { echo "error: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu_ms() {  # command...: CPU milliseconds it used
    perf stat -x, -e task-clock -o "$tmp/stat" "$@" >/dev/null 2>&1
    grep task-clock "$tmp/stat" | cut -d, -f1
}
echo "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), 1 thread; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-28s %14s %14s %8s\n" file "llama ms/tok" "Lantern ms/tok" ratio
for f in "$@"; do
    [ -f "$f" ] || { echo "error: $f: no such file" >&2; exit 1; }
    l=() w=()
    for _ in $(seq "$REPS"); do
        a=$(cpu_ms "$LLAMA" -m "$f" -t 1 -p 0 -n 64 -r 1) b=$(cpu_ms "$LLAMA" -m "$f" -t 1 -p 0 -n 64 -r 3)
        c=$(cpu_ms ./run "$f" "Once upon a time" -n 16 -t 0 --threads 1)
        d=$(cpu_ms ./run "$f" "Once upon a time" -n 80 -t 0 --threads 1)
        l+=("$(echo "($b - $a) / 128" | bc -l)") w+=("$(echo "($d - $c) / 64" | bc -l)")
    done
    median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    lm=$(median "${l[@]}") wm=$(median "${w[@]}")
    printf "%-28s %14.2f %14.2f %7.2fx\n" "$(basename "$f")" "$lm" "$wm" "$(echo "$lm / $wm" | bc -l)"
done
