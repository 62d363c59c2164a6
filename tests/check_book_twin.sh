#!/usr/bin/env bash
# The Chinese edition stays the English book's twin (tools/book_twin.py, which
# `make book-check` and tests/check_book.sh run through tools/book_check.py).
#
# First a self-test on a copy of the book: each planted drift must be reported,
#   1. a command changed in an English chapter and not in its Chinese twin;
#   2. a section missing from a Chinese chapter;
#   3. a figure dropped from a Chinese chapter;
#   4. an exercise link dropped from a Chinese chapter;
#   5. a rendering the terminology table says to avoid, in Chinese prose (also in a line
#      whose inline code repeats part of it);
#   6. an English chapter with no Chinese twin;
#   7. a terminology-table row edited without writing the glossaries again;
#   8. a line of quoted code changed in a Chinese chapter (its comments are translated, its
#      code is not), while a comment changed there is no problem;
#   9. a number changed in a Chinese drawing (its labels are translated, its numbers are not);
#  10. English glosses in brackets all through the Chinese prose (tools/book_zh.py: the
#      median over the chapters above 8), while the generated index of terms, which gives
#      every term's English on purpose, and the tables written from the measurement records
#      (a CPU's name, as data) are not counted;
# and book_check.py must fail on the first. Then the real book: no problem.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The copy sits in a tree of links to the real one, so its relative links still resolve.
for f in *; do [ "$f" = book ] || ln -s "$PWD/$f" "$tmp/$f"; done
cp -r book "$tmp/book"
B=$tmp/book
ok=1

# expect WHAT MESSAGE: the twin check of the copy reports MESSAGE.
expect() {
    local out
    out=$($PY tools/book_twin.py --book-dir "$B" --all 2>&1)
    if grep -qF -- "$2" <<<"$out"; then echo "ok    reported: $1"
    else echo "FAIL  not reported: $1 (no line containing: $2)"; echo "$out" | tail -5; ok=0; fi
}

# 1. One command of chapter 3's first `sh try` block, changed in English only.
line=$(awk '/^```sh try/{f=1;next} f&&/^```/{f=0} f&&/^\.\/run /{print NR; exit}' "$B/03-loading.md")
old=$(sed -n "${line}p" "$B/03-loading.md")
sed -i "${line}s/\$/ --threads 1/" "$B/03-loading.md"
expect "a command changed in English only" "differs from its English twin"
expect "... naming the stale command" "Chinese \`$old\`"
out=$($PY tools/book_check.py --no-run --book-dir "$B" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "zh/03-loading.md.*differs from its English twin" <<<"$out"; then
    echo "ok    book_check.py fails on it: $(grep -o 'book check: .*' <<<"$out")"
else echo "FAIL  book_check.py (exit $rc) did not report the stale command of zh/03-loading.md"; ok=0; fi
cp book/03-loading.md "$B/03-loading.md"

# 2. The last section of chapter 5 in Chinese, gone (its "延伸阅读" heading and what follows).
sed -i '/^## 延伸阅读/,$d' "$B/zh/05-forward.md"
expect "a section missing in Chinese" 'the section "Further reading" (##) has no twin in'
cp book/zh/05-forward.md "$B/zh/05-forward.md"

# 3. Chapter 6's KV-cache figure, dropped from the Chinese page.
sed -i '/fig-kvcache.svg/d' "$B/zh/06-attention-kv-cache.md"
expect "a figure dropped in Chinese" "book/img/fig-kvcache.svg"
cp book/zh/06-attention-kv-cache.md "$B/zh/06-attention-kv-cache.md"

# 4. Chapter 7's link to the BPE exercise, dropped from the Chinese page.
sed -i 's#\[\([^]]*\)\](\.\./\.\./chapters/bpe/README\.zh\.md)#\1#g' "$B/zh/07-tokenizer.md"
expect "an exercise link dropped in Chinese" "missing bpe"
cp book/zh/07-tokenizer.md "$B/zh/07-tokenizer.md"

# 5. "令牌" for token (the table says 词元) in a Chinese paragraph.
echo "每个令牌都有一个 id。" >> "$B/zh/08-sampling-generation.md"
expect "an avoided rendering" '"令牌" for "Token": the book writes "词元"'
cp book/zh/08-sampling-generation.md "$B/zh/08-sampling-generation.md"
# ... and one in a line whose inline code holds part of it: the code span is cut where it
# stands, so `KV` does not hide the prose "KV 快取" (for KV cache, the table says 键值缓存).
echo '`KV` 的意思是键和值，KV 快取就是存它们的地方。' >> "$B/zh/08-sampling-generation.md"
expect "an avoided rendering next to inline code" '"KV 快取" for "KV cache"'
cp book/zh/08-sampling-generation.md "$B/zh/08-sampling-generation.md"

# 6. A new English chapter without a twin.
printf '# 19 · Planted\n\nNo twin.\n' > "$B/19-planted.md"
expect "an English chapter with no Chinese twin" "19-planted.md:1: no Chinese twin"
rm "$B/19-planted.md"

# 7. The table's definition of "Seed" changed, the glossaries not written again.
sed -i 's/^Seed\t\([^\t]*\)\t\([^\t]*\)\t\([^\t]*\)\tthe starting state/Seed\t\1\t\2\t\3\tthe first state/' "$B/terms.tsv"
expect "a glossary stale against book/terms.tsv" "C-glossary.md:"
cp book/terms.tsv "$B/terms.tsv"

# 8. Chapter 4's quote of matmul_plain in Chinese: its comment reworded is fine, its code
#    changed is reported.
sed -i '/^```cpp quote-of: kernels.cpp:matmul_plain/,/^```$/s#^\(for (int t = 0; t < T; t++) {\s*//\).*#\1 另一种说法#' "$B/zh/04-kernels.md"
out=$($PY tools/book_twin.py --book-dir "$B" --all 2>&1)
if grep -q "zh/04-kernels.md" <<<"$out"; then echo "FAIL  a translated comment reported as a difference:"; grep "zh/04" <<<"$out"; ok=0
else echo "ok    a comment reworded in Chinese is no difference"; fi
sed -i '/^```cpp quote-of: kernels.cpp:matmul_plain/,/^```$/s#sum += (double)widen#sum += (float)widen#' "$B/zh/04-kernels.md"
expect "a line of quoted code changed in Chinese" "zh/04-kernels.md:"
cp book/zh/04-kernels.md "$B/zh/04-kernels.md"

# 9. The first drawing of chapter 6 in Chinese with one number changed.
line=$(awk '/^```text diagram/{f=1;next} f&&/^```/{f=0} f&&/[0-9]/{print NR; exit}' "$B/zh/06-attention-kv-cache.md")
sed -i "${line}s/[0-9]/&7/" "$B/zh/06-attention-kv-cache.md"
expect "a number changed in a Chinese drawing" "(the numbers differ)"
cp book/zh/06-attention-kv-cache.md "$B/zh/06-attention-kv-cache.md"

# 10. Twenty glosses appended to every Chinese chapter: the median is above 8.
for f in "$B"/zh/*.md; do for i in $(seq 20); do echo "词元（token）。" >> "$f"; done; done
out=$($PY tools/book_zh.py --book-dir "$B" 2>&1)
if grep -q "median of [0-9.]* English glosses" <<<"$out"; then echo "ok    reported: English glosses all through the Chinese prose"
else echo "FAIL  not reported: English glosses all through the Chinese prose"; echo "$out" | tail -3; ok=0; fi
rm -rf "$B/zh"; cp -r book/zh "$B/zh"
for i in $(seq 20); do echo "词元（token）。" >> "$B/zh/index-terms.md"; done
out=$($PY tools/book_zh.py --book-dir "$B" 2>&1)
if grep -q "index-terms\|index [0-9]" <<<"$out"; then echo "FAIL  the generated index of terms counted as prose:"; grep "index-terms\|index [0-9]" <<<"$out"; ok=0
else echo "ok    the generated index of terms is no chapter of prose"; fi
cp book/zh/index-terms.md "$B/zh/index-terms.md"
before=$($PY tools/book_zh.py --book-dir "$B" 2>&1 | grep "A-measurements")
{ echo "<!-- records:begin planted -->"; for i in $(seq 20); do echo "| x | CPU（GenuineIntel, family 6） |"; done
  echo "<!-- records:end -->"; echo "词元（token）。"; } >> "$B/zh/A-measurements.md"
after=$($PY tools/book_zh.py --book-dir "$B" 2>&1 | grep "A-measurements")
if [ "${after##* }" = "$(( ${before##* } + 1 ))" ]; then echo "ok    the tables written from the records are data, the prose after them is counted"
else echo "FAIL  appendix A with a planted records table and one gloss after it: $before -> $after"; ok=0; fi
cp book/zh/A-measurements.md "$B/zh/A-measurements.md"

out=$($PY tools/book_twin.py --book-dir "$B" --all 2>&1)
grep -q "^twin check: 0 problems" <<<"$out" || { echo "FAIL  the restored copy is not clean:"; echo "$out" | tail -5; ok=0; }
[ $ok = 1 ] || exit 1
echo "self-test ok: every planted drift reported"

echo "== the book"
$PY tools/book_zh.py || exit 1
$PY tools/book_twin.py --all
