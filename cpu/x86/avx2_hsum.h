// avx2_hsum.h — the one horizontal sum of the AVX2 tiles, float and block
// formats alike (kernels_avx2.cpp, quants_avx2.cpp). Included after a
// file's target pragma and its INLINE macro, so it compiles for AVX2 there.
#pragma once

// 8 + 8 lanes -> one float: the fold (lo + hi), then the 8-lane tree
// ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
INLINE float hsum16(__m256 lo, __m256 hi) {
    __m256 u = _mm256_add_ps(lo, hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));  // u0+u4 .. u3+u7
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));  // (u0+u4)+(u2+u6), (u1+u5)+(u3+u7)
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
