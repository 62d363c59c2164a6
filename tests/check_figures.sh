#!/usr/bin/env bash
# tests/check_figures.sh — the book's figures are current.
#
# tools/figures.py draws book/img/fig-*.svg from the engine's own numbers
# (the default model's logits and tokenizer, the saved bench output). Here
# every figure is drawn again into a scratch folder and must equal the
# committed file byte for byte: a change to the engine that moves a figure's
# numbers shows up here, and `make figures` redraws them. To show that the
# comparison can fail, a committed figure with one changed number must be
# reported.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x ./run ] || { echo "./run is not built (make)"; exit 1; }
[ -f trained/kjv/model.safetensors ] || { echo "trained/kjv is missing"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/figures.py --out "$tmp" >/dev/null || { echo "FAIL: tools/figures.py failed"; exit 1; }

# compare COMMITTED DRAWN: every fig-*.svg of COMMITTED equals its twin in DRAWN, and back.
compare() {
    local bad=0 f n=0
    for f in "$1"/fig-*.svg; do
        n=$((n + 1))
        if [ ! -f "$2/$(basename "$f")" ]; then echo "FAIL  $f: tools/figures.py no longer draws it"; bad=1
        elif ! cmp -s "$f" "$2/$(basename "$f")"; then
            echo "FAIL  $f differs from what tools/figures.py draws now (run make figures):"
            diff <(tr '<' '\n' <"$f") <(tr '<' '\n' <"$2/$(basename "$f")") | head -6 | sed 's/^/      /'; bad=1
        fi
    done
    for f in "$2"/fig-*.svg; do
        [ -f "$1/$(basename "$f")" ] || { echo "FAIL  $1/$(basename "$f") is missing (run make figures)"; bad=1; }
    done
    [ $bad = 0 ] && echo "ok    $n figures in $1 are what tools/figures.py draws"
    return $bad
}

# Self-test: a copy with one changed word and one missing figure must be caught.
mkdir -p "$tmp/planted"
cp "$tmp"/fig-*.svg "$tmp/planted/"
sed -i 's/ rad per position/ rad per step/' "$tmp/planted/fig-rope.svg"
rm "$tmp/planted/fig-gqa.svg"
out=$(compare "$tmp/planted" "$tmp"); rc=$?
if [ $rc != 0 ] && grep -q "fig-rope.svg differs" <<<"$out" && grep -q "fig-gqa.svg is missing" <<<"$out"; then
    echo "self-test ok: a changed figure and a missing one are reported"
else echo "self-test: the planted changes were not reported:"; echo "$out"; exit 1; fi
compare book/img "$tmp"
