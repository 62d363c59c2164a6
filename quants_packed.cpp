// quants_packed.cpp — the block formats (Q4_0 ... Q6_K) laid out at load for
// the integer tiles (pack_mat, called by model.cpp:pack_model), and those
// tiles: AVX-512's and AVX2's.
//
// quants_fast.cpp's tiles read the file's layout: a block's scale and codes
// side by side, row after row, so each block costs shuffles to put codes
// and scales where the lanes want them, and a horizontal sum at the end of
// each row. Packed, a group of 16 rows keeps word j of one block of all 16
// rows in one 64-byte line, and the 16 rows become the 16 lanes of one
// register: the same integers and the same float operations in the same
// order as the reference (quants.cpp:dot_quant_q8), so the same bits, with
// fewer instructions per weight. quants_fast.cpp's driver calls
// packed_tile for a packed matrix's tiles.
#include <cstring>
#include <vector>
#include "quants.h"

// The layout for the tiles (quants.h:pack_mat). Each format's unit (a block
// of 32 weights, or a super-block of 256) is code words — 4-byte words that
// each feed one int32 lane of vpdpbusd — and scale bytes: f16 fields and, in
// the k-quants, 4-byte words of small scales. A group of 16 rows, n units
// each, is stored as
//   unit 0: code word 0 of rows 0..15 (64 bytes), code word 1 of rows 0..15, ...
//   unit 1: the same, ... unit n-1
//   then the scales, unit by unit: f16 field 0 of rows 0..15 (32 bytes),
//   field 1, ..., scale word 0 of rows 0..15 (64 bytes), word 1, ...
// The words keep the file's order and meaning:
//   Q4_0  18 B: d, 4 code words (word k: weights 4k..4k+3 in the low
//         nibbles, 16+4k.. in the high ones)
//   Q5_0  22 B: d, 5 code words (the fifth bits, then Q4_0's nibble words)
//   Q4_1, Q5_1  20 B, 24 B: d, m, then the code words of Q4_0, Q5_0
//   Q8_0  34 B: d, 8 code words (word j: weights 4j..4j+3), each code c kept
//         as c + 128 (the top bit flipped): the unsigned bytes vpdpbusd
//         wants (quants.cpp:int_block does the same)
//   Q4_K 144 B: d, dmin, 3 scale words (the 12 bytes of 6-bit scales and
//         minima), 32 code words: words 8c..8c+7 hold sub-block 2c in their
//         low nibbles and 2c+1 in their high ones, word 8c+j weights 4j..4j+3
//   Q5_K 176 B: as Q4_K, with 8 code words of fifth bits before the nibbles
//   Q6_K 210 B: 48 code words (ql, then qh: drawn in quants.cpp above q6_low_byte), 4 scale
//         words (the 16 int8 scales), d
// A group takes exactly the bytes of its 16 rows in the file.
struct PackedForm {
    int unit;                 // weights per unit
    int code_at, code_words;  // where a unit's codes start in the file, and how many words
    int f16_at[2], f16s;      // its f16 fields
    int words_at, words;      // its scale words
};

static PackedForm packed_form(DType t) {
    switch (t) {
        case DType::Q4_0: return {32, 2, 4, {0, 0}, 1, 0, 0};
        case DType::Q5_0: return {32, 2, 5, {0, 0}, 1, 0, 0};
        case DType::Q8_0: return {32, 2, 8, {0, 0}, 1, 0, 0};
        case DType::Q4_1: return {32, 4, 4, {0, 2}, 2, 0, 0};
        case DType::Q5_1: return {32, 4, 5, {0, 2}, 2, 0, 0};
        case DType::Q4_K: return {256, 16, 32, {0, 2}, 2, 4, 3};
        case DType::Q5_K: return {256, 16, 40, {0, 2}, 2, 4, 3};
        case DType::Q6_K: return {256, 0, 48, {208, 0}, 1, 192, 4};
        default: return {0, 0, 0, {0, 0}, 0, 0, 0};
    }
}

bool can_pack(const Mat& W) {
    PackedForm f = packed_form(W.dtype);
    return f.unit && W.rows % PACK_ROWS == 0 && W.cols % f.unit == 0 && !W.packed;
}

// Where the pieces of row `lane`'s unit u (n units in a row) lie: in the
// group and in the file's unit. Returns how many pieces.
struct Piece {
    size_t at;    // in the group
    int file_at;  // in the file's unit
    int bytes;
    bool code;    // a code word (Q8_0's are flipped)
};
const int MAX_PIECES = 48 + 2 + 4;

static int unit_pieces(const PackedForm& f, int n, int u, int lane, Piece* p) {
    int count = 0;
    for (int k = 0; k < f.code_words; k++) p[count++] = {((size_t)u * f.code_words + k) * 4 * PACK_ROWS + 4 * lane, f.code_at + 4 * k, 4, true};
    size_t scales = (size_t)n * f.code_words * 4 * PACK_ROWS + (size_t)u * PACK_ROWS * (2 * f.f16s + 4 * f.words);
    for (int k = 0; k < f.f16s; k++) p[count++] = {scales + (size_t)k * 2 * PACK_ROWS + 2 * lane, f.f16_at[k], 2, false};
    scales += (size_t)f.f16s * 2 * PACK_ROWS;
    for (int k = 0; k < f.words; k++) p[count++] = {scales + (size_t)k * 4 * PACK_ROWS + 4 * lane, f.words_at + 4 * k, 4, false};
    return count;
}

void packed_row(const Mat& W, int r, uint8_t* out) {
    PackedForm f = packed_form(W.dtype);
    int n = W.cols / f.unit, ub = dtype_block_bytes(W.dtype);
    uint8_t flip = W.dtype == DType::Q8_0 ? 0x80 : 0;
    const uint8_t* g = (const uint8_t*)W.data + (size_t)(r / PACK_ROWS) * PACK_ROWS * dtype_row_bytes(W.dtype, W.cols);
    Piece p[MAX_PIECES];
    for (int u = 0; u < n; u++)
        for (int k = 0, count = unit_pieces(f, n, u, r % PACK_ROWS, p); k < count; k++)
            for (int i = 0; i < p[k].bytes; i++) out[(size_t)u * ub + p[k].file_at + i] = g[p[k].at + i] ^ (p[k].code ? flip : 0);
}

const uint8_t* file_row(const Mat& W, int r, std::vector<uint8_t>& tmp) {
    size_t rb = dtype_row_bytes(W.dtype, W.cols);
    if (!W.packed) return (const uint8_t*)W.data + (size_t)r * rb;
    tmp.resize(rb);
    packed_row(W, r, tmp.data());
    return tmp.data();
}

void pack_mat(Mat& W, std::vector<uint8_t>& storage) {
    if (!can_pack(W)) fail("pack_mat: a %s matrix of %d x %d cannot be packed", dtype_name(W.dtype), W.rows, W.cols);
    PackedForm f = packed_form(W.dtype);
    int n = W.cols / f.unit, ub = dtype_block_bytes(W.dtype);
    uint8_t flip = W.dtype == DType::Q8_0 ? 0x80 : 0;
    size_t rb = dtype_row_bytes(W.dtype, W.cols), group = (size_t)PACK_ROWS * rb;
    bool in_place = W.data == storage.data();
    if (!in_place) storage.resize(W.bytes());
    #pragma omp parallel
    {
        std::vector<uint8_t> g(group);
        Piece p[MAX_PIECES];
        #pragma omp for schedule(static)
        for (int first = 0; first < W.rows; first += PACK_ROWS) {
            const uint8_t* src = (const uint8_t*)W.data + (size_t)first * rb;
            for (int lane = 0; lane < PACK_ROWS; lane++)
                for (int u = 0; u < n; u++) {
                    const uint8_t* in = src + lane * rb + (size_t)u * ub;
                    for (int k = 0, count = unit_pieces(f, n, u, lane, p); k < count; k++)
                        for (int i = 0; i < p[k].bytes; i++) g[p[k].at + i] = in[p[k].file_at + i] ^ (p[k].code ? flip : 0);
                }
            std::memcpy(&storage[(size_t)first * rb], g.data(), group);  // the group's own bytes: in place is safe
        }
    }
    W.data = storage.data();
    W.packed = PACK_ROWS;
}

// ---------------------------------------------------------------------------
// The tile.

// Two tiles read the layout: AVX-512's (16 rows in the 16 lanes of one
// register) and AVX2's (two halves of 8), each compiled where quants_fast.cpp
// compiles its tiles of the same instruction set (quant_simd_level()).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define PACKED_AVX2 1
#define INLINE static inline __attribute__((always_inline))

INLINE float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// Decode reads a thread's groups as one long stream, which the hardware
// prefetcher alone does not run far enough ahead of: the tiles ask for the
// lines PACK_PREFETCH bytes down (past a group's end, the next group's,
// read next). Measured on the Zen 5 machine, 2 threads, alternated: Q8_0
// decode 42-52 -> 50-68 tok/s, q4_0 64 -> 89-102 (4 KB and 12 KB did no
// better).
const size_t PACK_PREFETCH = 8192;

// Code words per block of 32: Q8_0 8, Q5_0 and Q5_1 5 (the fifth bits
// first), Q4_0 and Q4_1 4 (each holds two words' codes, low and high
// nibbles).
INLINE int packed_words(DType t) { return t == DType::Q8_0 ? 8 : t == DType::Q5_0 || t == DType::Q5_1 ? 5 : 4; }
#endif

#if defined(PACKED_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#define PACKED_AVX512 1  // exactly when quants_fast.cpp has its AVX-512 tiles (quant_simd_level() == 2)
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers: a false alarm
#endif

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
    for (int j = 0; j < words; j++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * j), _MM_HINT_T0);
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
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(wb + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
        if (five && j == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(codes + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
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
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(lo + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
        if (m == 0)
            for (int k = 0; k < 8; k++) _mm_prefetch((const char*)(hi + PACK_PREFETCH + 64 * k), _MM_HINT_T0);
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

static void packed_group_avx512(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
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
#endif  // PACKED_AVX512

#ifdef PACKED_AVX2
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
// decoded slower: 40.8 -> 35-37 tok/s, --kernels avx2 --quant q8_0 on the
// Intel Xeon machine, 2 threads, alternated (prefill gained 15-25%, but
// decode is what Q8_0 is for).
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
    if (packed_form(t).unit == 32) {
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

static void packed_group_avx2(DType t, const uint8_t* g, int n_blocks, const uint8_t* xq, const int32_t* start,
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
#endif  // PACKED_AVX2

bool packed_tile_reads(DType t, int simd) {
#ifdef PACKED_AVX512
    if (simd >= 2) return packed_form(t).unit > 0;
#endif
#ifdef PACKED_AVX2
    if (simd >= 1) return packed_form(t).unit > 0 && t != DType::Q8_0;  // Q8_0: packed_block_avx2's comment
#endif
    (void)t;
    (void)simd;
    return false;
}

// A packed matrix's tile i: rows 16i .. 16i+15, every token. Without a
// tile for its type and instruction set, the reference on each row as the
// file stores it.
void packed_tile(const MatmulOut& o, int i, const uint8_t* xq, const BlockSums& xs, int T, int simd) {
    const Mat& W = *o.W;
    int n_blocks = W.cols / Q8_BLOCK, first = i * W.packed;
    size_t xq_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES, rb = dtype_row_bytes(W.dtype, W.cols);
#ifdef PACKED_AVX512
    if (simd >= 2) {
        const uint8_t* g = (const uint8_t*)W.data + (size_t)first * rb;
        size_t per_token = (size_t)n_blocks * 8;
        for (int t = 0; t < T; t++)
            packed_group_avx512(W.dtype, g, n_blocks, xq + t * xq_bytes, xs.start ? xs.start + t * per_token : nullptr,
                                xs.xsf ? xs.xsf + t * per_token : nullptr, o.bias ? o.bias + first : nullptr,
                                o.out + (size_t)t * W.rows + first);
        return;
    }
#endif
#ifdef PACKED_AVX2
    if (simd >= 1 && packed_tile_reads(W.dtype, 1)) {
        const uint8_t* g = (const uint8_t*)W.data + (size_t)first * rb;
        size_t per_token = (size_t)n_blocks * 8;
        for (int t = 0; t < T; t++)
            packed_group_avx2(W.dtype, g, n_blocks, xq + t * xq_bytes, xs.start ? xs.start + t * per_token : nullptr,
                              xs.xsf ? xs.xsf + t * per_token : nullptr, o.bias ? o.bias + first : nullptr,
                              o.out + (size_t)t * W.rows + first);
        return;
    }
#endif
    (void)xs;
    (void)simd;
    std::vector<uint8_t> row(rb);
    for (int r = first; r < first + W.packed; r++) {
        packed_row(W, r, row.data());
        for (int t = 0; t < T; t++)
            o.out[(size_t)t * W.rows + r] = dot_quant_q8(W.dtype, row.data(), xq + t * xq_bytes, W.cols) + (o.bias ? o.bias[r] : 0.0f);
    }
}

// The block sums in the form each type's tile starts from (quants.h:
// BlockSums), made once per call and read by all tiles: for a format with
// an offset, the lane's integer start -offset * xs_j, so the tile
// broadcasts it straight from memory (a shift per word in the tile was 12%
// of Q4_0's one-token product on the Intel Xeon machine); for a format
// with a minimum, -xs_j as the float its fma multiplies (a conversion per
// word saved likewise). One buffer per form: a call's matrices may be of
// several types (a q4_k_m file's q, k and v).
static std::vector<int32_t> g_start[4];  // offsets 8, 16, 32, 128
static std::vector<float> g_xsf;

static int code_offset(DType t) {
    switch (t) {
        case DType::Q4_0: return 8;
        case DType::Q5_0: return 16;
        case DType::Q6_K: return 32;
        case DType::Q8_0: return 128;
        default: return 0;  // a minimum instead
    }
}

BlockSums activation_sums(DType t, const uint8_t* xq, int T, int cols) {
    int n_blocks = cols / Q8_BLOCK, offset = code_offset(t);
    size_t n = (size_t)T * n_blocks * 8;
    std::vector<int32_t>* start = offset ? &g_start[offset == 8 ? 0 : offset == 16 ? 1 : offset == 32 ? 2 : 3] : nullptr;
    if (start) start->resize(n);
    else g_xsf.resize(n);
    #pragma omp parallel for schedule(static) if (T > 1)
    for (int t = 0; t < T; t++)
        for (int b = 0; b < n_blocks; b++) {
            size_t at = ((size_t)t * n_blocks + b) * 8;
            const int8_t* x = (const int8_t*)(xq + ((size_t)t * n_blocks + b) * Q8_BLOCK_BYTES + 2);
            for (int j = 0; j < 8; j++) {
                int xs = x[4 * j] + x[4 * j + 1] + x[4 * j + 2] + x[4 * j + 3];
                if (start) (*start)[at + j] = -offset * xs;
                else g_xsf[at + j] = (float)-xs;
            }
        }
    return {start ? start->data() : nullptr, start ? nullptr : g_xsf.data()};
}
