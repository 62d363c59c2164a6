#!/usr/bin/env bash
# tests/check_figures.sh — the book's figures are current.
#
# tools/figures.py draws book/img/fig-*.svg from the engine's own numbers
# (the default model's logits and tokenizer, the saved bench output, the
# sources' tables), and the same figures in Chinese, book/img/zh/fig-*.svg.
# Here every figure is drawn again, in both languages, into a scratch folder
# and must equal the committed file byte for byte: a change to the engine
# that moves a figure's numbers shows up here, and `make figures` redraws
# them. To show that the comparison can fail, a committed figure with one
# changed number must be reported, in either language.
#
# The Chinese labels come from book/terms.tsv and tools/figures_zh.tsv: a
# label with no Chinese, a row that repeats a term of book/terms.tsv and a
# row whose %-conversions differ from its English must each stop the drawing.
# The Chinese chapters show book/img/zh/X where it exists (tools/book_twin.py
# pairs it with book/img/X): a Chinese page showing the English drawing, and a
# Chinese figure with no English original, must be reported.
#
# book/img/report.png, a screenshot of a --report page, cannot be compared
# byte for byte (the page shows timings), so the PNG carries what the page
# showed that the clock does not change — command, model, shape, sampler,
# prompt, output — and the report is made again and compared with that
# (tools/figures.py --check-report). A copy that says "greedy" must be caught.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x ./run ] || { echo "./run is not built (make)"; exit 1; }
[ -f trained/kjv/model.safetensors ] || { echo "trained/kjv is missing"; exit 1; }
command -v chromium >/dev/null || { echo "chromium is not installed (make deps): it takes book/img/report.png"; exit 1; }
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
mkdir -p "$tmp/planted/zh"
cp "$tmp"/zh/fig-*.svg "$tmp/planted/zh/"
sed -i 's/每个位置 /每一个位置 /' "$tmp/planted/zh/fig-rope.svg"
out=$(compare "$tmp/planted/zh" "$tmp/zh"); prc=$?
if [ $prc != 0 ] && grep -q "zh/fig-rope.svg differs" <<<"$out"; then
    echo "self-test ok: a changed Chinese figure is reported"
else echo "self-test: the planted change of a Chinese figure was not reported:"; echo "$out"; exit 1; fi

# The label table: each planted fault stops the drawing, with its message.
labels_fail() {   # WHAT MESSAGE: drawing in Chinese with $tmp/labels.tsv for the table stops, saying MESSAGE
    out=$(FIGURES_ZH_TSV="$tmp/labels.tsv" /usr/bin/python3 tools/figures.py --lang zh --out "$tmp/labels" gqa 2>&1)
    if [ $? != 0 ] && grep -qF -- "$2" <<<"$out"; then echo "self-test ok: $1 stops the drawing"
    else echo "self-test: $1 did not stop the drawing with \"$2\":"; echo "$out" | tail -3; exit 1; fi
}
sed '/^Grouped-query attention\t/d' tools/figures_zh.tsv > "$tmp/labels.tsv"
labels_fail "a label with no Chinese" "the label 'Grouped-query attention' has no Chinese"
{ cat tools/figures_zh.tsv; printf 'prefill\t预填充\n'; } > "$tmp/labels.tsv"
labels_fail "a row repeating a term" "'prefill' is a term of book/terms.tsv"
{ cat tools/figures_zh.tsv; printf 'pool %%d\t块池\n'; } > "$tmp/labels.tsv"
labels_fail "a row with other conversions" "the Chinese has conversions"

# The Chinese chapters and their figures (tools/book_twin.py): planted in a copy of the book.
mkdir -p "$tmp/tree"; for f in *; do [ "$f" = book ] || ln -s "$PWD/$f" "$tmp/tree/$f"; done
cp -r book "$tmp/tree/book"
sed -i 's#(\.\./img/zh/fig-gqa\.svg)#(../img/fig-gqa.svg)#' "$tmp/tree/book/zh/06-attention-kv-cache.md"
rm "$tmp/tree/book/img/fig-rope.svg"
out=$(/usr/bin/python3 tools/book_twin.py --book-dir "$tmp/tree/book" --all 2>&1)
if grep -q "06-attention-kv-cache.md:.*shows .*book/img/fig-gqa.svg, but it is drawn in Chinese too" <<<"$out" &&
        grep -q "04-kernels.md:.*book/img/zh/fig-rope.svg has no English original" <<<"$out"; then
    echo "self-test ok: a Chinese page showing the English drawing, and a Chinese figure with no original, are reported"
else echo "self-test: the twin check did not report the planted figures:"; echo "$out" | tail -5; exit 1; fi

compare book/img "$tmp"; rc=$?
compare book/img/zh "$tmp/zh" || rc=1
n=$(ls "$tmp"/zh/fig-*.svg | wc -l)
zh=$(grep -ho '](\.\./img/zh/fig-[a-z0-9-]*\.svg)' book/zh/*.md | sort -u | wc -l)
if [ "$zh" = "$n" ]; then echo "ok    the Chinese chapters show all $n figures drawn in Chinese"
else echo "FAIL  the Chinese chapters show $zh of the $n figures drawn in Chinese (../img/zh/fig-NAME.svg)"; rc=1; fi

# report.png: the one just taken passes, a planted stale one fails, then the committed one.
/usr/bin/python3 - "$tmp/report.png" "$tmp/planted/report.png" <<'PY'
import json, sys
sys.path.insert(0, "tools")
import figures_report as r
facts = r.png_facts(sys.argv[1])
facts["sampler"] = "greedy (temperature 0: always the most likely token)"
open(sys.argv[2], "wb").write(r.png_with_facts(open(sys.argv[1], "rb").read(), facts))
PY
out=$(/usr/bin/python3 tools/figures.py --check-report "$tmp/planted/report.png"); prc=$?
if /usr/bin/python3 tools/figures.py --check-report "$tmp/report.png" && [ $prc != 0 ] && grep -q "stale: its sampler" <<<"$out"; then
    echo "self-test ok: a fresh report.png passes, one that says greedy is reported"
else echo "self-test: the report.png check did not tell a fresh picture from a stale one:"; echo "$out"; exit 1; fi
if /usr/bin/python3 tools/figures.py --check-report book/img/report.png; then
    echo "ok    book/img/report.png shows what ./run --report shows now"
else rc=1; fi
exit $rc
