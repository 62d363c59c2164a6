// quants_avx2.cpp — the block formats' tiles for AVX2 (kernels.h:
// SimdKernels::quant_tile and packed_group; kernels_avx2.cpp puts them in
// its table). quants_fast.cpp and quants_packed.cpp drive them and say what
// they compute; quants.cpp:dot_quant_q8 is their order in plain loops.
// pmaddubsw + pmaddwd stand in for VNNI's one instruction.
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"
#include "cpu/x86/quants_x86.h"
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
#define INLINE static inline __attribute__((always_inline))
#include "cpu/x86/avx2_hsum.h"

// ---------------------------------------------------------------------------
// One block of 32 weights in a register: the codes q_i as 32 unsigned bytes
// in weight order, and the numbers of quants.cpp:IntBlock. `t` is a
// constant wherever this is inlined, so each format gets its own loop.

struct Block {
    __m256i q;
    float scale, min;
    int mul0, mul1;  // Q6_K's sub-block scales
};

INLINE float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// 16 bytes of nibble pairs -> 32 codes: the low nibbles (weights 0..15),
// then the high ones (16..31).
INLINE __m256i nibbles16(const uint8_t* p) {
    __m128i v = _mm_loadu_si128((const __m128i*)p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(15));
}

// Bit i of the 32-bit word at p, as 16 in byte i (the fifth bits of Q5_0/Q5_1):
// each byte picks the word's byte i/8, keeps bit i%8, and compares.
INLINE __m256i fifth_bits(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(16));
}

// Bits s and s+1.. of each of 32 bytes, `mask` kept, moved up by 4.
INLINE __m256i bits_at(__m256i v, int s, int mask) {
    __m256i b = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(s)), _mm256_set1_epi8((char)mask));
    return _mm256_slli_epi16(b, 4);
}

// Bytes per 256 weights: block b (of 32) starts about b * this / 8 bytes into a row.
INLINE int bytes_per_256(DType t) { return quant_block_bytes(t) * (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? 1 : 8); }

INLINE Block decode(DType t, const uint8_t* row, int b) {
    Block k;
    k.min = 0;
    k.mul0 = k.mul1 = 1;
    switch (t) {
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: {
            const uint8_t* in = row + (size_t)b * quant_block_bytes(t);
            bool with_min = t == DType::Q4_1 || t == DType::Q5_1, five = t == DType::Q5_0 || t == DType::Q5_1;
            int at = 2 + (with_min ? 2 : 0);
            k.scale = f16_at(in);
            if (with_min) k.min = f16_at(in + 2);
            k.q = five ? _mm256_or_si256(nibbles16(in + at + 4), fifth_bits(in + at)) : nibbles16(in + at);
            break;
        }
        case DType::Q4_K: case DType::Q5_K: {
            const uint8_t* in = row + (size_t)(b / 8) * quant_block_bytes(t);
            int j = b % 8, sc, mn;
            kscale_get(in + 4, j, sc, mn);
            k.scale = f16_at(in) * (float)sc;
            k.min = -(f16_at(in + 2) * (float)mn);
            const uint8_t* qs = in + (t == DType::Q5_K ? 48 : 16) + 32 * (j / 2);
            __m256i v = _mm256_loadu_si256((const __m256i*)qs);
            if (j % 2) v = _mm256_srli_epi16(v, 4);
            k.q = _mm256_and_si256(v, _mm256_set1_epi8(15));
            if (t == DType::Q5_K) k.q = _mm256_or_si256(k.q, bits_at(_mm256_loadu_si256((const __m256i*)(in + 16)), j, 1));
            break;
        }
        default: {  // Q6_K: block j = 4h + kk of the super-block
            const uint8_t* in = row + (size_t)(b / 8) * quant_block_bytes(t);
            int j = b % 8, h = j / 4, kk = j % 4;
            __m256i lo = _mm256_loadu_si256((const __m256i*)(in + 64 * h + 32 * (kk % 2)));
            if (kk >= 2) lo = _mm256_srli_epi16(lo, 4);
            lo = _mm256_and_si256(lo, _mm256_set1_epi8(15));
            k.q = _mm256_or_si256(lo, bits_at(_mm256_loadu_si256((const __m256i*)(in + 128 + 32 * h)), 2 * kk, 3));
            k.scale = f16_at(in + 208);
            k.mul0 = (int8_t)in[192 + 2 * j];
            k.mul1 = (int8_t)in[192 + 2 * j + 1];
            break;
        }
    }
    return k;
}

// int32 lane j = u[4j]*s[4j] + ... + u[4j+3]*s[4j+3], u unsigned and s
// signed bytes: pmaddubsw adds pairs into int16 (at most 2 * 63 * 128, no
// saturation for codes of up to 6 bits), pmaddwd pairs of those into int32.
INLINE __m256i sum4(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// How far ahead a tile asks for its rows' bytes: two tiles on. A batch's
// tiles hold consecutive rows, so two tiles on is 2 x NR rows further; one
// token's tiles hold one row of each stripe (kernels_fast.cpp:tile_row_list),
// so the same place two tiles on is two rows further down each stripe. (A
// short batch's tiles hold stripes too, kernels.h:STREAM_TOKENS, and take
// no prefetch here: it is asked for one token only.)
static inline size_t prefetch_distance(DType t, int NR, int NT, int n_blocks) {
    size_t row = (size_t)n_blocks * bytes_per_256(t) / 8;
    return (NT == 1 ? 2 : 2 * NR) * row;
}

// ---------------------------------------------------------------------------
// AVX2: one block per half-step, its 8 lanes in `lo` (even blocks) or `hi`
// (odd blocks) — the 16 lanes of the order in two registers. Decode (one
// token) takes 4 rows a tile and prefetches as the AVX-512 tiles do; 8 rows
// would need all 16 registers for the accumulators alone.

INLINE void block_avx2(DType t, const uint8_t* const* w, const uint8_t* const* x, int NR, int NT, int b, size_t ahead,
                       __m256 acc[A2_DECODE_ROWS][A2_TOKENS]) {
    size_t off = (size_t)b * Q8_BLOCK_BYTES;
    __m256i xv[A2_TOKENS], start[A2_TOKENS];
    __m256 dx[A2_TOKENS], xsf[A2_TOKENS];
    for (int k = 0; k < NT; k++) {
        xv[k] = _mm256_loadu_si256((const __m256i*)(x[k] + off + 2));
        dx[k] = _mm256_set1_ps(f16_at(x[k] + off));
        __m256i xs = sum4(_mm256_set1_epi8(1), xv[k]);  // xs_j, the activations' own sums
        start[k] = _mm256_mullo_epi32(xs, _mm256_set1_epi32(-quant_code_offset(t)));
        xsf[k] = _mm256_cvtepi32_ps(xs);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        if (NT == 1) _mm_prefetch((const char*)w[r] + ahead + ((size_t)b * bytes_per_256(t) >> 3), _MM_HINT_T1);
        Block k = decode(t, w[r], b);
        __m256 sc = _mm256_set1_ps(k.scale), mn = _mm256_set1_ps(k.min);
        __m256i mul = _mm256_setr_epi32(k.mul0, k.mul0, k.mul0, k.mul0, k.mul1, k.mul1, k.mul1, k.mul1);
        for (int n = 0; n < NT; n++) {
            __m256i s = _mm256_add_epi32(sum4(k.q, xv[n]), start[n]);
            if (t == DType::Q6_K) s = _mm256_mullo_epi32(s, mul);
            acc[r][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(sc, dx[n]), acc[r][n]);
            if (quant_has_min(t)) acc[r][n] = _mm256_fmadd_ps(xsf[n], _mm256_mul_ps(mn, dx[n]), acc[r][n]);
        }
    }
}

INLINE void tile_avx2_n(DType t, const uint8_t* const* w, const uint8_t* const* x, int NR, int NT, int n_blocks,
                        float out[MAX_TILE][MAX_TILE]) {
    __m256 lo[A2_DECODE_ROWS][A2_TOKENS], hi[A2_DECODE_ROWS][A2_TOKENS];
    for (int r = 0; r < NR; r++)
        for (int n = 0; n < NT; n++) lo[r][n] = hi[r][n] = _mm256_setzero_ps();
    size_t ahead = prefetch_distance(t, NR, NT, n_blocks);
    for (int b = 0; b < n_blocks; b += 2) {
        block_avx2(t, w, x, NR, NT, b, ahead, lo);
        if (b + 1 < n_blocks) block_avx2(t, w, x, NR, NT, b + 1, ahead, hi);
    }
    for (int r = 0; r < NR; r++)
        for (int n = 0; n < NT; n++) out[r][n] = hsum16(lo[r][n], hi[r][n]);
}

// One copy per format and tile shape: `t`, NR and NT constants, loops unrolled.
INLINE void tile_avx2_t(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                        int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    if (n_rows == A2_DECODE_ROWS) tile_avx2_n(t, w, x, A2_DECODE_ROWS, 1, n_blocks, out);
    else if (n_tokens == 2) tile_avx2_n(t, w, x, A2_ROWS, 2, n_blocks, out);
    else tile_avx2_n(t, w, x, A2_ROWS, 1, n_blocks, out);
}

#define FOR_EACH_FORMAT(fn)                                                                     \
    switch (t) {                                                                                \
        case DType::Q4_0: fn(DType::Q4_0, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        case DType::Q4_1: fn(DType::Q4_1, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        case DType::Q5_0: fn(DType::Q5_0, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        case DType::Q5_1: fn(DType::Q5_1, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        case DType::Q4_K: fn(DType::Q4_K, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        case DType::Q5_K: fn(DType::Q5_K, w, n_rows, x, n_tokens, n_blocks, out); break;               \
        default: fn(DType::Q6_K, w, n_rows, x, n_tokens, n_blocks, out); break;                        \
    }

void quant_tile_avx2(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                      int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    FOR_EACH_FORMAT(tile_avx2_t)
}

// ---------------------------------------------------------------------------
// The packed layout's tile (quants_packed.cpp)


// Decode reads a thread's groups as one long stream, which the hardware
// prefetcher alone does not run far enough ahead of: the tiles ask for the
// lines PACK_PREFETCH bytes down (past a group's end, the next group's,
// read next), into L1: 8 KB ahead is near enough that the lines do not push
// out what the tile is still reading (book/A-measurements.md, "The packed
// tiles' prefetch", measures the distances).
const size_t PACK_PREFETCH = 8192;

// Code words per block of 32: Q8_0 8, Q5_0 and Q5_1 5 (the fifth bits
// first), Q4_0 and Q4_1 4 (each holds two words' codes, low and high
// nibbles).
INLINE int packed_words(DType t) { return t == DType::Q8_0 ? 8 : t == DType::Q5_0 || t == DType::Q5_1 ? 5 : 4; }

// The AVX2 tile: the same layout, the same integers and float operations in
// the same order, with registers of 8 lanes. A group's 16 rows are two
// halves of 8 (bytes 0-31 and 32-63 of each line). The order's 16 float
// lanes for 8 rows would take all 16 ymm registers, so each half goes in
// two passes: the even blocks into 8 accumulators, stored, then the odd
// blocks into 8, and the fold between them. The second pass and the second
// half read lines the first brought into the caches. There is no vpdpbusd:
// a word's four products are pmaddubsw (unsigned x signed byte pairs into
// int16) and pmaddwd by 1 (pairs of int16 into int32), exact while a pair
// stays below 2^15: codes of 4 to 6 bits, at most 2 * 63 * 128. Q8_0 is
// not read here: on AVX2 it keeps the file's layout and kernels_avx2.cpp's
// tile, whose decode reads several stripes of a matrix at once (chapter
// 11, Step 4). Packed, with 8 words a block read in four passes, it
// decoded slower though it prefilled faster, and decode is what Q8_0 is
// for (book/16-gguf-quantization.md).
INLINE void packed_block_avx2(DType t, int half, const uint8_t* g, const uint8_t* scales, const uint8_t* xb,
                              const int32_t* start, const float* xsf, int b, __m256 acc[8]) {
    const int words = packed_words(t);
    const bool five = t == DType::Q5_0 || t == DType::Q5_1, with_min = t == DType::Q4_1 || t == DType::Q5_1;
    const uint8_t* wb = g + (size_t)b * words * 64 + 32 * half;
    if (half == 0)
        for (int j = 0; j < words; j++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * j), _MM_HINT_T0);
    const uint8_t* sc = scales + (size_t)b * (with_min ? 64 : 32) + 16 * half;
    const __m256 dx = _mm256_set1_ps(f16_at(xb));
    const __m256 sd = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)sc)), dx);
    __m256 md = sd;
    if (with_min) md = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sc + 32))), dx);
    const __m256i low4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    const uint8_t* nib = wb + (five ? 64 : 0);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        int32_t xw;
        std::memcpy(&xw, xb + 2 + 4 * j, 4);
        const __m256i xv = _mm256_set1_epi32(xw);
        // word j: weights 4j.. (j < 4, the low nibbles) or 16+4(j-4).. (the high ones)
        __m256i v = _mm256_loadu_si256((const __m256i*)(nib + 64 * (j % 4)));
        __m256i q = _mm256_and_si256(j < 4 ? v : _mm256_srli_epi16(v, 4), low4);
        if (five) {  // byte j/2 of each row's fifth-bit word, copied to its 4 bytes, tested bit by bit
            const __m256i in_lane = _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404,
                                                      0x08080808, 0x0C0C0C0C);
            const __m256i bits = j % 2 ? _mm256_set1_epi32((int)0x80402010) : _mm256_set1_epi32(0x08040201);
            __m256i qh = _mm256_loadu_si256((const __m256i*)wb);
            __m256i rep = _mm256_shuffle_epi8(qh, _mm256_add_epi8(in_lane, _mm256_set1_epi8((char)(j / 2))));
            __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(rep, bits), bits);
            q = _mm256_add_epi8(q, _mm256_and_si256(set, _mm256_set1_epi8(16)));
        }
        __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), ones);
        if (!with_min) s = _mm256_add_epi32(s, _mm256_set1_epi32(start[8 * b + j]));  // -offset * xs_j
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sd, acc[j]);
        if (with_min) acc[j] = _mm256_fnmadd_ps(_mm256_set1_ps(xsf[8 * b + j]), md, acc[j]);
    }
}

// The k-quants on 8 rows, one parity of a super-block's blocks at a time
// (the AVX-512 functions above, with the scales and codes of a half: bytes
// 16h.. of each 32-byte f16 field, 32h.. of each 64-byte word).
INLINE void packed_super_q4_k_avx2(bool five, int half, int parity, const uint8_t* codes, const uint8_t* sc,
                                   const uint8_t* xq, const float* xsf, int s, __m256 acc[8]) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sc + 16 * half)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sc + 32 + 16 * half)));
    const __m256i w0 = _mm256_loadu_si256((const __m256i*)(sc + 64 + 32 * half)),
                  w1 = _mm256_loadu_si256((const __m256i*)(sc + 128 + 32 * half)),
                  w2 = _mm256_loadu_si256((const __m256i*)(sc + 192 + 32 * half));
    const __m256i low4 = _mm256_set1_epi8(15), low6 = _mm256_set1_epi32(63), three = _mm256_set1_epi32(3),
                  fifteen = _mm256_set1_epi32(15), bit4 = _mm256_set1_epi8(16), ones = _mm256_set1_epi16(1);
    const uint8_t* nibbles = codes + (five ? 8 * 64 : 0);
#pragma GCC unroll 8
    for (int j = parity; j < 8; j += 2) {
        __m256i scj, mnj;  // quants.h:kscale_get
        if (j < 4) {
            scj = _mm256_and_si256(_mm256_srli_epi32(w0, 8 * j), low6);
            mnj = _mm256_and_si256(_mm256_srli_epi32(w1, 8 * j), low6);
        } else {
            int k = 8 * (j - 4);
            scj = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, k), fifteen),
                                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, k + 6), three), 4));
            mnj = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, k + 4), fifteen),
                                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, k + 6), three), 4));
        }
        int b = 8 * s + j;
        const uint8_t* xb = xq + (size_t)b * Q8_BLOCK_BYTES;
        __m256 dx = _mm256_set1_ps(f16_at(xb));
        __m256 sd = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(scj)), dx);
        __m256 md = _mm256_mul_ps(_mm256_mul_ps(dmin, _mm256_cvtepi32_ps(mnj)), dx);
        const uint8_t* wb = nibbles + (size_t)(j / 2) * 8 * 64;
        if (half == 0 && parity == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
        if (five && half == 0 && j == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(codes + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m256i v = _mm256_loadu_si256((const __m256i*)(wb + 64 * k + 32 * half));
            __m256i q = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, low4);
            if (five) {
                __m256i h = _mm256_loadu_si256((const __m256i*)(codes + 64 * k + 32 * half));
                h = j < 4 ? _mm256_slli_epi16(h, 4 - j) : _mm256_srli_epi16(h, j - 4);
                q = _mm256_or_si256(q, _mm256_and_si256(h, bit4));
            }
            int32_t xw;
            std::memcpy(&xw, xb + 2 + 4 * k, 4);
            __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, _mm256_set1_epi32(xw)), ones);
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sd, acc[k]);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(xsf[8 * b + k]), md, acc[k]);
        }
    }
}

INLINE void packed_super_q6_k_avx2(int half, int parity, const uint8_t* codes, const uint8_t* sc, const uint8_t* xq,
                                   const int32_t* start, int s, __m256 acc[8]) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sc + 16 * half)));
    const __m256i low4 = _mm256_set1_epi8(15), top2 = _mm256_set1_epi8(0x30), ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
    for (int j = parity; j < 8; j += 2) {
        int h = j / 4, m = j % 4, b = 8 * s + j;
        __m256i sw = _mm256_loadu_si256((const __m256i*)(sc + 32 + 64 * (j / 2) + 32 * half));
        __m256i mul0 = _mm256_srai_epi32(_mm256_slli_epi32(sw, 24 - 8 * (2 * (j % 2))), 24);
        __m256i mul1 = _mm256_srai_epi32(_mm256_slli_epi32(sw, 16 - 8 * (2 * (j % 2))), 24);
        const uint8_t* xb = xq + (size_t)b * Q8_BLOCK_BYTES;
        __m256 sd = _mm256_mul_ps(d, _mm256_set1_ps(f16_at(xb)));
        const uint8_t* lo = codes + (size_t)(16 * h + 8 * (m % 2)) * 64;
        const uint8_t* hi = codes + (size_t)(32 + 8 * h) * 64;
        if (half == 0 && m < 2)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(lo + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
        if (half == 0 && m == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(hi + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m256i v = _mm256_loadu_si256((const __m256i*)(lo + 64 * k + 32 * half)),
                    t = _mm256_loadu_si256((const __m256i*)(hi + 64 * k + 32 * half));
            t = m == 0 ? _mm256_slli_epi16(t, 4) : m == 1 ? _mm256_slli_epi16(t, 2) : m == 2 ? t : _mm256_srli_epi16(t, 2);
            __m256i q = _mm256_or_si256(_mm256_and_si256(m < 2 ? v : _mm256_srli_epi16(v, 4), low4), _mm256_and_si256(t, top2));
            int32_t xw;
            std::memcpy(&xw, xb + 2 + 4 * k, 4);
            __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, _mm256_set1_epi32(xw)), ones);  // codes < 64: no int16 overflow
            p = _mm256_mullo_epi32(_mm256_add_epi32(p, _mm256_set1_epi32(start[8 * b + k])), k < 4 ? mul0 : mul1);  // -32 xs_j
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sd, acc[k]);
        }
    }
}

// One pass: the blocks of one parity of a half's 8 rows into acc.
INLINE void packed_pass_avx2(DType t, int half, int parity, const uint8_t* g, int n_blocks, const uint8_t* xq,
                             const int32_t* start, const float* xsf, __m256 acc[8]) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    if (t != DType::Q4_K && t != DType::Q5_K && t != DType::Q6_K) {  // blocks of 32, not super-blocks
        const uint8_t* scales = g + (size_t)n_blocks * packed_words(t) * 64;
        for (int b = parity; b < n_blocks; b += 2)
            packed_block_avx2(t, half, g, scales, xq + (size_t)b * Q8_BLOCK_BYTES, start, xsf, b, acc);
        return;
    }
    int n_super = n_blocks / 8, words = t == DType::Q4_K ? 32 : t == DType::Q5_K ? 40 : 48;
    int scale_bytes = t == DType::Q6_K ? 288 : 256;
    const uint8_t* scales = g + (size_t)n_super * words * 64;
    for (int s = 0; s < n_super; s++) {
        const uint8_t *codes = g + (size_t)s * words * 64, *sc = scales + (size_t)s * scale_bytes;
        if (t == DType::Q6_K) packed_super_q6_k_avx2(half, parity, codes, sc, xq, start, s, acc);
        else packed_super_q4_k_avx2(t == DType::Q5_K, half, parity, codes, sc, xq, xsf, s, acc);
    }
}

// One group of 16 rows times one token, in halves of 8 rows: the even
// pass, the odd pass, and the reference's fold (packed_avx512's fold()).
INLINE void packed_group_avx2_t(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                                const float* xsf, const float* bias, float* out) {
    for (int half = 0; half < 2; half++) {
        __m256 even[8], odd[8], u[8];
        packed_pass_avx2(t, half, 0, g, n_blocks, xq, start, xsf, even);
        packed_pass_avx2(t, half, 1, g, n_blocks, xq, start, xsf, odd);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) u[j] = _mm256_add_ps(even[j], odd[j]);
        __m256 r = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(u[0], u[4]), _mm256_add_ps(u[2], u[6])),
                                 _mm256_add_ps(_mm256_add_ps(u[1], u[5]), _mm256_add_ps(u[3], u[7])));
        _mm256_storeu_ps(out + 8 * half, _mm256_add_ps(r, bias ? _mm256_loadu_ps(bias + 8 * half) : _mm256_setzero_ps()));
    }
}

void packed_group_avx2(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                              const float* xsf, const float* bias, float* out) {
    switch (t) {  // each type its own instance: its branches on t fold away
        case DType::Q5_0: packed_group_avx2_t(DType::Q5_0, g, n_blocks, xq, start, xsf, bias, out); break;
        case DType::Q4_0: packed_group_avx2_t(DType::Q4_0, g, n_blocks, xq, start, xsf, bias, out); break;
        case DType::Q4_1: packed_group_avx2_t(DType::Q4_1, g, n_blocks, xq, start, xsf, bias, out); break;
        case DType::Q5_1: packed_group_avx2_t(DType::Q5_1, g, n_blocks, xq, start, xsf, bias, out); break;
        case DType::Q4_K: packed_group_avx2_t(DType::Q4_K, g, n_blocks, xq, start, xsf, bias, out); break;
        case DType::Q5_K: packed_group_avx2_t(DType::Q5_K, g, n_blocks, xq, start, xsf, bias, out); break;
        default: packed_group_avx2_t(DType::Q6_K, g, n_blocks, xq, start, xsf, bias, out); break;
    }
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // __x86_64__
