// chapters/q4/checker.cpp — the student's Q4_0 and Q4_K decoders against the engine's.
//
// 1. the book's two blocks; 2. Q4_0 edge cases and random blocks; 3. Q4_K:
// every sub-block's 6-bit scale and minimum, edge cases, random super-blocks;
// 4. whole rows through quants.cpp:dequantize_row; 5. the engine: models/tiny
// quantized to Q4_0 and generating, and a Q4_K matrix product (the tiny
// model's rows of 64 are too short for a super-block of 256).
#include "../checker_common.h"
#include "gguf/gguf_load.h"  // quantize_model
#include "gguf/quants.h"

void dequantize_block_q4_0_reference(const uint8_t* in, float* y);
void dequantize_block_q4_0_student(const uint8_t* in, float* y);
void dequantize_block_q4_k_reference(const uint8_t* in, float* y);
void dequantize_block_q4_k_student(const uint8_t* in, float* y);

// The engine's calls land here.
void dequantize_block_q4_0(const uint8_t* in, float* y) {
    if (g_side == Side::Reference) dequantize_block_q4_0_reference(in, y);
    else dequantize_block_q4_0_student(in, y);
}
void dequantize_block_q4_k(const uint8_t* in, float* y) {
    if (g_side == Side::Reference) dequantize_block_q4_k_reference(in, y);
    else dequantize_block_q4_k_student(in, y);
}

// Outputs are compared within this relative tolerance: (d * sc) * q - dmin * m
// may be computed with or without a fused multiply-add.
static const double RTOL = 1e-6;
// What the student's output starts as: an element still holding it was never written.
static const float UNWRITTEN = -12345.678f;

static void put_half(uint8_t* p, float v) {
    uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
}
static float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_to_f32(h);
}
static std::string hex(const uint8_t* p, int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += fmt("%02x%s", p[i], i + 1 < n ? " " : "");
    return s;
}

// ---------------------------------------------------------------------------
// Usual mistakes, decoded on purpose: when the student's output equals one
// of these on the failing block, the hint names that mistake.

struct Slip {
    const char *hint, *hint_zh;  // English, Chinese (tr)
    void (*decode)(const uint8_t* in, float* y);
};

static void q4_0_neighbours(const uint8_t* in, float* y) {
    float d = half_at(in);
    for (int j = 0; j < 16; j++) y[2 * j] = d * ((in[2 + j] & 15) - 8), y[2 * j + 1] = d * ((in[2 + j] >> 4) - 8);
}
static void q4_0_halves_swapped(const uint8_t* in, float* y) {
    float d = half_at(in);
    for (int j = 0; j < 16; j++) y[j] = d * ((in[2 + j] >> 4) - 8), y[j + 16] = d * ((in[2 + j] & 15) - 8);
}
static void q4_0_no_offset(const uint8_t* in, float* y) {
    float d = half_at(in);
    for (int j = 0; j < 16; j++) y[j] = d * (in[2 + j] & 15), y[j + 16] = d * (in[2 + j] >> 4);
}
static void q4_0_signed_nibble(const uint8_t* in, float* y) {
    float d = half_at(in);
    auto s4 = [](int q) { return q >= 8 ? q - 16 : q; };
    for (int j = 0; j < 16; j++) y[j] = d * s4(in[2 + j] & 15), y[j + 16] = d * s4(in[2 + j] >> 4);
}
static const Slip Q4_0_SLIPS[] = {
    {"you read the codes as neighbours (2j, 2j+1). In Q4_0, byte 2 + j holds weight j (low 4 bits) and weight "
     "j + 16 (high 4 bits): the first 16 weights are all the low halves.",
     "你把编码当成了相邻的一对 (2j, 2j+1) 来读。在 Q4_0 里，第 2 + j 个字节存的是权重 j（低 4 位）和权重 "
     "j + 16（高 4 位）：前 16 个权重全在低半字节里。",
     q4_0_neighbours},
    {"low and high halves are swapped: weight j is the LOW 4 bits of byte 2 + j (in & 15), weight j + 16 the high "
     "4 bits (in >> 4).",
     "低半字节和高半字节弄反了：权重 j 是第 2 + j 个字节的低 4 位（in & 15），权重 j + 16 是高 4 位（in >> 4）。",
     q4_0_halves_swapped},
    {"subtract 8 from every code: q runs 0..15 and stands for -8..7, so y = d * (q - 8).",
     "每个编码都要减 8：q 的范围是 0..15，代表 -8..7，所以 y = d * (q - 8)。", q4_0_no_offset},
    {"the code is an unsigned 0..15 minus 8, not a signed 4-bit number: code 9 is +1, code 0 is -8.",
     "编码是无符号的 0..15 减去 8，而不是有符号的 4 位数：编码 9 是 +1，编码 0 是 -8。",
     q4_0_signed_nibble},
};

// Q4_K with one mistake switched on.
struct KWay {
    bool add_min = false, no_top_bits = false, top_bits_swapped = false, low_bits_swapped = false,
         q4_0_layout = false, halves_swapped = false, min_with_d = false;
};
static void q4_k_decode(const uint8_t* in, float* y, KWay w) {
    float d = half_at(in), dmin = half_at(in + 2);
    const uint8_t* s = in + 4;
    const uint8_t* qs = in + 16;
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        if (j < 4) sc = s[j] & 63, mn = s[j + 4] & 63;
        else {
            int lo_sc = w.low_bits_swapped ? s[j + 4] >> 4 : s[j + 4] & 15;
            int lo_mn = w.low_bits_swapped ? s[j + 4] & 15 : s[j + 4] >> 4;
            int hi_sc = w.top_bits_swapped ? s[j] >> 6 : s[j - 4] >> 6;
            int hi_mn = w.top_bits_swapped ? s[j - 4] >> 6 : s[j] >> 6;
            sc = lo_sc | (w.no_top_bits ? 0 : hi_sc << 4);
            mn = lo_mn | (w.no_top_bits ? 0 : hi_mn << 4);
        }
        float scale = d * (float)sc, minimum = (w.min_with_d ? d : dmin) * (float)mn;
        for (int i = 0; i < 32; i++) {
            int q;
            if (w.q4_0_layout) q = i < 16 ? qs[16 * j + i] & 15 : qs[16 * j + i - 16] >> 4;
            else {
                uint8_t b = qs[32 * (j / 2) + i];
                q = (j % 2 == 0) != w.halves_swapped ? b & 15 : b >> 4;
            }
            y[32 * j + i] = w.add_min ? scale * (float)q + minimum : scale * (float)q - minimum;
        }
    }
}
#define K_SLIP(field) [](const uint8_t* in, float* y) { KWay w; w.field = true; q4_k_decode(in, y, w); }
static const Slip Q4_K_SLIPS[] = {
    {"the minimum is subtracted: y = (d * sc_j) * q - (dmin * m_j).", "最小值是减去的：y = (d * sc_j) * q - (dmin * m_j)。",
     K_SLIP(add_min)},
    {"sub-blocks 4..7 have 6-bit scales and minimums too: their top 2 bits are the top bits of s[j - 4] (for "
     "sc_j) and s[j] (for m_j), shifted left by 4.",
     "子块 4..7 的缩放因子和最小值也是 6 位的：它们的最高 2 位来自 s[j - 4]（sc_j 的）和 s[j]（m_j 的）的最高位，"
     "左移 4 位。",
     K_SLIP(no_top_bits)},
    {"the top 2 bits of sc_j (j >= 4) come from s[j - 4], those of m_j from s[j]: you took them the other way round.",
     "sc_j（j >= 4）的最高 2 位来自 s[j - 4]，m_j 的来自 s[j]：你取反了。",
     K_SLIP(top_bits_swapped)},
    {"in s[j + 4] (j >= 4) the LOW nibble is sc_j's low bits and the high nibble m_j's.",
     "在 s[j + 4]（j >= 4）里，低半字节是 sc_j 的低位，高半字节是 m_j 的低位。", K_SLIP(low_bits_swapped)},
    {"Q4_K does not lay out its codes like Q4_0: sub-blocks 2c and 2c + 1 share the 32 bytes qs[32c .. 32c + 31], "
     "sub-block 2c in the low halves, 2c + 1 in the high halves.",
     "Q4_K 的编码排法和 Q4_0 不一样：子块 2c 和 2c + 1 共用 32 个字节 qs[32c .. 32c + 31]，"
     "子块 2c 在低半字节里，2c + 1 在高半字节里。",
     K_SLIP(q4_0_layout)},
    {"even sub-blocks (0, 2, 4, 6) are the LOW halves of their 32 bytes, odd ones the high halves.",
     "偶数子块（0、2、4、6）在它们那 32 个字节的低半字节里，奇数子块在高半字节里。",
     K_SLIP(halves_swapped)},
    {"the minimums are scaled by dmin (bytes 2-3), the scales by d (bytes 0-1).",
     "最小值乘的是 dmin（第 2-3 字节），缩放因子乘的是 d（第 0-1 字节）。", K_SLIP(min_with_d)},
};

// Which usual mistake, if any, gives exactly the student's output on this block.
static std::string diagnose(const uint8_t* in, const float* want, const float* got, int n, const Slip* slips,
                            int n_slips, const std::string& fallback) {
    for (int i = 0; i < n; i++)
        if (got[i] == UNWRITTEN)
            return fmt(tr("y[%d] was never written: every one of the %d outputs must be set.",
                          "y[%d] 从来没有被写过：%d 个输出中的每一个都必须赋值。"), i, n);
    std::vector<float> y(n);
    for (int k = 0; k < n_slips; k++) {
        slips[k].decode(in, y.data());
        if (compare(want, y.data(), n, RTOL).empty()) continue;  // this block cannot tell that mistake apart
        if (compare(y.data(), got, n, RTOL).empty()) return tr(slips[k].hint, slips[k].hint_zh);
    }
    return fallback;
}

// One block (Q4_0: 18 bytes -> 32 floats; Q4_K: 144 -> 256), both sides.
static bool run_block(Group& g, const std::string& name, bool k, const uint8_t* in) {
    int n = k ? 256 : 32;
    g.start(name);
    std::vector<float> want(n), got(n, UNWRITTEN);
    (k ? dequantize_block_q4_k_reference : dequantize_block_q4_0_reference)(in, want.data());
    (k ? dequantize_block_q4_k_student : dequantize_block_q4_0_student)(in, got.data());
    std::string diff = compare(want, got, RTOL);
    if (diff.empty()) return true;
    std::string detail = fmt("d = %g", half_at(in));
    if (k) {
        detail += fmt(tr(", dmin = %g; sc_j, m_j =", "，dmin = %g；sc_j, m_j ="), half_at(in + 2));
        for (int j = 0; j < 8; j++) {  // the (sc_j, m_j) the block holds, for the student to compare by hand
            int sc, mn;
            const uint8_t* s = in + 4;
            if (j < 4) sc = s[j] & 63, mn = s[j + 4] & 63;
            else sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
            detail += fmt(" (%d, %d)", sc, mn);
        }
        detail += tr("\nbytes 4-15: ", "\n第 4-15 字节：") + hex(in + 4, 12);
    } else {
        detail += tr("\nbytes 2-17: ", "\n第 2-17 字节：") + hex(in + 2, 16);
    }
    std::string hint =
        k ? diagnose(in, want.data(), got.data(), n, Q4_K_SLIPS, (int)(sizeof Q4_K_SLIPS / sizeof *Q4_K_SLIPS),
                     tr("weight 32 * j + i = (d * sc_j) * q - (dmin * m_j); check sc_j and m_j for each j by hand first.",
                        "权重 32 * j + i = (d * sc_j) * q - (dmin * m_j)；先对每个 j 手算核对 sc_j 和 m_j。"))
          : diagnose(in, want.data(), got.data(), n, Q4_0_SLIPS, (int)(sizeof Q4_0_SLIPS / sizeof *Q4_0_SLIPS),
                     tr("y[i] = d * (q_i - 8), d the half in bytes 0-1.", "y[i] = d * (q_i - 8)，d 是第 0-1 字节里的 half。"));
    g.fail(detail + "\n" + diff, hint);
    return false;
}

// Random bytes, with finite scales.
static void random_block(uint8_t* in, int bytes, bool k) {
    for (int i = 0; i < bytes; i++) in[i] = (uint8_t)rand_int(0, 255);
    put_half(in, uniform(-2.0f, 2.0f) * std::pow(10.0f, (float)rand_int(-4, 1)));
    if (k) put_half(in, std::fabs(half_at(in))), put_half(in + 2, uniform(0.0f, 1.0f) * std::pow(10.0f, (float)rand_int(-4, 0)));
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "q4",
                  "a Q4_0 block (32 weights in 18 bytes) and a Q4_K super-block (256 in 144)",
                  "一个 Q4_0 块（18 个字节存 32 个权重）和一个 Q4_K 超级块（144 个字节存 256 个）");

    // ---- 1. The book's blocks.
    Group book(tr("the book's blocks", "书中的块"));
    uint8_t q4[18], k[144];
    put_half(q4, 0.5f);
    for (int j = 0; j < 16; j++) q4[2 + j] = (uint8_t)(j | (15 - j) << 4);
    q4[2 + 3] = 0xC3;
    run_block(book, tr("Q4_0: d = 0.5, byte 2 + 3 = 0xC3: y[3] = -2.5, y[19] = 2", "Q4_0：d = 0.5，第 2 + 3 个字节 = 0xC3：y[3] = -2.5，y[19] = 2"),
              false, q4);
    std::memset(k, 0, sizeof k);
    put_half(k, 1.0f);
    put_half(k + 2, 0.25f);
    k[4 + 0] = 2, k[4 + 4] = 4;  // sub-block 0: sc = 2, m = 4
    k[4 + 1] = (uint8_t)((37 >> 4) << 6), k[4 + 5] = (uint8_t)((50 >> 4) << 6);  // sub-block 5's top bits
    k[4 + 9] = (uint8_t)((37 & 15) | (50 & 15) << 4);                          // and its low bits
    k[16 + 0] = 7;              // weight 0 (sub-block 0): code 7 -> 2 * 7 - 1 = 13
    k[16 + 64 + 3] = 9 << 4;    // weight 32 * 5 + 3: code 9 -> 37 * 9 - 12.5 = 320.5
    run_block(book, tr("Q4_K: d = 1, dmin = 0.25, sub-block 5: sc = 37, m = 50, code 9 -> 320.5",
                       "Q4_K：d = 1，dmin = 0.25，子块 5：sc = 37，m = 50，编码 9 -> 320.5"),
              true, k);
    book.end();

    // ---- 2. Q4_0.
    Group e0(tr("Q4_0 edge cases", "Q4_0 的边界情况"));
    {
        uint8_t b[18];
        put_half(b, 1.0f);
        for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(j | (15 - j) << 4);
        run_block(e0, tr("d = 1, codes 0..15 in the low halves, 15..0 in the high halves", "d = 1，低半字节是编码 0..15，高半字节是 15..0"),
                  false, b);
        put_half(b, -0.75f);
        run_block(e0, tr("a negative d (the extreme weight was positive)", "负的 d（绝对值最大的权重是正的）"), false, b);
        put_half(b, 0.0f);
        run_block(e0, tr("d = 0: every weight 0", "d = 0：每个权重都是 0"), false, b);
        put_half(b, 65504.0f);
        run_block(e0, tr("d = 65504, the largest half", "d = 65504，最大的 half"), false, b);
        uint16_t tiny = 1;  // the smallest subnormal half, 2^-24
        std::memcpy(b, &tiny, 2);
        run_block(e0, tr("d = 2^-24, a subnormal half", "d = 2^-24，一个次正规 half"), false, b);
        put_half(b, 0.125f);
        for (int j = 0; j < 16; j++) b[2 + j] = 0x88;
        run_block(e0, tr("every code 8: every weight 0", "每个编码都是 8：每个权重都是 0"), false, b);
        for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(rand_int(0, 15) | rand_int(0, 15) << 4);
        b[2 + 5] = 0x09;  // weight 5 is +1 step, weight 21 is -8 steps
        run_block(e0, tr("mixed codes, byte 2 + 5 = 0x09", "混合的编码，第 2 + 5 个字节 = 0x09"), false, b);
    }
    e0.end();
    Group r0(tr("Q4_0 random blocks", "Q4_0 随机块"));
    for (int c = 0; c < 40; c++) {
        uint8_t b[18];
        random_block(b, 18, false);
        if (!run_block(r0, fmt(tr("random block %d", "随机块 %d"), c), false, b)) break;
    }
    r0.end();

    // ---- 3. Q4_K.
    Group e1(tr("Q4_K: every sub-block's scale and minimum", "Q4_K：每个子块的缩放因子和最小值"));
    for (int j = 0; j < 8; j++) {
        uint8_t b[144] = {};
        put_half(b, 0.5f);
        put_half(b + 2, 0.125f);
        int sc[8], mn[8];
        for (int i = 0; i < 8; i++) sc[i] = 1, mn[i] = 1;
        sc[j] = 48 + j, mn[j] = 63 - j;  // top bits set: they must come from the right bytes
        uint8_t* s = b + 4;
        for (int i = 0; i < 4; i++) {
            s[i] = (uint8_t)(sc[i] | (sc[i + 4] >> 4) << 6);
            s[i + 4] = (uint8_t)(mn[i] | (mn[i + 4] >> 4) << 6);
            s[i + 8] = (uint8_t)((sc[i + 4] & 15) | (mn[i + 4] & 15) << 4);
        }
        for (int i = 0; i < 128; i++) b[16 + i] = (uint8_t)((i * 7) & 255);
        if (!run_block(e1, fmt(tr("sub-block %d: sc = %d, m = %d (the others 1, 1)", "子块 %d：sc = %d，m = %d（其余为 1, 1）"), j, sc[j], mn[j]),
                       true, b))
            break;
    }
    e1.end();
    Group e2(tr("Q4_K edge cases", "Q4_K 的边界情况"));
    {
        uint8_t b[144];
        random_block(b, 144, true);
        put_half(b + 2, 0.0f);
        run_block(e2, tr("dmin = 0: no minimum", "dmin = 0：没有最小值"), true, b);
        random_block(b, 144, true);
        put_half(b, 0.0f);
        run_block(e2, tr("d = 0: every weight is -dmin * m_j", "d = 0：每个权重都是 -dmin * m_j"), true, b);
        random_block(b, 144, true);
        for (int i = 4; i < 16; i++) b[i] = 0xff;
        run_block(e2, tr("every sc_j and m_j = 63", "所有 sc_j 和 m_j 都是 63"), true, b);
        for (int i = 16; i < 144; i++) b[i] = (uint8_t)(i & 1 ? 0xf0 : 0x0f);
        run_block(e2, tr("codes alternating 15 and 0 between bytes", "编码在字节之间交替为 15 和 0"), true, b);
    }
    e2.end();
    Group r1(tr("Q4_K random super-blocks", "Q4_K 随机超级块"));
    for (int c = 0; c < 40; c++) {
        uint8_t b[144];
        random_block(b, 144, true);
        if (!run_block(r1, fmt(tr("random super-block %d", "随机超级块 %d"), c), true, b)) break;
    }
    r1.end();

    // ---- 4. Rows: the engine's dequantize_row calls the block functions
    // once per block, each at its own place in the row.
    Group rows(tr("whole rows through quants.cpp:dequantize_row", "经过 quants.cpp:dequantize_row 的整行"));
    for (DType t : {DType::Q4_0, DType::Q4_K}) {
        int n = 4864, bytes = (int)dtype_row_bytes(t, n);  // 152 blocks of 32, 19 of 256
        std::vector<float> x = gaussians(n, 0.05f), want(n), got(n, UNWRITTEN);
        std::vector<uint8_t> q(bytes);
        quantize_row(t, x.data(), n, q.data());
        rows.start(fmt(tr("%s: a row of %d weights quantized by the engine", "%s：由引擎量化的一行 %d 个权重"), dtype_name(t), n));
        g_side = Side::Reference;
        dequantize_row(t, q.data(), n, want.data());
        g_side = Side::Student;
        dequantize_row(t, q.data(), n, got.data());
        std::string diff = compare(want, got, RTOL);
        if (!diff.empty())
            rows.fail(diff, tr("the blocks above pass but a row does not? Fix the failures above first.",
                               "上面的块都通过了，一整行却不行？先修好上面的失败。"));
    }
    rows.end();

    // ---- 5. The engine.
    Group e2e(tr("end to end: models/tiny quantized to Q4_0 (its logits), and a Q4_K matrix product",
                 "端到端：量化成 Q4_0 的 models/tiny（比较它的 logit），以及一次 Q4_K 矩阵乘法"), 2);
    // The plain kernels: they unpack every row with the block functions. The
    // fast ones multiply the packed codes directly and never call them.
    kernels_init(KernelSet::Plain, 1);
    Model m;
    Tokenizer tok;
    g_side = Side::Reference;
    if (load_tiny(e2e, m, tok)) {
        quantize_model(m, DType::Q4_0);  // the quantizer is the engine's; your decoder reads what it wrote
        check_forward(e2e, m, tokenizer_encode(tok, "Four bits per weight, and one scale per block."), 8, 1e-4);
    }
    {
        int rows_n = 24, cols = 512, T = 3;
        Mat w32{DType::F32, rows_n, cols, nullptr};
        std::vector<float> wf = gaussians(rows_n * cols, 0.05f), x = gaussians(T * cols);
        w32.data = wf.data();
        std::vector<uint8_t> storage;
        Mat w = quantize_mat(w32, DType::Q4_K, storage);
        e2e.start(fmt(tr("a %dx%d Q4_K matrix times %d tokens, plain kernel", "一个 %dx%d 的 Q4_K 矩阵乘以 %d 个词元，plain 核函数"),
                      rows_n, cols, T));
        std::vector<float> want(T * rows_n), got(T * rows_n);
        for (int side = 0; side < 2; side++) {
            g_side = side == 0 ? Side::Reference : Side::Student;
            matmul_quant_plain(side == 0 ? want.data() : got.data(), x.data(), w, nullptr, T);
        }
        g_side = Side::Student;
        std::string diff = compare(want, got, 1e-5);
        if (!diff.empty())
            e2e.fail(tr("the products differ: ", "乘积不同：") + diff, g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。") : "");
    }
    e2e.end();
    return finish("q4");
}
