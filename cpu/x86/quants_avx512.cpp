// quants_avx512.cpp — the block formats' tiles for AVX-512 with VNNI
// (kernels.h:SimdKernels::quant_tile and packed_group; kernels_avx512.cpp
// puts them in its table). quants_fast.cpp and quants_packed.cpp drive them
// and say what they compute; quants.cpp:dot_quant_q8 is their order in
// plain loops. vpdpbusd multiplies unsigned by signed bytes and adds each
// group of 4 products into an int32 lane in one instruction.
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"
#include "cpu/x86/quants_x86.h"
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers: a false alarm (kernels_avx512.cpp)
#endif
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni")
#endif
#define INLINE static inline __attribute__((always_inline))

INLINE float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// Bytes per 256 weights: block b (of 32) starts about b * this / 8 bytes into a row.
INLINE int bytes_per_256(DType t) { return quant_block_bytes(t) * (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? 1 : 8); }

// How far ahead a tile asks for its rows' bytes: two tiles on. A batch's
// tiles hold consecutive rows, so two tiles on is 2 x NR rows further; one
// token's tiles hold one row of each stripe (kernels_fast.cpp:tile_row_list),
// so the same place two tiles on is two rows further down each stripe. (A
// short batch's tiles hold stripes too, kernels.h:STREAM_TOKENS, but have
// NT > 1: their hint lands 2 x NR tiles on, later than needed.)
static inline size_t prefetch_distance(DType t, int NR, int NT, int n_blocks) {
    size_t row = (size_t)n_blocks * bytes_per_256(t) / 8;
    return (NT == 1 ? 2 : 2 * NR) * row;
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
            int bb = quant_block_bytes(t);
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
            const uint8_t* in = row + (size_t)(b / 8) * quant_block_bytes(t);
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
            const uint8_t* in = row + (size_t)(b / 8) * quant_block_bytes(t);
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
        start[k] = _mm512_mullo_epi32(xs, _mm512_set1_epi32(-quant_code_offset(t)));
        xsf[k] = _mm512_cvtepi32_ps(xs);
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; r++) {
        // Decode streams every weight from memory once: ask for the bytes
        // two tiles on (the same place, `ahead` bytes further) while this
        // one computes. Into L2 (T1): measured faster than into L1 here.
        _mm_prefetch((const char*)w[r] + ahead + ((size_t)b * bytes_per_256(t) >> 3), _MM_HINT_T1);
        if ((t == DType::Q4_K || t == DType::Q5_K) && b % 8 == 0) kscales(w[r] + (size_t)(b / 8) * quant_block_bytes(t), ks[r]);
        Pair k = decode_pair(t, w[r], b, both, ks[r]);
#pragma GCC unroll 4
        for (int n = 0; n < NT; n++) {
            __m512i s = _mm512_dpbusd_epi32(start[n], k.q, xv[n]);
            if (t == DType::Q6_K) s = _mm512_mullo_epi32(s, k.mul);
            acc[r][n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(k.scale, dx[n]), acc[r][n]);
            if (quant_has_min(t)) acc[r][n] = _mm512_fmadd_ps(xsf[n], _mm512_mul_ps(k.min, dx[n]), acc[r][n]);
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

void quant_tile_avx512(DType t, const uint8_t* const* w, int n_rows, const uint8_t* const* x, int n_tokens,
                        int n_blocks, float out[MAX_TILE][MAX_TILE]) {
    if (t == DType::Q8_0) return tile_avx512_t(DType::Q8_0, w, n_rows, x, n_tokens, n_blocks, out);
    FOR_EACH_FORMAT(tile_avx512_t)
}

// ---------------------------------------------------------------------------
// The packed layout's tile (quants_packed.cpp)


// Decode reads a thread's groups as one long stream, which the hardware
// prefetcher alone does not run far enough ahead of: the tiles ask for the
// lines PACK_PREFETCH bytes down (past a group's end, the next group's,
// read next), into L2 (PACK_HINT): that far ahead into L1, the lines would
// push out of its 32-48 KB what the tile is still reading. Into L2, 8 to
// 128 KB ahead read alike (book/A-measurements.md, "The packed tiles'
// prefetch", measures them); 32 KB sits in the middle of that range.
const size_t PACK_PREFETCH = 32768;
#define PACK_HINT _MM_HINT_T1

// Code words per block of 32: Q8_0 8, Q5_0 and Q5_1 5 (the fifth bits
// first), Q4_0 and Q4_1 4 (each holds two words' codes, low and high
// nibbles).
INLINE int packed_words(DType t) { return t == DType::Q8_0 ? 8 : t == DType::Q5_0 || t == DType::Q5_1 ? 5 : 4; }


// The packed layout (quants.h:pack_mat): 16 rows in the 16 int32 lanes. A
// 64-byte line of a group holds word j of one block of all 16 rows, so one
// vpdpbusd, against the token's word j broadcast, makes the sum p_j of the
// 16 rows at once; the order's float lanes become 16 registers (lane j,
// even or odd block), each holding that lane for the 16 rows, and the fold
// is adds between registers. Per block of 16 rows: 8 vpdpbusd, 8
// conversions, 8 fused multiply-adds and one scale vector — no shuffles,
// no scale broadcasts, no horizontal sums. The same integers and the same
// float operations in the same order as the reference: the same bits.
// start holds -offset * xs_j of the token's blocks, xsf -xs_j as a float
// (activation_sums below, once per call).

// Q4_1 and Q5_1 have no offset but a minimum m (their second f16 field):
// each word j adds xs_j * m * dx after p_j * d * dx, which with -xs_j in
// xsf is one fnmadd, -(-xs_j * m * dx) + acc: the same exact value as the
// reference's fma, rounded once.

INLINE void packed_block(DType t, const uint8_t* g, const uint8_t* scales, const uint8_t* xb, const int32_t* start,
                         const float* xsf, int b, __m512 acc[8]) {
    const int words = packed_words(t);
    const bool five = t == DType::Q5_0 || t == DType::Q5_1, with_min = t == DType::Q4_1 || t == DType::Q5_1;
    const uint8_t* wb = g + (size_t)b * words * 64;
    for (int j = 0; j < words; j++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * j), PACK_HINT);
    const uint8_t* sc = scales + (size_t)b * (with_min ? 64 : 32);
    const __m512 dx = _mm512_set1_ps(f16_at(xb));
    __m512 sd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)sc)), dx), md = sd;
    if (with_min) md = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(sc + 32))), dx);
    __m512i q[8];
    if (t == DType::Q8_0) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) q[j] = _mm512_loadu_si512((const void*)(wb + 64 * j));
    } else {  // word k: weights 4k.. in the low nibbles, 16+4k.. in the high ones
        const __m512i low4 = _mm512_set1_epi8(15);
        const uint8_t* nib = wb + (five ? 64 : 0);  // Q5_0, Q5_1: word 0 is the fifth bits
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m512i v = _mm512_loadu_si512((const void*)(nib + 64 * k));
            q[k] = _mm512_and_si512(v, low4);
            q[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
        if (five) {
            // Bit i of a row's 32-bit word is weight i's fifth bit: byte c of
            // it holds those of lanes j = 2c (bits 0-3) and 2c+1 (bits 4-7).
            // Copied to the four bytes of its lane, tested bit by bit, it is
            // the mask of the bytes that get 16.
            __m512i qh = _mm512_loadu_si512((const void*)wb);
            const __m512i in_lane = _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0);
            const __m512i bits_lo = _mm512_set1_epi32(0x08040201), bits_hi = _mm512_set1_epi32((int)0x80402010);
            const __m512i sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m512i rep = _mm512_shuffle_epi8(qh, _mm512_add_epi8(in_lane, _mm512_set1_epi8((char)c)));
                q[2 * c] = _mm512_mask_add_epi8(q[2 * c], _mm512_test_epi8_mask(rep, bits_lo), q[2 * c], sixteen);
                q[2 * c + 1] = _mm512_mask_add_epi8(q[2 * c + 1], _mm512_test_epi8_mask(rep, bits_hi), q[2 * c + 1], sixteen);
            }
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        int32_t xw;
        std::memcpy(&xw, xb + 2 + 4 * j, 4);
        __m512i s = with_min ? _mm512_setzero_si512() : _mm512_set1_epi32(start[8 * b + j]);  // -offset * xs_j
        s = _mm512_dpbusd_epi32(s, q[j], _mm512_set1_epi32(xw));
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sd, acc[j]);
        if (with_min) acc[j] = _mm512_fnmadd_ps(_mm512_set1_ps(xsf[8 * b + j]), md, acc[j]);
    }
}

// The reference's fold of its 16 float lanes, on 16 rows at once.
INLINE __m512 fold(const __m512 even[8], const __m512 odd[8]) {
    __m512 u[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) u[j] = _mm512_add_ps(even[j], odd[j]);
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(u[0], u[4]), _mm512_add_ps(u[2], u[6])),
                         _mm512_add_ps(_mm512_add_ps(u[1], u[5]), _mm512_add_ps(u[3], u[7])));
}

// One group of 16 rows times one token: 16 results (before the bias).
INLINE __m512 packed_group_t(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                             const float* xsf) {
    __m512 even[8], odd[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) even[j] = odd[j] = _mm512_setzero_ps();
    const uint8_t* scales = g + (size_t)n_blocks * packed_words(t) * 64;
    int b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
        packed_block(t, g, scales, xq + (size_t)b * Q8_BLOCK_BYTES, start, xsf, b, even);
        packed_block(t, g, scales, xq + (size_t)(b + 1) * Q8_BLOCK_BYTES, start, xsf, b + 1, odd);
    }
    if (b < n_blocks) packed_block(t, g, scales, xq + (size_t)b * Q8_BLOCK_BYTES, start, xsf, b, even);
    return fold(even, odd);
}

// The k-quants, one super-block of 256 weights (8 blocks of 32) of a group
// of 16 rows at a time: its scales first, then each block as above, the
// even blocks into `even`, the odd ones into `odd`. A group's scales lie
// after all its codes, super-block by super-block (unit_pieces above).
//
// Q4_K (reference: quants.cpp:int_block): block j's scale is d * sc_j and
// its minimum -(dmin * mn_j), sc_j and mn_j six bits each from the three
// words of 12 scale bytes (quants.h:kscale_get, here on 16 lanes at once);
// its codes have no offset, and each word j adds xs_j * min * dx after
// p_j * scale * dx. xsf holds -xs_j, so the minimum's sign moves onto it:
// (-xs_j) * (dmin * mn_j * dx) is the same real number as the reference's
// xs_j * (-(dmin * mn_j) * dx) (a rounded product keeps its magnitude when
// a sign flips), and one fma rounds it the same way. Word 8c + j of the
// nibbles holds block 2c's weights 4j.. in its low nibbles and block
// 2c+1's in its high. Q5_K is Q4_K with 8 words of fifth bits before the
// nibbles: bit m of word j's byte i is block m's weight 4j+i's fifth bit.
INLINE void packed_super_q4_k(bool five, const uint8_t* codes, const uint8_t* sc, const uint8_t* xq, const float* xsf,
                              int s, __m512 even[8], __m512 odd[8]) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)sc));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(sc + 32)));
    const __m512i w0 = _mm512_loadu_si512((const void*)(sc + 64)), w1 = _mm512_loadu_si512((const void*)(sc + 128)),
                  w2 = _mm512_loadu_si512((const void*)(sc + 192));
    const __m512i low4 = _mm512_set1_epi32(0x0F0F0F0F), low6 = _mm512_set1_epi32(63), three = _mm512_set1_epi32(3),
                  fifteen = _mm512_set1_epi32(15), bit4 = _mm512_set1_epi8(16);
    const uint8_t* nibbles = codes + (five ? 8 * 64 : 0);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        __m512i scj, mnj;  // quants.h:kscale_get
        if (j < 4) {
            scj = _mm512_and_si512(_mm512_srli_epi32(w0, 8 * j), low6);
            mnj = _mm512_and_si512(_mm512_srli_epi32(w1, 8 * j), low6);
        } else {
            int k = 8 * (j - 4);
            scj = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, k), fifteen),
                                  _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w0, k + 6), three), 4));
            mnj = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, k + 4), fifteen),
                                  _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w1, k + 6), three), 4));
        }
        int b = 8 * s + j;
        const uint8_t* xb = xq + (size_t)b * Q8_BLOCK_BYTES;
        __m512 dx = _mm512_set1_ps(f16_at(xb));
        __m512 sd = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scj)), dx);
        __m512 md = _mm512_mul_ps(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mnj)), dx);
        const uint8_t* wb = nibbles + (size_t)(j / 2) * 8 * 64;
        if (j % 2 == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * k), PACK_HINT);
        if (five && j == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(codes + PACK_PREFETCH + 64 * k), PACK_HINT);
        __m512* acc = j % 2 ? odd : even;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m512i v = _mm512_loadu_si512((const void*)(wb + 64 * k));
            __m512i q = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(v, 4) : v, low4);
            if (five) {  // bit j of each byte to bit 4 (16-bit shifts: what crosses bytes is masked away)
                __m512i h = _mm512_loadu_si512((const void*)(codes + 64 * k));
                h = j < 4 ? _mm512_slli_epi16(h, 4 - j) : _mm512_srli_epi16(h, j - 4);
                q = _mm512_or_si512(q, _mm512_and_si512(h, bit4));
            }
            int32_t xw;
            std::memcpy(&xw, xb + 2 + 4 * k, 4);
            __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, _mm512_set1_epi32(xw));
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sd, acc[k]);
            acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(xsf[8 * b + k]), md, acc[k]);
        }
    }
}

// Q6_K: codes of 6 bits centred on 32 (each lane starts at -32 xs_j, as
// Q8_0's at -128 xs_j), times one int8 scale per 16 weights (words 0-3 of
// a block take the first, 4-7 the second), then times d * dx. Of a half
// (128 weights, blocks 4h..4h+3) the code words 16h..16h+7 hold blocks 4h
// (low nibbles) and 4h+2 (high), words 16h+8.. blocks 4h+1 and 4h+3, and
// word 32+8h+k the top two bits of block 4h+m's weights 4k.. at bits 2m.
INLINE void packed_super_q6_k(const uint8_t* codes, const uint8_t* sc, const uint8_t* xq, const int32_t* start, int s,
                              __m512 even[8], __m512 odd[8]) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)sc));
    const __m512i low4 = _mm512_set1_epi8(15), top2 = _mm512_set1_epi8(0x30);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        int h = j / 4, m = j % 4, b = 8 * s + j;
        // The block's two int8 scales, bytes 2j and 2j+1 of the 16: sign-extended in each lane.
        __m512i sw = _mm512_loadu_si512((const void*)(sc + 32 + 64 * (j / 2)));
        __m512i mul0 = _mm512_srai_epi32(_mm512_slli_epi32(sw, 24 - 8 * (2 * (j % 2))), 24);
        __m512i mul1 = _mm512_srai_epi32(_mm512_slli_epi32(sw, 16 - 8 * (2 * (j % 2))), 24);
        const uint8_t* xb = xq + (size_t)b * Q8_BLOCK_BYTES;
        __m512 sd = _mm512_mul_ps(d, _mm512_set1_ps(f16_at(xb)));
        const uint8_t* lo = codes + (size_t)(16 * h + 8 * (m % 2)) * 64;
        const uint8_t* hi = codes + (size_t)(32 + 8 * h) * 64;
        if (m < 2)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(lo + PACK_PREFETCH + 64 * k), PACK_HINT);
        if (m == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(hi + PACK_PREFETCH + 64 * k), PACK_HINT);
        __m512* acc = j % 2 ? odd : even;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m512i v = _mm512_loadu_si512((const void*)(lo + 64 * k)), t = _mm512_loadu_si512((const void*)(hi + 64 * k));
            // bits 2m, 2m+1 of each byte of t to bits 4, 5 (16-bit shifts: what
            // crosses into the next byte is masked away)
            t = m == 0 ? _mm512_slli_epi16(t, 4) : m == 1 ? _mm512_slli_epi16(t, 2) : m == 2 ? t : _mm512_srli_epi16(t, 2);
            __m512i q = _mm512_or_si512(_mm512_and_si512(m < 2 ? v : _mm512_srli_epi16(v, 4), low4), _mm512_and_si512(t, top2));
            int32_t xw;
            std::memcpy(&xw, xb + 2 + 4 * k, 4);
            __m512i p = _mm512_set1_epi32(start[8 * b + k]);  // -32 xs_j
            p = _mm512_mullo_epi32(_mm512_dpbusd_epi32(p, q, _mm512_set1_epi32(xw)), k < 4 ? mul0 : mul1);
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sd, acc[k]);
        }
    }
}

// One group of 16 rows times one token, in a k-quant.
INLINE __m512 packed_group_k(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                             const float* xsf) {
    __m512 even[8], odd[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) even[j] = odd[j] = _mm512_setzero_ps();
    int n_super = n_blocks / 8, words = t == DType::Q4_K ? 32 : t == DType::Q5_K ? 40 : 48;
    int scale_bytes = t == DType::Q6_K ? 288 : 256;
    const uint8_t* scales = g + (size_t)n_super * words * 64;
    for (int s = 0; s < n_super; s++) {
        const uint8_t *codes = g + (size_t)s * words * 64, *sc = scales + (size_t)s * scale_bytes;
        if (t == DType::Q6_K) packed_super_q6_k(codes, sc, xq, start, s, even, odd);
        else packed_super_q4_k(t == DType::Q5_K, codes, sc, xq, xsf, s, even, odd);
    }
    return fold(even, odd);
}

void packed_group_avx512(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
                                const float* xsf, const float* bias, float* out) {
    // Each type its own instance of the inline code: its branches on t fold away.
    __m512 r;
    switch (t) {
        case DType::Q8_0: r = packed_group_t(DType::Q8_0, g, n_blocks, xq, start, xsf); break;
        case DType::Q5_0: r = packed_group_t(DType::Q5_0, g, n_blocks, xq, start, xsf); break;
        case DType::Q4_0: r = packed_group_t(DType::Q4_0, g, n_blocks, xq, start, xsf); break;
        case DType::Q4_1: r = packed_group_t(DType::Q4_1, g, n_blocks, xq, start, xsf); break;
        case DType::Q5_1: r = packed_group_t(DType::Q5_1, g, n_blocks, xq, start, xsf); break;
        case DType::Q4_K: r = packed_group_k(DType::Q4_K, g, n_blocks, xq, start, xsf); break;
        case DType::Q5_K: r = packed_group_k(DType::Q5_K, g, n_blocks, xq, start, xsf); break;
        default: r = packed_group_k(DType::Q6_K, g, n_blocks, xq, start, xsf); break;
    }
    _mm512_storeu_ps(out, _mm512_add_ps(r, bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps()));
}

#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // __x86_64__
