#!/usr/bin/env bash
# tests/check_cli_args.sh — the command line as a llama.cpp user meets it:
# words with no place are an error naming them, the prompt from -f FILE / -p - / a pipe, the "sampling:" line
# with each setting's source and the seed, -s -1, the -t warning, a typo of a
# subcommand, ./run alone, fwd's arguments, -q's newline, --version, -v's help
# per subcommand, error lists that match the help, "decode -" for -n 1, and a
# bad UTF-8 prompt's offset in the user's own text.
# RUN=path/to/run runs them against another build (to see them fail there).
set -u
cd "$(dirname "$0")/.."
RUN=${RUN:-./run}
[ -x "$RUN" ] && [ -f models/tiny/model.safetensors ] || { echo "needs ./run and models/tiny (make && make models)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
M=models/tiny
G="--no-gen-config -n 3"

$RUN -m $M foo bar -n 2 </dev/null >"$T/o" 2>"$T/e"
[ $? = 1 ] && grep -q '^error: too many words: "foo" "bar"' "$T/e" && [ ! -s "$T/o" ]
check "-m MODEL with two prompt words is an error naming both" $?
$RUN -m $M models/mha hi </dev/null >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q '^error: too many words: "models/mha" "hi"' "$T/e"
check "-m MODEL plus a model path and a prompt is an error naming them" $?
$RUN $M -p hi extra </dev/null >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q '^error: too many words: .*"extra"' "$T/e"
check "-p TEXT plus a model and another word is an error naming it" $?

a=$($RUN $M "Hello there" $G 2>/dev/null)
printf 'Hello there\n' >"$T/prompt.txt"
b=$($RUN $M -f "$T/prompt.txt" $G 2>/dev/null)
c=$(printf 'Hello there\n' | $RUN $M -p - $G 2>/dev/null)
d=$(printf 'Hello there' | $RUN $M $G 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$a" = "$d" ]
check "the prompt from -f FILE, -p - and piped stdin is the prompt given as a word" $?
$RUN $M -f "$T/missing.txt" $G >/dev/null 2>"$T/e"
[ $? = 1 ] && [ "$(grep -c '^error:' "$T/e")" = 1 ] && grep -q "^error: -f $T/missing.txt: cannot read the prompt file" "$T/e"
check "-f with a missing file: one line naming it" $?

$RUN $M "Who" -t 8 -n 1 -v >/dev/null 2>"$T/e"
grep -q "sampling: temperature 8 (flag), top-k 20 (generation_config.json), top-p 0.8 (generation_config.json), repeat-penalty 1.1 (generation_config.json), seed 12345 (default)" "$T/e" &&
    ! grep -q "temperature 0.7" "$T/e"
check "one sampling line: the settings in effect and each one's source, the seed too" $?
grep -q "temperature 8; threads are --threads" "$T/e"; check "-t above 2 warns that threads are --threads" $?
$RUN $M "Who" -t 0.5 -n 1 >/dev/null 2>"$T/e"; ! grep -q "threads are" "$T/e"; check "-t 0.5 does not warn" $?
$RUN $M "Hello" -n 4 -s -1 >"$T/r1" 2>"$T/e1"
seed=$(sed -n 's/.*seed \([0-9]*\) (-s -1: drawn from the clock.*/\1/p' "$T/e1")
$RUN $M "Hello" -n 4 -s "$seed" >"$T/r2" 2>/dev/null
[ -n "$seed" ] && cmp -s "$T/r1" "$T/r2"; check "-s -1 draws a seed, prints it, and -s SEED repeats the run" $?
$RUN $M "Hello" -n 1 >/dev/null 2>"$T/e"; grep -q "seed 12345 (default)" "$T/e"; check "the default seed stays 12345" $?

$RUN chta </dev/null >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -qx 'error: unknown command "chta"; did you mean "chat"? (a one-word prompt: ./run -p chta)' "$T/e"
check "a typo of a subcommand suggests it" $?
$RUN hello -m $M $G >"$T/o" 2>/dev/null && [ -s "$T/o" ]
check "a real prompt still generates (\"hello\" is not taken for help)" $?
$RUN </dev/null >"$T/o" 2>&1; grep -q "^usage: ./run" "$T/o"; check "./run alone prints the usage" $?
[ "$(wc -l <"$T/o")" -le 25 ] && grep -q "trained/kjv" "$T/o" && grep -q "^./run --help" "$T/o" &&
    grep -q 'models/tiny "Hello"' "$T/o" && ! grep -q -- "--kv-type" "$T/o"
check "./run alone is short (25 lines at most): the first commands, where the model comes from, --help for the rest" $?

# A mistyped flag gets the nearest one, by the rule a mistyped subcommand meets.
ok=0
for pair in "--tmep:--temp" "--temprature:--temp" "--temperature:--temp" "--n-prdict:--n-predict" "--seeed:--seed"; do
    $RUN $M hi "${pair%%:*}" 1 </dev/null >/dev/null 2>"$T/e"
    grep -qx "error: unknown flag \"${pair%%:*}\" for ./run; did you mean ${pair#*:}? (./run --help lists them)" "$T/e" ||
        { ok=1; echo "      ${pair%%:*}: $(cat "$T/e")"; }
done
$RUN chat $M --tmep 1 </dev/null >/dev/null 2>"$T/e"
grep -qx 'error: unknown flag "--tmep" for ./run chat; did you mean --temp? (./run chat --help lists them)' "$T/e" || ok=1
$RUN $M hi --zzzzzz 1 </dev/null >/dev/null 2>"$T/e"; grep -q "did you mean" "$T/e" && ok=1
check "a mistyped flag suggests the nearest one (--tmep, --temprature: --temp); a word far from every flag gets none" $ok

# A model that is not there: that error alone, nothing about sampling first.
ok=0
for cmd in "nosuch/model hi" "-m nosuch hi" "chat nosuch"; do
    $RUN $cmd </dev/null >/dev/null 2>"$T/e"; rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$T/e")" = 1 ] && grep -q "^error: nosuch.*: no such model" "$T/e" ||
        { ok=1; echo "      $cmd (exit $rc):"; sed 's/^/        /' "$T/e"; }
done
check "a missing model is the first and only line (no sampling settings it would not use)" $ok

$RUN fwd $M 198 >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q "^error: fwd: TOKEN 198 needs its POS too" "$T/e" && ! grep -q "not both\|load" "$T/e"
check "fwd MODEL TOKEN without POS says so, before loading" $?

$RUN $M "Hello" $G -q >"$T/o" 2>/dev/null; [ "$(tail -c 1 "$T/o" | od -An -c | tr -d ' ')" = '\n' ]
check "-q output ends with a newline" $?
$RUN --version >"$T/v"
grep -q "GGUF" "$T/v" && grep -q "Qwen3" "$T/v" && grep -q "bf16dot" "$T/v" && grep -q "^cuda " "$T/v" && ! grep -q "q8_0 at load" "$T/v"
check "--version lists formats (GGUF), families (Qwen3), kernel sets, CUDA" $?
ok=0
for sub in info encode decode convert; do
    $RUN $sub --help | grep -- "^  -v " | grep -q "sampled token" && { ok=1; echo "      $sub -v mentions sampling"; }
done
$RUN --help | grep -- "^  -v " | grep -q "sampled token" || ok=1
check "-v's help describes sampling only where a command samples" $ok

$RUN $M "Hi" --kernels turbo >/dev/null 2>"$T/e"
help=$($RUN --help | grep -- "--kernels" )
ok=0; for k in fast plain scalar avx2 avx512 neon bf16dot; do grep -q "$k" "$T/e" || ok=1; echo "$help" | grep -q "$k" || ok=1; done
check "the --kernels error and help list every kernel set" $ok
$RUN $M "Hi" --top-p 0 >/dev/null 2>"$T/e"
r1=$(grep -o '[[(][0-9.e+-]*, [0-9.e+-]*\]' "$T/e"); r2=$($RUN --help | grep -- "--top-p" | grep -o '[[(][0-9.e+-]*, [0-9.e+-]*\]')
[ -n "$r1" ] && [ "$r1" = "$r2" ] && $RUN $M "Hi" --top-p 1.5 2>&1 | grep -qF "$r1"
check "--top-p states one range in its help and its errors" $?
$RUN $M "Hi" --quant q3 >/dev/null 2>"$T/e"; grep -q "none, f32" "$T/e"; check "the --quant error lists none too" $?

$RUN $M "Hi" $G -n 1 >/dev/null 2>"$T/e"
grep -q "decode -" "$T/e" && ! grep -q "decode 0.0 tok/s" "$T/e"; check "-n 1: no decode speed, since no decode step ran" $?
$RUN $M "$(printf 'caf\xe9')" $G >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q "offset 3 of the prompt" "$T/e"; check "an invalid UTF-8 prompt: the offset in the user's text" $?

summary
