#!/usr/bin/env bash
# Hostile GGUF files through the command line. A small valid file is written
# by `./run convert`, then copies are damaged one field at a time: the magic,
# the version, the counts and lengths the reader must not trust, the tensor
# table (offsets, alignment, overlap, shapes, names, types) and the
# metadata the model needs. Each copy must give exit 1 and one "error:" line
# naming the file and the problem: never a crash (exit >= 128, e.g. SIGSEGV
# from a read past the end of the mapping) and never a hang (timeout).
#   RUN=path/to/run bash tests/check_hostile_gguf.sh   tests another binary
set -uo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-./run}
PY=/usr/bin/python3
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fails=0
expect_error() {  # pattern, command...
    local pattern=$1; shift
    timeout 60 "$@" >$t/out 2>$t/err; local rc=$?
    local lines; lines=$(grep -c "^error:" $t/err)
    if [ $rc -ne 1 ] || [ "$lines" != 1 ] || ! grep -q -- "$pattern" $t/err; then
        echo "FAIL: ${*:0:8} -> rc=$rc, stderr:"; head -c 400 $t/err; echo; fails=$((fails+1))
    else
        echo "ok: $(grep '^error:' $t/err | head -c 200)"
    fi
}

good=$t/good.gguf
$RUN convert models/tiny $good --type q8_0 2>$t/err || { echo "FAIL: convert"; cat $t/err; exit 1; }
# The undamaged file runs: the damage below is what each error is about.
$RUN $good "Hi" -n 2 --temp 0 >$t/out 2>$t/err || { echo "FAIL: the undamaged file does not run"; cat $t/err; exit 1; }

# damage NAME EDIT: writes $t/NAME.gguf, a copy of the good file with one
# edit, made by tests' own small GGUF walker (offsets of every field).
damage() {
    $PY - "$good" "$t/$1.gguf" "$2" <<'END'
import struct, sys
src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(src, 'rb').read())
pos = 0
def u32():
    global pos; pos += 4; return struct.unpack_from('<I', b, pos - 4)[0]
def u64():
    global pos; pos += 8; return struct.unpack_from('<Q', b, pos - 8)[0]
def string():
    global pos; at = pos; n = u64(); pos += n; return at, b[at + 8:at + 8 + n].decode()
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t):
    global pos
    if t == 8: string()
    elif t == 9:
        et = u32(); n = u64()
        for _ in range(n): skip(et)
    else: pos += SIZES[t]
pos = 8
n_tensors, n_kv = u64(), u64()
kv = {}     # key -> (offset of the key, offset of the value type, offset of the value)
for _ in range(n_kv):
    at, key = string(); tpos = pos; t = u32(); kv[key] = (at, tpos, pos); skip(t)
tensors = {}  # name -> (offset of the name, of n_dims, of ne[0], of the type, of the offset)
for _ in range(n_tensors):
    at, name = string(); dpos = pos; nd = u32(); nepos = pos; pos += 8 * nd
    tpos = pos; u32(); opos = pos; u64()
    tensors[name] = (at, dpos, nepos, tpos, opos)
data_start = (pos + 31) // 32 * 32
def put32(at, v): struct.pack_into('<I', b, at, v)
def put64(at, v): struct.pack_into('<Q', b, at, v)
def get64(at): return struct.unpack_from('<Q', b, at)[0]
T = tensors
exec(edit)
open(dst, 'wb').write(b)
END
}

# The header
damage magic      'b[0:4] = b"GGUX"';                               expect_error "magic.gguf: not a GGUF file" $RUN info $t/magic.gguf
damage version    'put32(4, 7)';                                    expect_error "version.gguf: GGUF version 7 is not supported" $RUN info $t/version.gguf
damage version1   'put32(4, 1)';                                    expect_error "version1.gguf: GGUF version 1 is not supported" $RUN info $t/version1.gguf
damage short      'del b[14:]';                                     expect_error "short.gguf: truncated: tensor count" $RUN info $t/short.gguf
damage cut_meta   'del b[kv["tokenizer.ggml.tokens"][2] + 1000:]';  expect_error "cut_meta.gguf: .*tokenizer.ggml.tokens.*past the end" $RUN info $t/cut_meta.gguf
damage cut_infos  'del b[T["blk.1.attn_q.weight"][0] + 3:]';        expect_error "cut_infos.gguf: truncated: tensor name" $RUN info $t/cut_infos.gguf
damage cut_data   'del b[data_start + 4096:]';                      expect_error "cut_data.gguf: tensor .* outside the .*-byte data section (truncated file?)" $RUN info $t/cut_data.gguf
: >$t/empty.gguf;                                                   expect_error "empty.gguf: " $RUN info $t/empty.gguf
# Counts and lengths that point past the end of the file
damage n_tensors  'put64(8, 1 << 40)';                              expect_error "n_tensors.gguf: tensor count 1099511627776 does not fit" $RUN info $t/n_tensors.gguf
damage n_kv       'put64(16, (1 << 64) - 1)';                       expect_error "n_kv.gguf: key/value count 18446744073709551615 does not fit" $RUN info $t/n_kv.gguf
damage key_len    'put64(24, (1 << 64) - 8)';                       expect_error "key_len.gguf: key at byte 24: string length 18446744073709551608 runs past the end" $RUN info $t/key_len.gguf
damage str_len    'put64(kv["general.architecture"][2], 1 << 40)';  expect_error "str_len.gguf: general.architecture at byte .*: string length 1099511627776 runs past the end" $RUN info $t/str_len.gguf
damage arr_len    'put64(kv["tokenizer.ggml.merges"][2] + 4, 1 << 61)'; expect_error "arr_len.gguf: key tokenizer.ggml.merges: array of 2305843009213693952 elements runs past the end" $RUN info $t/arr_len.gguf
damage name_len   'put64(T["blk.2.ffn_up.weight"][0], 1 << 33)';    expect_error "name_len.gguf: tensor name at byte .*: string length 8589934592 runs past the end" $RUN info $t/name_len.gguf
# Values of a type the reader does not know
damage val_type   'put32(kv["general.name"][1], 99)';               expect_error "val_type.gguf: key general.name has unknown value type 99" $RUN info $t/val_type.gguf
damage arr_type   'put32(kv["tokenizer.ggml.merges"][2], 9)';       expect_error "arr_type.gguf: key tokenizer.ggml.merges: array of type 9 is not supported" $RUN info $t/arr_type.gguf
damage align      'put32(kv["general.alignment"][2], 24)';          expect_error "align.gguf: general.alignment must be a power of two" $RUN info $t/align.gguf
# The tensor table
n_dims_at='T["blk.0.attn_q.weight"][1]'
damage n_dims     "put32($n_dims_at, 9)";                           expect_error "n_dims.gguf: tensor blk.0.attn_q.weight has 9 dimensions" $RUN info $t/n_dims.gguf
damage huge_ne    'put64(T["blk.0.attn_q.weight"][2] + 8, 1 << 39)'; expect_error "huge_ne.gguf: tensor blk.0.attn_q.weight: 37383395344384 bytes at offset 10331904 lie outside the" $RUN info $t/huge_ne.gguf
damage offset     'put64(T["blk.3.ffn_up.weight"][4], 1 << 30)';    expect_error "offset.gguf: tensor blk.3.ffn_up.weight: 10880 bytes at offset 1073741824 lie outside the" $RUN info $t/offset.gguf
damage offset_wrap 'put64(T["blk.3.ffn_up.weight"][4], (1 << 64) - 32)'; expect_error "offset_wrap.gguf: tensor blk.3.ffn_up.weight: 10880 bytes at offset 18446744073709551584 lie outside the" $RUN info $t/offset_wrap.gguf
damage overlap    'put64(T["blk.1.ffn_up.weight"][4], get64(T["blk.1.ffn_gate.weight"][4]) + 32)'; expect_error "overlap.gguf: tensors blk.1.ffn_gate.weight and blk.1.ffn_up.weight overlap" $RUN info $t/overlap.gguf
damage misalign   'put64(T["blk.0.ffn_down.weight"][4], get64(T["blk.0.ffn_down.weight"][4]) + 4)'; expect_error "misalign.gguf: tensor blk.0.ffn_down.weight: offset .* is not a multiple of the alignment 32" $RUN info $t/misalign.gguf
damage twice      'at = T["blk.0.ffn_up.weight"][0] + 8; b[at:at + 19] = b"blk.0.attn_q.weight"'; expect_error "twice.gguf: tensor blk.0.attn_q.weight is listed twice" $RUN info $t/twice.gguf
damage rows       'put64(T["blk.0.attn_q.weight"][2], 48)';         expect_error "rows.gguf: tensor blk.0.attn_q.weight: rows of 48 are not a multiple of Q8_0's block of 32" $RUN info $t/rows.gguf
damage type_unknown 'put32(T["blk.0.attn_k.weight"][3], 99)';       expect_error "type_unknown.gguf: tensor blk.0.attn_k.weight has unknown type 99" $RUN info $t/type_unknown.gguf
damage type_iq4nl 'put32(T["blk.0.attn_k.weight"][3], 20)';         expect_error "type_iq4nl.gguf: tensor blk.0.attn_k.weight has type IQ4_NL, which Lantern does not compute with" $RUN $t/type_iq4nl.gguf "Hi" -n 1
damage type_iq2   'put32(T["blk.0.attn_k.weight"][3], 16)';         expect_error "type_iq2.gguf: tensor blk.0.attn_k.weight: rows of 64 are not a multiple of IQ2_XXS's block of 256" $RUN $t/type_iq2.gguf "Hi" -n 1
# What the model needs: shapes that agree with the hyper-parameters, every
# tensor, a supported architecture, usable hyper-parameters
damage shape      'put64(T["blk.2.attn_v.weight"][2] + 8, 16)';     expect_error "shape.gguf: tensor blk.2.attn_v.weight has ne \[64, 16\], the hyper-parameters imply \[64, 32\]" $RUN $t/shape.gguf "Hi" -n 1
damage hp         'put32(kv["qwen2.embedding_length"][2], 128)';    expect_error "hp.gguf: tensor .* has ne \[64, .*\], the hyper-parameters imply \[128, " $RUN $t/hp.gguf "Hi" -n 1
damage missing    'at = T["blk.3.ffn_down.weight"][0] + 8; b[at:at + 5] = b"xlk.3"'; expect_error "missing.gguf: tensor blk.3.ffn_down.weight is missing" $RUN $t/missing.gguf "Hi" -n 1
damage arch       'at = kv["general.architecture"][2] + 8; b[at:at + 5] = b"mamba"'; expect_error 'arch.gguf: architecture "mamba" is not supported' $RUN $t/arch.gguf "Hi" -n 1
damage hp_zero    'put32(kv["qwen2.block_count"][2], 0)';           expect_error "hp_zero.gguf: key qwen2.block_count must be a positive integer" $RUN $t/hp_zero.gguf "Hi" -n 1
damage hp_huge    'put32(kv["qwen2.block_count"][2], 1000000000)';    expect_error "hp_huge.gguf: key qwen2.block_count is 1000000000; at most 4096 is allowed" $RUN $t/hp_huge.gguf "Hi" -n 1
damage hp_type    'put32(kv["qwen2.attention.head_count"][1], 6)';  expect_error "hp_type.gguf: key qwen2.attention.head_count must be a positive integer" $RUN $t/hp_type.gguf "Hi" -n 1
damage hp_heads   'put32(kv["qwen2.attention.head_count_kv"][2], 3)'; expect_error "hp_heads.gguf: head_count 4 is not a multiple of head_count_kv 3" $RUN $t/hp_heads.gguf "Hi" -n 1
# The tokenizer
damage tok_pre    'at = kv["tokenizer.ggml.pre"][2] + 8; b[at:at + 5] = b"llama"'; expect_error 'tok_pre.gguf: tokenizer pre-tokenizer "llama" is not supported' $RUN $t/tok_pre.gguf "Hi" -n 1
# token_type cut to 8 entries (the 4 * 151928 bytes removed are a multiple of the alignment, so the data stays aligned)
damage vocab      'put64(T["token_embd.weight"][2] + 8, 1000)';     expect_error "vocab.gguf: tokenizer.ggml.tokens has 151936 entries, token_embd.weight only 1000 rows" $RUN $t/vocab.gguf "Hi" -n 1
damage tok_types  'at = kv["tokenizer.ggml.token_type"][2]; put64(at + 4, 8); del b[at + 12 + 32:at + 12 + 4 * 151936]'; expect_error "tok_types.gguf: tokenizer.ggml.token_type must be an array as long as tokenizer.ggml.tokens" $RUN $t/tok_types.gguf "Hi" -n 1

[ $fails = 0 ] && echo "all hostile GGUF files refused cleanly"
[ $fails = 0 ]
