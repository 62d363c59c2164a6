// quants.h — GGUF's block formats: how Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K and Q6_K pack a row of weights into bytes, and the matrix product
// over such rows (book/16-gguf-quantization.md).
//
// A block format cuts each row into blocks of 32 weights (256 for the
// k-quants) and stores every block as a few small integers plus one or two
// f16 scales. A row whose length is not a multiple of the block cannot be
// stored in that format.
#pragma once
#include <string>
#include <vector>
#include "common.h"
#include "kernels.h"
#include "tensor.h"

// (The block sizes and bytes of every type, dtype_block_size ...
// dtype_is_low_bit, are tensor.h's table; quants.cpp adds these formats' rows.)
// llama-quantize's fallback for a row the block does not divide:
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 (blocks of 32 instead of 256).
// The result may still not divide the row; the caller decides what then.
DType block_fallback(DType t, int cols);
// "f32", "q4_k", ... -> the type; throws LanternError naming `flag` otherwise.
DType parse_weight_type(const char* flag, const std::string& name);
const char* weight_type_list();  // "f32, f16, bf16, q8_0, ..." for messages

// One row of n floats -> blocks (n a multiple of the block size), and back.
// dequantize_row is the definition of what each format means: the fast
// kernels and the tests compare against it.
void quantize_row(DType t, const float* x, int n, uint8_t* out);
void dequantize_row(DType t, const void* in, int n, float* out);
// One block of 32 Q4_0 weights (18 bytes), one super-block of 256 Q4_K
// weights (144 bytes): what dequantize_row does for those two types.
void dequantize_block_q4_0(const uint8_t* in, float* y);
void dequantize_block_q4_k(const uint8_t* in, float* y);
// Any matrix converted to any type (a copy in `storage`).
Mat quantize_mat(const Mat& W, DType to, std::vector<uint8_t>& storage);

// Q8_0 (kernels.h: Q8_BLOCK, quantize_row_q8_0) is a weight format
// (--quant q8_0) and the form of the activations of every integer product
// (the fast Q8_0 matmul and the 4-6-bit formats' integer path).
// A bf16/f16/f32 matrix to Q8_0 into `storage`; returns a Mat pointing into it.
Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage);
// The same bits as quantize_row_q8_0 without a library call per value
// (quants_fast.cpp): what quantize_activations runs.
void quantize_row_q8_0_fast(const float* x, int n, uint8_t* out);
// The T rows of x [T, cols] as Q8_0 blocks, into `buf` (grown as needed,
// the caller's: kernels.h:KernelScratch); returns buf's data.
const uint8_t* quantize_activations(const float* x, int T, int cols, LineVector<uint8_t>& buf);

// Decode reads every weight once per token, so how the bytes lie decides
// how many instructions each weight costs. pack_mat lays out a matrix of any block
// format (Q4_0 ... Q6_K) for the integer tiles: each group of PACK_ROWS rows
// stores, per block, its 4-byte words of codes with the same word of all 16
// rows side by side (one 64-byte line feeds one vpdpbusd for 16 rows), and
// the group's scales 16 in a row after them (drawn in quants_packed.cpp). The same bytes,
// the same numbers: only their places change, so every product keeps its
// bits. can_pack says which matrices qualify; packed_row gives row r back
// as the file stores it (the plain kernels and the embedding lookup read
// that). In place when W.data is storage's own data, else a copy in storage.
const int PACK_ROWS = 16;
bool can_pack(const Mat& W);
void pack_mat(Mat& W, std::vector<uint8_t>& storage);
void packed_row(const Mat& W, int r, uint8_t* out);
// Row r of W as the file stores it: in place, or (packed) unpacked into `tmp`.
const uint8_t* file_row(const Mat& W, int r, std::vector<uint8_t>& tmp);
// (The tiles that read the packed layout and their driver: kernels.h,
// after matmul_quant_fast.)

// A format's facts as constants where `t` is one, for the tiles (the table
// in quants.cpp is a lookup): bytes per block (of 32, or 256 for the
// k-quants), the offset its codes are stored with (the symmetric formats:
// w = d * (q - offset)), and whether it has a minimum (w = d * q + m).
static inline int quant_block_bytes(DType t) {
    switch (t) {
        case DType::Q4_0: return 18;
        case DType::Q4_1: return 20;
        case DType::Q5_0: return 22;
        case DType::Q5_1: return 24;
        case DType::Q8_0: return 34;
        case DType::Q4_K: return 144;
        case DType::Q5_K: return 176;
        default: return 210;  // Q6_K
    }
}
static inline int quant_code_offset(DType t) {
    return t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : t == DType::Q6_K ? 32 : t == DType::Q8_0 ? 128 : 0;
}
static inline bool quant_has_min(DType t) {
    return t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K;
}

// Q4_K/Q5_K: the 6-bit scale sc and minimum mn of sub-block j (0..7) from
// the super-block's 12 scale bytes s (the layout is drawn in quants.cpp).
static inline void kscale_get(const uint8_t* s, int j, int& sc, int& mn) {
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

// out[t, r] = W[r, :] . x[t, :] (+ bias[r]) for a low-bit W, two ways.
// Plain (--kernels plain): dequantize one row, sum in double with the f32
// activations — the reference for what the format means.
void matmul_quant_plain(float* out, const float* x, const Mat& W, const float* bias, int T);
// The integer path (every other kernel set): the activations rounded to
// Q8_0 blocks, each block of weights multiplied by them in exact integers,
// then scaled and summed in one fixed order of 16 float lanes.
// dot_quant_q8 is that order written as plain loops (quants.cpp), one row w
// of W against one row xq of Q8_0 activation blocks, cols weights long.
float dot_quant_q8(DType t, const uint8_t* w, const uint8_t* xq, int cols);
// Its fast twins, threads over tiles of rows x tokens with a kernel set's
// tiles, are kernels.h:matmul_quant_fast (quants_fast.cpp).
