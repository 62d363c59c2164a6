#!/usr/bin/env bash
# Tokenizer speed: Lantern's encoder vs Hugging Face's `tokenizers` (npm) on
# the same ~1 MB of mixed text, in the same run; also checks that both give
# the same ids, and reports how long loading tokenizer.json takes.
#   bash tools/bench_tokenizer.sh [TOKENIZER]   (default models/qwen-tokenizer)
set -euo pipefail
cd "$(dirname "$0")/.."
TOK=${1:-models/qwen-tokenizer}
[ -x ./run ] || { echo "bench_tokenizer: build ./run first (make)"; exit 1; }
[ -f "$TOK/tokenizer.json" ] || [ -f "$TOK" ] || { echo "bench_tokenizer: no tokenizer at $TOK (make deps)"; exit 1; }
TOKJSON=$TOK; [ -d "$TOK" ] && TOKJSON=$TOK/tokenizer.json
mkdir -p build
TEXT=build/bench_tokenizer.txt
node tools/tokenizer_goldens.js --tokenizer "$TOKJSON" --bench-text "$TEXT" >/dev/null

# Lantern: best of 3 runs (each run loads the tokenizer, then encodes once).
best=""; load=""
for i in 1 2 3; do
    line=$(./run encode "$TOK" --file "$TEXT" --time 2>&1 >build/bench_tokenizer.ids | grep '^encode:')
    mbs=$(echo "$line" | sed -nE 's/.* = ([0-9.]+) MB\/s.*/\1/p')
    ms=$(echo "$line" | sed -nE 's/.*tokenizer load ([0-9.]+) ms.*/\1/p')
    if [ -z "$best" ] || awk "BEGIN{exit !($mbs > $best)}"; then best=$mbs; fi
    if [ -z "$load" ] || awk "BEGIN{exit !($ms < $load)}"; then load=$ms; fi
done
echo "lantern: $(echo "$line" | sed -nE 's/encode: ([0-9]+ bytes -> [0-9]+ tokens).*/\1/p'), best of 3 $best MB/s; tokenizer.json load best of 3 $load ms"

# The reference, on the same text; it also compares the ids.
ref_line=$(node tools/tokenizer_goldens.js --tokenizer "$TOKJSON" --bench "$TEXT" build/bench_tokenizer.ids)
echo "$ref_line"
ref=$(echo "$ref_line" | sed -nE 's/.* = ([0-9.]+) MB\/s.*/\1/p' | head -1)
awk -v a="$best" -v b="$ref" 'BEGIN { printf "tokenizer speed: lantern %.2f MB/s, reference %.2f MB/s, ratio %.1fx\n", a, b, a / b }'
echo "$ref_line" | grep -q "ids identical to Lantern's: yes"
