#!/usr/bin/env bash
# Size, speed and error of each GGUF weight type on one model: the table of
# book/16-gguf-quantization.md.
#   tools/quant_table.sh [MODEL] [TYPES]
#     MODEL  a bf16 model folder (default models/qwen2.5-0.5b)
#     TYPES  ./run convert types (default "bf16 q8_0 q6_k q5_k_m q5_0 q4_k_m q4_0")
#   PROMPT=64 DECODE=16 REPS=1 THREADS=2   what ./run bench measures
#
# For each type: the model written by `./run convert` (build/quant_table/,
# kept between runs); its size; prefill tok/s of a PROMPT-token prompt and
# decode tok/s over DECODE tokens, from `./run bench FILE --quant file` (the
# file's own mix of types); and its error, from tools/variant_error.sh: the
# logits at every position of a 32-token batch against the bf16 folder's, as
# RMSE / std of the bf16 logits (normalized RMSE), and how often the two
# agree on the top token. Speeds move with whatever else runs on the
# machine: the script prints the load average beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/qwen2.5-0.5b}
types=${2:-bf16 q8_0 q6_k q5_k_m q5_0 q4_k_m q4_0}
PROMPT=${PROMPT:-64} DECODE=${DECODE:-16} REPS=${REPS:-1} THREADS=${THREADS:-2}
[ -d "$model" ] || { echo "error: $model: no such model folder" >&2; exit 1; }
out=build/quant_table
mkdir -p $out

echo "model      $model; $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $THREADS threads"
echo "speed      ./run bench FILE --quant file --prompts $PROMPT --decode $DECODE --reps $REPS"
echo "error      logits at 32 positions against the bf16 folder: RMSE / std, top-1 agreement"
echo
printf "%-7s %9s %8s %12s %12s %7s %6s %6s\n" type "file MB" "bits/w" "prefill t/s" "decode t/s" nRMSE top-1 load
params=$(./run info "$model" 2>/dev/null | sed -nE 's/.* ([0-9]+) parameters.*/\1/p' | head -1)
for t in $types; do
    f=$out/$(basename "$model")-$t.gguf
    [ -f "$f" ] || nice ./run convert "$model" "$f" --type "$t" >/dev/null 2>&1
    bytes=$(stat -c %s "$f")
    load=$(cut -d' ' -f1 /proc/loadavg)
    row=$(./run bench "$f" --quant file --prompts "$PROMPT" --decode "$DECODE" --reps "$REPS" --threads "$THREADS" \
          --llama none 2>/dev/null | awk '$1 == "file"')
    pp=$(echo "$row" | awk '{ print $4 }') tg=$(echo "$row" | awk '{ print $5 }')
    err=$(tools/variant_error.sh -n 0 -p 32 "$model" --threads "$THREADS" -- "$f" --threads "$THREADS" |
          sed -nE 's/.*nRMSE ([0-9.]+);.*top-1 agree ([0-9]+%).*/\1 \2/p')
    printf "%-7s %9.0f %8.2f %12s %12s %7s %6s %6s\n" "$t" "$(echo "$bytes / 1000000" | bc -l)" \
        "$(echo "$bytes * 8 / $params" | bc -l)" "$pp" "$tg" ${err} "$load"
done
echo
echo "file MB: the whole file (the tokenizer adds about 6 MB); bits/w: file bits per parameter;"
echo "load: the 1-minute load average when the row started (the machine has $(nproc) cores)."
