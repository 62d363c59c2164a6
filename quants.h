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

// Weights per block (1 for the float types) and bytes per block.
int dtype_block_size(DType t);
int dtype_block_bytes(DType t);
// Bytes of one row of n weights (n a multiple of the block size).
size_t dtype_row_bytes(DType t, int n);
// The 4-, 5- and 6-bit formats, whose matrix products live in quants*.cpp
// (Q8_0 has its own int8 kernels in kernels.cpp and kernels_fast.cpp, but
// under AVX-512 it runs in quants_fast.cpp too: kernels.cpp:matmul).
bool dtype_is_low_bit(DType t);
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
// The tile that reads the packed layout (quants_packed.cpp), for
// quants_fast.cpp's driver. activation_sums makes, once per call, the sum
// xs_j of each 4-code word of every token's Q8_0 activation blocks
// ([T][n_blocks][8]) in the form a type's tile starts from; packed_tile
// runs a packed matrix's tile i (rows 16i .. 16i+15) for every token.
struct BlockSums {
    const int32_t* start;  // -offset * xs_j, a lane's start where the codes have an offset (Q4_0 8, Q5_0 16, Q6_K 32, Q8_0 128)
    const float* xsf;      // -xs_j as a float, where the format has a minimum (Q4_1, Q5_1, Q4_K, Q5_K)
};
BlockSums activation_sums(DType t, const uint8_t* xq, int T, int cols);
void packed_tile(const MatmulOut& o, int i, const uint8_t* xq, const BlockSums& xs, int T, int simd);
// Whether the packed tile of an instruction-set level (quant_simd_for:
// 2 AVX-512, 1 AVX2) reads type t: AVX-512 every block format, AVX2 all
// but Q8_0 (kernels_avx2.cpp's tile decodes it faster in the file's
// layout), none at level 0. A matrix is packed only for a tile that reads
// it (model.cpp:pack_model); the others keep the file's layout.
bool packed_tile_reads(DType t, int simd);

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
// The fast twins, threads over tiles of rows x tokens (quants_fast.cpp).
// simd 0: the reference itself; 1: AVX2; 2: AVX-512 VNNI — bitwise equal.
// Q8_0 weights fit the same scheme (codes c + 128, offset 128) and give
// the bits of kernels_fast.cpp's Q8_0 order; with AVX-512 these tiles are
// the only Q8_0 kernel (8-row decode tiles, prefetch; kernels.cpp:matmul).
void matmul_quant_fast(float* out, const float* x, const Mat& W, const float* bias, int T, int simd);
// Several matrices of the same width times the same x in one parallel loop
// (kernels.h:matmul_many), each output with the bits of matmul_quant_fast.
void matmul_quant_fast_many(const MatmulOut* outs, int n, const float* x, int T, int simd);
// The best `simd` this build can run (0, 1 or 2), and the one that matches
// a kernel set's name ("scalar", "avx2", "avx512"; kernels.h), at most the best.
int quant_simd_level();
int quant_simd_for(const char* kernel_set_name);
