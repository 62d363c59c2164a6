#!/usr/bin/env bash
# Tokenizer speed: Lantern's encoder vs Hugging Face's `tokenizers` (npm) on
# the same ~1 MB of mixed text, in the same run; also checks that both give
# the same ids, and reports how long loading tokenizer.json takes.
# Both wall-clock and CPU time are reported (best of 3 each): on a busy
# machine the CPU time is the fairer comparison.
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

# Lantern: 3 runs; each loads the tokenizer, then encodes the text once.
# ./run encode --time prints: encode: B bytes -> T tokens in W ms = X MB/s, cpu C ms = Y MB/s (tokenizer load L ms, cpu M ms)
for i in 1 2 3; do
    ./run encode "$TOK" --file "$TEXT" --time 2>&1 >build/bench_tokenizer.ids | grep '^encode:'
done >build/bench_tokenizer.log
best() { sed -nE "s|$1|\1|p" build/bench_tokenizer.log | sort -g | tail -1; }
least() { sed -nE "s|$1|\1|p" build/bench_tokenizer.log | sort -g | head -1; }
wall=$(best '.* ms = ([0-9.]+) MB/s, cpu.*')
cpu=$(best '.*, cpu [0-9.]+ ms = ([0-9.]+) MB/s.*')
load=$(least '.*tokenizer load ([0-9.]+) ms.*')
load_cpu=$(least '.*tokenizer load [0-9.]+ ms, cpu ([0-9.]+) ms.*')
tokens=$(sed -nE 's/encode: ([0-9]+ bytes -> [0-9]+ tokens).*/\1/p' build/bench_tokenizer.log | head -1)
echo "lantern: $tokens, best of 3: $wall MB/s, cpu $cpu MB/s; tokenizer.json load $load ms, cpu $load_cpu ms (best of 3)"

# The reference, on the same text; it also compares the ids.
ref_out=$(node tools/tokenizer_goldens.js --tokenizer "$TOKJSON" --bench "$TEXT" build/bench_tokenizer.ids)
echo "$ref_out"
ref_wall=$(echo "$ref_out" | sed -nE 's/.* ms = ([0-9.]+) MB\/s, cpu.*/\1/p')
ref_cpu=$(echo "$ref_out" | sed -nE 's/.*, cpu [0-9.]+ ms = ([0-9.]+) MB\/s.*/\1/p')
awk -v a="$wall" -v b="$ref_wall" -v c="$cpu" -v d="$ref_cpu" \
    'BEGIN { printf "tokenizer speed ratio (lantern / reference): %.1fx wall-clock, %.1fx cpu time\n", a / b, c / d }'
echo "$ref_out" | grep -q "ids identical to Lantern's: yes"
