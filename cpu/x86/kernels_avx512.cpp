// kernels_avx512.cpp — the micro-kernels for AVX-512 (F, BW, VL, BF16,
// VNNI: x86-64 cores since about 2019-2022). What a zmm register buys
// over AVX2:
//   - 16 floats per register: the 16 lanes of the summation order
//     (kernels_fast.cpp) are exactly one register, one accumulator per dot
//     product, half the instructions of AVX2 per weight;
//   - 32 registers instead of 16: the prefill tile grows to 4 rows x 6
//     tokens (24 accumulators), so each weight loaded serves 6 tokens;
//   - masked loads: a row's last few values load without reading past its
//     end and without a copy;
//   - VNNI: vpdpbusd multiplies unsigned by signed bytes and adds each group
//     of 4 products into an int32 lane, in one instruction (AVX2 needs three).
//
// The functions carry their instruction sets (the pragma below), so this
// file compiles on any x86-64 compiler flags and runs only where
// cpu/kernel_sets.cpp:kernels_init found the CPU supports it.
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"
#include "cpu/x86/quants_x86.h"
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 headers build some results from _mm512_undefined_*(),
// which -Wmaybe-uninitialized reports inside every caller: a false alarm.
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// "The functions below may use these instructions", in GCC's and clang's words.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni")
#endif

#define INLINE static inline __attribute__((always_inline))

// 16 lanes -> one float: the fold u[j] = l[j] + l[j+8], then the 8-lane
// tree ((u0+u4) + (u2+u6)) + ((u1+u5) + (u3+u7)).
INLINE float hsum(__m512 l) {
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l), 1));  // AVX512F (no DQ)
    __m256 u = _mm256_add_ps(_mm512_castps512_ps256(l), hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// hsum of four registers at once, the same tree for each: the fold of
// lanes j and j+8 for two registers per add (their halves shuffled side by
// side), then u[k] + u[k+4] for all four, then the last two levels within
// each 128-bit quarter. Result i is hsum of register i. A tile ends in one
// of these per four dot products instead of one hsum each (8 instructions
// each: 16% of a 4 x 6 tile's instructions at 896 columns).
INLINE __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));  // [u_a | u_b]
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    __m512 v = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));  // u[k] + u[k+4]
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));  // (v0 + v2), (v1 + v3) in each quarter
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));  // their sum in element 0 of each quarter
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), v));
}
// Rows r0 .. r0+3 of token t of a tile's accumulators into out.
INLINE void hsum_rows4(__m512 a, __m512 b, __m512 c, __m512 d, float out[MAX_TILE][MAX_TILE], int r0, int t) {
    float h[4];
    _mm_storeu_ps(h, hsum4(a, b, c, d));
    for (int i = 0; i < 4; i++) out[r0 + i][t] = h[i];
}

// Values c .. c+15 of a row widened to f32; `m` masks off those past the
// row's end (they load as zeros and are never read from memory). bf16 is the
// top half of an f32: zero-extend to 32 bits and shift up by 16.
INLINE __m512 load16(DType dt, const void* row, int c, __mmask16 m = 0xFFFF) {
    switch (dt) {
        case DType::BF16: {
            __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t*)row + c);
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        }
        case DType::F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t*)row + c));
        default: return _mm512_maskz_loadu_ps(m, (const float*)row + c);
    }
}

// ROWS x NT dot products, one register each. Per step (16 columns) it loads
// NT activations and ROWS weights and does ROWS x NT FMAs: at 4 x 6, 24
// accumulators + 6 activations + 1 weight = 31 of the 32 registers. The
// empty asm statements emit no instruction; they say "this value is in a
// register here", so GCC does not fold a load of x into every FMA.
// It goes over the columns c0 .. c1-1: the whole row (c0 = 0, c1 = cols,
// lanes unused), or one chunk of it (tile_chunk_avx512), the 16 lanes of
// each dot product starting from `lanes` where c0 > 0 and left there where
// c1 < cols: a float stored and loaded back is the same float, so a row in
// chunks is the same chain of FMAs as a row at once.
const int ROWS = 4, TOKENS = 6;
INLINE void tile_n(DType dt, const uint8_t* const* w, const float* const* x, int NT, int cols, int c0, int c1,
                   float* lanes, float out[MAX_TILE][MAX_TILE]) {
    __m512 acc[ROWS][TOKENS];
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++)
            acc[r][t] = c0 > 0 ? _mm512_loadu_ps(lanes + (r * TOKENS + t) * 16) : _mm512_setzero_ps();
    // Each row's next line, ROWS rows further down, asked for once per 64 bytes (kernels.h:prefetch_ahead).
    const size_t elt = dt == DType::F32 ? 4 : 2, ahead = ROWS * elt * cols;
    int c = c0;
    for (; c + 16 <= c1; c += 16) {
        __m512 xv[TOKENS];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            xv[t] = _mm512_loadu_ps(x[t] + c);
            __asm__("" : "+v"(xv[t]));
        }
#pragma GCC unroll 8
        for (int r = 0; r < ROWS; r++) {
            if (c * elt % 64 == 0) prefetch_ahead(w[r] + c * elt, ahead, TO_L2);
            __m512 wv = load16(dt, w[r], c);
            __asm__("" : "+v"(wv));
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (c < c1) {  // the row's last step (c1 = cols), zero-padded by the mask
        __mmask16 m = (__mmask16)((1u << (c1 - c)) - 1);
#pragma GCC unroll 8
        for (int r = 0; r < ROWS; r++) {
            __m512 wv = load16(dt, w[r], c, m);
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) acc[r][t] = _mm512_fmadd_ps(wv, load16(DType::F32, x[t], c, m), acc[r][t]);
        }
    }
    if (c1 < cols) {  // not the last chunk: the lanes wait for the next one
#pragma GCC unroll 8
        for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) _mm512_storeu_ps(lanes + (r * TOKENS + t) * 16, acc[r][t]);
        return;
    }
    static_assert(ROWS == 4, "the tile ends in one hsum4 per token");
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) hsum_rows4(acc[0][t], acc[1][t], acc[2][t], acc[3][t], out, 0, t);
}

// tile_n force-inlined with dt and the token count constants: one copy per
// weight type and count, loops unrolled, accumulators in registers.
INLINE void tile_dt(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols, int c0, int c1,
                    float* lanes, float out[MAX_TILE][MAX_TILE]) {
    switch (n_tokens) {
        case 6: tile_n(dt, w, x, 6, cols, c0, c1, lanes, out); break;
        case 5: tile_n(dt, w, x, 5, cols, c0, c1, lanes, out); break;
        case 4: tile_n(dt, w, x, 4, cols, c0, c1, lanes, out); break;
        case 3: tile_n(dt, w, x, 3, cols, c0, c1, lanes, out); break;
        case 2: tile_n(dt, w, x, 2, cols, c0, c1, lanes, out); break;
        default: tile_n(dt, w, x, 1, cols, c0, c1, lanes, out); break;
    }
}
static void tile_avx512(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                        float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_dt(DType::BF16, w, x, n_tokens, cols, 0, cols, nullptr, out);
    else if (dt == DType::F16) tile_dt(DType::F16, w, x, n_tokens, cols, 0, cols, nullptr, out);
    else tile_dt(DType::F32, w, x, n_tokens, cols, 0, cols, nullptr, out);
}
static void tile_chunk_avx512(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                              int c0, int c1, float* lanes, float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_dt(DType::BF16, w, x, n_tokens, cols, c0, c1, lanes, out);
    else if (dt == DType::F16) tile_dt(DType::F16, w, x, n_tokens, cols, c0, c1, lanes, out);
    else tile_dt(DType::F32, w, x, n_tokens, cols, c0, c1, lanes, out);
}

// Q8_0: no tile here. Its VNNI tiles are quants_fast.cpp's, which take
// every block format in the one order of quants.cpp:dot_quant_q8 (for Q8_0
// the bits of this file's order) with 8-row decode tiles and prefetch;
// cpu/kernel_sets.cpp:goes_to_quants sends Q8_0 there when a set's tile_q8 is empty.

// Attention: y += alpha * v, a block of value rows at a time.
// The value rows of a block into y: up to 8 registers of y (128 values)
// stay in registers while all the rows go by, instead of a load and a store
// of y per row. Each element is still one fma per row, in order of rows.
INLINE void axpy_nv(DType dt, float* y, const float* alpha, const uint8_t* x, size_t stride, int n_rows, int i0,
                    int n, int NV) {
    __m512 acc[8];
    __mmask16 m[8];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) {
        int c = i0 + 16 * v;
        m[v] = n - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - c)) - 1);
        acc[v] = _mm512_maskz_loadu_ps(m[v], y + c);
    }
    for (int j = 0; j < n_rows; j++) {
        __m512 a = _mm512_set1_ps(alpha[j]);
        const uint8_t* row = x + j * stride;
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[v] = _mm512_fmadd_ps(a, load16(dt, row, i0 + 16 * v, m[v]), acc[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) _mm512_mask_storeu_ps(y + i0 + 16 * v, m[v], acc[v]);
}
INLINE void axpy_dt(DType dt, float* y, const float* alpha, const uint8_t* x, size_t stride, int n_rows, int n) {
    for (int i0 = 0; i0 < n; i0 += 128) switch ((std::min(n - i0, 128) + 15) / 16) {
        case 8: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 8); break;
        case 7: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 7); break;
        case 6: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 6); break;
        case 5: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 5); break;
        case 4: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 4); break;
        case 3: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 3); break;
        case 2: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 2); break;
        default: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, n, 1); break;
    }
}
static void axpy_avx512(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n) {
    if (xt == DType::BF16) axpy_dt(DType::BF16, y, alpha, x, stride, n_rows, n);
    else if (xt == DType::F16) axpy_dt(DType::F16, y, alpha, x, stride, n_rows, n);
    else axpy_dt(DType::F32, y, alpha, x, stride, n_rows, n);
}

// --kernels bf16dot: bf16 weights times activations rounded to bf16, with
// AVX512_BF16's vdpbf16ps. One instruction takes 32 bf16 pairs and adds
// their products into 16 float lanes (lane j: the pair at 2j+1, then 2j),
// so a step covers 32 columns where an FMA covers 16: twice the arithmetic
// per instruction, and the weights need no widening. The price: each
// activation loses its low 16 bits (8 significant bits remain), where the
// default set multiplies the bf16 weight by the full f32 activation. This
// is what llama.cpp does for bf16 weights. The activations are rounded
// once per matmul, before the tiles (round_bf16_avx512: vcvtne2ps2bf16, 32
// at a time; kernels_fast.cpp:matmul_fast), so a tile loads 64 bytes per
// token and step and converts nothing; rounded inside the tile instead,
// each token's values were converted again for every tile of rows, 3
// conversions per 24 dot steps. The tile has tile_n's shape, 4 rows x 6
// tokens (24 accumulators, 6 activations, 1 weight): in decode it reads 4
// streams of a stripe each, as the exact set does, where a tile of 8 rows
// read 8 and decoded slower (book/A-measurements.md, "bf16dot's loads").
// Other weight types take the avx512 tiles above.
// kernels_fast.cpp:dot_bf16dot_scalar is the scalar twin.
static void round_bf16_avx512(const float* x, uint16_t* out, int n) {
    int i = 0;
    for (; i + 32 <= n; i += 32)
        _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(out + i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

const int BF_ROWS = 4, BF_TOKENS = 6;
INLINE void tile_bf16_n(const uint8_t* const* w, const uint16_t* const* x, int NT, int cols,
                        float out[MAX_TILE][MAX_TILE]) {
    __m512 acc[BF_ROWS][BF_TOKENS];
#pragma GCC unroll 8
    for (int r = 0; r < BF_ROWS; r++)
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) acc[r][t] = _mm512_setzero_ps();
    const size_t ahead = (size_t)BF_ROWS * 2 * cols;
    int c = 0;
    for (; c + 32 <= cols; c += 32) {
        __m512bh xv[BF_TOKENS];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            xv[t] = (__m512bh)_mm512_loadu_si512(x[t] + c);
            __asm__("" : "+v"(xv[t]));
        }
#pragma GCC unroll 8
        for (int r = 0; r < BF_ROWS; r++) {
            prefetch_ahead(w[r] + 2 * c, ahead, TO_L2);  // as tile_n: the line BF_ROWS rows further down
            // A step's 64 bytes of weights as two 32-byte halves: model
            // files align their tensors to 8 bytes (safetensors) or 32
            // (GGUF), not to a cache line, and a 64-byte load that
            // straddles two lines costs more than a second load and an
            // insert. The 0.5B model's rows all start 32 bytes into a line
            // (book/A-measurements.md, "bf16dot's loads").
            const uint16_t* wp = (const uint16_t*)w[r] + c;
            __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)wp)),
                                            _mm256_loadu_si256((const __m256i*)(wp + 16)), 1);
            __asm__("" : "+v"(wv));
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)wv, xv[t]);
        }
    }
    if (c < cols) {  // the same step once more, zero-padded by the masks
        __mmask32 mw = (__mmask32)((1ull << (cols - c)) - 1);
        __m512bh xv[BF_TOKENS];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) xv[t] = (__m512bh)_mm512_maskz_loadu_epi16(mw, x[t] + c);
#pragma GCC unroll 8
        for (int r = 0; r < BF_ROWS; r++) {
            __m512i wv = _mm512_maskz_loadu_epi16(mw, (const uint16_t*)w[r] + c);
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)wv, xv[t]);
        }
    }
    static_assert(BF_ROWS % 4 == 0, "the tile ends in one hsum4 per 4 rows and token");
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 2
        for (int r = 0; r < BF_ROWS; r += 4) hsum_rows4(acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t], out, r, t);
}

// f32 and f16 weights in the bf16dot set: the avx512 tiles, of the same shape.
static_assert(BF_ROWS == ROWS && BF_TOKENS == TOKENS, "bf16dot's other weight types take tile_avx512 as it is");

static void tile_bf16dot(const uint8_t* const* w, const uint16_t* const* x, int n_tokens, int cols,
                         float out[MAX_TILE][MAX_TILE]) {
    switch (n_tokens) {  // at most BF_TOKENS
        case 6: tile_bf16_n(w, x, 6, cols, out); break;
        case 5: tile_bf16_n(w, x, 5, cols, out); break;
        case 4: tile_bf16_n(w, x, 4, cols, out); break;
        case 3: tile_bf16_n(w, x, 3, cols, out); break;
        case 2: tile_bf16_n(w, x, 2, cols, out); break;
        default: tile_bf16_n(w, x, 1, cols, out); break;
    }
}

// Prefill attention's tiles (cpu/attention_fast.cpp:attention_heads_fast).
// Scores: 4 queries x 64 keys (4 registers of 16 keys each) = 16
// accumulators; per dimension d, 4 loads of the transposed keys and one
// broadcast of q_i[d] per query, each score one chain of fmas over d.
INLINE void att_scores_n(float* s, const float* q, size_t q_stride, int NQ, const float* kt, int head_dim) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) acc[i][v] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; d++) {
        __m512 kv[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            kv[v] = _mm512_loadu_ps(kt + d * ATT_BLOCK + 16 * v);
            __asm__("" : "+v"(kv[v]));  // in a register: one load, not one per query
        }
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++) {
            __m512 qv = _mm512_set1_ps(q[i * q_stride + d]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[i][v] = _mm512_fmadd_ps(qv, kv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(s + i * ATT_BLOCK + 16 * v, acc[i][v]);
}
static void att_scores_avx512(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim) {
    static_assert(ATT_BLOCK == 64, "the score tile holds 4 registers of 16 keys");
    for (int i0 = 0; i0 < nq; i0 += 4) {
        float* si = s + i0 * ATT_BLOCK;
        const float* qi = q + i0 * q_stride;
        switch (std::min(4, nq - i0)) {
            case 4: att_scores_n(si, qi, q_stride, 4, kt, head_dim); break;
            case 3: att_scores_n(si, qi, q_stride, 3, kt, head_dim); break;
            case 2: att_scores_n(si, qi, q_stride, 2, kt, head_dim); break;
            default: att_scores_n(si, qi, q_stride, 1, kt, head_dim); break;
        }
    }
}

// P V: NQ queries x NU registers of 16 output values = 16 accumulators,
// 4 queries x 64 values or (a decode step's GQA group) 5 to 8 queries x 32
// values; each part of a value row is loaded (and widened) once for all
// the queries. The element order is axpy's: one fma per row, in order of rows.
INLINE void att_pv_n(DType dt, float* o, const float* p, int NQ, int NU, const uint8_t* v, size_t stride,
                     int n_rows, int d0, int head_dim) {
    __m512 acc[8][4];
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int u = 0; u < NU; u++) {
        int c = d0 + 16 * u;
        m[u] = head_dim - c >= 16 ? (__mmask16)0xFFFF : c >= head_dim ? 0 : (__mmask16)((1u << (head_dim - c)) - 1);
    }
#pragma GCC unroll 8
    for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
        for (int u = 0; u < NU; u++) acc[i][u] = _mm512_maskz_loadu_ps(m[u], o + i * head_dim + d0 + 16 * u);
    for (int j = 0; j < n_rows; j++) {
        const uint8_t* row = v + j * stride;
        __m512 vv[4];
#pragma GCC unroll 4
        for (int u = 0; u < NU; u++) vv[u] = load16(dt, row, d0 + 16 * u, m[u]);
#pragma GCC unroll 8
        for (int i = 0; i < NQ; i++) {
            __m512 a = _mm512_set1_ps(p[i * ATT_BLOCK + j]);
#pragma GCC unroll 4
            for (int u = 0; u < NU; u++) acc[i][u] = _mm512_fmadd_ps(a, vv[u], acc[i][u]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
        for (int u = 0; u < NU; u++) _mm512_mask_storeu_ps(o + i * head_dim + d0 + 16 * u, m[u], acc[i][u]);
}
INLINE void att_pv_dt(DType dt, float* o, const float* p, int nq, const uint8_t* v, size_t stride, int n_rows,
                      int head_dim) {
    if (nq > 4 && nq <= 8) {
        for (int d0 = 0; d0 < head_dim; d0 += 32) switch (nq) {
            case 8: att_pv_n(dt, o, p, 8, 2, v, stride, n_rows, d0, head_dim); break;
            case 7: att_pv_n(dt, o, p, 7, 2, v, stride, n_rows, d0, head_dim); break;
            case 6: att_pv_n(dt, o, p, 6, 2, v, stride, n_rows, d0, head_dim); break;
            default: att_pv_n(dt, o, p, 5, 2, v, stride, n_rows, d0, head_dim); break;
        }
        return;
    }
    for (int i0 = 0; i0 < nq; i0 += 4)
        for (int d0 = 0; d0 < head_dim; d0 += 64) {
            float* oi = o + i0 * head_dim;
            const float* pi = p + i0 * ATT_BLOCK;
            switch (std::min(4, nq - i0)) {
                case 4: att_pv_n(dt, oi, pi, 4, 4, v, stride, n_rows, d0, head_dim); break;
                case 3: att_pv_n(dt, oi, pi, 3, 4, v, stride, n_rows, d0, head_dim); break;
                case 2: att_pv_n(dt, oi, pi, 2, 4, v, stride, n_rows, d0, head_dim); break;
                default: att_pv_n(dt, oi, pi, 1, 4, v, stride, n_rows, d0, head_dim); break;
            }
        }
}
static void att_pv_avx512(float* o, const float* p, int nq, const uint8_t* v, size_t stride, DType vt, int n_rows,
                          int head_dim) {
    if (vt == DType::BF16) att_pv_dt(DType::BF16, o, p, nq, v, stride, n_rows, head_dim);
    else if (vt == DType::F16) att_pv_dt(DType::F16, o, p, nq, v, stride, n_rows, head_dim);
    else att_pv_dt(DType::F32, o, p, nq, v, stride, n_rows, head_dim);
}

// Rows of a KV cache widened to f32, 16 values of a row at a time
// (values past the row's end masked to zeros), Q8_0 included: a block's
// codes to 32-bit integers, to floats, times its scale. Exact, as widen is.
INLINE __m512 load16_kv(DType dt, const uint8_t* row, int c, __mmask16 m) {
    if (dt != DType::Q8_0) return load16(dt, row, c, m);
    const uint8_t* blk = row + c / Q8_BLOCK * Q8_BLOCK_BYTES;
    uint16_t d;
    std::memcpy(&d, blk, 2);
    __m512 codes = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, blk + 2 + c % Q8_BLOCK)));
    return _mm512_mul_ps(_mm512_set1_ps(f16_to_f32(d)), codes);
}
// A 16 x 16 block of floats transposed in registers: pairs of rows
// interleaved, then fours (within each 128-bit quarter), then the quarters
// moved across registers in two steps. r[i] lane c becomes r[c] lane i.
INLINE void transpose16(__m512 r[16]) {
    __m512 a[16], b[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        b[4 * i] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0xEE);
        b[4 * i + 2] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xEE);
    }
    // b[4i + k], quarter L: column 4L + k of rows 4i .. 4i+3
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m512 c0 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0x88), c1 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0xDD);
        __m512 d0 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0x88), d1 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0xDD);
        r[k] = _mm512_shuffle_f32x4(c0, d0, 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(c0, d0, 0xDD);
        r[4 + k] = _mm512_shuffle_f32x4(c1, d1, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(c1, d1, 0xDD);
    }
}
INLINE void att_widen_dt(DType dt, float* dst, const uint8_t* const* rows, int nb, int head_dim, bool transposed) {
    if (!transposed) {
        for (int j = 0; j < nb; j++)
            for (int c = 0; c < head_dim; c += 16) {
                __mmask16 m = head_dim - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (head_dim - c)) - 1);
                _mm512_mask_storeu_ps(dst + (size_t)j * head_dim + c, m, load16_kv(dt, rows[j], c, m));
            }
        return;
    }
    for (int j0 = 0; j0 < ATT_BLOCK; j0 += 16)
        for (int c = 0; c < head_dim; c += 16) {
            __mmask16 m = head_dim - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (head_dim - c)) - 1);
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) r[i] = j0 + i < nb ? load16_kv(dt, rows[j0 + i], c, m) : _mm512_setzero_ps();
            transpose16(r);
            for (int i = 0; i < 16 && c + i < head_dim; i++) _mm512_storeu_ps(dst + (size_t)(c + i) * ATT_BLOCK + j0, r[i]);
        }
}
static void att_widen_avx512(float* dst, const uint8_t* const* rows, int nb, DType t, int head_dim, bool transposed) {
    switch (t) {
        case DType::BF16: att_widen_dt(DType::BF16, dst, rows, nb, head_dim, transposed); break;
        case DType::F16: att_widen_dt(DType::F16, dst, rows, nb, head_dim, transposed); break;
        case DType::Q8_0: att_widen_dt(DType::Q8_0, dst, rows, nb, head_dim, transposed); break;
        default: att_widen_dt(DType::F32, dst, rows, nb, head_dim, transposed); break;
    }
}

// exp(x[i] - m), 16 at a time: kernels_fast.cpp:exp_poly step for step
// (round to nearest, the split ln2, the same fused multiply-adds, 2^n into
// the exponent bits); values below its range come out as +0 by the mask.
INLINE __m512 exp16(__m512 x) {
    __mmask16 in = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_GE_OQ);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    __m512i two_n = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(in, p, _mm512_castsi512_ps(two_n));
}
static void exp_shift_avx512(float* x, float m, int n) {
    __m512 mv = _mm512_set1_ps(m);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv)));
    }
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const SimdKernels AVX512_KERNELS = {"avx512", ROWS, TOKENS, 0, 0,
                                    tile_avx512, nullptr, axpy_avx512, exp_shift_avx512,
                                    nullptr, nullptr, att_scores_avx512, att_pv_avx512,
                                    quant_tile_avx512, A5_ROWS, A5_DECODE_ROWS, A5_TOKENS, true,
                                    packed_group_avx512, true, tile_chunk_avx512, att_widen_avx512};
const SimdKernels AVX512_BF16DOT_KERNELS = {"avx512+bf16dot", BF_ROWS, BF_TOKENS, 0, 0,
                                            tile_avx512, nullptr, axpy_avx512,
                                            exp_shift_avx512, round_bf16_avx512, tile_bf16dot,
                                            att_scores_avx512, att_pv_avx512,
                                    quant_tile_avx512, A5_ROWS, A5_DECODE_ROWS, A5_TOKENS, true,
                                    packed_group_avx512, true, tile_chunk_avx512, att_widen_avx512};
#endif  // __x86_64__
