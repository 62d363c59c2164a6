// quants_packed.cpp — the block formats (Q4_0 ... Q6_K) laid out at load for
// the integer tiles (pack_mat, called by model.cpp:pack_model), and those
// tiles' driver; the tiles themselves are a kernel set's (kernels.h:
// SimdKernels::packed_group), in quants_avx512.cpp and quants_avx2.cpp.
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
#include "cpu/kernel_sets.h"
#include "model.h"

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

// Two tiles read the layout, each in its instruction set's file and a
// kernel set's SimdKernels::packed_group: AVX-512's (16 rows in the 16
// lanes of one register, quants_avx512.cpp) and AVX2's (two halves of 8,
// all formats but Q8_0, quants_avx2.cpp).
bool packed_tile_reads(DType t, const SimdKernels* k) {
    return k && k->packed_group && packed_form(t).unit > 0 && (t != DType::Q8_0 || k->packed_q8);
}

// A packed matrix's tile i: rows 16i .. 16i+15, every token. Without a
// tile for its type in this kernel set, the reference on each row as the
// file stores it.
void packed_tile(const MatmulOut& o, int i, const uint8_t* xq, const BlockSums& xs, int T, const SimdKernels& k) {
    const Mat& W = *o.W;
    int n_blocks = W.cols / Q8_BLOCK, first = i * W.packed;
    size_t xq_bytes = (size_t)n_blocks * Q8_BLOCK_BYTES, rb = dtype_row_bytes(W.dtype, W.cols);
    if (packed_tile_reads(W.dtype, &k)) {
        const uint8_t* g = (const uint8_t*)W.data + (size_t)first * rb;
        size_t per_token = (size_t)n_blocks * 8;
        for (int t = 0; t < T; t++)
            k.packed_group(W.dtype, g, n_blocks, xq + t * xq_bytes, xs.start ? xs.start + t * per_token : nullptr,
                           xs.xsf ? xs.xsf + t * per_token : nullptr, o.bias ? o.bias + first : nullptr,
                           o.out + (size_t)t * W.rows + first);
        return;
    }
    std::vector<uint8_t> row(rb);
    for (int r = first; r < first + W.packed; r++) {
        packed_row(W, r, row.data());
        for (int t = 0; t < T; t++)
            o.out[(size_t)t * W.rows + r] = dot_quant_q8(W.dtype, row.data(), xq + t * xq_bytes, W.cols) + (o.bias ? o.bias[r] : 0.0f);
    }
}

// The block sums in the form each type's tile starts from (kernels.h:
// BlockSums), made once per call and read by all tiles: for a format with
// an offset, the lane's integer start -offset * xs_j, so the tile
// broadcasts it straight from memory instead of shifting xs_j per word
// (book/A-measurements.md measures the difference); for a format with a
// minimum, -xs_j as the float its fma multiplies (a conversion per word
// saved likewise). One buffer per form, in the caller's KernelScratch: a
// call's matrices may be of several types (a q4_k_m file's q, k and v).
BlockSums activation_sums(DType t, const uint8_t* xq, int T, int cols, KernelScratch& s) {
    int n_blocks = cols / Q8_BLOCK, offset = quant_code_offset(t);
    size_t n = (size_t)T * n_blocks * 8;
    std::vector<int32_t>* start = offset ? &s.start[offset == 8 ? 0 : offset == 16 ? 1 : offset == 32 ? 2 : 3] : nullptr;
    std::vector<float>& xsf = s.xsf;
    if (start) start->resize(n);
    else xsf.resize(n);
    #pragma omp parallel for schedule(static) if (T > 1)
    for (int t = 0; t < T; t++)
        for (int b = 0; b < n_blocks; b++) {
            size_t at = ((size_t)t * n_blocks + b) * 8;
            const int8_t* x = (const int8_t*)(xq + ((size_t)t * n_blocks + b) * Q8_BLOCK_BYTES + 2);
            for (int j = 0; j < 8; j++) {
                int xs = x[4 * j] + x[4 * j + 1] + x[4 * j + 2] + x[4 * j + 3];
                if (start) (*start)[at + j] = -offset * xs;
                else xsf[at + j] = (float)-xs;
            }
        }
    return {start ? start->data() : nullptr, start ? nullptr : xsf.data()};
}

// The fast kernels' layout: every block-format matrix whose rows come in
// groups of 16 and whose type the packed tile of this instruction set
// reads (packed_tile_reads above: AVX-512 all, AVX2 all but Q8_0) is
// laid out for it (quants.h:pack_mat: the same bytes in other places; one
// 64-byte line per vpdpbusd for 16 rows). A copy that --quant made is
// rearranged where it lies; a matrix read from the file is copied (into
// huge pages, as above) and its file pages are released, so the resident
// set stays at the weights once. Tied embeddings stay one matrix: the
// embedding lookup reads a packed row through quants.cpp:mat_row_to_f32.
// --kernels plain reads the file's layout, and this is not called for it
// (generate.cpp:engine_load).
void pack_model(Model& m, const SimdKernels& k) {
    bool tied = m.lm_head.data == m.embed.data;
    for (Mat* w : weight_matrices(m)) {
        if (!can_pack(*w) || !packed_tile_reads(w->dtype, &k)) continue;
        std::vector<uint8_t>* own = nullptr;  // --quant's copy: packed in place
        for (std::vector<uint8_t>& v : m.owned)
            if (v.data() == w->data) own = &v;
        if (own) {
            pack_mat(*w, *own);
            continue;
        }
        m.owned.emplace_back();
        prefer_huge_pages(m.owned.back(), w->bytes());
        Mat src = *w;
        pack_mat(*w, m.owned.back());
        release_file_pages(m, src.data, src.bytes());
    }
    if (tied) m.lm_head = m.embed;
}
