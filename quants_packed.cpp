// quants_packed.cpp — the integer tile for Q4_0, Q5_0 and Q8_0 matrices
// laid out at load for it (quants.h:pack_mat, model.cpp:pack_model).
//
// quants_fast.cpp's tiles read the file's layout: a block's scale and codes
// side by side, row after row, so each block costs shuffles to put codes
// and scales where the lanes want them, and a horizontal sum at the end of
// each row. Packed, a group of 16 rows keeps word j of one block of all 16
// rows in one 64-byte line, and the 16 rows become the 16 lanes of one
// register: the same integers and the same float operations in the same
// order as the reference (quants.cpp:dot_quant_q8), so the same bits, with
// fewer instructions per weight. quants_fast.cpp's driver calls
// packed_tile for a packed matrix's tiles.
#include <cstring>
#include <vector>
#include "quants.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define PACKED_AVX512 1  // exactly when quants_fast.cpp has its AVX-512 tiles (quant_simd_level() == 2)
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers: a false alarm
#endif
#define INLINE static inline __attribute__((always_inline))

INLINE float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// The packed layout (quants.h:pack_mat): 16 rows in the 16 int32 lanes. A
// 64-byte line of a group holds word j of one block of all 16 rows, so one
// vpdpbusd, against the token's word j broadcast, makes the sum p_j of the
// 16 rows at once; the order's float lanes become 16 registers (lane j,
// even or odd block), each holding that lane for the 16 rows, and the fold
// is adds between registers. Per block of 16 rows: 8 vpdpbusd, 8
// conversions, 8 fused multiply-adds and one scale vector — no shuffles,
// no scale broadcasts, no horizontal sums. The same integers and the same
// float operations in the same order as the reference: the same bits.
// xs holds -xs_j of the token's blocks (the driver makes it once per call).
const size_t PACK_PREFETCH = 8192;

INLINE void packed_block(DType t, const uint8_t* g, const uint8_t* scales, const uint8_t* xb, const int32_t* xs, int b,
                         __m512 acc[8]) {
    const int words = t == DType::Q8_0 ? 8 : t == DType::Q5_0 ? 5 : 4;
    const int shift = t == DType::Q8_0 ? 7 : t == DType::Q5_0 ? 4 : 3;  // offset 128, 16 or 8
    const uint8_t* wb = g + (size_t)b * words * 64;
    // Decode reads a thread's groups as one long stream, which the hardware
    // prefetcher alone does not run far enough ahead of: ask for the lines
    // PACK_PREFETCH bytes down (past a group's end, the next group's, read
    // next). Measured on the Zen 5 machine, 2 threads, alternated: Q8_0 decode
    // 42-52 -> 50-68 tok/s, q4_0 64 -> 89-102 (4 KB and 12 KB did no better).
    for (int j = 0; j < words; j++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * j), _MM_HINT_T0);
    __m512 sd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(scales + (size_t)b * 32))),
                              _mm512_set1_ps(f16_at(xb)));
    __m512i q[8];
    if (t == DType::Q8_0) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) q[j] = _mm512_loadu_si512((const void*)(wb + 64 * j));
    } else {  // word k: weights 4k.. in the low nibbles, 16+4k.. in the high ones
        const __m512i low4 = _mm512_set1_epi8(15);
        const uint8_t* nib = wb + (t == DType::Q5_0 ? 64 : 0);  // Q5_0: word 0 is the fifth bits
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m512i v = _mm512_loadu_si512((const void*)(nib + 64 * k));
            q[k] = _mm512_and_si512(v, low4);
            q[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
        if (t == DType::Q5_0) {
            // Bit i of a row's 32-bit word is weight i's fifth bit: byte c of
            // it holds those of lanes j = 2c (bits 0-3) and 2c+1 (bits 4-7).
            // Copied to the four bytes of its lane, tested bit by bit, it is
            // the mask of the bytes that get 16.
            __m512i qh = _mm512_loadu_si512((const void*)wb);
            const __m512i in_lane = _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0);
            const __m512i bits_lo = _mm512_set1_epi32(0x08040201), bits_hi = _mm512_set1_epi32((int)0x80402010);
            const __m512i sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m512i rep = _mm512_shuffle_epi8(qh, _mm512_add_epi8(in_lane, _mm512_set1_epi8((char)c)));
                q[2 * c] = _mm512_mask_add_epi8(q[2 * c], _mm512_test_epi8_mask(rep, bits_lo), q[2 * c], sixteen);
                q[2 * c + 1] = _mm512_mask_add_epi8(q[2 * c + 1], _mm512_test_epi8_mask(rep, bits_hi), q[2 * c + 1], sixteen);
            }
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        int32_t xw;
        std::memcpy(&xw, xb + 2 + 4 * j, 4);
        __m512i s = _mm512_slli_epi32(_mm512_set1_epi32(xs[8 * b + j]), shift);  // -offset * xs_j
        s = _mm512_dpbusd_epi32(s, q[j], _mm512_set1_epi32(xw));
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sd, acc[j]);
    }
}

// One group of 16 rows times one token: 16 results (before the bias).
INLINE __m512 packed_group_t(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* xs) {
    __m512 even[8], odd[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) even[j] = odd[j] = _mm512_setzero_ps();
    const uint8_t* scales = g + (size_t)n_blocks * (t == DType::Q8_0 ? 8 : t == DType::Q5_0 ? 5 : 4) * 64;
    int b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
        packed_block(t, g, scales, xq + (size_t)b * Q8_BLOCK_BYTES, xs, b, even);
        packed_block(t, g, scales, xq + (size_t)(b + 1) * Q8_BLOCK_BYTES, xs, b + 1, odd);
    }
    if (b < n_blocks) packed_block(t, g, scales, xq + (size_t)b * Q8_BLOCK_BYTES, xs, b, even);
    __m512 u[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) u[j] = _mm512_add_ps(even[j], odd[j]);
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(u[0], u[4]), _mm512_add_ps(u[2], u[6])),
                         _mm512_add_ps(_mm512_add_ps(u[1], u[5]), _mm512_add_ps(u[3], u[7])));
}

static void packed_group_avx512(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* xs,
                                const float* bias, float* out) {
    __m512 r = t == DType::Q8_0   ? packed_group_t(DType::Q8_0, g, n_blocks, xq, xs)
               : t == DType::Q5_0 ? packed_group_t(DType::Q5_0, g, n_blocks, xq, xs)
                                  : packed_group_t(DType::Q4_0, g, n_blocks, xq, xs);
    _mm512_storeu_ps(out, _mm512_add_ps(r, bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps()));
}
#endif  // PACKED_AVX512

// A packed matrix's tile i: rows 16i .. 16i+15, every token. Without the
// AVX-512 tile, the reference on each row as the file stores it.
void packed_tile(const MatmulOut& o, int i, const uint8_t* xq, const int32_t* xs, int T, int simd) {
    const Mat& W = *o.W;
    int n_blocks = W.cols / Q8_BLOCK, first = i * W.packed;
    size_t xq_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES, rb = dtype_row_bytes(W.dtype, W.cols);
#ifdef PACKED_AVX512
    if (simd >= 2) {
        const uint8_t* g = (const uint8_t*)W.data + (size_t)first * rb;
        for (int t = 0; t < T; t++)
            packed_group_avx512(W.dtype, g, n_blocks, xq + t * xq_bytes, xs + (size_t)t * n_blocks * 8,
                                o.bias ? o.bias + first : nullptr, o.out + (size_t)t * W.rows + first);
        return;
    }
#endif
    (void)xs;
    (void)simd;
    std::vector<uint8_t> row(rb);
    for (int r = first; r < first + W.packed; r++) {
        packed_row(W, r, row.data());
        for (int t = 0; t < T; t++)
            o.out[(size_t)t * W.rows + r] = dot_quant_q8(W.dtype, row.data(), xq + t * xq_bytes, W.cols) + (o.bias ? o.bias[r] : 0.0f);
    }
}

// -xs_j of every block of every token (int32, [T][n_blocks][8]): the packed
// tiles start each lane's sum there. Made once per call, read by all tiles.
static std::vector<int32_t> g_xs;

const int32_t* activation_sums(const uint8_t* xq, int T, int cols) {
    int n_blocks = cols / Q8_BLOCK;
    g_xs.resize((size_t)T * n_blocks * 8);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < n_blocks; b++) {
            const int8_t* x = (const int8_t*)(xq + ((size_t)t * n_blocks + b) * Q8_BLOCK_BYTES + 2);
            for (int j = 0; j < 8; j++) g_xs[((size_t)t * n_blocks + b) * 8 + j] = -(x[4 * j] + x[4 * j + 1] + x[4 * j + 2] + x[4 * j + 3]);
        }
    return g_xs.data();
}

