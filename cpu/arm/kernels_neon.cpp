// kernels_neon.cpp — the micro-kernels for NEON (Advanced SIMD), which every
// 64-bit ARM core has: Apple M-series laptops, Raspberry Pi 4/5, Graviton,
// phones. 32 registers of 128 bits, 4 floats each. kernels_fast.cpp drives
// these kernels and explains the summation order; here its 16 lanes are four
// registers, lanes 0-3, 4-7, 8-11 and 12-15, so every dot product keeps four
// accumulators and ends with the same fold and tree as the scalar twin.
//
// Chosen by what the compiler targets, never assumed: the file is empty
// unless the compiler builds for 64-bit ARM. Q8_0 uses the dot-product
// instruction (vdotq_s32, "dotprod", ARMv8.2 and later: Apple M1, Cortex-A76,
// Graviton 2) when the compiler targets it (__ARM_FEATURE_DOTPROD; -mcpu=native
// on such a core), and three plain NEON instructions otherwise. Both give
// the same exact integers, so the same bits.
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"
#include <algorithm>
#include <cmath>
#include <cstring>

bool cpu_has_neon() {
#if defined(__aarch64__) && defined(__ARM_NEON)
    return true;  // part of every 64-bit ARM core, and this file was built for one
#else
    return false;
#endif
}

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))

// Lanes 0-15 in a[0..3] -> one float, in the scalar twin's order:
//   fold  u[j] = l[j] + l[j+8]:  u0-3 = a0 + a2, u4-7 = a1 + a3;
//   tree  ((u0+u4) + (u2+u6)) + ((u1+u5) + (u3+u7)):
//         s = u0-3 + u4-7 holds u0+u4, u1+u5, u2+u6, u3+u7, then (s0+s2) + (s1+s3).
INLINE float hsum16(const float32x4_t a[4]) {
    float32x4_t s = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
    float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));  // s0+s2, s1+s3
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

// 16 values of a row from column c, widened to f32 in four registers.
// bf16 is the top half of an f32: vshll moves each 16-bit value into the top
// of a 32-bit lane. f16 has its own conversion (FCVTL), exact like F16C.
INLINE void load16(DType dt, const void* row, int c, float32x4_t v[4]) {
    if (dt == DType::F32) {
        const float* p = (const float*)row + c;
        for (int i = 0; i < 4; i++) v[i] = vld1q_f32(p + 4 * i);
        return;
    }
    const uint16_t* p = (const uint16_t*)row + c;
    for (int h = 0; h < 2; h++) {
        uint16x8_t raw = vld1q_u16(p + 8 * h);
        if (dt == DType::BF16) {
            v[2 * h] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(raw), 16));
            v[2 * h + 1] = vreinterpretq_f32_u32(vshll_high_n_u16(raw, 16));
        } else {
            float16x8_t f = vreinterpretq_f16_u16(raw);
            v[2 * h] = vcvt_f32_f16(vget_low_f16(f));
            v[2 * h + 1] = vcvt_high_f32_f16(f);
        }
    }
}

// Values c .. n-1 of a row, zero-padded to 16: copied into a zeroed buffer
// and widened from there, so nothing is read past the end of the row.
INLINE void load16_tail(DType dt, const void* row, int c, int n, float32x4_t v[4]) {
    size_t elt = dt == DType::F32 ? 4 : 2;
    alignas(16) uint8_t buf[16 * 4] = {0};
    std::memcpy(buf, (const uint8_t*)row + c * elt, (n - c) * elt);
    load16(dt, buf, 0, v);
}

// ROWS x NT dot products, 4 accumulators each. Per step of 16 columns it
// widens NT token slices and ROWS weight slices and does ROWS x NT x 4 FMAs.
// 2 rows x 3 tokens: 24 accumulators + 4 weights + 4 activations fit the 32
// registers with room for the loads in flight.
const int ROWS = 2, TOKENS = 3;
INLINE void tile_n(DType dt, const uint8_t* const* w, const float* const* x, int NT, int cols,
                   float out[MAX_TILE][MAX_TILE]) {
    float32x4_t acc[ROWS][TOKENS][4];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            for (int i = 0; i < 4; i++) acc[r][t][i] = vdupq_n_f32(0.0f);
    for (int c = 0; c < cols; c += 16) {
        bool tail = c + 16 > cols;  // the last step, zero-padded
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            float32x4_t wv[4];
            if (tail) load16_tail(dt, w[r], c, cols, wv);
            else load16(dt, w[r], c, wv);
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) {
                float32x4_t xv[4];
                if (tail) load16_tail(DType::F32, x[t], c, cols, xv);
                else load16(DType::F32, x[t], c, xv);
                for (int i = 0; i < 4; i++) acc[r][t][i] = vfmaq_f32(acc[r][t][i], wv[i], xv[i]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) out[r][t] = hsum16(acc[r][t]);
}

// tile_n force-inlined with dt and the token count constants: one copy per
// weight type and count, loops unrolled, accumulators in registers.
INLINE void tile_dt(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                    float out[MAX_TILE][MAX_TILE]) {
    if (n_tokens == 3) tile_n(dt, w, x, 3, cols, out);
    else if (n_tokens == 2) tile_n(dt, w, x, 2, cols, out);
    else tile_n(dt, w, x, 1, cols, out);
}
static void tile_neon(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                      float out[MAX_TILE][MAX_TILE]) {
    if (dt == DType::BF16) tile_dt(DType::BF16, w, x, n_tokens, cols, out);
    else if (dt == DType::F16) tile_dt(DType::F16, w, x, n_tokens, cols, out);
    else tile_dt(DType::F32, w, x, n_tokens, cols, out);
}

// Q8_0: the 8 exact integer sums of one block of 32 (sum j = bytes 4j..4j+3,
// j = 0..3 from the first 16 bytes, 4..7 from the second), as 8 floats.
// With dotprod, one instruction per 16 bytes does exactly that: each 32-bit
// lane adds the products of its 4 bytes. Without it: vmull widens 8 products
// to 16 bits (|w x| <= 128 x 127 fits), vpaddl adds neighbouring pairs into
// 32 bits, vpadd adds neighbouring pairs again: the same 4-byte sums.
INLINE int32x4_t sums4(int8x16_t w, int8x16_t x) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, x);
#else
    int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));  // bytes 0-7, in pairs
    int32x4_t hi = vpaddlq_s16(vmull_high_s8(w, x));                       // bytes 8-15
    return vpaddq_s32(lo, hi);
#endif
}

INLINE float scale(const uint8_t* block) {
    __fp16 h;
    std::memcpy(&h, block, 2);
    return (float)h;  // exact, like common.cpp:f16_to_f32
}

// One block for ROWS x NT pairs into lanes acc[..][0..1] (even blocks: lanes
// 0-7) or acc[..][2..3] (odd blocks: lanes 8-15), each fma(sum, d_w * d_x).
const int Q8_ROWS = 2, Q8_TOKENS = 2;
INLINE void q8_step(const uint8_t* const* w, const uint8_t* const* x, int NT, size_t off, int half,
                    float32x4_t acc[Q8_ROWS][Q8_TOKENS][4]) {
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++) {
        float dw = scale(w[r] + off);
        int8x16_t w0 = vld1q_s8((const int8_t*)(w[r] + off + 2)), w1 = vld1q_s8((const int8_t*)(w[r] + off + 18));
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            float32x4_t d = vdupq_n_f32(dw * scale(x[t] + off));
            int8x16_t x0 = vld1q_s8((const int8_t*)(x[t] + off + 2)), x1 = vld1q_s8((const int8_t*)(x[t] + off + 18));
            acc[r][t][2 * half] = vfmaq_f32(acc[r][t][2 * half], vcvtq_f32_s32(sums4(w0, x0)), d);
            acc[r][t][2 * half + 1] = vfmaq_f32(acc[r][t][2 * half + 1], vcvtq_f32_s32(sums4(w1, x1)), d);
        }
    }
}

INLINE void tile_q8_n(const uint8_t* const* w, const uint8_t* const* x, int NT, int n_blocks,
                      float out[MAX_TILE][MAX_TILE]) {
    float32x4_t acc[Q8_ROWS][Q8_TOKENS][4];
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            for (int i = 0; i < 4; i++) acc[r][t][i] = vdupq_n_f32(0.0f);
    for (int b = 0; b < n_blocks; b++) q8_step(w, x, NT, (size_t)b * Q8_BLOCK_BYTES, b % 2, acc);
#pragma GCC unroll 4
    for (int r = 0; r < Q8_ROWS; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) out[r][t] = hsum16(acc[r][t]);
}

static void tile_q8_neon(const uint8_t* const* w, const uint8_t* const* x, int n_tokens, int n_blocks,
                         float out[MAX_TILE][MAX_TILE]) {
    if (n_tokens == 2) tile_q8_n(w, x, 2, n_blocks, out);
    else tile_q8_n(w, x, 1, n_blocks, out);
}

// Attention: y += alpha * v (element by element: one fma each, no order question).

static void axpy_row(float* y, float alpha, const uint8_t* x, DType xt, int n) {
    float32x4_t a = vdupq_n_f32(alpha);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4_t v[4];
        load16(xt, x, i, v);
        for (int j = 0; j < 4; j++) vst1q_f32(y + i + 4 * j, vfmaq_f32(vld1q_f32(y + i + 4 * j), a, v[j]));
    }
    for (; i < n; i++) {
        float v = xt == DType::BF16 ? bf16_to_f32(((const uint16_t*)x)[i])
                : xt == DType::F16  ? f16_to_f32(((const uint16_t*)x)[i]) : ((const float*)x)[i];
        y[i] = std::fma(alpha, v, y[i]);
    }
}

static void axpy_neon(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n) {
    for (int j = 0; j < n_rows; j++) axpy_row(y, alpha[j], x + j * stride, xt, n);
}

// Prefill and decode attention's scores (cpu/attention_fast.cpp): 4
// queries x 16 keys (4 registers) = 16 accumulators, four times across the
// block of 64 keys; per dimension d, 4 loads of the transposed keys and an
// fma by each query's q_i[d] (FMLA by element): each score one chain of
// fmas over the dimension from +0, as in the other sets.
INLINE void att_scores_n(float* s, const float* q, size_t q_stride, int NQ, const float* kt, int head_dim) {
    for (int j0 = 0; j0 < ATT_BLOCK; j0 += 16) {
        float32x4_t acc[4][4];
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            for (int v = 0; v < 4; v++) acc[i][v] = vdupq_n_f32(0.0f);
        for (int d = 0; d < head_dim; d++) {
            float32x4_t k[4];
            for (int v = 0; v < 4; v++) k[v] = vld1q_f32(kt + d * ATT_BLOCK + j0 + 4 * v);
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++) {
                float qd = q[i * q_stride + d];
                for (int v = 0; v < 4; v++) acc[i][v] = vfmaq_n_f32(acc[i][v], k[v], qd);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            for (int v = 0; v < 4; v++) vst1q_f32(s + i * ATT_BLOCK + j0 + 4 * v, acc[i][v]);
    }
}
static void att_scores_neon(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim) {
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

// Key and value rows widened to f32 (SimdKernels::att_widen): 4 values of
// 4 rows at a time, transposed in registers (TRN1/TRN2 on pairs of floats,
// then on pairs of doubles); the last head_dim % 4 values through widen.
// Q8_0: 4 codes to 32-bit integers, to floats, times the block's scale.
INLINE float32x4_t load4_kv(DType dt, const uint8_t* row, int c) {
    switch (dt) {
        case DType::BF16: return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t*)row + c), 16));
        case DType::F16: return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t*)row + c)));
        case DType::Q8_0: {
            const uint8_t* blk = row + c / Q8_BLOCK * Q8_BLOCK_BYTES;
            uint32_t codes;
            std::memcpy(&codes, blk + 2 + c % Q8_BLOCK, 4);  // 4 bytes: never past the block
            int16x8_t w = vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(codes)));
            return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), scale(blk));
        }
        default: return vld1q_f32((const float*)row + c);
    }
}
INLINE void att_widen_dt(DType dt, float* dst, const uint8_t* const* rows, int nb, int head_dim, bool transposed) {
    int full = head_dim / 4 * 4;
    if (!transposed) {
        for (int j = 0; j < nb; j++) {
            for (int c = 0; c < full; c += 4) vst1q_f32(dst + (size_t)j * head_dim + c, load4_kv(dt, rows[j], c));
            for (int c = full; c < head_dim; c++) dst[(size_t)j * head_dim + c] = widen(dt, rows[j], c);
        }
        return;
    }
    for (int j0 = 0; j0 < ATT_BLOCK; j0 += 4) {
        for (int c = 0; c < full; c += 4) {
            float32x4_t r[4];
            for (int i = 0; i < 4; i++) r[i] = j0 + i < nb ? load4_kv(dt, rows[j0 + i], c) : vdupq_n_f32(0.0f);
            float32x4_t a0 = vtrn1q_f32(r[0], r[1]), a1 = vtrn2q_f32(r[0], r[1]);  // (r0c0 r1c0 r0c2 r1c2), (.. c1, c3)
            float32x4_t a2 = vtrn1q_f32(r[2], r[3]), a3 = vtrn2q_f32(r[2], r[3]);
            float64x2_t b0 = vreinterpretq_f64_f32(a0), b1 = vreinterpretq_f64_f32(a1);
            float64x2_t b2 = vreinterpretq_f64_f32(a2), b3 = vreinterpretq_f64_f32(a3);
            vst1q_f32(dst + (size_t)(c + 0) * ATT_BLOCK + j0, vreinterpretq_f32_f64(vtrn1q_f64(b0, b2)));
            vst1q_f32(dst + (size_t)(c + 1) * ATT_BLOCK + j0, vreinterpretq_f32_f64(vtrn1q_f64(b1, b3)));
            vst1q_f32(dst + (size_t)(c + 2) * ATT_BLOCK + j0, vreinterpretq_f32_f64(vtrn2q_f64(b0, b2)));
            vst1q_f32(dst + (size_t)(c + 3) * ATT_BLOCK + j0, vreinterpretq_f32_f64(vtrn2q_f64(b1, b3)));
        }
        for (int c = full; c < head_dim; c++)
            for (int i = 0; i < 4; i++) dst[(size_t)c * ATT_BLOCK + j0 + i] = j0 + i < nb ? widen(dt, rows[j0 + i], c) : 0.0f;
    }
}
static void att_widen_neon(float* dst, const uint8_t* const* rows, int nb, DType t, int head_dim, bool transposed) {
    switch (t) {
        case DType::BF16: att_widen_dt(DType::BF16, dst, rows, nb, head_dim, transposed); break;
        case DType::F16: att_widen_dt(DType::F16, dst, rows, nb, head_dim, transposed); break;
        case DType::Q8_0: att_widen_dt(DType::Q8_0, dst, rows, nb, head_dim, transposed); break;
        default: att_widen_dt(DType::F32, dst, rows, nb, head_dim, transposed); break;
    }
}

// exp(x[i] - m), 4 at a time: kernels_fast.cpp:exp_poly step for step
// (round to nearest, the split ln2, the same fused multiply-adds, 2^n into
// the exponent bits); values below its range come out as +0 by the mask.
INLINE float32x4_t exp4(float32x4_t x) {
    uint32x4_t in = vcgeq_f32(x, vdupq_n_f32(-87.33654f));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // x - n*C1, one rounding
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
    int32x4_t two_n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t e = vmulq_f32(p, vreinterpretq_f32_s32(two_n));
    return vreinterpretq_f32_u32(vandq_u32(in, vreinterpretq_u32_f32(e)));
}
static void exp_shift_neon(float* x, float m, int n) {
    float32x4_t mv = vdupq_n_f32(m);
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, exp4(vsubq_f32(vld1q_f32(x + i), mv)));
    for (; i < n; i++) x[i] = exp_poly(x[i] - m);
}

const SimdKernels NEON_KERNELS = {
#if defined(__ARM_FEATURE_DOTPROD)
    "neon+dotprod",
#else
    "neon",
#endif
    ROWS, TOKENS, Q8_ROWS, Q8_TOKENS, tile_neon, tile_q8_neon, axpy_neon, exp_shift_neon, nullptr, nullptr,
    att_scores_neon, nullptr,  // P V: axpy once per query, the same bits
    nullptr, 0, 0, 0, false,  // the block formats: the reference (quants.cpp:dot_quant_q8); no NEON tiles yet
    nullptr, false, nullptr, att_widen_neon};
#endif  // __aarch64__ && __ARM_NEON
