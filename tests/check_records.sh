#!/usr/bin/env bash
# Measurements are data (tools/records.py): the records in book/records/*.jsonl verify, and the
# appendix's tables are what they give. On a copy of the records and the appendix:
#   1. the copy checks clean, and its tables written anew equal the committed ones byte for byte;
#   2. one figure of one record changed by hand: the check fails, naming the file and line;
#   3. a record written by records.py's own writer (as tools/bench_serve.py --save appends them)
#      verifies; the tables are stale until written again, and then a new machine has its table;
#   4. a table cell changed by hand: the check fails;
#   5. a dated-diary heading in the appendix: the check fails;
#   6. ./run bench --save's records verify; 7. book/records/variants.tsv names a commit's runs;
# and book_check.py reports a hand-changed record. Then the real tree: no problem.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
copy() {   # a fresh copy of what the check reads
    rm -rf "$tmp/t"; mkdir -p "$tmp/t/book/zh"
    cp -r book/records "$tmp/t/book/records"
    cp book/A-measurements.md "$tmp/t/book/"; cp book/zh/A-measurements.md "$tmp/t/book/zh/"
}
T=$tmp/t

# 1.
copy
$PY tools/records.py --check --root "$T" >"$tmp/out" 2>&1; check "the records and tables check clean" $?
$PY tools/records.py --write --root "$T" >/dev/null 2>&1
cmp -s "$T/book/A-measurements.md" book/A-measurements.md; check "the English tables regenerate byte for byte" $?
cmp -s "$T/book/zh/A-measurements.md" book/zh/A-measurements.md; check "the Chinese tables regenerate byte for byte" $?

# 2. The first tok_s of line 3 of the transcribed records, one more than it was.
copy
f=$T/book/records/transcribed.jsonl
before=$(sed -n 3p "$f")
sed -i '3s/"tok_s":\([0-9.]*\)/"tok_s":1\1/' "$f"
[ "$before" != "$(sed -n 3p "$f")" ]; check "the planted edit changed the record" $?
out=$($PY tools/records.py --check --root "$T" 2>&1); rc=$?
[ $rc = 1 ]; check "a figure changed by hand fails the check (exit $rc)" $?
grep -q "^book/records/transcribed.jsonl:3: its check does not verify" <<<"$out"
check "... naming the file and line" $?

# 3. A record from the writer verifies; a machine with no table in the appendix is reported.
copy
$PY - "$T" <<'EOF' || exit 1
import sys; sys.path.insert(0, "tools")
import records
rec = records.new_record("run bench", "./run bench models/tiny", [
    {"engine": "lantern", "test": "tg64", "depth": 0, "weights": "bf16", "kv": "f32", "kernels": "avx512",
     "threads": 2, "tok_s": 12.5, "runs": [12.0, 12.5, 13.0]}], machine="Planted machine")
records.append_record(sys.argv[1] + "/book/records/bench.jsonl", rec)
EOF
out=$($PY tools/records.py --check --root "$T" 2>&1); rc=$?
! grep -q "records/bench.jsonl" <<<"$out"; check "a record the writer made verifies" $?
[ $rc = 1 ] && grep -q "the tables differ" <<<"$out"; check "... and the tables are stale until written (exit $rc)" $?
$PY tools/records.py --write --root "$T" >/dev/null 2>&1
grep -q '^\*\*Planted machine, `./run bench`\*\*, 1 record\.' "$T/book/A-measurements.md" && \
    grep -q '^| tg64 | bf16 | avx512 | 2 | 1 | 12.5 (12.0–13.0) | — | — |$' "$T/book/A-measurements.md"
check "a machine without a section of its own gets its table under \"Other machines\"" $?
$PY tools/records.py --check --root "$T" >/dev/null 2>&1; check "... and then the check passes" $?

# 4. One cell of a generated table changed by hand.
copy
line=$(grep -n '^| tg64 | bf16 | avx512 |' "$T/book/A-measurements.md" | head -1 | cut -d: -f1)
sed -i "${line}s/| \([0-9]\)/| 9\1/" "$T/book/A-measurements.md"
out=$($PY tools/records.py --check --root "$T" 2>&1); rc=$?
grep -q "^book/A-measurements.md:$line: the tables differ" <<<"$out"; check "a table edited by hand fails (exit $rc)" $?

# 5. A diary heading.
copy
echo "## The Zen 5 machine, the fifth day" >>"$T/book/A-measurements.md"
out=$($PY tools/records.py --check --root "$T" 2>&1)
grep -q "a heading of a diary" <<<"$out"; check "a dated-diary heading is reported" $?

# book_check.py runs the check: in a tree of links to this one with its own copy of book/, a
# hand-changed record fails it.
mkdir "$tmp/tree"
for f in *; do [ "$f" = book ] || ln -s "$PWD/$f" "$tmp/tree/$f"; done
cp -r book "$tmp/tree/book"
sed -i '1s/"tok_s":\([0-9.]*\)/"tok_s":1\1/' "$tmp/tree/book/records/transcribed.jsonl"
out=$($PY "$tmp/tree/tools/book_check.py" --no-run --chapter "$tmp/tree/book/A-measurements.md" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "transcribed.jsonl:1.*does not verify" <<<"$out"
check "book_check.py fails on a hand-changed record (exit $rc)" $?

# 6. ./run bench --save, the C++ writer (cpu/bench_record.cpp): its records verify here, a
# regular run's and a --depth run's, and one figure changed by hand does not.
for args in "--prompts 4 --decode 2" "--depth 0,8 --decode 2"; do
    ./run bench models/tiny --quant bf16 --kernels fast --reps 1 --llama none $args --save "$tmp/b.jsonl" >"$tmp/bench.out" 2>&1
    check "./run bench $args --save runs (models/tiny: make models)" $?
done
$PY - "$tmp/b.jsonl" >"$tmp/v.out" 2>&1 <<'EOF'
import json, sys; sys.path.insert(0, "tools")
import records
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for line in lines:
    assert not isinstance(records.verify_line(line), str), records.verify_line(line)
    r = json.loads(line)
    assert r["tool"] == "run bench" and r["command"].startswith("./run bench models/tiny"), r["command"]
    assert any(row["test"].startswith("tg2") for row in r["rows"]), r["rows"]
assert any(row["test"] == "tg2@d8" for row in json.loads(lines[1])["rows"])
EOF
check "... its two records verify with tools/records.py" $?
sed -i '1s/"tok_s":\([0-9]\)/"tok_s":9\1/' "$tmp/b.jsonl"
$PY -c 'import sys; sys.path.insert(0, "tools"); import records; sys.exit(not isinstance(records.verify_line(open(sys.argv[1]).readline().rstrip("\n")), str))' "$tmp/b.jsonl"
check "... and a figure changed by hand in one does not" $?

# 7. book/records/variants.tsv: a run the code has outrun keeps its record and takes a variant,
# shown after its kernels; a line naming a commit no record was made at is reported.
copy
$PY - "$T" <<'EOF' || exit 1
import sys; sys.path.insert(0, "tools")
import records
rec = records.new_record("run bench", "./run bench models/tiny", [
    {"engine": "lantern", "test": "tg64", "depth": 0, "weights": "bf16", "kv": "f32", "kernels": "avx512",
     "threads": 2, "tok_s": 12.5, "runs": [12.0, 12.5, 13.0]}], machine="Planted machine")
rec["commit"] = "abcdef1+changes"
records.append_record(sys.argv[1] + "/book/records/bench.jsonl", rec)
EOF
printf 'abcdef1\tbefore the decode chunks as GQA tiles\n' >>"$T/book/records/variants.tsv"
$PY tools/records.py --write --root "$T" >/dev/null 2>&1
grep -q '^| tg64 | bf16 | avx512, before the decode chunks as GQA tiles | 2 | 1 | 12.5 (12.0–13.0) | — | — |$' "$T/book/A-measurements.md"
check "a commit in variants.tsv puts its runs in rows of their own" $?
printf '1234567\tbefore the decode chunks as GQA tiles\n' >>"$T/book/records/variants.tsv"
out=$($PY tools/records.py --check --root "$T" 2>&1)
grep -q "variants.tsv:[0-9]*: no record was made at commit 1234567" <<<"$out"
check "... and one naming a commit without records is reported" $?

echo "== the tree"
$PY tools/records.py --check; check "the committed records and tables" $?
summary
