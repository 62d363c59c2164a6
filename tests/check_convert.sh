#!/usr/bin/env bash
# What ./run convert carries besides the weights, and what a quantized file
# does with --quant or --type of another block format (book/16-gguf-quantization.md,
# "What a converted file carries").
#
#  1. models/tiny converted: its generation_config.json (temperature 0.7,
#     top_k 20, top_p 0.8, repetition_penalty 1.1) is in the file under
#     llama.cpp's keys general.sampling.*, and `./run FILE.gguf "hi" -n 8 -v`
#     logs the same settings, samples the same tokens with the same
#     probabilities and prints the same text as the folder (same default
#     seed), with and without sampling flags on top.
#  2. A Q8_0 file: `--quant q4_0` at load and `convert ... --type q4_0` are
#     refused with one error line naming the file and both formats (convert
#     writes nothing); with --force each warns once and runs; q8_0 again keeps
#     the bytes (the same logits, bit for bit), f32 widens them without a word.
set -uo pipefail
cd "$(dirname "$0")/.."
t=build/check_convert
rm -rf $t && mkdir -p $t
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

./run convert models/tiny $t/tiny.gguf --type bf16 2>$t/convert.err || { cat $t/convert.err; echo "FAIL ./run convert"; exit 1; }

# 1. The settings, as ./run info shows the file's keys.
./run info $t/tiny.gguf >$t/info 2>&1
for kv in "general.sampling.temp 0.7" "general.sampling.top_k 20" "general.sampling.top_p 0.8" "general.sampling.penalty_repeat 1.1"; do
    key=${kv% *} val=${kv#* }
    if grep -Eq "^${key//./\\.} +${val//./\\.}$" $t/info; then ok "the file holds $key = $val"
    else bad "$key = $val not in ./run info $t/tiny.gguf:"; grep -E "sampling|lantern" $t/info; fi
done

# The settings line (after its "where:", without the source of each value:
# generation_config.json for the folder, the file's keys for the GGUF) and
# every sampled token's line.
sampling_log() { sed -nE 's/^\[I samp\] [^:]*: (temperature .*)/\1/p; /^\[D samp\] pos /p' "$1" | sed -E 's/ \([^)]*\)//g'; }
for flags in "" "-k 5 -s 7" "-t 1.3" "--no-gen-config -t 0.9"; do
    ./run models/tiny "hi" -n 8 -v $flags >$t/folder.out 2>$t/folder.err
    ./run $t/tiny.gguf "hi" -n 8 -v $flags >$t/file.out 2>$t/file.err
    sampling_log $t/folder.err >$t/folder.samp
    sampling_log $t/file.err >$t/file.samp
    n=$(grep -c "^\[D samp\] pos" $t/folder.samp)
    if [ "$n" -lt 1 ]; then
        bad "\"hi\" -n 8 -v $flags: no sampled token in the folder's log"; cat $t/folder.err
    elif cmp -s $t/folder.samp $t/file.samp && cmp -s $t/folder.out $t/file.out; then
        ok "\"hi\" -n 8 -v $flags: the file samples as the folder ($(head -1 $t/folder.samp | cut -c1-70); $n tokens, the same text)"
    else
        bad "\"hi\" -n 8 -v $flags: the file samples differently from the folder:"
        diff $t/folder.samp $t/file.samp | head -6
    fi
done

# 2. Re-quantizing a quantized file.
./run convert models/tiny $t/q8.gguf --type q8_0 2>/dev/null || { echo "FAIL convert to q8_0"; exit 1; }
refused() {  # pattern, command...: exit 1, one error line that matches, no crash
    local pattern=$1; shift
    "$@" >$t/out 2>$t/err; local rc=$?
    if [ $rc = 1 ] && [ "$(grep -c '^error:' $t/err)" = 1 ] && grep -q -- "$pattern" $t/err; then ok "refused: $(grep '^error:' $t/err)"
    else bad "$* -> rc=$rc, expected one error matching \"$pattern\":"; cat $t/err; fi
}
warned() {  # pattern, command...: exit 0 and exactly one warning line that matches
    local pattern=$1; shift
    "$@" >$t/out 2>$t/err; local rc=$?
    if [ $rc = 0 ] && [ "$(grep -c -- "$pattern" $t/err)" = 1 ]; then ok "--force: $(grep -- "$pattern" $t/err)"
    else bad "$* -> rc=$rc, expected one line matching \"$pattern\":"; cat $t/err; fi
}
quiet() {  # command...: exit 0, no warning about re-quantizing
    "$@" >$t/out 2>$t/err; local rc=$?
    if [ $rc = 0 ] && ! grep -q "re-quantiz\|already" $t/err; then ok "allowed without a word: $*"
    else bad "$* -> rc=$rc:"; cat $t/err; fi
}
refused "$t/q8.gguf: the weights are already q8_0; --quant q4_0 would quantize them a second time" \
    ./run $t/q8.gguf "hi" -n 2 --quant q4_0
refused "$t/q8.gguf: the weights are already q8_0; --quant q4_k" ./run $t/q8.gguf "hi" -n 2 --quant q4_k
refused "$t/q8.gguf: the weights are already q8_0; --quant bf16" ./run $t/q8.gguf "hi" -n 2 --quant bf16
warned "re-quantizing q8_0 weights to q4_0 (--force)" ./run $t/q8.gguf "hi" -n 2 --quant q4_0 --force
quiet ./run $t/q8.gguf "hi" -n 2 --quant f32
./run $t/q8.gguf "hi" -n 2 --quant q8_0 >$t/out 2>$t/err
if [ $? = 0 ] && grep -q "keeps them as the file holds them" $t/err; then ok "--quant q8_0 on a q8_0 file: $(grep keeps $t/err)"
else bad "--quant q8_0 on a q8_0 file did not say it keeps the weights:"; cat $t/err; fi

refused "$t/q8.gguf: the weights are already q8_0; --type q4_0" ./run convert $t/q8.gguf $t/q4.gguf --type q4_0
if [ -e $t/q4.gguf ]; then bad "a refused convert left $t/q4.gguf"; else ok "a refused convert writes nothing"; fi
warned "re-quantizing q8_0 weights to q4_0 (--force)" ./run convert $t/q8.gguf $t/q4.gguf --type q4_0 --force
if ./run $t/q4.gguf "hi" -n 2 >/dev/null 2>&1; then ok "the forced Q4_0 file runs"; else bad "the forced Q4_0 file does not run"; fi
quiet ./run convert $t/q8.gguf $t/deq.gguf --type f32
./run convert $t/q8.gguf $t/q8again.gguf --type q8_0 2>$t/err
ids=9707,11,1879,0,576
./run fwd $t/q8.gguf --tokens $ids --all --dump $t/a.bin >/dev/null 2>&1
./run fwd $t/q8again.gguf --tokens $ids --all --dump $t/b.bin >/dev/null 2>&1
if grep -q "kept byte for byte" $t/err && cmp -s $t/a.bin $t/b.bin; then ok "--type q8_0 of a q8_0 file: $(grep -o 'matrices: .*' $t/err), the same logits bit for bit"
else bad "--type q8_0 of a q8_0 file changed the weights:"; cat $t/err; fi

[ $fails = 0 ] && echo "check_convert: the file samples as its folder; re-quantization is refused without --force"
exit $fails
