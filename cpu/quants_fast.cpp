// quants_fast.cpp — the fast twin of quants.cpp's matrix product for the
// 4-, 5- and 6-bit formats: integer dot products against 8-bit activations.
//
// The idea is the one the Q8_0 kernels use (kernels_fast.cpp): round each
// activation row once to Q8_0 blocks of 32 (int8 codes and one scale per
// block), then multiply the weights' small integer codes by those int8
// codes in integer arithmetic — exact — and turn the integer sums into
// floats once per 4 products with the blocks' scales. Nothing is unpacked
// to f32: a block's nibbles are spread to bytes in a register and go
// straight into the integer multiply-add (vpdpbusd with AVX-512 VNNI,
// pmaddubsw + pmaddwd with AVX2). Reading 4.5 bits per weight instead of
// 32 is what makes decode, which streams every weight once per token, fast.
//
// The order is quants.cpp:dot_quant_q8's (the reference, written as plain
// loops): per block of 32, eight exact int32 sums of four products, each
// converted and fused into one of 16 float lanes (even blocks lanes 0-7,
// odd blocks 8-15), then the fold of kernels_fast.cpp. This file holds
// what every instruction set shares: the activations' rounding to Q8_0,
// the driver and the portable tile, which calls the reference itself. The
// SIMD tiles are a kernel set's (kernels.h:SimdKernels::quant_tile), each
// in its instruction set's folder: quants_avx2.cpp holds the 16 lanes in two
// registers, quants_avx512.cpp in one (two blocks per step), and the
// kernel set chosen at run time (--kernels, cpuid) picks them. All give
// the same bits for every tile, batch size and thread count
// (tests/test_gguf.cpp).
//
// The activations lose a little: each is rounded to 8 bits with its block's
// scale. llama.cpp does the same; book/16-gguf-quantization.md measures the
// cost. --kernels plain keeps f32 activations (quants.cpp:matmul_quant_plain).
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"

// quantize_row_q8_0 (quants.cpp) with the same bits, written so that
// nothing in it is a library call. The plain version calls fmax and lround
// once per value (neither is inlined); a decode step quantizes every
// activation of every product that way, while the other threads wait, and
// this version takes less than half the time (book/A-measurements.md,
// "What a token costs outside the products"). Here:
//   - the maximum of |x| with a compare (fmax differs only for NaN, and
//     "x > m ? x : m" keeps m for a NaN x, as fmax does), in eight
//     running maxima: one chain of 32 dependent compares was the slowest
//     part, and a maximum is the same in any order;
//   - lround (to nearest, halves away from zero) as truncation plus a
//     step: t = trunc(v), and one more unit of v's sign when
//     |v - t| >= 0.5 (v - t is exact: both have v's exponent or less),
//     added as 0 or 1 without a branch (a branch on a random fraction
//     mispredicts half the time: measured slower than the library call).
//   The low 8 bits are kept, as (int8_t)lround(v) keeps them; past 2^31 (a
//     block whose scale underflowed) both conversions leave a low byte of 0.
void quantize_row_q8_0_fast(const float* x, int n, uint8_t* out) {
    for (int b = 0; b < n / Q8_BLOCK; b++) {
        const float* xb = x + b * Q8_BLOCK;
        float m[8] = {0};  // eight running maxima, not one chain of 32 (the maximum is the same in any order)
        for (int j = 0; j < Q8_BLOCK; j++) {
            float a = std::fabs(xb[j]);
            m[j % 8] = a > m[j % 8] ? a : m[j % 8];
        }
        float amax = 0;
        for (int j = 0; j < 8; j++) amax = m[j] > amax ? m[j] : amax;
        float d = amax / 127.0f;
        uint16_t dh = f32_to_f16(d);
        float inv = d > 0 ? 1.0f / d : 0.0f;
        uint8_t* blk = out + (size_t)b * Q8_BLOCK_BYTES;
        std::memcpy(blk, &dh, 2);
        for (int j = 0; j < Q8_BLOCK; j++) {
            float v = xb[j] * inv, t = std::trunc(v);
            float step = std::fabs(v - t) >= 0.5f;  // 0 or 1, no branch: v's fraction is random
            blk[2 + j] = (uint8_t)(int8_t)(int)(t + std::copysign(step, v));
        }
    }
}

// The activations of an integer product: [T, cols/32 blocks], into the
// caller's buffer (kernels.h:KernelScratch), threads over the tokens.
const uint8_t* quantize_activations(const float* x, int T, int cols, LineVector<uint8_t>& buf) {
    size_t rb = (size_t)cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    if (buf.size() < T * rb) buf.resize(T * rb);
    #pragma omp parallel for schedule(static) if (T > 1)
    for (int t = 0; t < T; t++) quantize_row_q8_0_fast(x + (size_t)t * cols, cols, &buf[t * rb]);
    return buf.data();
}

// A tile: n_rows x n_tokens dot products (out[r][t] = row r . token t), as
// in kernels.h:SimdKernels::quant_tile; w are weight rows, x rows of Q8_0
// activation blocks.
typedef void (*QuantTile)(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                          int n_blocks, float out[MAX_TILE][MAX_TILE]);

// The portable set: the reference, one row at a time.
static void tile_portable(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                          int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    for (int k = 0; k < n_tokens; k++) out[0][k] = dot_quant_q8(t, w[0], x[k], n_blocks * 32);
}

// ---------------------------------------------------------------------------
// The driver: the activations to Q8_0 once, then threads over tiles of rows
// (each tile one thread's: no result depends on the thread count), and
// within a tile the tokens in groups, the tile's rows staying in the cache.
// Several matrices that multiply the same x (q, k and v; gate and up) are
// one list of tiles, as in kernels_fast.cpp:matmul_fast: one parallel loop,
// the threads meet once, and each tile runs exactly as it would alone, so
// every output has the bits of its own product.
struct QuantDriver {
    QuantTile tile = tile_portable;
    int tile_rows = 1, group = MAX_TILE;
};

// The kernel set's tile where it has one for W's type (AVX2's does not
// read Q8_0: its codes of 8 bits would overflow pmaddubsw's int16 pairs),
// else the portable one.
static QuantDriver driver_for(const Mat& W, int T, const SimdKernels& k) {
    QuantDriver d;
    if (W.packed) {  // a tile is a group of 16 rows (packed_tile)
        d.tile_rows = W.packed;
        return d;
    }
    if (k.quant_tile && (W.dtype != DType::Q8_0 || k.quant_tile_q8)) {
        d.tile = k.quant_tile;
        d.tile_rows = T == 1 ? k.quant_decode_rows : k.quant_rows;
        d.group = k.quant_tokens;
    }
    return d;
}

static void run_quant_tile(const MatmulOut& o, int i, const uint8_t* xq, int T, const QuantDriver& d) {
    const Mat& W = *o.W;
    int n_blocks = W.cols / Q8_BLOCK;
    size_t xq_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES, w_bytes = dtype_row_bytes(W.dtype, W.cols);
    // The tile's rows: for one token or a few, one from each stripe of the
    // matrix, so that a thread's tiles read long streams (kernels_fast.cpp:
    // tile_row_list, kernels.h:STREAM_TOKENS).
    int rows[MAX_TILE], n_rows = tile_row_list(i, d.tile_rows, W.rows, T <= STREAM_TOKENS, rows);
    const uint8_t* w[MAX_TILE];
    for (int r = 0; r < d.tile_rows; r++) w[r] = (const uint8_t*)W.data + rows[std::min(r, n_rows - 1)] * w_bytes;
    float res[MAX_TILE][MAX_TILE];
    for (int t0 = 0; t0 < T; t0 += d.group) {
        int n_tok = std::min(d.group, T - t0);
        const uint8_t* xs[MAX_TILE];
        for (int k = 0; k < n_tok; k++) xs[k] = xq + (size_t)(t0 + k) * xq_bytes;
        d.tile(W.dtype, w, d.tile_rows, xs, n_tok, n_blocks, res);
        for (int r = 0; r < n_rows; r++)
            for (int k = 0; k < n_tok; k++)
                o.out[(size_t)(t0 + k) * W.rows + rows[r]] = res[r][k] + (o.bias ? o.bias[rows[r]] : 0.0f);
    }
}

void matmul_quant_fast_many(const MatmulOut* outs, int n, const float* x, int T, const SimdKernels& k,
                            KernelScratch& s) {
    if (n > MAX_MATMUL_OUTS) fail("matmul_many: %d matrices, at most %d", n, MAX_MATMUL_OUTS);
    QuantDriver d[MAX_MATMUL_OUTS];
    int first[MAX_MATMUL_OUTS + 1] = {0};
    for (int m = 0; m < n; m++) {
        d[m] = driver_for(*outs[m].W, T, k);
        first[m + 1] = first[m] + (outs[m].W->rows + d[m].tile_rows - 1) / d[m].tile_rows;
    }
    const uint8_t* xq = quantize_activations(x, T, outs[0].W->cols, s.xq);
    BlockSums xs[MAX_MATMUL_OUTS] = {};
    for (int m = 0; m < n; m++) {
        if (!outs[m].W->packed) continue;
        int same = 0;  // a packed matrix of this type before: its sums are made
        while (same < m && !(outs[same].W->packed && outs[same].W->dtype == outs[m].W->dtype)) same++;
        xs[m] = same < m ? xs[same] : activation_sums(outs[m].W->dtype, xq, T, outs[m].W->cols, s);
    }
    auto run = [&](int tile) {
        int m = 0;
        while (tile >= first[m + 1]) m++;
        if (outs[m].W->packed) packed_tile(outs[m], tile - first[m], xq, xs[m], T, k);
        else run_quant_tile(outs[m], tile - first[m], xq, T, d[m]);
    };
    // Decode and short batches: shrinking contiguous runs of tiles; prefill:
    // a tile to whichever thread is free (kernels_fast.cpp:matmul_fast says why).
    if (T <= STREAM_TOKENS) {
        #pragma omp parallel for schedule(guided, 8)
        for (int tile = 0; tile < first[n]; tile++) run(tile);
    } else {
        #pragma omp parallel for schedule(dynamic)
        for (int tile = 0; tile < first[n]; tile++) run(tile);
    }
}

void matmul_quant_fast(float* out, const float* x, const Mat& W, const float* bias, int T, const SimdKernels& k,
                       KernelScratch& s) {
    MatmulOut one = {out, &W, bias};
    matmul_quant_fast_many(&one, 1, x, T, k, s);
}
