#!/usr/bin/env bash
# End-to-end checks of ./run encode and ./run decode: the output format, exact
# bytes through --file and --raw, and clear errors (exit 1, one "error:" line)
# for invalid UTF-8 and unknown ids.
set -u
cd "$(dirname "$0")/.."
TOK=models/qwen-tokenizer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh

check_eq "encode prints ids only" "9707 1879" "$(./run encode $TOK "Hello world" 2>/dev/null)"
check_eq "encode takes the tokenizer.json path" "9707 1879" "$(./run encode $TOK/tokenizer.json "Hello world" 2>/dev/null)"
check_eq "special tokens are matched in text" "151644 872 198 6023 151645" "$(./run encode $TOK $'<|im_start|>user\nhi<|im_end|>' 2>/dev/null)"
check_eq "empty text gives an empty line" "" "$(./run encode $TOK "" 2>/dev/null)"

printf 'hi\n' >"$tmp/hi.txt"
check_eq "--file keeps the exact bytes (final newline)" "6023 198" "$(./run encode $TOK --file "$tmp/hi.txt" 2>/dev/null)"

pieces=$(./run encode $TOK "Hello world" --pieces 2>/dev/null)
check_eq "--pieces: ids line first" "9707 1879" "$(echo "$pieces" | head -1)"
check_eq "--pieces: one line per token" "3" "$(echo "$pieces" | wc -l | tr -d ' ')"
echo "$pieces" | grep -q '"Ġworld" *" world"'; rc=$?
[ $rc = 0 ] || echo "$pieces"
check "--pieces shows the Ġ form and the bytes" $rc

check_eq "decode prints the text" "Hello world" "$(./run decode $TOK 9707 1879 2>/dev/null)"
check_eq "decode takes one comma/space list" "Hello world!" "$(./run decode $TOK "9707,1879 0" 2>/dev/null)"
check_eq "decode: a lone byte 0x80 is U+FFFD" "$(printf 'a\xef\xbf\xbd')" "$(./run decode $TOK 64 99 2>/dev/null)"

# Round trip through files, byte for byte (NFC text; code, CJK, emoji, spaces).
printf 'def f(x):\n\treturn x  # 你好 👍🏽\n\n  \n' >"$tmp/rt.txt"
ids=$(./run encode $TOK --file "$tmp/rt.txt" 2>/dev/null)
./run decode $TOK $ids --raw >"$tmp/rt.out" 2>/dev/null
cmp -s "$tmp/rt.txt" "$tmp/rt.out"; rc=$?
[ $rc = 0 ] || od -c "$tmp/rt.out" | head
check "decode(encode(file)) is the file, byte for byte" $rc

expect_error() {  # expect_error NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local err rc
    err=$("$@" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 1 ] && echo "$err" | grep -q "^error: .*$pattern"; rc=$?
    [ $rc = 0 ] || echo "      stderr=[$err]"
    check "$name" $rc
}
printf 'ok \xff\n' >"$tmp/bad.txt"
expect_error "invalid UTF-8 is refused" "not valid UTF-8" ./run encode $TOK --file "$tmp/bad.txt"
expect_error "an unknown id is refused" "not in the vocabulary" ./run decode $TOK 9707 999999
expect_error "a non-number id is refused" "not a token id" ./run decode $TOK 12x
expect_error "a missing tokenizer is refused" "cannot read" ./run encode no/such/model "hi"

summary
