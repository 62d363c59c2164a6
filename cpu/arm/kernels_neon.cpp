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
    nullptr, nullptr,
    nullptr, 0, 0, 0, false,  // the block formats: the reference (quants.cpp:dot_quant_q8); no NEON tiles yet
    nullptr, false, nullptr};
#endif  // __aarch64__ && __ARM_NEON
