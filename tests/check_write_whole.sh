#!/usr/bin/env bash
# tests/check_write_whole.sh — every file ./run writes appears whole or not
# at all: it is written under a temporary name beside the target and
# renamed when complete, so a run killed halfway (here by a file-size limit,
# ulimit -f, which stops it with SIGXFSZ mid-write) leaves the old file, or
# none, under the target's name, never a truncated one; and an output that
# is the run's input is refused before anything is written.
# RUN=path/to/run runs them against another build (to see them fail there).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
RUN=${RUN:-./run}
M=models/tiny
[ -x "$RUN" ] && [ -f $M/model.safetensors ] || { echo "needs ./run and models/tiny (make && make models)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sum() { sha256sum "$1" 2>/dev/null | cut -c1-16; }
limited() { { (ulimit -f 2048; "$@") >/dev/null 2>&1; } 2>/dev/null; }  # 2 MiB at most per file

# convert: a whole file first, then killed halfway over it and onto a new name
$RUN convert $M "$T/tiny.gguf" --type q8_0 >/dev/null 2>&1
check "convert writes the file, and no temporary is left beside it" $([ -s "$T/tiny.gguf" ] && [ "$(ls -A "$T")" = tiny.gguf ]; echo $?)
before=$(sum "$T/tiny.gguf")
limited $RUN convert $M "$T/tiny.gguf" --type bf16
check_eq "convert killed halfway over an existing file: the old file is still there, whole" "$before" "$(sum "$T/tiny.gguf")"
limited $RUN convert $M "$T/new.gguf" --type bf16
check "convert killed halfway onto a new name: no file under that name" $([ ! -e "$T/new.gguf" ]; echo $?)

# convert onto its input: refused, one line, the input untouched
$RUN convert "$T/tiny.gguf" "$T/tiny.gguf" --type q8_0 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/e")" = 1 ] && grep -q "is the input" "$T/e" && [ "$(sum "$T/tiny.gguf")" = "$before" ]
check "convert onto its own input file is refused; the file is untouched" $?
mkdir -p "$T/m" && cp $M/* "$T/m/"
before=$(sum "$T/m/model.safetensors")
$RUN convert "$T/m" "$T/m/model.safetensors" --type q8_0 >/dev/null 2>"$T/e"; rc=$?
[ $rc = 1 ] && grep -q "input's file model.safetensors" "$T/e" && [ "$(sum "$T/m/model.safetensors")" = "$before" ]
check "convert onto the weights of the folder it reads is refused" $?

# --dump (fwd's logits, 3 MB here) and --report: the same
printf 'old\n' >"$T/logits.bin"
before=$(sum "$T/logits.bin")
limited $RUN fwd $M --tokens 9707,11,1879,0,576 --all --dump "$T/logits.bin"
check_eq "fwd --dump killed halfway: the old file is still there" "$before" "$(sum "$T/logits.bin")"
$RUN fwd $M --tokens 9707,11 --all --dump "$T/logits.bin" >/dev/null 2>&1
check_eq "fwd --dump completed: 2 rows of 151936 float32 logits" "$((2 * 151936 * 4))" "$(stat -c %s "$T/logits.bin")"
before=$(sum "$T/m/config.json")
$RUN "$T/m" hi -n 1 --report "$T/m/config.json" >/dev/null 2>"$T/e"; rc=$?
[ $rc = 1 ] && grep -q "^error: --report .*config.json" "$T/e" && [ "$(sum "$T/m/config.json")" = "$before" ]
check "--report onto the model's config.json is refused" $?

# /save: whole, nothing beside it
mkdir "$T/save"
printf 'Hi\n/save %s\n' "$T/save/chat.txt" | $RUN chat $M -n 2 -t 0 >/dev/null 2>&1
grep -q "^user: Hi" "$T/save/chat.txt" && [ "$(ls -A "$T/save")" = chat.txt ]
check "/save writes the transcript and leaves no temporary" $?
summary
