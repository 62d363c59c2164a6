// kernels_avx2.cpp — the micro-kernels for AVX2 + FMA + F16C (x86-64 since
// 2013-2015): 16 registers of 8 floats. kernels_fast.cpp drives them and
// explains the summation order; here the 16 lanes of that order are two
// registers, lanes 0-7 and 8-15, so every dot product has two accumulators.
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
// "The functions below may use these instructions", in GCC's and clang's words.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#define INLINE static inline __attribute__((always_inline))
#include "cpu/x86/avx2_hsum.h"


// 8 weights of a row from column c, widened to f32 in a register.
// bf16 is the top half of an f32: zero-extend each 16-bit value to 32 bits
// and shift it up by 16. f16 has its own instruction (F16C).
INLINE __m256 load8(DType dt, const void* row, int c) {
    switch (dt) {
        case DType::BF16: {
            __m128i h = _mm_loadu_si128((const __m128i*)((const uint16_t*)row + c));
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        }
        case DType::F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)row + c)));
        default: return _mm256_loadu_ps((const float*)row + c);
    }
}

// Values c .. c+15 of a row, zero-padded past n: copied into a zeroed
// buffer and widened from there, so nothing is read past the end.
INLINE void load16_tail(DType dt, const void* row, int c, int n, __m256& lo, __m256& hi) {
    size_t elt = dt == DType::F32 ? 4 : 2;
    alignas(32) uint8_t buf[16 * 4] = {0};
    std::memcpy(buf, (const uint8_t*)row + c * elt, (n - c) * elt);
    lo = load8(dt, buf, 0);
    hi = load8(dt, buf, 8);
}

// One token (decode): ROWS dot products, each in two accumulators. Per
// half-step (8 columns) it loads the activations once and ROWS weights, and
// does ROWS FMAs; memory, not arithmetic, sets the pace. The empty asm
// statements emit no instruction; they say "this value is in a register
// here", so GCC does not fold a load of x into every FMA.
const int ROWS = 4, TOKENS = 3;  // pass_n names its 3 activation registers
INLINE void tile_one(DType dt, const uint8_t* const* w, const float* x, int cols, float out[MAX_TILE][MAX_TILE]) {
    __m256 lo[ROWS], hi[ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++) lo[r] = hi[r] = _mm256_setzero_ps();
    // Each row's next line, ROWS rows further down, asked for once per 64 bytes (kernels.h:prefetch_ahead).
    const size_t elt = dt == DType::F32 ? 4 : 2, ahead = ROWS * elt * cols;
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m256 xl = _mm256_loadu_ps(x + c), xh = _mm256_loadu_ps(x + c + 8);
        __asm__("" : "+x"(xl), "+x"(xh));
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            if (c * elt % 64 == 0) prefetch_ahead(w[r] + c * elt, ahead, TO_L2);
            lo[r] = _mm256_fmadd_ps(load8(dt, w[r], c), xl, lo[r]);
            hi[r] = _mm256_fmadd_ps(load8(dt, w[r], c + 8), xh, hi[r]);
        }
    }
    if (c < cols) {  // the same step once more, zero-padded
        __m256 xl, xh;
        load16_tail(DType::F32, x, c, cols, xl, xh);
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            __m256 wl, wh;
            load16_tail(dt, w[r], c, cols, wl, wh);
            lo[r] = _mm256_fmadd_ps(wl, xl, lo[r]);
            hi[r] = _mm256_fmadd_ps(wh, xh, hi[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++) out[r][0] = hsum16(lo[r], hi[r]);
}

// A batch (prefill) is bound by arithmetic, and the 16 registers are the
// limit: two accumulators per dot product leave room for 3 rows x 2 tokens
// (12 accumulators), 6 FMAs per 5 loads and 3 bf16 widenings. So the tile
// goes over its columns twice, lanes 0-7 (columns c..c+7 of each step of
// 16) in the first pass and lanes 8-15 in the second, with one accumulator
// per dot product: 4 rows x 3 tokens = 12 accumulators + 3 activations + 1
// weight, 12 FMAs per 7 loads and 4 widenings. Each lane still adds its
// columns in increasing order; only when lanes 0-7 and 8-15 are computed
// changes, not what they add. The columns go in chunks of PASS_COLS, both
// passes per chunk, so that the second pass finds the chunk's rows and
// activations (4 x 2 KB of bf16 + 3 x 4 KB) in the L1 cache: faster than
// one pass with two accumulators per dot product, which leaves fewer dot
// products per weight load (book/A-measurements.md measures both).
// Widening bf16 by interleaving with zeros (one shuffle instead of a shift
// on the FMA ports) was slower: it needs a register of zeros, a 17th.
const int PASS_COLS = 1024;

// One pass over the 16-column steps c0 .. c1, into acc.
INLINE void pass_n(DType dt, const uint8_t* const* w, const float* const* x, int NT, int c0, int c1, int pass,
                   __m256 acc[ROWS][TOKENS], size_t ahead = 0) {
    const size_t elt = dt == DType::F32 ? 4 : 2;
    __m256 a[ROWS][TOKENS];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) a[r][t] = acc[r][t];
    for (int c = c0; c < c1; c += 16) {
        // three named registers, not an array: GCC kept a copy of an array in memory, 3 stores a step
        __m256 x0 = _mm256_loadu_ps(x[0] + c + 8 * pass);
        __m256 x1 = NT > 1 ? _mm256_loadu_ps(x[1] + c + 8 * pass) : x0;
        __m256 x2 = NT > 2 ? _mm256_loadu_ps(x[2] + c + 8 * pass) : x0;
        __asm__("" : "+x"(x0), "+x"(x1), "+x"(x2));
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            if (ahead && c * elt % 64 == 0) prefetch_ahead(w[r] + c * elt, ahead, TO_L2);  // the first pass only
            __m256 wv = load8(dt, w[r], c + 8 * pass);
            __asm__("" : "+x"(wv));
            a[r][0] = _mm256_fmadd_ps(wv, x0, a[r][0]);
            if (NT > 1) a[r][1] = _mm256_fmadd_ps(wv, x1, a[r][1]);
            if (NT > 2) a[r][2] = _mm256_fmadd_ps(wv, x2, a[r][2]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) acc[r][t] = a[r][t];
}

// Over the columns c0 .. c1-1 only, as kernels_avx512.cpp:tile_n: the whole
// row (c0 = 0, c1 = cols), or one chunk of it (tile_chunk_avx2), the lanes
// of each dot product carried in `lanes` (0-7 then 8-15) between chunks.
INLINE void tile_batch(DType dt, const uint8_t* const* w, const float* const* x, int NT, int cols, int c0, int c1,
                       float* lanes, float out[MAX_TILE][MAX_TILE]) {
    __m256 acc[2][ROWS][TOKENS];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++)
                acc[h][r][t] = c0 > 0 ? _mm256_loadu_ps(lanes + (r * TOKENS + t) * 16 + 8 * h) : _mm256_setzero_ps();
    int full = c1 < cols ? c1 : cols / 16 * 16;  // a chunk that is not the last ends on a step of 16
    const size_t elt = dt == DType::F32 ? 4 : 2;
    for (int p0 = c0; p0 < full; p0 += PASS_COLS) {
        int p1 = std::min(full, p0 + PASS_COLS);
        pass_n(dt, w, x, NT, p0, p1, 0, acc[0], ROWS * elt * cols);  // as tile_one
        pass_n(dt, w, x, NT, p0, p1, 1, acc[1]);
    }
    if (full < c1) {  // the row's last columns, zero-padded to one step of 16
        alignas(32) uint8_t wbuf[ROWS][16 * 4] = {}, xbuf[TOKENS][16 * 4] = {};
        const uint8_t* wp[ROWS];
        const float* xp[TOKENS];
        for (int r = 0; r < ROWS; r++) {
            std::memcpy(wbuf[r], w[r] + full * elt, (cols - full) * elt);
            wp[r] = wbuf[r];
        }
        for (int t = 0; t < NT; t++) {
            std::memcpy(xbuf[t], x[t] + full, (cols - full) * sizeof(float));
            xp[t] = (const float*)xbuf[t];
        }
        pass_n(dt, wp, xp, NT, 0, 16, 0, acc[0]);
        pass_n(dt, wp, xp, NT, 0, 16, 1, acc[1]);
    }
    if (c1 < cols) {  // not the last chunk: the lanes wait for the next one
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) _mm256_storeu_ps(lanes + (r * TOKENS + t) * 16 + 8 * h, acc[h][r][t]);
        return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) out[r][t] = hsum16(acc[0][r][t], acc[1][r][t]);
}

// Force-inlined with dt and the token count constants: one copy per weight
// type and count, loops unrolled, accumulators in registers.
INLINE void tile_dt(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                    float out[MAX_TILE][MAX_TILE]) {
    if (n_tokens == 3) tile_batch(dt, w, x, 3, cols, 0, cols, nullptr, out);
    else if (n_tokens == 2) tile_batch(dt, w, x, 2, cols, 0, cols, nullptr, out);
    else tile_one(dt, w, x[0], cols, out);
}
static void tile_avx2(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                      float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_dt(DType::BF16, w, x, n_tokens, cols, out);
    else if (dt == DType::F16) tile_dt(DType::F16, w, x, n_tokens, cols, out);
    else tile_dt(DType::F32, w, x, n_tokens, cols, out);
}
INLINE void tile_chunk_dt(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols, int c0,
                          int c1, float* lanes, float out[MAX_TILE][MAX_TILE]) {
    if (n_tokens == 3) tile_batch(dt, w, x, 3, cols, c0, c1, lanes, out);
    else if (n_tokens == 2) tile_batch(dt, w, x, 2, cols, c0, c1, lanes, out);
    else tile_batch(dt, w, x, 1, cols, c0, c1, lanes, out);
}
static void tile_chunk_avx2(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols, int c0,
                            int c1, float* lanes, float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_chunk_dt(DType::BF16, w, x, n_tokens, cols, c0, c1, lanes, out);
    else if (dt == DType::F16) tile_chunk_dt(DType::F16, w, x, n_tokens, cols, c0, c1, lanes, out);
    else tile_chunk_dt(DType::F32, w, x, n_tokens, cols, c0, c1, lanes, out);
}

// Q8_0. Per block of 32 and (row, token) pair, the integer dot product of
// two int8 vectors takes three instructions:
//   sign(x, w)      x with w's sign moved onto it (so that |w| * that = w * x)
//   maddubs(|w|, .) multiplies unsigned by signed bytes, adds neighbours: 16 int16
//   madd(., 1)      adds neighbouring int16 pairs: 8 int32, lane j = bytes 4j..4j+3
// No overflow: |w| <= 128, |x| <= 127, so a pair is at most 2 * 128 * 127 = 32512.
// Then one float conversion and one FMA by the product of the two scales.
INLINE __m256 q8_block_dot(__m256i wq, __m256i wabs, __m256i xq) {
    __m256i prod16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(xq, wq));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(prod16, _mm256_set1_epi16(1)));
}

INLINE float scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return _cvtsh_ss(h);
}

// One token (decode): Q8_ROWS rows, even blocks into lo, odd blocks into hi.
const int Q8_ROWS = 4, Q8_TOKENS = 3;
INLINE void q8_step_one(const uint8_t* const* w, const uint8_t* x, size_t off, size_t row_bytes, __m256 acc[Q8_ROWS]) {
    float dx = scale(x + off);
    __m256i xq = _mm256_loadu_si256((const __m256i*)(x + off + 2));
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++) {
        prefetch_ahead(w[r] + off, PREFETCH_ROWS * row_bytes, TO_L1);
        float dw = scale(w[r] + off);
        __m256i wq = _mm256_loadu_si256((const __m256i*)(w[r] + off + 2));
        acc[r] = _mm256_fmadd_ps(q8_block_dot(wq, _mm256_abs_epi8(wq), xq), _mm256_set1_ps(dw * dx), acc[r]);
    }
}
INLINE void tile_q8_one(const uint8_t* const* w, const uint8_t* x, int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    __m256 lo[Q8_ROWS], hi[Q8_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++) lo[r] = hi[r] = _mm256_setzero_ps();
    int b = 0;
    size_t row_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES;
    for (; b + 2 <= n_blocks; b += 2) {
        q8_step_one(w, x, (size_t)b * Q8_BLOCK_BYTES, row_bytes, lo);
        q8_step_one(w, x, (size_t)(b + 1) * Q8_BLOCK_BYTES, row_bytes, hi);
    }
    if (b < n_blocks) q8_step_one(w, x, (size_t)b * Q8_BLOCK_BYTES, row_bytes, lo);
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++) out[r][0] = hsum16(lo[r], hi[r]);
}

// Lane r of each 128-bit half, in every lane (r a constant once unrolled).
INLINE __m256 lane(__m256 v, int r) {
    switch (r) {
        case 0: return _mm256_shuffle_ps(v, v, 0x00);
        case 1: return _mm256_shuffle_ps(v, v, 0x55);
        case 2: return _mm256_shuffle_ps(v, v, 0xaa);
        default: return _mm256_shuffle_ps(v, v, 0xff);
    }
}
static_assert(Q8_ROWS <= 4, "q8_pass takes the rows' scales from one register of 4");

// A batch, in two passes like the float tile: the even blocks (lanes 0-7),
// then the odd ones (lanes 8-15), one accumulator per pair: 4 rows x 3
// tokens. Per block, the 4 rows' scales are converted in one instruction
// and multiplied by a token's scale in one more; each pair then takes its
// product d_w * d_x (the same float product as dw * dx one at a time) out
// of that register with one shuffle, where a scalar multiply and a
// broadcast took two instructions, one of them on the ports the integer
// steps and the FMA need. The rows' |w| are made once per block and kept.
// Each of these choices (two passes, the scales in one register, 4 x 3
// instead of 3 x 3 or 2 x 2) made the tile faster (book/A-measurements.md,
// "The measurements behind the kernels' choices").
INLINE void q8_pass(const uint8_t* const* w, const uint8_t* const* x, int NT, int n_blocks, int parity,
                    __m256 acc[Q8_ROWS][Q8_TOKENS]) {
    __m256 a[Q8_ROWS][Q8_TOKENS];
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) a[r][t] = _mm256_setzero_ps();
    for (int b = parity; b < n_blocks; b += 2) {
        size_t off = (size_t)b * Q8_BLOCK_BYTES;
        uint64_t hs = 0;  // the 4 f16 scales side by side (an insert would need r to be a constant)
        __m256i wabs[Q8_ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < Q8_ROWS; r++) {
            uint16_t hr;
            std::memcpy(&hr, w[r] + off, 2);
            hs |= (uint64_t)hr << (16 * r);
            wabs[r] = _mm256_abs_epi8(_mm256_loadu_si256((const __m256i*)(w[r] + off + 2)));
        }
        __m128 dw = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)hs));
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            __m256i xq = _mm256_loadu_si256((const __m256i*)(x[t] + off + 2));
            __m128 d4 = _mm_mul_ps(dw, _mm_set1_ps(scale(x[t] + off)));
            __m256 d8 = _mm256_insertf128_ps(_mm256_castps128_ps256(d4), d4, 1);
#pragma GCC unroll 4
            for (int r = 0; r < Q8_ROWS; r++) {
                __m256i wq = _mm256_loadu_si256((const __m256i*)(w[r] + off + 2));
                a[r][t] = _mm256_fmadd_ps(q8_block_dot(wq, wabs[r], xq), lane(d8, r), a[r][t]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) acc[r][t] = a[r][t];
}
INLINE void tile_q8_batch(const uint8_t* const* w, const uint8_t* const* x, int NT, int n_blocks,
                          float out[MAX_TILE][MAX_TILE]) {
    __m256 even[Q8_ROWS][Q8_TOKENS], odd[Q8_ROWS][Q8_TOKENS];
    q8_pass(w, x, NT, n_blocks, 0, even);
    q8_pass(w, x, NT, n_blocks, 1, odd);
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) out[r][t] = hsum16(even[r][t], odd[r][t]);
}

static void tile_q8_avx2(const uint8_t* const* w, const uint8_t* const* x, int n_tokens, int n_blocks,
                         float out[MAX_TILE][MAX_TILE]) {
    if (n_tokens == 3) tile_q8_batch(w, x, 3, n_blocks, out);
    else if (n_tokens == 2) tile_q8_batch(w, x, 2, n_blocks, out);
    else tile_q8_one(w, x[0], n_blocks, out);
}

// Attention: y += alpha * v.

// The value rows of a block into y: up to 8 registers of y (64 values)
// stay in registers while all the rows go by, instead of a load and a store
// of y per row. Each element is still one fma per row, in order of rows; the
// last n % 8 values go one at a time.
INLINE void axpy_nv(DType dt, float* y, const float* alpha, const uint8_t* x, size_t stride, int n_rows, int i0,
                    int NV) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) acc[v] = _mm256_loadu_ps(y + i0 + 8 * v);
    for (int j = 0; j < n_rows; j++) {
        __m256 a = _mm256_set1_ps(alpha[j]);
        const uint8_t* row = x + j * stride;
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[v] = _mm256_fmadd_ps(a, load8(dt, row, i0 + 8 * v), acc[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; v++) _mm256_storeu_ps(y + i0 + 8 * v, acc[v]);
}
INLINE void axpy_dt(DType dt, float* y, const float* alpha, const uint8_t* x, size_t stride, int n_rows, int n) {
    int full = n / 8 * 8;
    for (int i0 = 0; i0 < full; i0 += 64) switch (std::min(full - i0, 64) / 8) {
        case 8: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 8); break;
        case 7: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 7); break;
        case 6: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 6); break;
        case 5: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 5); break;
        case 4: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 4); break;
        case 3: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 3); break;
        case 2: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 2); break;
        default: axpy_nv(dt, y, alpha, x, stride, n_rows, i0, 1); break;
    }
    for (int j = 0; j < n_rows; j++)
        for (int i = full; i < n; i++) {
            const uint16_t* h = (const uint16_t*)(x + j * stride);
            float v = dt == DType::BF16 ? bf16_to_f32(h[i]) : dt == DType::F16 ? _cvtsh_ss(h[i])
                    : ((const float*)(x + j * stride))[i];
            y[i] = std::fma(alpha[j], v, y[i]);
        }
}
static void axpy_avx2(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n) {
    if (xt == DType::BF16) axpy_dt(DType::BF16, y, alpha, x, stride, n_rows, n);
    else if (xt == DType::F16) axpy_dt(DType::F16, y, alpha, x, stride, n_rows, n);
    else axpy_dt(DType::F32, y, alpha, x, stride, n_rows, n);
}

// Prefill attention's scores (cpu/attention_fast.cpp:attention_heads_fast): 4
// queries x 16 keys (2 registers) = 8 accumulators, four times across the
// block of 64 keys; each score one chain of fmas over the dimension, as in
// the other sets.
INLINE void att_scores_n(float* s, const float* q, size_t q_stride, int NQ, const float* kt, int head_dim) {
    for (int j0 = 0; j0 < ATT_BLOCK; j0 += 16) {
        __m256 acc[4][2];
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
        for (int d = 0; d < head_dim; d++) {
            __m256 k0 = _mm256_loadu_ps(kt + d * ATT_BLOCK + j0), k1 = _mm256_loadu_ps(kt + d * ATT_BLOCK + j0 + 8);
            __asm__("" : "+x"(k0), "+x"(k1));  // in registers: one load each, not one per query
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++) {
                __m256 qv = _mm256_set1_ps(q[i * q_stride + d]);
                acc[i][0] = _mm256_fmadd_ps(qv, k0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(qv, k1, acc[i][1]);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++) {
            _mm256_storeu_ps(s + i * ATT_BLOCK + j0, acc[i][0]);
            _mm256_storeu_ps(s + i * ATT_BLOCK + j0 + 8, acc[i][1]);
        }
    }
}
static void att_scores_avx2(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim) {
    static_assert(ATT_BLOCK % 16 == 0, "the score tile holds 2 registers of 8 keys");
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

// P V for a group of queries (a decode step's GQA group, a prefill's tile):
// 16 output values at a time for up to 6 queries (12 accumulators, 2
// registers of the value row, 1 of the weight), so each part of a value
// row is loaded and widened once for 6 queries, not once per query as
// axpy would. One fma per row, in order of rows: axpy's order. The last
// head_dim % 16 values go through axpy.
INLINE void att_pv_n(DType dt, float* o, const float* p, int NQ, const uint8_t* v, size_t stride, int n_rows,
                     int d0, int head_dim) {
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < NQ; i++)
        for (int u = 0; u < 2; u++) acc[i][u] = _mm256_loadu_ps(o + i * head_dim + d0 + 8 * u);
    for (int j = 0; j < n_rows; j++) {
        const uint8_t* row = v + j * stride;
        __m256 v0 = load8(dt, row, d0), v1 = load8(dt, row, d0 + 8);
        __asm__("" : "+x"(v0), "+x"(v1));  // in registers: one load each, not one per query
#pragma GCC unroll 6
        for (int i = 0; i < NQ; i++) {
            __m256 a = _mm256_set1_ps(p[i * ATT_BLOCK + j]);
            acc[i][0] = _mm256_fmadd_ps(a, v0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, v1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < NQ; i++)
        for (int u = 0; u < 2; u++) _mm256_storeu_ps(o + i * head_dim + d0 + 8 * u, acc[i][u]);
}
INLINE void att_pv_dt(DType dt, float* o, const float* p, int nq, const uint8_t* v, size_t stride, int n_rows,
                      int head_dim) {
    int full = head_dim / 16 * 16;
    for (int i0 = 0; i0 < nq; i0 += 6) {
        float* oi = o + i0 * head_dim;
        const float* pi = p + i0 * ATT_BLOCK;
        int n = std::min(6, nq - i0);
        for (int d0 = 0; d0 < full; d0 += 16) switch (n) {
            case 6: att_pv_n(dt, oi, pi, 6, v, stride, n_rows, d0, head_dim); break;
            case 5: att_pv_n(dt, oi, pi, 5, v, stride, n_rows, d0, head_dim); break;
            case 4: att_pv_n(dt, oi, pi, 4, v, stride, n_rows, d0, head_dim); break;
            case 3: att_pv_n(dt, oi, pi, 3, v, stride, n_rows, d0, head_dim); break;
            case 2: att_pv_n(dt, oi, pi, 2, v, stride, n_rows, d0, head_dim); break;
            default: att_pv_n(dt, oi, pi, 1, v, stride, n_rows, d0, head_dim); break;
        }
        if (full < head_dim)
            for (int i = 0; i < n; i++)
                axpy_dt(dt, oi + i * head_dim + full, pi + i * ATT_BLOCK, v + full * (dt == DType::F32 ? 4 : 2), stride,
                        n_rows, head_dim - full);
    }
}
static void att_pv_avx2(float* o, const float* p, int nq, const uint8_t* v, size_t stride, DType vt, int n_rows,
                        int head_dim) {
    if (vt == DType::BF16) att_pv_dt(DType::BF16, o, p, nq, v, stride, n_rows, head_dim);
    else if (vt == DType::F16) att_pv_dt(DType::F16, o, p, nq, v, stride, n_rows, head_dim);
    else att_pv_dt(DType::F32, o, p, nq, v, stride, n_rows, head_dim);
}

// Key and value rows widened to f32 (SimdKernels::att_widen): 8 values of
// 8 rows at a time, transposed in registers (pairs of rows interleaved,
// then fours, then the 128-bit halves swapped across registers); the last
// head_dim % 8 values through widen. Q8_0: a block's codes to 32-bit
// integers, to floats, times its scale (exact, as widen is).
INLINE __m256 load8_kv(DType dt, const uint8_t* row, int c) {
    if (dt != DType::Q8_0) return load8(dt, row, c);
    const uint8_t* blk = row + c / Q8_BLOCK * Q8_BLOCK_BYTES;
    uint16_t d;
    std::memcpy(&d, blk, 2);
    __m256 codes = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(blk + 2 + c % Q8_BLOCK))));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(d)), codes);
}
INLINE void transpose8(__m256 r[8]) {
    __m256 a[8], b[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        b[4 * i] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0xEE);
        b[4 * i + 2] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xEE);
    }
    // b[4i + k], half L: column 4L + k of rows 4i .. 4i+3
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2f128_ps(b[k], b[4 + k], 0x20);
        r[4 + k] = _mm256_permute2f128_ps(b[k], b[4 + k], 0x31);
    }
}
INLINE void att_widen_dt(DType dt, float* dst, const uint8_t* const* rows, int nb, int head_dim, bool transposed) {
    int full = head_dim / 8 * 8;
    if (!transposed) {
        for (int j = 0; j < nb; j++) {
            for (int c = 0; c < full; c += 8) _mm256_storeu_ps(dst + (size_t)j * head_dim + c, load8_kv(dt, rows[j], c));
            for (int c = full; c < head_dim; c++) dst[(size_t)j * head_dim + c] = widen(dt, rows[j], c);
        }
        return;
    }
    for (int j0 = 0; j0 < ATT_BLOCK; j0 += 8) {
        for (int c = 0; c < full; c += 8) {
            __m256 r[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) r[i] = j0 + i < nb ? load8_kv(dt, rows[j0 + i], c) : _mm256_setzero_ps();
            transpose8(r);
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (size_t)(c + i) * ATT_BLOCK + j0, r[i]);
        }
        for (int c = full; c < head_dim; c++)
            for (int i = 0; i < 8; i++) dst[(size_t)c * ATT_BLOCK + j0 + i] = j0 + i < nb ? widen(dt, rows[j0 + i], c) : 0.0f;
    }
}
static void att_widen_avx2(float* dst, const uint8_t* const* rows, int nb, DType t, int head_dim, bool transposed) {
    switch (t) {
        case DType::BF16: att_widen_dt(DType::BF16, dst, rows, nb, head_dim, transposed); break;
        case DType::F16: att_widen_dt(DType::F16, dst, rows, nb, head_dim, transposed); break;
        case DType::Q8_0: att_widen_dt(DType::Q8_0, dst, rows, nb, head_dim, transposed); break;
        default: att_widen_dt(DType::F32, dst, rows, nb, head_dim, transposed); break;
    }
}

// exp(x[i] - m), 8 at a time: kernels_fast.cpp:exp_poly step for step
// (round to nearest, the split ln2, the same fused multiply-adds, 2^n into
// the exponent bits); values below its range come out as +0 by the mask.
INLINE __m256 exp8(__m256 x) {
    __m256 in = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_GE_OQ);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(in, _mm256_mul_ps(p, _mm256_castsi256_ps(two_n)));
}
static void exp_shift_avx2(float* x, float m, int n) {
    __m256 mv = _mm256_set1_ps(m);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv)));
    for (; i < n; i++) x[i] = exp_poly(x[i] - m);
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const SimdKernels AVX2_KERNELS = {"avx2", ROWS, TOKENS, Q8_ROWS, Q8_TOKENS,
                                  tile_avx2, tile_q8_avx2, axpy_avx2, exp_shift_avx2, nullptr, nullptr,
                                  att_scores_avx2, att_pv_avx2,
                                  quant_tile_avx2, A2_ROWS, A2_DECODE_ROWS, A2_TOKENS, false,
                                  packed_group_avx2, false, tile_chunk_avx2, att_widen_avx2};
#endif  // __x86_64__
