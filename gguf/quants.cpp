// quants.cpp — GGUF's block formats, the plain way: pack a row, unpack a
// row, and the reference matrix product (dequantize, then sum in double).
//
// Every format stores a row as blocks. Inside a block, each weight w is a
// small unsigned integer q and the block's scale d (and, for the "_1" and
// k-formats, an offset m) turn it back into a number:
//
//   Q8_0  32 weights  34 bytes  f16 d, 32 x int8 q              w = d * q
//   Q4_0  32 weights  18 bytes  f16 d, 16 bytes of nibbles       w = d * (q - 8)
//   Q4_1  32 weights  20 bytes  f16 d, f16 m, 16 bytes           w = d * q + m
//   Q5_0  32 weights  22 bytes  f16 d, 4 bytes high bits, 16 B   w = d * (q - 16)
//   Q5_1  32 weights  24 bytes  f16 d, f16 m, 4 B, 16 B          w = d * q + m
//   Q4_K 256 weights 144 bytes  f16 d, f16 dmin, 12 bytes of eight 6-bit
//                               (scale, min) pairs, 128 B nibbles
//                               w = (d * sc_j) * q - (dmin * m_j) for sub-block j of 32
//   Q5_K 256 weights 176 bytes  as Q4_K plus 32 bytes of fifth bits
//   Q6_K 256 weights 210 bytes  128 B low nibbles, 64 B high 2-bit pairs,
//                               16 x int8 scales (one per 16 weights), f16 d
//                               w = (d * sc_j) * (q - 32)
//
// The k-formats ("K") put 8 or 16 sub-blocks under one super-block and store
// the sub-block scales themselves as small integers relative to one f16 —
// two levels of scale, so the per-weight cost of the scales drops from
// 16 bits per 32 weights to 6 + 6 bits per 32 (plus 32 bits per 256).
//
// Where the nibbles go: in Q4_0/Q4_1/Q5_0/Q5_1 byte j of the 16 holds
// weight j in its low half and weight j+16 in its high half. In Q4_K/Q5_K
// each 64 weights share 32 bytes: weights 0..31 in the low halves, 32..63
// in the high halves. Q6_K does the same for each 128 weights with two
// groups of 32 bytes, and keeps the two top bits of four weights per byte
// of its high-bit array.
//
// The quantizers here are simple and deterministic (round to nearest with
// the largest magnitude setting the scale). llama.cpp searches for better
// scales; a file quantized either way is read the same way.
#include "gguf/quants.h"
#include "kernels.h"
#include <algorithm>
#include <cmath>

// The block formats' rows of the weight-type table (tensor.h:WeightFormat).
// They join it when this file is linked, before main() runs: the one place
// a folder adds to the core's table, so that the core reads a Q4_K matrix
// without including this folder's header (README.md, the map).
static void block_row(const Mat& W, int r, float* out);
// Q8_0 is simple enough for kernels.cpp:matmul_plain, as the file lays it out.
static void q8_0_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    if (W.packed) matmul_quant_plain(out, x, W, bias, T);
    else matmul_plain(out, x, W, bias, T);
}
static const WeightFormat BLOCK_FORMATS[] = {
    {DType::Q8_0, "q8_0", 32, 34, block_row, q8_0_plain},
    {DType::Q4_0, "q4_0", 32, 18, block_row, matmul_quant_plain},
    {DType::Q4_1, "q4_1", 32, 20, block_row, matmul_quant_plain},
    {DType::Q5_0, "q5_0", 32, 22, block_row, matmul_quant_plain},
    {DType::Q5_1, "q5_1", 32, 24, block_row, matmul_quant_plain},
    {DType::Q4_K, "q4_k", 256, 144, block_row, matmul_quant_plain},
    {DType::Q5_K, "q5_k", 256, 176, block_row, matmul_quant_plain},
    {DType::Q6_K, "q6_k", 256, 210, block_row, matmul_quant_plain},
};
static const bool g_registered = [] {
    for (const WeightFormat& f : BLOCK_FORMATS) register_weight_format(f);
    return true;
}();

static const WeightFormat& format(DType t) { return weight_format(t); }

DType block_fallback(DType t, int cols) {
    if (cols % format(t).block == 0) return t;
    if (t == DType::Q4_K) return DType::Q5_0;
    if (t == DType::Q5_K) return DType::Q5_1;
    if (t == DType::Q6_K) return DType::Q8_0;
    return t;
}

const char* weight_type_list() { return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k"; }

DType parse_weight_type(const char* flag, const std::string& name) {
    for (int t = 0; t < N_DTYPES; t++)
        if (weight_format_known((DType)t) && name == weight_format((DType)t).name) return (DType)t;
    fail("%s: \"%s\" is not one of %s", flag, name.c_str(), weight_type_list());
}

static inline float load_f16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_to_f32(h);
}
static inline void store_f16(uint8_t* p, float v) {
    uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
}
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline int round_int(float v) { return (int)std::lround(v); }

// ---------------------------------------------------------------------------
// Blocks of 32: Q4_0, Q4_1, Q5_0, Q5_1. `bits` is 4 or 5; `with_min`
// chooses between a symmetric scale (w = d * (q - 2^(bits-1))) and a scale
// plus offset (w = d * q + m).
//
// Symmetric: the weight of largest magnitude, with its sign, becomes the
// most negative code -2^(bits-1), so that extreme is exact. With a minimum:
// the block's range [min, max] is cut into 2^bits - 1 steps.

static void quantize_block32(const float* x, uint8_t* out, int bits, bool with_min) {
    int levels = (1 << bits) - 1, half = 1 << (bits - 1);
    int q[32];
    float d, m = 0;
    if (with_min) {
        float lo = x[0], hi = x[0];
        for (int i = 1; i < 32; i++) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
        d = (hi - lo) / levels;
        m = lo;
        // The scale and offset as the file stores them (f16), so the codes
        // are chosen for the numbers the reader will actually use.
        d = f16_to_f32(f32_to_f16(d));
        m = f16_to_f32(f32_to_f16(m));
        float inv = d > 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; i++) q[i] = clampi(round_int((x[i] - m) * inv), 0, levels);
    } else {
        float extreme = 0;
        for (int i = 0; i < 32; i++)
            if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
        d = f16_to_f32(f32_to_f16(extreme / -half));
        float inv = d != 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; i++) q[i] = clampi(round_int(x[i] * inv) + half, 0, levels);
    }
    store_f16(out, d);
    uint8_t* p = out + 2;
    if (with_min) store_f16(p, m), p += 2;
    if (bits == 5) {  // the fifth bit of weight i is bit i of a 32-bit word
        uint32_t qh = 0;
        for (int i = 0; i < 32; i++) qh |= (uint32_t)(q[i] >> 4) << i;
        std::memcpy(p, &qh, 4);
        p += 4;
    }
    for (int j = 0; j < 16; j++) p[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}

static void dequantize_block32(const uint8_t* in, float* y, int bits, bool with_min) {
    float d = load_f16(in), m = 0;
    const uint8_t* p = in + 2;
    if (with_min) m = load_f16(p), p += 2;
    uint32_t qh = 0;
    if (bits == 5) std::memcpy(&qh, p, 4), p += 4;
    int offset = with_min ? 0 : 1 << (bits - 1);
    for (int j = 0; j < 32; j++) {
        int q = j < 16 ? p[j] & 15 : p[j - 16] >> 4;
        if (bits == 5) q |= (int)((qh >> j) & 1) << 4;
        // d * q + m in one rounding (std::fma): the fast kernels do the same.
        y[j] = with_min ? std::fma(d, (float)q, m) : d * (float)(q - offset);
    }
}

// ---------------------------------------------------------------------------
// Q4_K and Q5_K: 8 sub-blocks of 32 under one super-block of 256.
//
// Each sub-block j has its own scale s_j and minimum m_j (w = s_j * q - m_j,
// q in 0..15 or 0..31). The sixteen numbers s_0..s_7, m_0..m_7 are stored as
// 6-bit integers sc_j, mn_j relative to two f16 super-scales: s_j = d * sc_j,
// m_j = dmin * mn_j. Sixteen 6-bit values fill 12 bytes like this:
//   bytes 0..3:  sc_0..sc_3 in the low 6 bits, top 2 bits of sc_4..sc_7
//   bytes 4..7:  mn_0..mn_3 in the low 6 bits, top 2 bits of mn_4..mn_7
//   bytes 8..11: low 4 bits of sc_4..sc_7 | low 4 bits of mn_4..mn_7 << 4
// (quants.h:kscale_get reads them back).

static void kscale_put(uint8_t* s, const int sc[8], const int mn[8]) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
}

static void quantize_block_k(const float* x, uint8_t* out, int bits) {
    int levels = (1 << bits) - 1;
    float scale[8], minv[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        // The minimum is kept <= 0 (stored as -m_j >= 0) as the format wants.
        float lo = 0, hi = x[32 * j];
        for (int i = 0; i < 32; i++) lo = std::min(lo, x[32 * j + i]), hi = std::max(hi, x[32 * j + i]);
        scale[j] = (hi - lo) / levels;
        minv[j] = -lo;
        max_scale = std::max(max_scale, scale[j]);
        max_min = std::max(max_min, minv[j]);
    }
    float d = f16_to_f32(f32_to_f16(max_scale / 63)), dmin = f16_to_f32(f32_to_f16(max_min / 63));
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0 ? clampi(round_int(scale[j] / d), 0, 63) : 0;
        mn[j] = dmin > 0 ? clampi(round_int(minv[j] / dmin), 0, 63) : 0;
    }
    store_f16(out, d);
    store_f16(out + 2, dmin);
    kscale_put(out + 4, sc, mn);
    uint8_t* qh = out + 16;              // Q5_K only: 32 bytes of fifth bits
    uint8_t* qs = out + (bits == 5 ? 48 : 16);
    if (bits == 5) std::memset(qh, 0, 32);
    for (int j = 0; j < 8; j++) {
        float s = d * sc[j], m = dmin * mn[j];
        float inv = s > 0 ? 1.0f / s : 0.0f;
        for (int i = 0; i < 32; i++) {
            int q = clampi(round_int((x[32 * j + i] + m) * inv), 0, levels);
            // sub-blocks 2c and 2c+1 share bytes 32c..32c+31: low and high nibble
            uint8_t& b = qs[32 * (j / 2) + i];
            if (j % 2 == 0) b = (uint8_t)(q & 15);
            else b |= (uint8_t)((q & 15) << 4);
            if (bits == 5) qh[i] |= (uint8_t)((q >> 4) << j);
        }
    }
}

static void dequantize_block_k(const uint8_t* in, float* y, int bits) {
    float d = load_f16(in), dmin = load_f16(in + 2);
    const uint8_t* qh = in + 16;
    const uint8_t* qs = in + (bits == 5 ? 48 : 16);
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        kscale_get(in + 4, j, sc, mn);
        float s = d * (float)sc, m = dmin * (float)mn;
        for (int i = 0; i < 32; i++) {
            uint8_t b = qs[32 * (j / 2) + i];
            int q = j % 2 == 0 ? b & 15 : b >> 4;
            if (bits == 5) q |= ((qh[i] >> j) & 1) << 4;
            y[32 * j + i] = std::fma(s, (float)q, -m);
        }
    }
}

// Q4_0 and Q4_K, the two formats book/16 decodes by hand, each under a name of
// its own: dequantize_row calls these, and the exercise chapters/q4 has the
// student write them.
void dequantize_block_q4_0(const uint8_t* in, float* y) { dequantize_block32(in, y, 4, false); }
void dequantize_block_q4_k(const uint8_t* in, float* y) { dequantize_block_k(in, y, 4); }

// ---------------------------------------------------------------------------
// Q6_K: 16 sub-blocks of 16 weights, q in 0..63 centred on 32, one int8
// scale per sub-block relative to one f16 d. Weight i of the super-block
// (i = 128h + 32k + l, h in 0..1, k in 0..3, l in 0..31) keeps its low
// 4 bits in ql[64h + l + 32(k%2)] (low nibble for k < 2, high for k >= 2)
// and its top 2 bits in qh[32h + l] at bits 2k..2k+1; its scale is
// scales[8h + 2k + l/16].

static int q6_low_byte(int i) {
    int h = i / 128, k = (i % 128) / 32, l = i % 32;
    return 64 * h + l + 32 * (k % 2);
}
static int q6_low_shift(int i) { return (i % 128) / 32 >= 2 ? 4 : 0; }

static void quantize_block_q6_k(const float* x, uint8_t* out) {
    float scale[16], max_scale = 0;
    for (int j = 0; j < 16; j++) {
        float extreme = 0;
        for (int i = 0; i < 16; i++)
            if (std::fabs(x[16 * j + i]) > std::fabs(extreme)) extreme = x[16 * j + i];
        scale[j] = extreme / -32;  // the extreme weight becomes code 0, i.e. -32
        max_scale = std::max(max_scale, std::fabs(scale[j]));
    }
    float d = f16_to_f32(f32_to_f16(max_scale / 127));
    uint8_t* ql = out;
    uint8_t* qh = out + 128;
    int8_t* sc = (int8_t*)(out + 192);
    std::memset(out, 0, 192);
    for (int j = 0; j < 16; j++) sc[j] = (int8_t)(d != 0 ? clampi(round_int(scale[j] / d), -128, 127) : 0);
    store_f16(out + 208, d);
    for (int i = 0; i < 256; i++) {
        int h = i / 128, k = (i % 128) / 32, l = i % 32;
        float s = d * sc[8 * h + 2 * k + l / 16];
        int q = s != 0 ? clampi(round_int(x[i] / s) + 32, 0, 63) : 32;
        ql[q6_low_byte(i)] |= (uint8_t)((q & 15) << q6_low_shift(i));
        qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
    }
}

static void dequantize_block_q6_k(const uint8_t* in, float* y) {
    const uint8_t* ql = in;
    const uint8_t* qh = in + 128;
    const int8_t* sc = (const int8_t*)(in + 192);
    float d = load_f16(in + 208);
    for (int i = 0; i < 256; i++) {
        int h = i / 128, k = (i % 128) / 32, l = i % 32;
        int q = (ql[q6_low_byte(i)] >> q6_low_shift(i)) & 15;
        q |= ((qh[32 * h + l] >> (2 * k)) & 3) << 4;
        y[i] = (d * (float)sc[8 * h + 2 * k + l / 16]) * (float)(q - 32);
    }
}

// ---------------------------------------------------------------------------
// Rows.

void quantize_row(DType t, const float* x, int n, uint8_t* out) {
    const WeightFormat& f = format(t);
    if (n % f.block) fail("quantize_row: a row of %d is not a multiple of %s's block of %d", n, f.name, f.block);
    for (int b = 0; b < n / f.block; b++) {
        const float* xb = x + (size_t)b * f.block;
        uint8_t* ob = out + (size_t)b * f.bytes;
        switch (t) {
            case DType::F32: std::memcpy(ob, xb, 4); break;
            case DType::F16: { uint16_t h = f32_to_f16(*xb); std::memcpy(ob, &h, 2); break; }
            case DType::BF16: { uint16_t h = f32_to_bf16(*xb); std::memcpy(ob, &h, 2); break; }
            case DType::Q8_0: quantize_row_q8_0(xb, 32, ob); break;
            case DType::Q4_0: quantize_block32(xb, ob, 4, false); break;
            case DType::Q4_1: quantize_block32(xb, ob, 4, true); break;
            case DType::Q5_0: quantize_block32(xb, ob, 5, false); break;
            case DType::Q5_1: quantize_block32(xb, ob, 5, true); break;
            case DType::Q4_K: quantize_block_k(xb, ob, 4); break;
            case DType::Q5_K: quantize_block_k(xb, ob, 5); break;
            case DType::Q6_K: quantize_block_q6_k(xb, ob); break;
        }
    }
}

void dequantize_row(DType t, const void* in, int n, float* out) {
    const WeightFormat& f = format(t);
    const uint8_t* p = (const uint8_t*)in;
    if (f.block == 1) {  // the float types
        for (int i = 0; i < n; i++)
            out[i] = t == DType::BF16  ? bf16_to_f32(((const uint16_t*)in)[i])
                     : t == DType::F16 ? f16_to_f32(((const uint16_t*)in)[i])
                                       : ((const float*)in)[i];
        return;
    }
    for (int b = 0; b < n / f.block; b++) {
        const uint8_t* ib = p + (size_t)b * f.bytes;
        float* yb = out + (size_t)b * f.block;
        switch (t) {
            case DType::Q8_0: {
                float d = load_f16(ib);
                for (int j = 0; j < 32; j++) yb[j] = d * (float)(int8_t)ib[2 + j];
                break;
            }
            case DType::Q4_0: dequantize_block_q4_0(ib, yb); break;
            case DType::Q4_1: dequantize_block32(ib, yb, 4, true); break;
            case DType::Q5_0: dequantize_block32(ib, yb, 5, false); break;
            case DType::Q5_1: dequantize_block32(ib, yb, 5, true); break;
            case DType::Q4_K: dequantize_block_q4_k(ib, yb); break;
            case DType::Q5_K: dequantize_block_k(ib, yb, 5); break;
            case DType::Q6_K: dequantize_block_q6_k(ib, yb); break;
            default: break;
        }
    }
}

static void block_row(const Mat& W, int r, float* out) {
    std::vector<uint8_t> tmp;  // for a packed row: unpacked into it (quants.h:file_row)
    dequantize_row(W.dtype, file_row(W, r, tmp), W.cols, out);
}

Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage) {
    if (W.cols % Q8_BLOCK != 0) fail("quantize_q8_0: %d columns is not a multiple of 32", W.cols);
    size_t row_bytes = (size_t)W.cols / Q8_BLOCK * Q8_BLOCK_BYTES;
    storage.resize(W.rows * row_bytes);
    #pragma omp parallel
    {
        std::vector<float> row(W.cols);
        #pragma omp for schedule(static)
        for (int r = 0; r < W.rows; r++) {
            mat_row_to_f32(W, r, row.data());
            quantize_row_q8_0(row.data(), W.cols, &storage[r * row_bytes]);
        }
    }
    Mat q = W;
    q.dtype = DType::Q8_0;
    q.data = storage.data();
    return q;
}

Mat quantize_mat(const Mat& W, DType to, std::vector<uint8_t>& storage) {
    int block = dtype_block_size(to);
    if (W.cols % block) fail("%s: a row of %d weights is not a multiple of the block of %d", format(to).name, W.cols, block);
    size_t rb = dtype_row_bytes(to, W.cols);
    storage.resize((size_t)W.rows * rb);
    #pragma omp parallel
    {
        std::vector<float> row(W.cols);
        #pragma omp for schedule(static)
        for (int r = 0; r < W.rows; r++) {
            mat_row_to_f32(W, r, row.data());
            quantize_row(to, row.data(), W.cols, &storage[(size_t)r * rb]);
        }
    }
    Mat q = W;
    q.dtype = to;
    q.data = storage.data();
    return q;
}

// ---------------------------------------------------------------------------
// The reference product: each row dequantized with the function above, the
// dot product summed in double.
void matmul_quant_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    std::vector<float> w(W.cols);
    std::vector<uint8_t> tmp;
    for (int r = 0; r < W.rows; r++) {
        dequantize_row(W.dtype, file_row(W, r, tmp), W.cols, w.data());
        for (int t = 0; t < T; t++) {
            const float* xt = x + (size_t)t * W.cols;
            double sum = bias ? bias[r] : 0.0;
            for (int c = 0; c < W.cols; c++) sum += (double)w[c] * xt[c];
            out[(size_t)t * W.rows + r] = (float)sum;
        }
    }
}

// ---------------------------------------------------------------------------
// The integer product: what the fast kernels compute (quants_fast.cpp), in
// loops a reader can follow. It DEFINES their summation order; every SIMD
// twin gives these bits.
//
// The activations come as Q8_0 blocks of 32 (quantize_row_q8_0:
// int8 codes x_i and one f16 scale dx per block). Each 32 weights of a row,
// whatever their format, line up with one activation block, and are seen as
//   w_i = scale * mul * (q_i - offset) + min
// with q_i the code as stored (unsigned, 4 to 6 bits), `offset` the centre
// of the symmetric formats, `mul` Q6_K's int8 sub-block scale (one per 16
// weights), `scale` and `min` floats. The dot product of block b is then
//   scale * dx * sum mul * (q_i - offset) * x_i  +  min * dx * sum x_i
// and the two sums are integers, computed exactly, four products at a time
// (one int32 lane of vpdpbusd or pmaddubsw + pmaddwd). Per block b, lane
// j = 0..7 covers weights 4j..4j+3:
//   p_j  = sum q_i * x_i            xs_j = sum x_i
//   s_j  = mul * (p_j - offset * xs_j)                       (exact int32)
//   l    = fma((float)s_j, scale * dx, l)
//   l    = fma((float)xs_j, min * dx, l)     (formats with a min only)
// into the float lane l = acc[j + 8 * (b mod 2)] — the lanes and the final
// fold of the Q8_0 order (kernels_fast.cpp). Every integer is far below
// 2^24, so each (float) conversion is exact.
struct IntBlock {
    uint8_t q[32];  // the codes as stored: 0..15, 0..31 or 0..63 (Q8_0: 0..255)
    int offset;     // 8 (Q4_0), 16 (Q5_0), 32 (Q6_K), 128 (Q8_0), else 0
    int mul[2];     // Q6_K: the int8 scales of weights 0..15 and 16..31; else 1
    float scale;    // d; d * sc_j for the 32 weights of Q4_K/Q5_K sub-block j
    float min;      // m (Q4_1, Q5_1), -(dmin * mn_j) (Q4_K, Q5_K), else 0
    bool has_min;
};

// Block b (weights 32b .. 32b+31) of a row of type t, unpacked to codes.
// The bit positions are those of the dequantize functions above.
static IntBlock int_block(DType t, const uint8_t* row, int b) {
    IntBlock k{};
    k.mul[0] = k.mul[1] = 1;
    if (t == DType::Q8_0) {  // int8 codes c stored as c + 128, so that they are unsigned too
        const uint8_t* in = row + (size_t)b * Q8_BLOCK_BYTES;
        k.scale = load_f16(in);
        for (int i = 0; i < 32; i++) k.q[i] = (uint8_t)(in[2 + i] ^ 0x80);
        k.offset = 128;
        return k;
    }
    if (dtype_block_size(t) == 32) {
        const uint8_t* in = row + (size_t)b * dtype_block_bytes(t);
        bool with_min = t == DType::Q4_1 || t == DType::Q5_1, five = t == DType::Q5_0 || t == DType::Q5_1;
        k.scale = load_f16(in);
        const uint8_t* p = in + 2;
        if (with_min) k.min = load_f16(p), k.has_min = true, p += 2;
        uint32_t qh = 0;
        if (five) std::memcpy(&qh, p, 4), p += 4;
        for (int i = 0; i < 32; i++) {
            int q = i < 16 ? p[i] & 15 : p[i - 16] >> 4;
            k.q[i] = (uint8_t)(q | (five ? ((qh >> i) & 1) << 4 : 0));
        }
        k.offset = with_min ? 0 : five ? 16 : 8;
        return k;
    }
    const uint8_t* in = row + (size_t)(b / 8) * dtype_block_bytes(t);
    int j = b % 8;  // the sub-block of 32 inside the super-block of 256
    if (t == DType::Q6_K) {
        const int8_t* sc = (const int8_t*)(in + 192);
        k.scale = load_f16(in + 208);
        k.offset = 32;
        for (int i = 0; i < 32; i++) {
            int w = 32 * j + i, h = w / 128, kk = (w % 128) / 32;
            int q = (in[q6_low_byte(w)] >> q6_low_shift(w)) & 15;
            k.q[i] = (uint8_t)(q | ((in[128 + 32 * h + i] >> (2 * kk)) & 3) << 4);
        }
        k.mul[0] = sc[2 * j];
        k.mul[1] = sc[2 * j + 1];
        return k;
    }
    // Q4_K, Q5_K
    int sc, mn;
    kscale_get(in + 4, j, sc, mn);
    k.scale = load_f16(in) * (float)sc;
    k.min = -(load_f16(in + 2) * (float)mn);
    k.has_min = true;
    const uint8_t* qs = in + (t == DType::Q5_K ? 48 : 16);
    for (int i = 0; i < 32; i++) {
        uint8_t byte = qs[32 * (j / 2) + i];
        int q = j % 2 == 0 ? byte & 15 : byte >> 4;
        if (t == DType::Q5_K) q |= ((in[16 + i] >> j) & 1) << 4;
        k.q[i] = (uint8_t)q;
    }
    return k;
}

float dot_quant_q8(DType t, const uint8_t* w, const uint8_t* xq, int cols) {
    float acc[16] = {0};
    for (int b = 0; b < cols / 32; b++) {
        IntBlock k = int_block(t, w, b);
        const uint8_t* xb = xq + (size_t)b * Q8_BLOCK_BYTES;
        float dx = load_f16(xb);
        const int8_t* x = (const int8_t*)(xb + 2);
        for (int j = 0; j < 8; j++) {
            int p = 0, xs = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++) p += k.q[i] * x[i], xs += x[i];
            int s = k.mul[j / 4] * (p - k.offset * xs);
            float& l = acc[j + 8 * (b % 2)];
            l = std::fma((float)s, k.scale * dx, l);
            if (k.has_min) l = std::fma((float)xs, k.min * dx, l);
        }
    }
    float u[8];
    for (int j = 0; j < 8; j++) u[j] = acc[j] + acc[j + 8];
    return ((u[0] + u[4]) + (u[2] + u[6])) + ((u[1] + u[5]) + (u[3] + u[7]));
}
