#!/usr/bin/env bash
# Writes the training corpus for the default model: the King James Bible from Debian's
# bible-kjv package, one verse per line, with the "Gen1:1 " references stripped.
#   tools/make_corpus.sh [OUT]      (default build/kjv/corpus.txt)
# Also writes words.txt beside it. Prints the sha256 of the result; trained/kjv/TRAINING.md records the one it was trained on.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/kjv/corpus.txt}
command -v bible >/dev/null || { echo "make_corpus: 'bible' not found; run make deps (apt bible-kjv)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
# bible prints "Ge1:1 In the beginning ..."; the reference is a book abbreviation (which may
# start with a digit, as in 1Sm) followed by chapter:verse and one space.
bible -f gen1:1-rev22:21 | sed -E 's/^[0-9]?[A-Za-z]+[0-9]+:[0-9]+ //' > "$out.tmp"
n=$(wc -l < "$out.tmp")
[ "$n" = 31102 ] || { echo "make_corpus: expected 31102 verses, got $n" >&2; exit 1; }
mv "$out.tmp" "$out"
# The corpus word list (lower case, letters only), for tests/check_trained_model.sh's
# "are the generated words English?" check; tools/train.py copies it next to the model.
tr -cs 'A-Za-z' '\n' < "$out" | tr 'A-Z' 'a-z' | sed '/^$/d' | LC_ALL=C sort -u > "$(dirname "$out")/words.txt"
echo "corpus: $out, $n verses, $(wc -c < "$out") bytes, $(wc -l < "$(dirname "$out")/words.txt") distinct words"
sha256sum "$out"
