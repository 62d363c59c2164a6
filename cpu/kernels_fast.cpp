// kernels_fast.cpp — the fast twin of kernels.cpp's matmul: the same math,
// arranged for the machine. This file holds what every instruction set
// shares: the summation order, the threads, the tiles, the Q8_0
// activations, and the scalar twin. The SIMD micro-kernels live in
// kernels_avx2.cpp and kernels_avx512.cpp (book/12-performance.md);
// attention's fast twin, which uses them too, in attention_fast.cpp.
//
// Four ideas:
//   1. Threads: each tile of output rows is run by one thread (decode: each
//      thread a contiguous range; prefill: whichever thread is free). No two
//      threads ever add into the same number, so nothing needs a lock and the
//      result cannot depend on how many threads there are.
//   2. SIMD: one instruction multiplies 8 (AVX2) or 16 (AVX-512) floats and
//      FMA fuses the multiply with the add. bf16 and f16 weights are widened
//      to f32 in registers, straight from the mmapped file: memory traffic
//      stays at 2 bytes per weight.
//   3. Tiles: a micro-kernel computes rows x tokens dot products at once, so
//      each weight loaded is used once per token of the tile and each
//      activation once per row. Decode (one token) is a tile of one token
//      and several rows: several independent chains of FMAs, bound by memory
//      bandwidth; a batch of tokens (prefill) makes it compute-bound.
//   4. Q8_0: int8 weights times int8 activations, summed exactly in integers,
//      one float multiply per block of 32.
//
// Why a fixed summation order. Float addition is not associative, so "the
// same dot product" summed in two orders gives two slightly different
// numbers. Every kernel here sums in ONE order, 16 lanes wide (the width of
// an AVX-512 register):
//   - 16 partial sums ("lanes"): lane j adds w[c]*x[c] for c = j, j+16,
//     j+32, ... in increasing c, each step a fused multiply-add (one
//     rounding), from +0; a row whose length is not a multiple of 16 is
//     padded with zeros;
//   - fold: u[j] = l[j] + l[j+8] for j = 0..7;
//   - then ((u0+u4) + (u2+u6)) + ((u1+u5) + (u3+u7));
//   - then the bias.
// AVX-512 holds the 16 lanes in one register, AVX2 in two (lanes 0-7 and
// 8-15), the scalar twin in an array of 16 floats with std::fma. Q8_0 rows
// use the same lanes: block b's 8 integer sums (bytes 4j..4j+3) go to lanes
// 0-7 when b is even and 8-15 when b is odd, each as
// fma((float)sum, d_w * d_x, lane). So a result never depends on the tile it
// was computed in, the batch size, the thread count, or the instruction set:
// decode and prefill, 1 thread and 16, scalar, AVX2 and AVX-512 compute the
// same bits for every matrix product (IEEE float and a correctly rounded fma
// are the same everywhere; libm's exp, sin and cos elsewhere in the forward
// pass need not be).
//
// Run-time dispatch: the AVX2 and AVX-512 files are compiled on every x86-64
// machine (their functions carry the target instruction sets), and
// cpu/kernel_sets.cpp:kernels_init picks the best set the CPU reports (cpuid). On
// other CPUs --kernels fast runs the scalar twin and gives the same answers.
#include "cpu/kernel_sets.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <omp.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

bool cpu_has_avx2() {
#if defined(__x86_64__)
    // F16C straight from cpuid (leaf 1, ECX): clang's __builtin_cpu_supports has no name for it.
    unsigned a, b, c, d;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
    return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

// ---------------------------------------------------------------------------
// The scalar twin: the order above in portable C++.

// Full steps of 16, then the zero-padded last step. Force-inlined into
// dot_scalar with dt a constant, so the type switch in widen() is resolved
// at compile time (a template written by hand, as in the SIMD files).
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

static float dot_scalar(const float* x, const uint8_t* row, DType dt, int cols) {
    if (dt == DType::BF16) return dot_lanes(DType::BF16, row, x, cols);
    if (dt == DType::F16) return dot_lanes(DType::F16, row, x, cols);
    return dot_lanes(DType::F32, row, x, cols);
}

static float f16_scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return f16_to_f32(h);
}

// Q8_0 x Q8_0: lane j (+8 for odd blocks) of block b gets the exact integer
// sum of the products of bytes 4j..4j+3, as a float, times d_w * d_x.
static float dot_q8_scalar(const uint8_t* w, const uint8_t* x, int n_blocks) {
    float acc[LANES] = {0};
    for (int b = 0; b < n_blocks; b++, w += Q8_BLOCK_BYTES, x += Q8_BLOCK_BYTES) {
        float d = f16_scale(w) * f16_scale(x);
        const int8_t* wq = (const int8_t*)w + 2;
        const int8_t* xq = (const int8_t*)x + 2;
        float* lane = acc + 8 * (b % 2);
        for (int j = 0; j < 8; j++) {
            int32_t s = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++) s += (int32_t)wq[i] * xq[i];
            lane[j] = std::fma((float)s, d, lane[j]);
        }
    }
    return sum_lanes(acc);
}

static void tile_scalar(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                        float out[MAX_TILE][MAX_TILE]) {
    for (int t = 0; t < n_tokens; t++) out[0][t] = dot_scalar(x[t], w[0], dt, cols);
}

static void tile_q8_scalar(const uint8_t* const* w, const uint8_t* const* x, int n_tokens, int n_blocks,
                           float out[MAX_TILE][MAX_TILE]) {
    for (int t = 0; t < n_tokens; t++) out[0][t] = dot_q8_scalar(w[0], x[t], n_blocks);
}

static void axpy_scalar(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n) {
    for (int j = 0; j < n_rows; j++, x += stride)
        for (int i = 0; i < n; i++) y[i] = std::fma(alpha[j], widen(xt, x, i), y[i]);
}

// exp for the softmax, as a polynomial every instruction set computes the
// same way (libm's exp differs between systems and is one call per value).
// Write x = n ln2 + r with n an integer and |r| <= ln2/2; then
// exp(x) = 2^n exp(r): 2^n goes straight into the float's exponent bits and
// exp(r) is a degree-7 polynomial (Cephes' expf coefficients: 1 + r + r^2 (1/2
// + r/6 + ...)), in fused multiply-adds. ln2 is split in two (C1 has few
// bits, so n*C1 is exact) to keep r accurate. Below -87.33 the result would
// be a subnormal (< 2^-126): it is 0, an absolute error under 1.2e-38 in a
// softmax whose largest term is 1. tests/test_kernels.cpp measures the
// error against exp in double over the whole range: at most 2 ulp.
const float EXP_LOW = -87.33654f, LOG2E = 1.44269504088896341f, LN2_C1 = 0.693359375f, LN2_C2 = -2.12194440e-4f;
const float EXP_P[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                        5.0000001201e-1f};

float exp_poly(float x) {
    if (!(x >= EXP_LOW)) return 0.0f;
    float n = std::nearbyint(x * LOG2E);
    float r = std::fma(-n, LN2_C1, x);
    r = std::fma(-n, LN2_C2, r);
    float p = EXP_P[0];
    for (int i = 1; i < 6; i++) p = std::fma(p, r, EXP_P[i]);
    p = std::fma(p, r * r, r) + 1.0f;
    uint32_t bits = (uint32_t)((int)n + 127) << 23;  // 2^n
    float two_n;
    std::memcpy(&two_n, &bits, 4);
    return p * two_n;
}

static void exp_shift_scalar(float* x, float m, int n) {
    for (int i = 0; i < n; i++) x[i] = exp_poly(x[i] - m);
}

// SwiGLU with the set's exp: silu(g) = g * sigmoid(g), and sigmoid(g) is
// 1 / (1 + e) for g >= 0 and e / (1 + e) for g < 0, with e = exp(-|g|).
// So exp only ever meets a number <= 0, the range of exp_shift (m = 0),
// and never overflows: for g below -87.33, e is 0 and silu(g) is -0, as
// g / (1 + exp(-g)) = g / inf is. 256 values at a time, on the stack.
// The two loops around exp are written to run as vectors (omp simd): the
// sign of g is a coin toss, so as a branch it would be mispredicted every
// other value; as a select it costs nothing, and each value still sees the
// same multiply, divide and multiply, so the bits do not change.
void swiglu_fast(float* gate, const float* up, int n, const SimdKernels& k) {
    float e[256];
    for (int i0 = 0; i0 < n; i0 += 256) {
        int m = std::min(256, n - i0);
        float* g = gate + i0;
        const float* u = up + i0;
        #pragma omp simd
        for (int i = 0; i < m; i++) e[i] = -std::fabs(g[i]);
        k.exp_shift(e, 0.0f, m);
        #pragma omp simd
        for (int i = 0; i < m; i++) {
            float s = g[i] >= 0 ? 1.0f : e[i];
            g[i] = g[i] * s / (1.0f + e[i]) * u[i];
        }
    }
}

const SimdKernels SCALAR_KERNELS = {"scalar", 1, 8, 1, 8, tile_scalar, tile_q8_scalar, axpy_scalar,
                                    exp_shift_scalar, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, 0, 0, 0, false, nullptr, false, nullptr, nullptr};

// ---------------------------------------------------------------------------
// The bf16dot set's scalar twin: kernels_avx512.cpp's vdpbf16ps tile in
// portable C++, the same bits (tests/test_kernels.cpp). vdpbf16ps takes 32
// bf16 pairs: lane j (of 16) adds, for the columns c = 2j and 2j+1 of each
// step of 32, first the product of the odd pair, then of the even pair. A
// product of two bf16 values (8 significant bits each) is exact in f32;
// each addition rounds once (to nearest even): an fma. The instruction
// ignores the rounding and denormal modes and treats every subnormal, in
// or out, as zero: so does daz(). The activations are rounded to bf16 the
// same way (f32_to_bf16_daz), a row's tail is padded with zeros, and the 16
// lanes end in the one fold and tree (sum_lanes).
static inline float daz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

uint16_t f32_to_bf16_daz(float x) { return f32_to_bf16(daz(x)); }

static inline float dp_step(float acc, float a, float b) { return daz(std::fma(daz(a), daz(b), daz(acc))); }

static float dot_bf16dot_scalar(const uint16_t* w, const uint16_t* x, int cols) {
    float acc[LANES] = {0};
    auto wv = [&](int c) { return c < cols ? bf16_to_f32(w[c]) : 0.0f; };
    auto xv = [&](int c) { return c < cols ? bf16_to_f32(x[c]) : 0.0f; };
    for (int c = 0; c < cols; c += 2 * LANES)
        for (int j = 0; j < LANES; j++) {
            int even = c + 2 * j, odd = even + 1;
            acc[j] = dp_step(dp_step(acc[j], wv(odd), xv(odd)), wv(even), xv(even));
        }
    return sum_lanes(acc);
}

static void round_bf16_scalar(const float* x, uint16_t* out, int n) {
    for (int i = 0; i < n; i++) out[i] = f32_to_bf16_daz(x[i]);
}

static void tile_bf16dot_scalar(const uint8_t* const* w, const uint16_t* const* x, int n_tokens, int cols,
                                float out[MAX_TILE][MAX_TILE]) {
    for (int t = 0; t < n_tokens; t++) out[0][t] = dot_bf16dot_scalar((const uint16_t*)w[0], x[t], cols);
}

// Other weight types take the scalar tiles.
const SimdKernels BF16DOT_SCALAR_KERNELS = {"bf16dot-scalar", 1, 8, 1, 8, tile_scalar, tile_q8_scalar,
                                            axpy_scalar, exp_shift_scalar, round_bf16_scalar, tile_bf16dot_scalar,
                                            nullptr, nullptr, nullptr, 0, 0, 0, false, nullptr, false, nullptr, nullptr};

// ---------------------------------------------------------------------------
// The drivers: quantize the activations when W is Q8_0, then threads over
// tiles of rows, and within a tile the tokens in groups.

static inline size_t row_bytes(const Mat& W) {
    if (W.dtype == DType::Q8_0) return (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    return (size_t)W.cols * (W.dtype == DType::F32 ? 4 : 2);
}

// Activations rounded to bf16 for the bf16dot tiles: [T, cols], made once
// per matmul (the set's round_bf16, threads over the tokens) into the
// caller's buffer (kernels.h:KernelScratch).
static const uint16_t* round_activations(const float* x, int T, int cols, const SimdKernels& k,
                                         LineVector<uint16_t>& xb) {
    if (xb.size() < (size_t)T * cols) xb.resize((size_t)T * cols);
    #pragma omp parallel for schedule(static) if (T > 1)
    for (int t = 0; t < T; t++) k.round_bf16(x + (size_t)t * cols, &xb[(size_t)t * cols], cols);
    return xb.data();
}

// The rows of tile number `tile` (of tile_rows rows) of a matrix of n_rows
// rows, into rows[]; returns how many (fewer at the matrix's end). Every
// product of tiles uses it: kernels_fast.cpp:run_tile and the block formats'
// quants_fast.cpp:run_quant_tile. For a long batch, rows r0, r0+1, ...: side
// by side in memory, and the tile's few KB stay in the L1 cache while the
// token groups go by. For one token (decode), or a few (kernels.h:
// STREAM_TOKENS), each weight is read once and the question is how memory
// streams best: the matrix is cut into tile_rows stripes of q consecutive
// rows, and tile j holds row j of each stripe. A thread's run of tiles
// j0..j1 then reads tile_rows long sequential streams (rows j0..j1 of each
// stripe), which the hardware prefetcher follows, where consecutive rows
// side by side are tile_rows short streams that each end after one row
// (1.8-9.7 KB on the 0.5B model). Stripes came closer to a plain sum of the
// same pages than rows side by side did, even with a software prefetch
// (book/A-measurements.md, "Decode's stripes", measures it). Which rows a
// tile holds changes no result: each row's dot product is the same however
// it is grouped. (A tile with fewer rows repeats one it holds; the extra
// results are not stored.)
int tile_row_list(int tile, int tile_rows, int n_rows, bool stripes, int rows[MAX_TILE]) {
    int n = 0;
    if (stripes) {
        int q = (n_rows + tile_rows - 1) / tile_rows;
        for (int i = 0; i < tile_rows && tile + i * q < n_rows; i++) rows[n++] = tile + i * q;
    } else
        for (int r = tile * tile_rows; r < n_rows && n < tile_rows; r++) rows[n++] = r;
    return n;
}

// The bytes of one token's activations a tile of W reads: Q8_0 blocks, bf16
// (bf16dot's tiles on bf16 weights) or f32.
static size_t x_row_bytes(const Mat& W, bool bf16_x) {
    if (W.dtype == DType::Q8_0) return (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    return (size_t)W.cols * (bf16_x && W.dtype == DType::BF16 ? 2 : 4);
}

// Groups of equal size, at most `group` tokens each, for n tokens: 8 tokens
// as 4 + 4, not 6 + 2, since a group of 2 does 2 FMAs per weight loaded
// where one of 4 does 4 (a serving step of 8 sequences: book/12-performance.md, Step 5).
static int equal_group(int n, int group) {
    int groups = (n + group - 1) / group;
    return (n + groups - 1) / groups;
}

// One tile (its rows at w, which are rows[0..n_rows-1] of W) against the
// n_tok tokens from t0, over the columns c0 .. c1-1 (all of them, unless
// the set's tile_chunk goes by chunks: kernels.h). The results go to o.out
// once the last column is done. Force-inlined: a decode tile is a few
// hundred nanoseconds of work, and as a call this made one token's products
// a sixth slower.
static inline __attribute__((always_inline)) void run_group(const MatmulOut& o, const uint8_t* const* w, const int* rows, int n_rows, const float* x,
                      const uint8_t* xq, const uint16_t* xb, int t0, int n_tok, int c0, int c1, float* lanes,
                      const SimdKernels& k) {
    const Mat& W = *o.W;
    size_t x_bytes = x_row_bytes(W, xb != nullptr);
    float res[MAX_TILE][MAX_TILE];
    if (W.dtype == DType::Q8_0) {
        const uint8_t* xs[MAX_TILE];
        for (int t = 0; t < n_tok; t++) xs[t] = xq + (t0 + t) * x_bytes;
        k.tile_q8(w, xs, n_tok, W.cols / Q8_BLOCK, res);
    } else if (xb && W.dtype == DType::BF16) {
        const uint16_t* xs[MAX_TILE];
        for (int t = 0; t < n_tok; t++) xs[t] = xb + (size_t)(t0 + t) * W.cols;
        k.tile_bf16(w, xs, n_tok, W.cols, res);
    } else {
        const float* xs[MAX_TILE];
        for (int t = 0; t < n_tok; t++) xs[t] = x + (size_t)(t0 + t) * W.cols;
        if (c0 > 0 || c1 < W.cols) k.tile_chunk(W.dtype, w, xs, n_tok, W.cols, c0, c1, lanes, res);
        else k.tile(W.dtype, w, xs, n_tok, W.cols, res);
    }
    if (c1 < W.cols) return;  // the lanes wait in `lanes` for the next chunk
    for (int i = 0; i < n_rows; i++)
        for (int t = 0; t < n_tok; t++)
            o.out[(size_t)(t0 + t) * W.rows + rows[i]] = res[i][t] + (o.bias ? o.bias[rows[i]] : 0.0f);
}

// The rows of tile `tile` and their addresses (a tile with fewer rows
// repeats its last; the extra results are not stored).
static inline __attribute__((always_inline)) int tile_rows_at(const Mat& W, int tile, int tile_rows, bool stripes, int rows[MAX_TILE],
                        const uint8_t* w[MAX_TILE]) {
    int n_rows = tile_row_list(tile, tile_rows, W.rows, stripes, rows);
    for (int i = 0; i < tile_rows; i++) w[i] = (const uint8_t*)W.data + rows[std::min(i, n_rows - 1)] * row_bytes(W);
    return n_rows;
}

// One tile of rows against the tokens t_begin .. t_end-1, in groups, its
// rows held in the L1 cache while the groups go by: decode and a serving
// step (in stripes), and a prefill whose activations come from L2
// (run_panel).
static void run_tile(const MatmulOut& o, int tile, const float* x, const uint8_t* xq, const uint16_t* xb, int t_begin,
                     int t_end, const SimdKernels& k, bool stripes) {
    const Mat& W = *o.W;
    bool q8 = W.dtype == DType::Q8_0;
    int rows[MAX_TILE];
    const uint8_t* w[MAX_TILE];
    int n_rows = tile_rows_at(W, tile, q8 ? k.q8_tile_rows : k.tile_rows, stripes, rows, w);
    int group = equal_group(t_end - t_begin, q8 ? k.q8_tile_tokens : k.tile_tokens);
    for (int t0 = t_begin; t0 < t_end; t0 += group)
        run_group(o, w, rows, n_rows, x, xq, xb, t0, std::min(group, t_end - t0), 0, W.cols, nullptr, k);
}

// A prefill's product in panels (matmul_fast says why). A panel is a run of
// consecutive tiles of one matrix whose weights, or the chunk of them a
// pass reads, fill about PANEL_BYTES: it stays in L2 while the token groups
// go by, and each group's activations (the chunk of them) stay in L1 while
// the panel's tiles go by. A float tile takes a row's columns in chunks
// when a group's whole activations would not fit X_CHUNK_BYTES, L1's share
// for them, and the set has a tile that goes by chunks (tile_chunk); the
// chunks are equal, in whole steps of 16.
const size_t PANEL_BYTES = 128 * 1024, X_CHUNK_BYTES = 24 * 1024, PREFILL_BLOCK_BYTES = 256 * 1024;
const int PANEL_TOKENS = 128, MAX_PANEL_TILES = 64;

static int chunk_cols(const Mat& W, const SimdKernels& k, bool bf16_x) {
    if (!k.tile_chunk || W.dtype == DType::Q8_0 || (bf16_x && W.dtype == DType::BF16)) return W.cols;
    size_t x_group = (size_t)k.tile_tokens * W.cols * sizeof(float);
    int n_chunks = (int)((x_group + X_CHUNK_BYTES - 1) / X_CHUNK_BYTES);
    if (n_chunks <= 1) return W.cols;
    return ((W.cols + n_chunks - 1) / n_chunks + LANES - 1) / LANES * LANES;
}

// Which operand of a prefill tile comes from L2: the one a step reads fewer
// bytes of (matmul_fast says why). True: the weights (a group of tokens
// stays in L1 while the panel's tiles go by); false: the activations (a
// tile's rows stay in L1 while the block's groups go by).
static bool weights_from_l2(const Mat& W, const SimdKernels& k, bool bf16_x) {
    bool q8 = W.dtype == DType::Q8_0;
    return (q8 ? k.q8_tile_rows : k.tile_rows) * row_bytes(W) < (q8 ? k.q8_tile_tokens : k.tile_tokens) * x_row_bytes(W, bf16_x);
}

// How many tiles a panel of W holds.
static int panel_tiles(const Mat& W, const SimdKernels& k, bool bf16_x) {
    bool q8 = W.dtype == DType::Q8_0;
    int tile_rows = q8 ? k.q8_tile_rows : k.tile_rows;
    size_t pass_bytes = q8 ? row_bytes(W) : row_bytes(W) / W.cols * chunk_cols(W, k, bf16_x);
    return std::clamp((int)(PANEL_BYTES / (tile_rows * pass_bytes)), 1, MAX_PANEL_TILES);
}

// Tiles tile0 .. tile1-1 of one matrix (rows side by side) against the
// tokens t_begin .. t_end-1: for each group of tokens, for each chunk of
// columns, every tile of the panel; or, where the activations come from
// L2, each tile against every group (run_tile).
static void run_panel(const MatmulOut& o, int tile0, int tile1, const float* x, const uint8_t* xq, const uint16_t* xb,
                      int t_begin, int t_end, const SimdKernels& k) {
    const Mat& W = *o.W;
    if (!weights_from_l2(W, k, xb != nullptr)) {
        for (int tile = tile0; tile < tile1; tile++) run_tile(o, tile, x, xq, xb, t_begin, t_end, k, false);
        return;
    }
    bool q8 = W.dtype == DType::Q8_0;
    int kc = chunk_cols(W, k, xb != nullptr), n_tiles = tile1 - tile0;
    // Each tile's rows and their addresses, once for the panel.
    int rows[MAX_PANEL_TILES][MAX_TILE], n_rows[MAX_PANEL_TILES];
    const uint8_t* w[MAX_PANEL_TILES][MAX_TILE];
    for (int j = 0; j < n_tiles; j++) n_rows[j] = tile_rows_at(W, tile0 + j, q8 ? k.q8_tile_rows : k.tile_rows, false, rows[j], w[j]);
    // The lanes each tile carries from one chunk to the next (kernels.h: tile_chunk).
    size_t lane_floats = (size_t)k.tile_rows * k.tile_tokens * LANES;
    LineVector<float> lanes(kc < W.cols ? n_tiles * lane_floats : 0);
    int group = equal_group(t_end - t_begin, q8 ? k.q8_tile_tokens : k.tile_tokens);
    for (int t0 = t_begin; t0 < t_end; t0 += group)
        for (int c0 = 0; c0 < W.cols; c0 += kc)
            for (int j = 0; j < n_tiles; j++)
                run_group(o, w[j], rows[j], n_rows[j], x, xq, xb, t0, std::min(group, t_end - t0), c0,
                          std::min(W.cols, c0 + kc), kc < W.cols ? &lanes[j * lane_floats] : nullptr, k);
}

// Several matrices that multiply the same x (kernels.h: matmul_many) are one
// list of tiles, matrix after matrix: tile i of the list belongs to the
// matrix whose range [first[m], first[m+1]) holds it. One parallel region
// over the whole list, so the threads meet once, at its end, however many
// matrices there are, and each tile runs exactly as it would alone, so
// every output has the bits of its own matmul.
//
// Who runs which tile. With a fixed half each, the faster thread waits for
// the slower at the end of every product, and on a shared machine a core
// is sometimes taken away for a moment, and the threads then spend a
// noticeable part of a product waiting in the barrier (book/12-performance.md,
// Step 1). So the work goes to whichever thread is free:
//   - prefill (bound by arithmetic): one panel of one token block at a time
//     (below);
//   - decode (bound by memory): schedule(guided), contiguous runs that
//     shrink as the list runs out (half of the tiles first, then a quarter,
//     ...; at least 8), so each thread still reads long sequential runs of
//     its stripes and the last pieces even out the finish.
//
// A short batch is a decode. A serving step of 8 decoding sequences is a
// product of 8 tokens: 8 FMAs per weight loaded is still far from the
// arithmetic a core can do per byte of memory, so the step is bound by
// reading the weights, as one token is. Taken as a prefill (rows side by
// side, tiles to whoever is free) its weights come from memory in short
// runs, and its products took 2.4 times as long as one token's; read in
// the decode's stripes, each tile taking all 8 tokens, 1.3 times
// (book/A-measurements.md, "Short batches in stripes"). So up to
// kernels.h:STREAM_TOKENS tokens take the decode's path, their activations
// (at most 64 x 4864 floats, 1.2 MB) staying in L2 while the weights
// stream by once.
//
// A longer batch (prefill) is bound by arithmetic, and what decides its
// speed is which operand a tile reads from which cache. A tile of 4 rows x
// 6 tokens does, per step of 16 columns, 24 FMAs on 6 activation vectors
// and 4 weight vectors. If the tile's rows stay in L1 while every token
// goes by, the activations come from L2: 6 x 64 = 384 bytes per step. If a
// group of 6 tokens stays in L1 while many tiles go by, the weights come
// from L2 instead: 4 x 16 bf16 = 128 bytes per step, a third. So the
// threads take a panel of tiles (PANEL_BYTES of weights: 18 tiles of 4
// rows at 896 bf16 columns) and a block of PANEL_TOKENS tokens at a time,
// and run, for each group of the block, every tile of the panel
// (run_panel): the panel stays in L2, the group's 6 x 896 floats (21 KB)
// in L1, and each panel comes from memory once per block. A row of 4864
// columns (the down projection) would make a group 114 KB, more than L1:
// there the tile goes over the columns in 5 chunks of 976, each chunk of
// the group 23 KB, the tile's lanes carried from chunk to chunk
// (book/12-performance.md, Step 5, measures it). Which operand comes from
// L2 follows the tile's shape (weights_from_l2): a tile that reads more
// bytes of weights than of activations per step keeps its rows in L1
// (run_tile) and takes the tokens in blocks of PREFILL_BLOCK_BYTES. The
// order of each dot product does not change, only when it is computed.
void matmul_fast(const MatmulOut* outs, int n, const float* x, int T, const SimdKernels& k, KernelScratch& s) {
    if (n > MAX_MATMUL_OUTS) fail("matmul_many: %d matrices, at most %d", n, MAX_MATMUL_OUTS);
    int first[MAX_MATMUL_OUTS + 1] = {0};
    const uint8_t* xq = nullptr;  // the activations as Q8_0, made once for every Q8_0 matrix
    const uint16_t* xb = nullptr;  // as bf16, for the bf16dot tiles, made once for every bf16 matrix
    int group = k.tile_tokens;    // a token block holds whole groups of every tile
    for (int m = 0; m < n; m++) {
        const Mat& W = *outs[m].W;
        bool q8 = W.dtype == DType::Q8_0;
        if (q8 && !k.tile_q8) fail("matmul_fast: the %s set has no Q8_0 tile (cpu/kernel_sets.cpp:goes_to_quants sends Q8_0 to quants_fast.cpp)", k.name);
        if (q8 && !xq) xq = quantize_activations(x, T, W.cols, s.xq);
        if (W.dtype == DType::BF16 && k.tile_bf16 && !xb) xb = round_activations(x, T, W.cols, k, s.xb);
        int tile_rows = q8 ? k.q8_tile_rows : k.tile_rows;
        first[m + 1] = first[m] + (W.rows + tile_rows - 1) / tile_rows;
        group = std::lcm(group, q8 ? k.q8_tile_tokens : k.tile_tokens);
    }
    if (T <= STREAM_TOKENS) {  // decode, or a short batch: shrinking contiguous runs of tiles (the stripes of tile_row_list)
        #pragma omp parallel for schedule(guided, 8)
        for (int tile = 0; tile < first[n]; tile++) {
            int m = 0;
            while (tile >= first[m + 1]) m++;
            run_tile(outs[m], tile - first[m], x, xq, xb, 0, T, k, true);
        }
        return;
    }
    // The list of panels, matrix after matrix (panel p of matrix m: p in [pfirst[m], pfirst[m+1])).
    int pfirst[MAX_MATMUL_OUTS + 1] = {0}, ptiles[MAX_MATMUL_OUTS];
    for (int m = 0; m < n; m++) {
        ptiles[m] = panel_tiles(*outs[m].W, k, xb != nullptr);
        pfirst[m + 1] = pfirst[m] + (first[m + 1] - first[m] + ptiles[m] - 1) / ptiles[m];
    }
    // A block of PANEL_TOKENS tokens; where the activations come from L2,
    // as many as fit PREFILL_BLOCK_BYTES there.
    int block_tokens = PANEL_TOKENS;
    for (int m = 0; m < n; m++) {
        const Mat& W = *outs[m].W;
        if (!weights_from_l2(W, k, xb != nullptr))
            block_tokens = std::min(block_tokens, (int)(PREFILL_BLOCK_BYTES / x_row_bytes(W, xb != nullptr)));
    }
    int block = std::max(1, block_tokens / group) * group, n_blocks = (T + block - 1) / block;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int item = 0; item < n_blocks * pfirst[n]; item++) {  // token block after token block
        int b = item / pfirst[n], p = item % pfirst[n], m = 0;
        while (p >= pfirst[m + 1]) m++;
        int tile0 = (p - pfirst[m]) * ptiles[m], tile1 = std::min(first[m + 1] - first[m], tile0 + ptiles[m]);
        run_panel(outs[m], tile0, tile1, x, xq, xb, b * block, std::min(T, (b + 1) * block), k);
    }
}
