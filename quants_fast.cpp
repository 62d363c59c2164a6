// quants_fast.cpp — the fast twin of quants.cpp's matrix product for the
// 4-, 5- and 6-bit formats.
//
// The idea: a thread owns a range of output rows; for each row it unpacks
// the blocks once into an f32 buffer (quants.cpp:dequantize_row, the very
// function that defines the format), then takes the dot product of that
// buffer with every token of the batch. Unpacking once per row and reusing
// it for all tokens makes prefill cheap; in decode the buffer (at most a few
// thousand floats) stays in the first-level cache.
//
// One summation order, whatever the instruction set: 16 partial sums, lane
// j adding w[c] * x[c] for c = j, j+16, j+32, ... with a fused multiply-add,
// zero-padded to a multiple of 16; then lanes j and j+8 are added, and the
// eight results as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)). AVX-512 holds
// the 16 lanes in one register, AVX2 in two, the portable code in an array:
// the three give the same bits, and equal "dequantize, then this dot product"
// exactly (tests/test_gguf.cpp).
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include "quants.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define QUANTS_AVX2 1
#endif
#if defined(__AVX512F__)
#define QUANTS_AVX512 1
#endif

int quant_simd_level() {
#if defined(QUANTS_AVX512)
    return 2;
#elif defined(QUANTS_AVX2)
    return 1;
#else
    return 0;
#endif
}

int quant_simd_for(const char* name) {
    int want = !strcmp(name, "avx512") ? 2 : !strcmp(name, "avx2") ? 1 : 0;
    return std::min(want, quant_simd_level());
}

static float fold16(const float l[16]) {
    float e[8];
    for (int j = 0; j < 8; j++) e[j] = l[j] + l[j + 8];
    float s0 = e[0] + e[4], s1 = e[1] + e[5], s2 = e[2] + e[6], s3 = e[3] + e[7];
    return (s0 + s2) + (s1 + s3);
}

static float dot16_scalar(const float* w, const float* x, int n) {
    float acc[16] = {0};
    int c = 0;
    for (; c + 16 <= n; c += 16)
        for (int j = 0; j < 16; j++) acc[j] = std::fma(w[c + j], x[c + j], acc[j]);
    for (int j = 0; c + j < n; j++) acc[j] = std::fma(w[c + j], x[c + j], acc[j]);
    return fold16(acc);
}

#ifdef QUANTS_AVX2
static float dot16_avx2(const float* w, const float* x, int n) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(w + c + 8), _mm256_loadu_ps(x + c + 8), hi);
    }
    alignas(32) float l[16];
    _mm256_store_ps(l, lo);
    _mm256_store_ps(l + 8, hi);
    for (int j = 0; c + j < n; j++) l[j] = std::fma(w[c + j], x[c + j], l[j]);
    return fold16(l);
}
#endif

#ifdef QUANTS_AVX512
static float dot16_avx512(const float* w, const float* x, int n) {
    __m512 acc = _mm512_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(w + c), _mm512_loadu_ps(x + c), acc);
    alignas(64) float l[16];
    _mm512_store_ps(l, acc);
    for (int j = 0; c + j < n; j++) l[j] = std::fma(w[c + j], x[c + j], l[j]);
    return fold16(l);
}
#endif

float dot16(const float* w, const float* x, int n, int simd) {
#ifdef QUANTS_AVX512
    if (simd >= 2) return dot16_avx512(w, x, n);
#endif
#ifdef QUANTS_AVX2
    if (simd >= 1) return dot16_avx2(w, x, n);
#endif
    return dot16_scalar(w, x, n);
}

void matmul_quant_fast(float* out, const float* x, const Mat& W, const float* bias, int T, int simd) {
    size_t rb = dtype_row_bytes(W.dtype, W.cols);
    #pragma omp parallel
    {
        std::vector<float> w(W.cols);
        #pragma omp for schedule(static)
        for (int r = 0; r < W.rows; r++) {
            dequantize_row(W.dtype, (const uint8_t*)W.data + r * rb, W.cols, w.data());
            for (int t = 0; t < T; t++) {
                float s = dot16(w.data(), x + (size_t)t * W.cols, W.cols, simd);
                out[(size_t)t * W.rows + r] = bias ? s + bias[r] : s;
            }
        }
    }
}
