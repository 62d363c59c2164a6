// quants_fast.cpp — the fast twin of quants.cpp's matrix product for the
// 4-, 5- and 6-bit formats: integer dot products against 8-bit activations.
//
// The idea is the one the Q8_0 kernels use (kernels_fast.cpp): round each
// activation row once to Q8_0 blocks of 32 (int8 codes and one scale per
// block), then multiply the weights' small integer codes by those int8
// codes in integer arithmetic — exact — and turn the integer sums into
// floats once per 4 products with the blocks' scales. Nothing is unpacked
// to f32: a block's nibbles are spread to bytes in a register and go
// straight into the integer multiply-add (vpdpbusd with AVX-512 VNNI,
// pmaddubsw + pmaddwd with AVX2). Reading 4.5 bits per weight instead of
// 32 is what makes decode, which streams every weight once per token, fast.
//
// The order is quants.cpp:dot_quant_q8's (the reference, written as plain
// loops): per block of 32, eight exact int32 sums of four products, each
// converted and fused into one of 16 float lanes (even blocks lanes 0-7,
// odd blocks 8-15), then the fold of kernels_fast.cpp. The portable set
// calls the reference itself; AVX2 holds the 16 lanes in two registers,
// AVX-512 in one (two blocks per step). All three give the same bits for
// every tile, batch size and thread count (tests/test_gguf.cpp).
//
// The activations lose a little: each is rounded to 8 bits with its block's
// scale. llama.cpp does the same; book/16-gguf-quantization.md measures the
// cost. --kernels plain keeps f32 activations (quants.cpp:matmul_quant_plain).
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include "quants.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define QUANTS_AVX2 1
#endif
#if defined(QUANTS_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#define QUANTS_AVX512 1
// GCC 12's AVX-512 headers build some results from _mm512_undefined_*(),
// which -Wmaybe-uninitialized reports inside every caller: a false alarm.
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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
    // "avx512+bf16dot" changes only bf16 weights: the integer tiles are avx512's
    int want = !strncmp(name, "avx512", 6) ? 2 : !strcmp(name, "avx2") ? 1 : 0;
    return std::min(want, quant_simd_level());
}

// A tile: n_rows x n_tokens dot products (out[r][t] = row r . token t), as
// in kernels.h; w are weight rows, x rows of Q8_0 activation blocks.
typedef void (*QuantTile)(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                          int n_blocks, float out[MAX_TILE][MAX_TILE]);

// The portable set: the reference, one row at a time.
static void tile_portable(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                          int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    for (int k = 0; k < n_tokens; k++) out[0][k] = dot_quant_q8(t, w[0], x[k], n_blocks * 32);
}

#ifdef QUANTS_AVX2
#define INLINE static inline __attribute__((always_inline))

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

// Bytes per block, a constant where `t` is one (quants.cpp's table is a lookup).
INLINE int block_bytes(DType t) {
    switch (t) {
        case DType::Q4_0: return 18;
        case DType::Q4_1: return 20;
        case DType::Q5_0: return 22;
        case DType::Q5_1: return 24;
        case DType::Q8_0: return 34;
        case DType::Q4_K: return 144;
        case DType::Q5_K: return 176;
        default: return 210;  // Q6_K
    }
}

// Bytes per 256 weights: block b (of 32) starts about b * this / 8 bytes into a row.
INLINE int bytes_per_256(DType t) { return block_bytes(t) * (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? 1 : 8); }

INLINE Block decode(DType t, const uint8_t* row, int b) {
    Block k;
    k.min = 0;
    k.mul0 = k.mul1 = 1;
    switch (t) {
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: {
            const uint8_t* in = row + (size_t)b * block_bytes(t);
            bool with_min = t == DType::Q4_1 || t == DType::Q5_1, five = t == DType::Q5_0 || t == DType::Q5_1;
            int at = 2 + (with_min ? 2 : 0);
            k.scale = f16_at(in);
            if (with_min) k.min = f16_at(in + 2);
            k.q = five ? _mm256_or_si256(nibbles16(in + at + 4), fifth_bits(in + at)) : nibbles16(in + at);
            break;
        }
        case DType::Q4_K: case DType::Q5_K: {
            const uint8_t* in = row + (size_t)(b / 8) * block_bytes(t);
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
            const uint8_t* in = row + (size_t)(b / 8) * block_bytes(t);
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

INLINE int offset_of(DType t) {
    return t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : t == DType::Q6_K ? 32 : t == DType::Q8_0 ? 128 : 0;
}
INLINE bool has_min(DType t) {
    return t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K;
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
// so the same place two tiles on is two rows further down each stripe.
static inline size_t prefetch_distance(DType t, int NR, int NT, int n_blocks) {
    size_t row = (size_t)n_blocks * bytes_per_256(t) / 8;
    return (NT == 1 ? 2 : 2 * NR) * row;
}

// ---------------------------------------------------------------------------
// AVX2: one block per half-step, its 8 lanes in `lo` (even blocks) or `hi`
// (odd blocks) — the 16 lanes of the order in two registers. Decode (one
// token) takes 4 rows a tile and prefetches as the AVX-512 tiles do; 8 rows
// would need all 16 registers for the accumulators alone.
const int A2_ROWS = 2, A2_TOKENS = 2, A2_DECODE_ROWS = 4;

INLINE void block_avx2(DType t, const uint8_t* const* w, const uint8_t* const* x, int NR, int NT, int b, size_t ahead,
                       __m256 acc[A2_DECODE_ROWS][A2_TOKENS]) {
    size_t off = (size_t)b * Q8_BLOCK_BYTES;
    __m256i xv[A2_TOKENS], start[A2_TOKENS];
    __m256 dx[A2_TOKENS], xsf[A2_TOKENS];
    for (int k = 0; k < NT; k++) {
        xv[k] = _mm256_loadu_si256((const __m256i*)(x[k] + off + 2));
        dx[k] = _mm256_set1_ps(f16_at(x[k] + off));
        __m256i xs = sum4(_mm256_set1_epi8(1), xv[k]);  // xs_j, the activations' own sums
        start[k] = _mm256_mullo_epi32(xs, _mm256_set1_epi32(-offset_of(t)));
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
            if (has_min(t)) acc[r][n] = _mm256_fmadd_ps(xsf[n], _mm256_mul_ps(mn, dx[n]), acc[r][n]);
        }
    }
}

// 8 + 8 lanes -> one float: the fold, then ((u0+u4) + (u2+u6)) + ((u1+u5) + (u3+u7)).
INLINE float hsum16(__m256 lo, __m256 hi) {
    __m256 u = _mm256_add_ps(lo, hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
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

static void tile_avx2(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                      int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    FOR_EACH_FORMAT(tile_avx2_t)
}
#endif  // QUANTS_AVX2

#ifdef QUANTS_AVX512
// ---------------------------------------------------------------------------
// AVX-512 with VNNI: two blocks per step in one register, and vpdpbusd for
// the four-product sums: it adds u[4j..4j+3] * s[4j..4j+3] (u unsigned, s
// signed bytes) to int32 lane j in one instruction. The accumulator starts
// at -offset * xs_j, so each lane ends at p_j - offset * xs_j, exactly as
// the reference.
//
// Which 16 bytes go where: the 4-bit formats store a block's weights 0..15
// in the low nibbles of 16 bytes and 16..31 in the high nibbles, so the
// cheapest register of two blocks b, b+1 is, in quarters of 16 bytes,
//   [b: 0..15 | b+1: 0..15 | b: 16..31 | b+1: 16..31]
// (the low nibbles of both blocks, then the high ones). The activations are
// laid out the same way, and the 16 int32 (then float) lanes hold the
// order's lanes 0-3, 8-11, 4-7, 12-15: the same 16 sums, in other seats.
// Only the final fold must know (hsum_quarters). The k-formats, which store
// a block's 32 weights in one run, are shuffled into these seats.
const int A5_ROWS = 4, A5_TOKENS = 4, A5_DECODE_ROWS = 8;

struct Pair {
    __m512i q;
    __m512 scale, min;
    __m512i mul;  // Q6_K
};

// [lo x4 | hi x4 | lo x4 | hi x4]: a number of block b and one of b+1, in their seats.
INLINE __m512 seats(float lo, float hi) { return _mm512_mask_broadcastss_ps(_mm512_set1_ps(lo), 0xF0F0, _mm_set_ss(hi)); }
// [q0 q1 q2 q3] (quarters) -> [q0 q2 q1 q3]: a block's run of 32 split into halves
INLINE __m512i to_seats(__m512i v) { return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0)); }

// Q4_K/Q5_K: a super-block's eight sub-block scales d * sc_j and minimums
// -(dmin * mn_j), unpacked once for its four steps.
struct KScales {
    float scale[8], min[8];
};
INLINE void kscales(const uint8_t* in, KScales& k) {
    float d = f16_at(in), dmin = f16_at(in + 2);
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        kscale_get(in + 4, j, sc, mn);
        k.scale[j] = d * (float)sc;
        k.min[j] = -(dmin * (float)mn);
    }
}

// The blocks of 32 (Q4_0, Q4_1, Q5_0, Q5_1) of bb bytes each: where, in the
// words of two blocks b, b+1 loaded together, each seat finds its word. The
// nibble bytes start at an even byte `at` (2, 4, 6, 8), so words suffice:
// q: [b's 16 bytes | b+1's | b's | b+1's], shifted right by 0 (low nibbles)
// or 4 (high ones); d and m: block b's f16 scale (minimum) in seats 0-3 and
// 8-11, block b+1's in 4-7 and 12-15.
struct PairWords {
    uint16_t q[32], shift[32], d[32], m[32];
};
static constexpr PairWords pair_words_for(int bb, int at) {
    PairWords p{};
    for (int i = 0; i < 32; i++) {
        int next = i / 8 % 2, seat = i / 4 % 2;
        p.q[i] = (uint16_t)((next * bb + at) / 2 + i % 8);
        p.shift[i] = (uint16_t)(i < 16 ? 0 : 4);
        p.d[i] = (uint16_t)(seat * bb / 2);
        p.m[i] = (uint16_t)(seat * bb / 2 + 1);
    }
    return p;
}
alignas(64) static constexpr PairWords PAIR_Q4_0 = pair_words_for(18, 2), PAIR_Q4_1 = pair_words_for(20, 4),
                                       PAIR_Q5_0 = pair_words_for(22, 6), PAIR_Q5_1 = pair_words_for(24, 8);
INLINE const PairWords& pair_words(DType t) {
    return t == DType::Q4_0 ? PAIR_Q4_0 : t == DType::Q4_1 ? PAIR_Q4_1 : t == DType::Q5_0 ? PAIR_Q5_0 : PAIR_Q5_1;
}

INLINE Pair decode_pair(DType t, const uint8_t* row, int b, bool both, const KScales& ks) {
    Pair k;
    const __m512i low4 = _mm512_set1_epi8(15);
    k.min = _mm512_setzero_ps();
    k.mul = _mm512_set1_epi32(1);
    switch (t) {
        case DType::Q8_0: {  // codes c + 128 (the top bit flipped): unsigned for vpdpbusd
            const uint8_t* in = row + (size_t)b * Q8_BLOCK_BYTES;
            __m256i hi = both ? _mm256_loadu_si256((const __m256i*)(in + Q8_BLOCK_BYTES + 2)) : _mm256_set1_epi8((char)0x80);
            __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(in + 2))), hi, 1);
            k.q = to_seats(_mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)));
            k.scale = seats(f16_at(in), both ? f16_at(in + Q8_BLOCK_BYTES) : 0.0f);
            break;
        }
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: {
            // Both blocks (at most 48 bytes) in one load, masked so that it never
            // reads past them; then word permutes put the nibble bytes and the
            // f16 scales in their seats (PairWords), one shift splits the nibbles.
            int bb = block_bytes(t);
            const uint8_t* in = row + (size_t)b * bb;
            bool with_min = t == DType::Q4_1 || t == DType::Q5_1, five = t == DType::Q5_0 || t == DType::Q5_1;
            const PairWords& pw = pair_words(t);
            __m512i v = _mm512_maskz_loadu_epi8(both ? (1ull << 2 * bb) - 1 : (1ull << bb) - 1, in);
            __m512i raw = _mm512_permutexvar_epi16(_mm512_loadu_si512(pw.q), v);
            k.q = _mm512_and_si512(_mm512_srlv_epi16(raw, _mm512_loadu_si512(pw.shift)), low4);
            if (five) {
                int at = with_min ? 4 : 2;
                uint32_t h0, h1 = 0;
                std::memcpy(&h0, in + at, 4);
                if (both) std::memcpy(&h1, in + bb + at, 4);
                __mmask64 m = (uint64_t)(h0 & 0xFFFF) | (uint64_t)(h1 & 0xFFFF) << 16 | (uint64_t)(h0 >> 16) << 32 |
                              (uint64_t)(h1 >> 16) << 48;
                k.q = _mm512_mask_add_epi8(k.q, m, k.q, _mm512_set1_epi8(16));
            }
            // (a lone last block: its neighbour's scale reads as the zeros of the masked load)
            k.scale = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(_mm512_loadu_si512(pw.d), v)));
            if (with_min) k.min = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(_mm512_loadu_si512(pw.m), v)));
            break;
        }
        case DType::Q4_K: case DType::Q5_K: {  // sub-blocks j, j+1 share 32 bytes: low, high nibbles
            const uint8_t* in = row + (size_t)(b / 8) * block_bytes(t);
            int j = b % 8;
            k.scale = seats(ks.scale[j], ks.scale[j + 1]);
            k.min = seats(ks.min[j], ks.min[j + 1]);
            __m256i raw = _mm256_loadu_si256((const __m256i*)(in + (t == DType::Q5_K ? 48 : 16) + 16 * j));
            __m512i q = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(raw), _mm256_srli_epi16(raw, 4), 1), low4);
            if (t == DType::Q5_K) {  // bit j of byte i: weight i of sub-block j
                __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(in + 16)));
                __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)j), _mm256_set1_epi16((short)(j + 1)), 1);
                q = _mm512_or_si512(q, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh), _mm512_set1_epi8(1)), 4));
            }
            k.q = to_seats(q);
            break;
        }
        default: {  // Q6_K: blocks j, j+1 (j = 4h + kk, kk even) have their low bits in 64 bytes in a row
            const uint8_t* in = row + (size_t)(b / 8) * block_bytes(t);
            int j = b % 8, h = j / 4, kk = j % 4;
            __m512i lo = _mm512_loadu_si512((const void*)(in + 64 * h));
            if (kk >= 2) lo = _mm512_srli_epi16(lo, 4);
            __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(in + 128 + 32 * h)));
            __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * kk)), _mm256_set1_epi16((short)(2 * kk + 2)), 1);
            __m512i top = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh), _mm512_set1_epi8(3)), 4);
            k.q = to_seats(_mm512_or_si512(_mm512_and_si512(lo, low4), top));
            k.scale = _mm512_set1_ps(f16_at(in + 208));
            // int8 scales 2j .. 2j+3: block j's halves, block j+1's halves -> seats
            int32_t s4;
            std::memcpy(&s4, in + 192 + 2 * j, 4);
            k.mul = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3),
                                             _mm512_castsi128_si512(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(s4))));
            break;
        }
    }
    return k;
}

INLINE void step_avx512(DType t, const uint8_t* const* w, const uint8_t* const* x, int NR, int NT, int b, bool both,
                        size_t ahead, KScales ks[A5_DECODE_ROWS], __m512 acc[A5_DECODE_ROWS][A5_TOKENS]) {
    size_t off = (size_t)b * Q8_BLOCK_BYTES;
    __m512i xv[A5_TOKENS], start[A5_TOKENS];
    __m512 dx[A5_TOKENS], xsf[A5_TOKENS];
#pragma GCC unroll 4
    for (int k = 0; k < NT; k++) {
        const uint8_t* xb = x[k] + off;
        __m256i hi = both ? _mm256_loadu_si256((const __m256i*)(xb + Q8_BLOCK_BYTES + 2)) : _mm256_setzero_si256();
        xv[k] = to_seats(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(xb + 2))), hi, 1));
        dx[k] = seats(f16_at(xb), both ? f16_at(xb + Q8_BLOCK_BYTES) : 0.0f);
        __m512i xs = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), xv[k]);
        start[k] = _mm512_mullo_epi32(xs, _mm512_set1_epi32(-offset_of(t)));
        xsf[k] = _mm512_cvtepi32_ps(xs);
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) {
        // Decode streams every weight from memory once: ask for the bytes
        // two tiles on (the same place, `ahead` bytes further) while this
        // one computes. Into L2 (T1): measured faster than into L1 here.
        _mm_prefetch((const char*)w[r] + ahead + ((size_t)b * bytes_per_256(t) >> 3), _MM_HINT_T1);
        if ((t == DType::Q4_K || t == DType::Q5_K) && b % 8 == 0) kscales(w[r] + (size_t)(b / 8) * block_bytes(t), ks[r]);
        Pair k = decode_pair(t, w[r], b, both, ks[r]);
#pragma GCC unroll 4
        for (int n = 0; n < NT; n++) {
            __m512i s = _mm512_dpbusd_epi32(start[n], k.q, xv[n]);
            if (t == DType::Q6_K) s = _mm512_mullo_epi32(s, k.mul);
            acc[r][n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(k.scale, dx[n]), acc[r][n]);
            if (has_min(t)) acc[r][n] = _mm512_fmadd_ps(xsf[n], _mm512_mul_ps(k.min, dx[n]), acc[r][n]);
        }
    }
}

// The 16 lanes in their seats -> one float: quarters 0 + 1 are the order's
// u0..u3 (l[j] + l[j+8]), quarters 2 + 3 its u4..u7; then the 8-lane tree.
INLINE float hsum_quarters(__m512 l) {
    __m128 a = _mm_add_ps(_mm512_castps512_ps128(l), _mm512_extractf32x4_ps(l, 1));
    __m128 c = _mm_add_ps(_mm512_extractf32x4_ps(l, 2), _mm512_extractf32x4_ps(l, 3));
    __m128 s = _mm_add_ps(a, c);  // u0+u4 .. u3+u7
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE void tile_avx512_n(DType t, const uint8_t* const* w, const uint8_t* const* x, int NR, int NT, int n_blocks,
                          float out[MAX_TILE][MAX_TILE]) {
    __m512 acc[A5_DECODE_ROWS][A5_TOKENS];
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int n = 0; n < NT; n++) acc[r][n] = _mm512_setzero_ps();
    size_t ahead = prefetch_distance(t, NR, NT, n_blocks);
    KScales ks[A5_DECODE_ROWS];
    int b = 0;
    for (; b + 2 <= n_blocks; b += 2) step_avx512(t, w, x, NR, NT, b, true, ahead, ks, acc);
    if (b < n_blocks) step_avx512(t, w, x, NR, NT, b, false, ahead, ks, acc);
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int n = 0; n < NT; n++) out[r][n] = hsum_quarters(acc[r][n]);
}

// Decode (one token) takes 8 rows a tile: one activation load serves more rows.
INLINE void tile_avx512_t(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                          int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    if (n_rows == A5_DECODE_ROWS) return tile_avx512_n(t, w, x, A5_DECODE_ROWS, 1, n_blocks, out);
    switch (n_tokens) {
        case 4: tile_avx512_n(t, w, x, A5_ROWS, 4, n_blocks, out); break;
        case 3: tile_avx512_n(t, w, x, A5_ROWS, 3, n_blocks, out); break;
        case 2: tile_avx512_n(t, w, x, A5_ROWS, 2, n_blocks, out); break;
        default: tile_avx512_n(t, w, x, A5_ROWS, 1, n_blocks, out); break;
    }
}

static void tile_avx512(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                        int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    if (t == DType::Q8_0) return tile_avx512_t(DType::Q8_0, w, n_rows, x, n_tokens, n_blocks, out);
    FOR_EACH_FORMAT(tile_avx512_t)
}
#endif  // QUANTS_AVX512

// ---------------------------------------------------------------------------
// The driver: the activations to Q8_0 once, then threads over tiles of rows
// (each tile one thread's: no result depends on the thread count), and
// within a tile the tokens in groups, the tile's rows staying in the cache.
// Several matrices that multiply the same x (q, k and v; gate and up) are
// one list of tiles, as in kernels_fast.cpp:matmul_fast: one parallel loop,
// the threads meet once, and each tile runs exactly as it would alone, so
// every output has the bits of its own product.
struct QuantDriver {
    QuantTile tile = tile_portable;
    int tile_rows = 1, group = MAX_TILE;
};

static QuantDriver driver_for(const Mat& W, int T, int simd) {
    QuantDriver d;
    DType t = W.dtype;
    if (W.packed) {  // a tile is a group of 16 rows (packed_tile)
        d.tile_rows = W.packed;
        return d;
    }
#ifdef QUANTS_AVX2
    // (Q8_0's codes of 8 bits would overflow pmaddubsw's int16 pairs.)
    if (simd == 1 && t != DType::Q8_0) d.tile = tile_avx2, d.tile_rows = T == 1 ? A2_DECODE_ROWS : A2_ROWS, d.group = A2_TOKENS;
#endif
#ifdef QUANTS_AVX512
    if (simd >= 2) d.tile = tile_avx512, d.tile_rows = T == 1 ? A5_DECODE_ROWS : A5_ROWS, d.group = A5_TOKENS;
#endif
    return d;
}

static void run_quant_tile(const MatmulOut& o, int i, const uint8_t* xq, int T, const QuantDriver& d) {
    const Mat& W = *o.W;
    int n_blocks = W.cols / Q8_BLOCK;
    size_t xq_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES, w_bytes = dtype_row_bytes(W.dtype, W.cols);
    // The tile's rows: for one token, one from each stripe of the matrix, so
    // that a thread's tiles read long streams (kernels_fast.cpp:tile_row_list).
    int rows[MAX_TILE], n_rows = tile_row_list(i, d.tile_rows, W.rows, T == 1, rows);
    const uint8_t* w[MAX_TILE];
    for (int r = 0; r < d.tile_rows; r++) w[r] = (const uint8_t*)W.data + rows[std::min(r, n_rows - 1)] * w_bytes;
    float res[MAX_TILE][MAX_TILE];
    for (int t0 = 0; t0 < T; t0 += d.group) {
        int n_tok = std::min(d.group, T - t0);
        const uint8_t* xs[MAX_TILE];
        for (int k = 0; k < n_tok; k++) xs[k] = xq + (size_t)(t0 + k) * xq_bytes;
        d.tile(W.dtype, w, d.tile_rows, xs, n_tok, n_blocks, res);
        for (int r = 0; r < n_rows; r++)
            for (int k = 0; k < n_tok; k++)
                o.out[(size_t)(t0 + k) * W.rows + rows[r]] = res[r][k] + (o.bias ? o.bias[rows[r]] : 0.0f);
    }
}

void matmul_quant_fast_many(const MatmulOut* outs, int n, const float* x, int T, int simd) {
    if (n > MAX_MATMUL_OUTS) fail("matmul_many: %d matrices, at most %d", n, MAX_MATMUL_OUTS);
    QuantDriver d[MAX_MATMUL_OUTS];
    int first[MAX_MATMUL_OUTS + 1] = {0};
    for (int m = 0; m < n; m++) {
        d[m] = driver_for(*outs[m].W, T, simd);
        first[m + 1] = first[m] + (outs[m].W->rows + d[m].tile_rows - 1) / d[m].tile_rows;
    }
    const uint8_t* xq = quantize_activations(x, T, outs[0].W->cols);
    BlockSums xs[MAX_MATMUL_OUTS] = {};
    for (int m = 0; m < n; m++) {
        if (!outs[m].W->packed) continue;
        int same = 0;  // a packed matrix of this type before: its sums are made
        while (same < m && !(outs[same].W->packed && outs[same].W->dtype == outs[m].W->dtype)) same++;
        xs[m] = same < m ? xs[same] : activation_sums(outs[m].W->dtype, xq, T, outs[m].W->cols);
    }
    auto run = [&](int tile) {
        int m = 0;
        while (tile >= first[m + 1]) m++;
        if (outs[m].W->packed) packed_tile(outs[m], tile - first[m], xq, xs[m], T, simd);
        else run_quant_tile(outs[m], tile - first[m], xq, T, d[m]);
    };
    // Decode: shrinking contiguous runs of tiles; prefill: a tile to
    // whichever thread is free (kernels_fast.cpp:matmul_fast says why).
    if (T == 1) {
        #pragma omp parallel for schedule(guided, 8)
        for (int tile = 0; tile < first[n]; tile++) run(tile);
    } else {
        #pragma omp parallel for schedule(dynamic)
        for (int tile = 0; tile < first[n]; tile++) run(tile);
    }
}

void matmul_quant_fast(float* out, const float* x, const Mat& W, const float* bias, int T, int simd) {
    MatmulOut one = {out, &W, bias};
    matmul_quant_fast_many(&one, 1, x, T, simd);
}
