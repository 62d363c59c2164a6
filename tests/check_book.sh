#!/usr/bin/env bash
# The book tells the truth, the static half (make test): tools/book_check.py
# --no-run checks every code reference, quote, flag, subcommand, link and the
# map of files; tests/check_book_commands.sh (make test-all) also runs every
# `sh try` command of book/*.md and compares every `text output-of:` block.
#
# First a self-test: a chapter with one planted mistake of each kind must be
# rejected with a message naming each one (a checker that cannot fail proves
# nothing). Then the real book.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/01-planted.md" <<'MD'
# Planted mistakes

A reference to `kernels.cpp:no_such_kernel`, one to `missing_file.cpp:main`, one by line number
net.cpp:120, a flag `--book-check-planted-flag`, a subcommand `./run no-such-subcommand`, a target
`make no-such-target`, a broken [link](no-such-dir/x.md), and a good `net.cpp:forward`;
a function named in prose that exists nowhere, `matmul_planted_nowhere`, a member of
`Net::planted_member`, and good names: `matmul_many`, `KVView`, `n_kv_heads`, `Net::forward`,
`cfg.arch`, `matmul_many()`, `vpermw` (allowed: an x86 instruction), the token ` thee`, the byte
`E4`, the file `config.json`, the tensor `blk.N.ffn_down`; a claim of about 1,000 lines of C++
for the engine, a pointer to the output-of block above (there is none above) and a good one to
the try block below;
after the output block a stale quote, a good quote (with a
comment and elisions), a block that says nothing, and an illustrative one without a reason.

```sh try
./run info models/tiny > /dev/null
./run info models/no-such-model
```

```text output-of: printf 'one\ntwo\n'
one
three
```

```cpp quote-of: net.cpp:attention
const Config& c = net.model->cfg;
for (int j = 0; j < n; j++)
    s[j] = vec_dot(q, net.kv.key(layer, first + j, kvh, hd), kv_type, hd) * scale;
```

```cpp quote-of: kernels.cpp:matmul_plain
for (int t = 0; t < T; t++) {      // a comment the source does not have
    ...
        double sum = bias ? bias[r] : 0.0;
        ...
        yt[r] = (float)sum;
```

```text
a block that does not say what it is
```

```text illustrative:
```
MD
out=$($PY tools/book_check.py --book-dir "$tmp" 2>&1); rc=$?
expect=(
  'code reference kernels.cpp:no_such_kernel: "no_such_kernel" does not appear in kernels.cpp'
  'code reference missing_file.cpp:main: no file missing_file.cpp'
  'line-number reference "net.cpp:120"'
  'flag --book-check-planted-flag (inline code'
  'no subcommand "no-such-subcommand"'
  'the Makefile has no target "no-such-target"'
  'link to no-such-dir/x.md: no such file'
  '`./run info models/no-such-model` exited 1 (expected 0)'
  "-three"
  "+two"
  'quote-of net.cpp:attention: the quoted code is not in net.cpp (stale quote?); first line not found in order: "for (int j = 0; j < n; j++)"'
  'a block with info string "text": every fenced block says what it is'
  'an illustrative block must say why'
  'name `matmul_planted_nowhere`: "matmul_planted_nowhere" appears in no source file'
  'name `Net::planted_member`: "planted_member" appears in no source file'
  '"about 1,000 lines of C++": the engine'"'"'s .cpp, .h and .cu files hold'
  '"the output-of block above": no output-of block above it in this section'
  "16 errors"
)
ok=1
[ $rc = 1 ] || { echo "self-test: book_check.py exited $rc on the planted chapter, expected 1"; ok=0; }
for e in "${expect[@]}"; do
    if ! grep -qF -- "$e" <<<"$out"; then echo "self-test: no message containing: $e"; ok=0; fi
done
if grep -q "quote-of kernels.cpp:matmul_plain" <<<"$out"; then echo "self-test: the good quote of kernels.cpp:matmul_plain was reported"; ok=0; fi
if grep -q "net.cpp:forward" <<<"$out"; then echo "self-test: the good reference net.cpp:forward was reported"; ok=0; fi
if grep -q "the try block below" <<<"$out"; then echo "self-test: the good pointer to the try block below was reported"; ok=0; fi
if [ "$(grep -c 'name `' <<<"$out")" != 2 ]; then echo "self-test: expected the two planted names reported and no other, got $(grep -c 'name `' <<<"$out")"; ok=0; fi
# The allow-list the name check uses is printed on request, one name and its origin a line.
$PY tools/book_check.py --list-allowed | grep -qE '^vpermw +x86 instruction$' ||
    { echo "self-test: --list-allowed does not print vpermw as an x86 instruction"; ok=0; }
if [ $ok = 0 ]; then echo "--- book_check.py said:"; echo "$out"; exit 1; fi
echo "self-test ok: every planted mistake reported"

# The map of files (tools/file_map.py) on a copy of the tree with a planted
# source file in no row, a row whose file is gone, and a README edited by hand.
tree=$tmp/tree; mkdir -p "$tree"
git ls-files -co --exclude-standard | grep -v -e '^models/' -e node_modules | tar -cf - -T - | tar -xf - -C "$tree"
$PY tools/file_map.py --root "$tree" >/dev/null || { echo "file map: the copy of the tree fails before any plant"; exit 1; }
echo "// planted" > "$tree/planted.cpp"
rm "$tree/json_read.h"
sed -i 's/^| `run.cpp` | /| `run.cpp` | edited by hand: /' "$tree/README.md"
out=$($PY tools/file_map.py --root "$tree" 2>&1); rc=$?
for e in "planted.cpp is in no row" "the row for json_read.h names a file that does not exist"; do
    grep -qF -- "$e" <<<"$out" || { echo "file map self-test: no message containing: $e"; echo "$out"; exit 1; }
done
rm "$tree/planted.cpp"; git show HEAD:json_read.h > "$tree/json_read.h" 2>/dev/null || cp json_read.h "$tree/"
out=$($PY tools/file_map.py --root "$tree" 2>&1); rc=$?
grep -qF "README.md: the map section is not what" <<<"$out" && [ $rc = 1 ] ||
    { echo "file map self-test: a README map edited by hand was not reported"; echo "$out"; exit 1; }
echo "self-test ok: the file map reports a file in no row, a missing file and a stale README"

# The exercise pages' table names each exercise's engine file as
# chapters/build_exercise.sh's table does (the file the student's function
# replaces); a page that names another sends the reader to the wrong code.
$PY - <<'PY' || exit 1
import re, sys
s = open("chapters/build_exercise.sh").read()
t = s[s.index('table="') + 7:]
table = {w[0]: w[1] for w in (l.split() for l in t[:t.index('\n"')].splitlines()) if len(w) >= 3}
bad = 0
for page in ["chapters/README.md", "chapters/README.zh.md"]:
    rows = 0
    for line in open(page, encoding="utf-8"):
        m = re.match(r"\| \[([a-z0-9_-]+)\]\([^)]*\) \| [^|]* \| [^|]* \| `([^`]*)` \|", line)
        if not m:
            continue
        rows += 1
        ex, src = m.groups()
        if ex not in table:
            print(f"{page}: exercise {ex} is not in chapters/build_exercise.sh"); bad = 1
        elif src not in (table[ex], table[ex].split("/")[-1]):
            print(f"{page}: {ex} names {src}; its function is in {table[ex]}"); bad = 1
    if rows < len(table) // 2:
        print(f"{page}: only {rows} exercise rows read"); bad = 1
print("exercise pages: every exercise's file is the one build_exercise.sh replaces" if not bad else "exercise pages: FAILED")
sys.exit(bad)
PY
$PY tools/book_check.py --no-run
