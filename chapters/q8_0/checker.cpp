// chapters/q8_0/checker.cpp — the student's quantize_row_q8_0 against the engine's.
//
// 1. the book's block; 2. edge cases: zeros, a negative maximum, halves to
// round, the scale's half-precision rounding, several blocks; 3. random rows;
// 4. the whole model: models/tiny quantized by each version (the same bytes),
// then logits with the fast Q8_0 matmul, which quantizes every activation
// row with this function too.
#include "../checker_common.h"
#include "gguf/gguf_load.h"  // quantize_model

void quantize_row_q8_0_reference(const float* x, int n, uint8_t* out);
void quantize_row_q8_0_student(const float* x, int n, uint8_t* out);

// The engine's calls land here.
void quantize_row_q8_0(const float* x, int n, uint8_t* out) {
    if (g_side == Side::Reference) quantize_row_q8_0_reference(x, n, out);
    else quantize_row_q8_0_student(x, n, out);
}

// One block as a person reads it: the scale and the 32 integers.
static std::string block_text(const uint8_t* b) {
    uint16_t h;
    std::memcpy(&h, b, 2);
    std::string s = fmt(tr("d = %.6g (half 0x%04x), q =", "d = %.6g（half 0x%04x），q ="), f16_to_f32(h), h);
    for (int j = 0; j < Q8_BLOCK; j++) s += fmt(" %d", (int)(int8_t)b[2 + j]);
    return s;
}

// What a wrong block most often means, from the bytes.
static std::string diagnose(const float* xb, const uint8_t* want, const uint8_t* got) {
    uint16_t hw, hg;
    std::memcpy(&hw, want, 2);
    std::memcpy(&hg, got, 2);
    float dw = f16_to_f32(hw), dg = f16_to_f32(hg);
    bool all_zero = true;
    for (int i = 0; i < Q8_BLOCK_BYTES; i++) all_zero = all_zero && got[i] == 0;
    if (all_zero && dw != 0) return tr("every byte is 0: is it still the stub?", "每个字节都是 0：是不是还是桩函数？");
    if (dw == 0 && hg != hw)
        return tr("an all-zero block has d = 0 and q = 0; dividing by d gives NaN: use 1/d only when d > 0.",
                  "全为 0 的块 d = 0、q = 0；除以 d 会得到 NaN：只在 d > 0 时才用 1/d。");
    float amax = 0;
    for (int j = 0; j < Q8_BLOCK; j++) amax = std::fmax(amax, std::fabs(xb[j]));
    if (hg != hw && std::fabs(dg - amax / 128.0f) < std::fabs(dg - amax / 127.0f))
        return tr("the scale is max|x| / 128? It is max|x| / 127, so that the largest value becomes exactly +-127.",
                  "缩放因子用了 max|x| / 128？应该是 max|x| / 127，这样绝对值最大的那个值正好变成 +-127。");
    if (hg != hw && std::fabs(dg - amax / 127.0f) / (amax / 127.0f) > 0.01f)
        return tr("the scale is d = max|x[j]| / 127, with the absolute value (the maximum may be negative).",
                  "缩放因子是 d = max|x[j]| / 127，要取绝对值（最大的那个可能是负数）。");
    if (hg != hw)
        return tr("the scale is stored as an IEEE half: f32_to_f16(d), its two bytes first.",
                  "缩放因子存成 IEEE half：f32_to_f16(d)，这两个字节放在最前面。");
    int off_by_one = 0, other = 0;
    for (int j = 0; j < Q8_BLOCK; j++) {
        int d = (int)(int8_t)got[2 + j] - (int)(int8_t)want[2 + j];
        if (d == 1 || d == -1) off_by_one++;
        else if (d) other++;
    }
    if (off_by_one && !other)
        return tr("some q differ by 1: the rounding. Round to nearest with halves away from zero (std::lround); "
                  "truncation ((int)x) or round-half-to-even (rint, nearbyint) give other bytes. And divide by the "
                  "float d before it was rounded to half, as x * (1/d).",
                  "有些 q 差了 1：是舍入的问题。要四舍五入到最近的整数，正好一半时远离 0（std::lround）；"
                  "截断（(int)x）或一半时取偶（rint、nearbyint）得到的字节不一样。还有，要除以舍入成 half 之前的 "
                  "float d，写成 x * (1/d)。");
    return tr("q[j] = round(x[j] / d) as a signed byte; the 32 bytes follow the 2 of the scale.",
              "q[j] = round(x[j] / d)，存成有符号字节；这 32 个字节跟在缩放因子的 2 个字节后面。");  // run_case knows this one by its start, "q[j]", in both
}

static void run_case(Group& g, const std::string& name, const std::vector<float>& x, const std::string& hint = "") {
    int n = (int)x.size(), nb = n / Q8_BLOCK;
    g.start(fmt(tr("%s (n=%d, %d block%s)", "%s（n=%d，%d 个块%s）"), name.c_str(), n, nb, nb == 1 ? "" : tr("s", "")));
    std::vector<uint8_t> want((size_t)nb * Q8_BLOCK_BYTES), got(want.size(), 0xAB);
    quantize_row_q8_0_reference(x.data(), n, want.data());
    quantize_row_q8_0_student(x.data(), n, got.data());
    for (int b = 0; b < nb; b++) {
        const uint8_t *w = &want[(size_t)b * Q8_BLOCK_BYTES], *o = &got[(size_t)b * Q8_BLOCK_BYTES];
        if (std::memcmp(w, o, Q8_BLOCK_BYTES) != 0) {
            std::string why = diagnose(&x[(size_t)b * Q8_BLOCK], w, o);
            return g.fail(fmt(tr("block %d, x = ", "第 %d 块，x = "), b) + show(&x[(size_t)b * Q8_BLOCK], Q8_BLOCK, 0, 8) +
                              tr("\nexpected ", "\n应为：") + block_text(w) + tr("\ngot      ", "\n实际：") + block_text(o),
                          !hint.empty() && why.rfind("q[j]", 0) == 0 ? hint : why);
        }
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "q8_0",
                  "32 floats -> one f16 scale d = max|x|/127 and 32 int8 round(x/d)",
                  "32 个 float -> 一个 f16 缩放因子 d = max|x|/127 和 32 个 int8 round(x/d)");

    Group book(tr("the book's block", "书中的块"));
    {
        std::vector<float> x(32);
        for (int j = 0; j < 32; j++) x[j] = (j - 16) / 8.0f;  // -2 .. 1.875: max |x| = 2
        run_case(book, "x[j] = (j - 16) / 8: d = 2/127, q[0] = -127, q[16] = 0", x);
    }
    book.end();

    Group edge(tr("edge cases", "边界情况"));
    run_case(edge, tr("all zeros", "全为 0"), std::vector<float>(32, 0.0f));
    {
        std::vector<float> x = gaussians(32, 0.1f);
        x[7] = -3.0f;
        run_case(edge, tr("the largest value is negative", "绝对值最大的值是负数"), x);
    }
    {
        // d = 1 exactly (127 / 127), so x * (1/d) = x: halves stay halves.
        std::vector<float> x = {127, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, 3.5f, -3.5f};
        x.resize(32, 0.25f);
        run_case(edge, tr("halves: 2.5, -2.5, 0.5, 1.5, 3.5 with d = 1", "正好一半：2.5、-2.5、0.5、1.5、3.5，d = 1"), x,
                 tr("2.5 rounds to 3 and -2.5 to -3: halves away from zero (std::lround).",
                    "2.5 舍入成 3，-2.5 舍入成 -3：正好一半时远离 0（std::lround）。"));
    }
    {
        std::vector<float> x = gaussians(32, 1.0f);
        x[3] = 1.0f / 3.0f * 127.0f * 1.001f;  // a d that is not exact in half precision
        run_case(edge, tr("a scale that half precision rounds", "一个会被半精度舍入的缩放因子"), x);
    }
    {
        std::vector<float> x = gaussians(96, 1.0f);
        for (int j = 32; j < 64; j++) x[j] *= 1e-3f;  // the blocks have their own scales
        run_case(edge, tr("three blocks with different scales", "缩放因子各不相同的三个块"), x,
                 tr("each block of 32 has its own maximum and scale: start again for every block.",
                    "每 32 个一块，各有自己的最大值和缩放因子：每一块都要重新算。"));
    }
    run_case(edge, tr("one huge value (1e4) among small ones", "一堆小值中有一个极大的值（1e4）"), [] {
        std::vector<float> x = gaussians(32, 1e-3f);
        x[31] = 1e4f;
        return x;
    }());
    edge.end();

    Group rnd(tr("random rows", "随机的行"));
    for (int n : {32, 64, 896, 4864})
        for (float sd : {1e-3f, 0.05f, 3.0f}) run_case(rnd, fmt("x ~ N(0, %g^2)", sd), gaussians(n, sd));
    rnd.end();

    Group e2e(tr("end to end: models/tiny quantized by each version, then its logits", "端到端：两个版本各自量化 models/tiny，再比较 logit"), 2);
    Model mref, mstu;
    Tokenizer tok;
    kernels_init(KernelSet::Fast, 1);
    g_side = Side::Reference;
    if (load_tiny(e2e, mref, tok)) {
        g_side = Side::Student;
        load_tiny(e2e, mstu, tok);
        e2e.start(tr("quantize_model: every Q8_0 byte of every matrix", "quantize_model：每个矩阵的每个 Q8_0 字节"));
        g_side = Side::Reference;
        quantize_model(mref);
        g_side = Side::Student;
        quantize_model(mstu);
        bool same = mref.owned.size() == mstu.owned.size();
        for (size_t i = 0; same && i < mref.owned.size(); i++) same = mref.owned[i] == mstu.owned[i];
        if (!same)
            e2e.fail(tr("the quantized matrices differ", "量化后的矩阵不同"),
                     tr("the cases above pass but the model does not? The model's rows are 64 and more wide: several "
                        "blocks per row.",
                        "上面的用例都通过了，模型却不行？模型的行宽是 64 或更多：每行有好几个块。"));
        else  // the fast Q8_0 matmul quantizes every activation row with the active side's function
            check_forward(e2e, mref, tokenizer_encode(tok, "Eight bits per weight, and one scale per block."), 8, 1e-4);
    }
    e2e.end();
    return finish("q8_0");
}
