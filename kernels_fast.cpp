// kernels_fast.cpp — the fast twins of kernels.cpp's matmul and of
// attention's two vector loops: the same math, arranged for the machine.
//
// Four ideas, each a section below (book/11-performance.md tells the story):
//   1. Threads: each thread owns a contiguous range of output rows. No two
//      threads ever add into the same number, so nothing needs a lock and the
//      result cannot depend on how many threads there are.
//   2. SIMD: AVX2 multiplies 8 floats per instruction and FMA fuses the
//      multiply with the add. bf16 and f16 weights are widened to f32 in
//      registers, straight from the mmapped file: memory traffic stays at
//      2 bytes per weight.
//   3. Decode reads each row as one stream; prefill runs a register-tiled
//      micro-kernel, 3 rows x 4 tokens at once, so each weight loaded is used
//      4 times and each activation 3 times. Decode (one token) is bound by
//      memory bandwidth; a batch of tokens makes it compute-bound.
//   4. Q8_0: int8 weights times int8 activations, summed exactly in integers,
//      one float multiply per block of 32.
//
// Why a fixed summation order. Float addition is not associative, so "the
// same dot product" summed in two orders gives two slightly different
// numbers. Every kernel here sums in ONE order:
//   - 8 partial sums ("lanes"): lane j adds w[c]*x[c] for c = j, j+8, j+16, ...
//     in increasing c, each step a fused multiply-add (one rounding);
//     a row whose length is not a multiple of 8 is padded with zeros;
//   - then the lanes are added as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7));
//   - then the bias.
// AVX2 does this naturally (one 8-wide register, one lane per float). The
// scalar code spells the same order out with an array of 8 floats and
// std::fma. So a result never depends on the tile it was computed in, the
// batch size, the thread count, or whether the CPU has AVX2: decode and
// prefill, 1 thread and 16, AVX2 and the portable code compute the same
// bits for every matrix product (IEEE float and a correctly rounded fma are
// the same everywhere; libm's exp, sin and cos elsewhere in the forward pass
// need not be).
//
// Compile-time dispatch: the AVX2 code is compiled only when the compiler
// targets AVX2 + FMA + F16C (the Makefile passes -march=native). Elsewhere
// (ARM, old x86) LANTERN_AVX2 is undefined, --kernels fast runs the scalar
// code, and the program still builds and gives the same answers.
#include "kernels.h"
#include <algorithm>
#include <cmath>
#include <omp.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LANTERN_AVX2 1
#include <immintrin.h>
#endif

const char* simd_name() {
#ifdef LANTERN_AVX2
    return "AVX2+FMA+F16C";
#else
    return "scalar (compiled without AVX2/FMA/F16C)";
#endif
}

const int LANES = 8;          // floats per AVX2 register
const int TILE_ROWS = 3;      // prefill micro-kernel: rows of W ...
const int TILE_TOKENS = 4;    // ... times tokens (float weights)
const int Q8_TILE_ROWS = 4;   // the same for Q8_0, whose integer steps
const int Q8_TILE_TOKENS = 2; // need more registers
const int MAX_TILE = 4;       // the larger of the above, for array sizes

// The lane tree, written out; the AVX2 version below adds in the same order.
static inline float sum_lanes(const float v[LANES]) {
    float s0 = v[0] + v[4], s1 = v[1] + v[5], s2 = v[2] + v[6], s3 = v[3] + v[7];
    return (s0 + s2) + (s1 + s3);
}

// One weight widened to f32 (float-family types only).
static inline float widen(DType dt, const void* row, int c) {
    switch (dt) {
        case DType::BF16: return bf16_to_f32(((const uint16_t*)row)[c]);
        case DType::F16: return f16_to_f32(((const uint16_t*)row)[c]);
        default: return ((const float*)row)[c];
    }
}

static inline size_t row_bytes(const Mat& W) {
    if (W.dtype == DType::Q8_0) return (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    return (size_t)W.cols * (W.dtype == DType::F32 ? 4 : 2);
}
static inline const uint8_t* row_ptr(const Mat& W, int r) { return (const uint8_t*)W.data + r * row_bytes(W); }

// The f16 scale at the start of a Q8_0 block. F16C converts in one
// instruction; the portable conversion (common.cpp) gives the same value.
static inline float f16_scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
#ifdef LANTERN_AVX2
    return _cvtsh_ss(h);
#else
    return f16_to_f32(h);
#endif
}

// ---------------------------------------------------------------------------
// The scalar twins: the order above in portable C++. One output at a time;
// threads over rows.

// Full steps of 8, then the zero-padded last step. Force-inlined into
// dot_scalar with dt a constant, so the type switch in widen() is resolved
// at compile time (the same hand-made template as the AVX2 kernels below).
static inline __attribute__((always_inline)) float dot_lanes(DType dt, const void* row, const float* x, int cols) {
    float acc[LANES] = {0};
    int c = 0;
    for (; c + LANES <= cols; c += LANES)
        for (int j = 0; j < LANES; j++) acc[j] = std::fma(widen(dt, row, c + j), x[c + j], acc[j]);
    if (c < cols)
        for (int j = 0; j < LANES; j++) {
            bool in = c + j < cols;
            acc[j] = std::fma(in ? widen(dt, row, c + j) : 0.0f, in ? x[c + j] : 0.0f, acc[j]);
        }
    return sum_lanes(acc);
}

static float dot_scalar(DType dt, const void* row, const float* x, int cols) {
    if (dt == DType::BF16) return dot_lanes(DType::BF16, row, x, cols);
    if (dt == DType::F16) return dot_lanes(DType::F16, row, x, cols);
    return dot_lanes(DType::F32, row, x, cols);
}

// Q8_0 x Q8_0: lane j of block b holds the exact integer sum of the products
// of bytes 4j..4j+3 (what AVX2's maddubs + madd leave in lane j), turned into
// a float and scaled by d_w * d_x with one fused multiply-add.
static float dot_q8_scalar(const uint8_t* w, const uint8_t* x, int n_blocks) {
    float acc[LANES] = {0};
    for (int b = 0; b < n_blocks; b++, w += Q8_BLOCK_BYTES, x += Q8_BLOCK_BYTES) {
        float d = f16_scale(w) * f16_scale(x);
        const int8_t* wq = (const int8_t*)w + 2;
        const int8_t* xq = (const int8_t*)x + 2;
        for (int j = 0; j < LANES; j++) {
            int32_t s = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++) s += (int32_t)wq[i] * xq[i];
            acc[j] = std::fma((float)s, d, acc[j]);
        }
    }
    return sum_lanes(acc);
}

// ---------------------------------------------------------------------------
// AVX2 + FMA micro-kernels.
#ifdef LANTERN_AVX2

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // l0+l4 .. l3+l7
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                        // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 8 weights of a row from column c, widened to f32 in a register.
// bf16 is the top half of an f32: zero-extend each 16-bit value to 32 bits
// and shift it up by 16. f16 has its own instruction (F16C).
static inline __m256 load8(DType dt, const void* row, int c) {
    switch (dt) {
        case DType::BF16: {
            __m128i h = _mm_loadu_si128((const __m128i*)((const uint16_t*)row + c));
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        }
        case DType::F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)((const uint16_t*)row + c)));
        default: return _mm256_loadu_ps((const float*)row + c);
    }
}

// The last n < 8 values of a row, zero-padded: the raw values are copied
// into a zeroed buffer and widened from there, so it never reads past the
// end. Inlined, and no function calls inside: a call would make the
// compiler keep the micro-kernel's accumulators in memory, not registers.
static inline __attribute__((always_inline)) __m256 load8_tail(DType dt, const void* row, int c, int n) {
    size_t elt = dt == DType::F32 ? 4 : 2;
    alignas(32) uint8_t buf[LANES * 4] = {0};
    std::memcpy(buf, (const uint8_t*)row + c * elt, n * elt);
    return load8(dt, buf, 0);
}

// Decode: one row of W times one token. The rows are read one after
// another, each a single stream through memory: measured on this machine,
// reading 4 rows side by side (4 interleaved streams) got less than half the
// bandwidth of reading them in turn: the hardware prefetcher follows one
// long stream far better than four short ones. One accumulator is one chain
// of dependent FMAs (4 cycles each): 8 weights per 4 cycles is still faster
// than memory delivers them.
static inline __attribute__((always_inline)) float row_avx2(DType dt, const void* w, const float* x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + LANES <= cols; c += LANES) acc = _mm256_fmadd_ps(load8(dt, w, c), _mm256_loadu_ps(x + c), acc);
    if (c < cols)  // the same step once more, zero-padded
        acc = _mm256_fmadd_ps(load8_tail(dt, w, c, cols - c), load8_tail(DType::F32, x, c, cols - c), acc);
    return hsum(acc);
}

// Prefill: the micro-kernel, out[r][t] = row r of W . token t of x for
// TILE_ROWS = 3 rows and TILE_TOKENS = 4 tokens. Each step loads 8 columns of
// the 4 tokens and of each of the 3 rows (widened once), and does 3 x 4 = 12
// fused multiply-adds into 12 accumulators: each weight loaded is used 4
// times, each activation 3 times. The 3 rows (a few KB) stay in the L1 cache
// while the token groups go by, so the weights come from memory once per
// matmul, not once per token.
//
// The empty asm statements emit no instruction; they only say "this value
// is in a register here". Without them GCC folds the loads of x (and, for
// f32 weights, of w) into every FMA: 12 or more loads per step instead of 7.
// A core does 2 vector loads per cycle and 2 FMAs, so the loads, not the
// arithmetic, set the pace: measured, 45-50 GFLOP/s per core without them,
// 80-95 with them (peak 116).
static inline __attribute__((always_inline)) void tile_avx2(DType dt, const void* const* w, const float* const* x,
                                                           int cols, float out[MAX_TILE][MAX_TILE]) {
    __m256 acc[TILE_ROWS][TILE_TOKENS];
#pragma GCC unroll 4
    for (int r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < TILE_TOKENS; t++) acc[r][t] = _mm256_setzero_ps();
    int c = 0;
    for (; c + LANES <= cols; c += LANES) {
        __m256 xv[TILE_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < TILE_TOKENS; t++) {
            xv[t] = _mm256_loadu_ps(x[t] + c);
            __asm__("" : "+x"(xv[t]));
        }
#pragma GCC unroll 4
        for (int r = 0; r < TILE_ROWS; r++) {
            __m256 wv = load8(dt, w[r], c);
            __asm__("" : "+x"(wv));
#pragma GCC unroll 4
            for (int t = 0; t < TILE_TOKENS; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (c < cols) {  // the same step once more, zero-padded
        __m256 xv[TILE_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < TILE_TOKENS; t++) xv[t] = load8_tail(DType::F32, x[t], c, cols - c);
#pragma GCC unroll 4
        for (int r = 0; r < TILE_ROWS; r++) {
            __m256 wv = load8_tail(dt, w[r], c, cols - c);
#pragma GCC unroll 4
            for (int t = 0; t < TILE_TOKENS; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < TILE_TOKENS; t++) out[r][t] = hsum(acc[r][t]);
}

// row_avx2 and tile_avx2 are force-inlined here with dt a constant, so the
// compiler makes one copy per weight type with the switch in load8 resolved
// and the loops unrolled: a template written by hand.
static float row_float(DType dt, const void* w, const float* x, int cols) {
    if (dt == DType::BF16) return row_avx2(DType::BF16, w, x, cols);
    if (dt == DType::F16) return row_avx2(DType::F16, w, x, cols);
    return row_avx2(DType::F32, w, x, cols);
}
static void tile_float(DType dt, const void* const* w, const float* const* x, int cols,
                       float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_avx2(DType::BF16, w, x, cols, out);
    else if (dt == DType::F16) tile_avx2(DType::F16, w, x, cols, out);
    else tile_avx2(DType::F32, w, x, cols, out);
}

// Q8_0. Per block of 32 and (row, token) pair, the integer dot product of
// two int8 vectors takes three instructions:
//   sign(x, w)      x with w's sign moved onto it (so that |w| * that = w * x)
//   maddubs(|w|, .) multiplies unsigned by signed bytes, adds neighbours: 16 int16
//   madd(., 1)      adds neighbouring int16 pairs: 8 int32, lane j = bytes 4j..4j+3
// No overflow: |w|, |x| <= 127, so a pair is at most 2 * 127 * 127 = 32258.
// Then one float conversion and one FMA by the product of the two scales.
static inline __m256 q8_block_dot(__m256i wq, __m256i wabs, __m256i xq) {
    __m256i prod16 = _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(xq, wq));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(prod16, _mm256_set1_epi16(1)));
}

static float row_q8(const uint8_t* w, const uint8_t* x, int n_blocks) {  // decode
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b++, w += Q8_BLOCK_BYTES, x += Q8_BLOCK_BYTES) {
        __m256i wq = _mm256_loadu_si256((const __m256i*)(w + 2));
        __m256 lanes = q8_block_dot(wq, _mm256_abs_epi8(wq), _mm256_loadu_si256((const __m256i*)(x + 2)));
        acc = _mm256_fmadd_ps(lanes, _mm256_set1_ps(f16_scale(w) * f16_scale(x)), acc);
    }
    return hsum(acc);
}

// Prefill: Q8_TILE_ROWS x Q8_TILE_TOKENS = 4 rows x 2 tokens (the integer
// steps need more registers than the float ones: 8 accumulators, not 12).
static void tile_q8(const uint8_t* const* w, const uint8_t* const* x, int n_blocks,
                    float out[MAX_TILE][MAX_TILE]) {
    __m256 acc[Q8_TILE_ROWS][Q8_TILE_TOKENS];
#pragma GCC unroll 4
    for (int r = 0; r < Q8_TILE_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < Q8_TILE_TOKENS; t++) acc[r][t] = _mm256_setzero_ps();
    for (size_t off = 0; off < (size_t)n_blocks * Q8_BLOCK_BYTES; off += Q8_BLOCK_BYTES) {
        __m256i xq[Q8_TILE_TOKENS];
        float dx[Q8_TILE_TOKENS];
#pragma GCC unroll 4
        for (int t = 0; t < Q8_TILE_TOKENS; t++) {
            dx[t] = f16_scale(x[t] + off);
            xq[t] = _mm256_loadu_si256((const __m256i*)(x[t] + off + 2));
        }
#pragma GCC unroll 4
        for (int r = 0; r < Q8_TILE_ROWS; r++) {
            float dw = f16_scale(w[r] + off);
            __m256i wq = _mm256_loadu_si256((const __m256i*)(w[r] + off + 2));
            __m256i wabs = _mm256_abs_epi8(wq);
#pragma GCC unroll 4
            for (int t = 0; t < Q8_TILE_TOKENS; t++)
                acc[r][t] = _mm256_fmadd_ps(q8_block_dot(wq, wabs, xq[t]), _mm256_set1_ps(dw * dx[t]), acc[r][t]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < Q8_TILE_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < Q8_TILE_TOKENS; t++) out[r][t] = hsum(acc[r][t]);
}
#endif  // LANTERN_AVX2

// ---------------------------------------------------------------------------
// The drivers: quantize the activations when W is Q8_0, then threads over
// tiles of rows, and within a tile the tokens in groups.

// Activations quantized for a Q8_0 matmul: [T, cols/32 blocks]. One buffer,
// reused by every call (matmul is never called from two threads at once).
static std::vector<uint8_t> g_xq;

static const uint8_t* quantize_activations(const float* x, int T, int cols) {
    size_t rb = (size_t)cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    if (g_xq.size() < T * rb) g_xq.resize(T * rb);
    #pragma omp parallel for schedule(static) if (T > 1)
    for (int t = 0; t < T; t++) quantize_row_q8_0(x + (size_t)t * cols, cols, &g_xq[t * rb]);
    return g_xq.data();
}

void matmul_scalar(float* out, const float* x, const Mat& W, const float* bias, int T) {
    const uint8_t* xq = W.dtype == DType::Q8_0 ? quantize_activations(x, T, W.cols) : nullptr;
    size_t xq_bytes = (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < W.rows; r++) {
        for (int t = 0; t < T; t++) {
            float sum = xq ? dot_q8_scalar(row_ptr(W, r), xq + t * xq_bytes, W.cols / Q8_BLOCK)
                           : dot_scalar(W.dtype, row_ptr(W, r), x + (size_t)t * W.cols, W.cols);
            out[(size_t)t * W.rows + r] = sum + (bias ? bias[r] : 0.0f);
        }
    }
}

void matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T) {
#ifndef LANTERN_AVX2
    matmul_scalar(out, x, W, bias, T);
#else
    bool q8 = W.dtype == DType::Q8_0;
    const uint8_t* xq = q8 ? quantize_activations(x, T, W.cols) : nullptr;
    size_t xq_bytes = (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    int group = q8 ? Q8_TILE_TOKENS : TILE_TOKENS, tile_rows = q8 ? Q8_TILE_ROWS : TILE_ROWS;
    int n_tiles = (W.rows + tile_rows - 1) / tile_rows;

    #pragma omp parallel for schedule(static)
    for (int tile = 0; tile < n_tiles; tile++) {
        // The last tile of a matrix whose rows are not a multiple of the
        // tile repeats its last row; the extra results are not stored.
        int r0 = tile * tile_rows, n_rows = std::min(tile_rows, W.rows - r0);
        const uint8_t* w[MAX_TILE];
        for (int i = 0; i < tile_rows; i++) w[i] = row_ptr(W, r0 + std::min(i, n_rows - 1));
        float res[MAX_TILE][MAX_TILE];
        int t0 = 0;
        for (; t0 + group <= T; t0 += group) {  // prefill: groups of tokens through the micro-kernel
            if (q8) {
                const uint8_t* xs[Q8_TILE_TOKENS];
                for (int t = 0; t < group; t++) xs[t] = xq + (t0 + t) * xq_bytes;
                tile_q8(w, xs, W.cols / Q8_BLOCK, res);
            } else {
                const float* xs[MAX_TILE];
                for (int t = 0; t < group; t++) xs[t] = x + (size_t)(t0 + t) * W.cols;
                tile_float(W.dtype, (const void* const*)w, xs, W.cols, res);
            }
            for (int i = 0; i < n_rows; i++)
                for (int t = 0; t < group; t++)
                    out[(size_t)(t0 + t) * W.rows + r0 + i] = res[i][t] + (bias ? bias[r0 + i] : 0.0f);
        }
        for (int i = 0; i < n_rows; i++)  // decode, and the tokens left over: row by row
            for (int t = t0; t < T; t++) {
                float sum = q8 ? row_q8(w[i], xq + t * xq_bytes, W.cols / Q8_BLOCK)
                               : row_float(W.dtype, w[i], x + (size_t)t * W.cols, W.cols);
                out[(size_t)t * W.rows + r0 + i] = sum + (bias ? bias[r0 + i] : 0.0f);
            }
    }
#endif
}

// ---------------------------------------------------------------------------
// Attention's loops: q . k over head_dim, and out += p * v, with k and v
// rows of the KV cache in its type. Same lane order; `simd` false runs the
// scalar twin.

float vec_dot_fast(const float* a, const void* b, DType bt, int n, bool simd) {
#ifdef LANTERN_AVX2
    if (simd) {
        __m256 acc = _mm256_setzero_ps();
        int i = 0;
        for (; i + LANES <= n; i += LANES) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(bt, b, i), acc);
        if (i < n) acc = _mm256_fmadd_ps(load8_tail(DType::F32, a, i, n - i), load8_tail(bt, b, i, n - i), acc);
        return hsum(acc);
    }
#endif
    return dot_scalar(bt, b, a, n);
}

void vec_axpy_fast(float* y, float alpha, const void* x, DType xt, int n, bool simd) {
    int i = 0;
#ifdef LANTERN_AVX2
    if (simd) {
        __m256 a = _mm256_set1_ps(alpha);
        for (; i + LANES <= n; i += LANES)
            _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, load8(xt, x, i), _mm256_loadu_ps(y + i)));
    }
#endif
    for (; i < n; i++) y[i] = std::fma(alpha, widen(xt, x, i), y[i]);
}

// One attention head for one query (kernels.h: attention_head). The scores
// take 4 keys per pass: each key's dot product is one chain of dependent
// FMAs, so four side by side keep the FMA units busy where one would wait
// on each result. Each key still sums in the one order, so this equals
// one key at a time bit for bit.
void attention_head_fast(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                         size_t stride, DType kv_type, int n, int head_dim, bool simd) {
    float scale = 1.0f / std::sqrt((float)head_dim);
    int j = 0;
#ifdef LANTERN_AVX2
    if (simd && head_dim % LANES == 0) {
        for (; j + 4 <= n; j += 4) {
            const uint8_t* k = keys + j * stride;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < head_dim; i += LANES) {
                __m256 qv = _mm256_loadu_ps(q + i);
                a0 = _mm256_fmadd_ps(qv, load8(kv_type, k, i), a0);
                a1 = _mm256_fmadd_ps(qv, load8(kv_type, k + stride, i), a1);
                a2 = _mm256_fmadd_ps(qv, load8(kv_type, k + 2 * stride, i), a2);
                a3 = _mm256_fmadd_ps(qv, load8(kv_type, k + 3 * stride, i), a3);
            }
            scores[j] = hsum(a0) * scale;
            scores[j + 1] = hsum(a1) * scale;
            scores[j + 2] = hsum(a2) * scale;
            scores[j + 3] = hsum(a3) * scale;
        }
    }
#endif
    for (; j < n; j++) scores[j] = vec_dot_fast(q, keys + j * stride, kv_type, head_dim, simd) * scale;
    softmax(scores, n);
    for (int i = 0; i < head_dim; i++) out[i] = 0.0f;
    for (j = 0; j < n; j++) vec_axpy_fast(out, scores[j], values + j * stride, kv_type, head_dim, simd);
}

