// chapters/tiled-matmul/checker.cpp — the student's tiled matmul_plain
// against the engine's untiled one, bit for bit.
//
// 1. small products worked by hand; 2. odd sizes (never a multiple of a
// tile), f32, bf16 and q8_0 weights, with and without a bias; 3. the order
// trap: a row whose result is 0 in the plain order and not in any other;
// 4. the whole model under --kernels plain, logits compared bit for bit.
// A measurement (not a check) closes the report: both versions' time on a
// prompt-sized product.
#include <chrono>
#include "../checker_common.h"

void matmul_plain_reference(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_plain_student(float* out, const float* x, const Mat& W, const float* bias, int T);

// The engine's calls land here (matmul under --kernels plain).
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    if (g_side == Side::Reference) matmul_plain_reference(out, x, W, bias, T);
    else matmul_plain_student(out, x, W, bias, T);
}

// A matrix with its own storage, in one of the types matmul reads.
struct TestMat {
    Mat m;
    std::vector<float> f32;
    std::vector<uint16_t> b16;
    std::vector<uint8_t> q8;
};
static void make_mat(TestMat& t, const std::vector<float>& w, int rows, int cols, DType type) {
    t.f32 = w;
    t.m.rows = rows;
    t.m.cols = cols;
    t.m.dtype = DType::F32;
    t.m.data = t.f32.data();
    if (type == DType::BF16) {
        for (float v : w) t.b16.push_back(f32_to_bf16(v));
        t.m.dtype = DType::BF16;
        t.m.data = t.b16.data();
    } else if (type == DType::Q8_0) {
        t.m = quantize_q8_0(t.m, t.q8);
    }
}

// Other orders of the same sum, to name what the student did. One output.
static float variant(const char* which, const Mat& W, const float* x, const float* bias, int r) {
    std::vector<float> w(W.cols);
    mat_row_to_f32(W, r, w.data());
    float f = bias ? bias[r] : 0.0f;
    double d = 0;
    for (int c = 0; c < W.cols; c++) {
        f += w[c] * x[c];
        d += (double)w[c] * x[c];
    }
    if (!strcmp(which, "float")) return f;
    return (float)(d + (bias ? bias[r] : 0.0));  // "bias last"
}

// out of both versions, compared bit for bit.
static void run_case(Group& g, const std::string& name, const TestMat& tm, const std::vector<float>& x,
                     const float* bias, int T) {
    const Mat& W = tm.m;
    g.start(fmt(tr("%s: %s weights, %d rows x %d columns, %d token%s%s", "%s：%s 权重，%d 行 x %d 列，%d 个词元%s%s"), name.c_str(),
                dtype_name(W.dtype), W.rows, W.cols, T, T == 1 ? "" : tr("s", ""), bias ? tr(", bias", "，带偏置") : ""));
    std::vector<float> want((size_t)T * W.rows), got(want.size(), std::nanf(""));
    matmul_plain_reference(want.data(), x.data(), W, bias, T);
    matmul_plain_student(got.data(), x.data(), W, bias, T);
    if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0) return;
    size_t bad = 0, n_bad = 0;
    for (size_t i = want.size(); i-- > 0;)
        if (std::memcmp(&want[i], &got[i], 4) != 0) bad = i, n_bad++;
    int t = (int)(bad / W.rows), r = (int)(bad % W.rows);
    std::string d = fmt(tr("out[token %d][row %d]: expected %.9g, got %.9g (%zu of %zu outputs differ)\n",
                           "out[词元 %d][行 %d]：应为 %.9g，实际是 %.9g（%zu 个输出不同，共 %zu 个）\n"),
                        t, r, want[bad], got[bad], n_bad, want.size());
    d += tr("expected: ", "应为：") + show(want, (int)bad) + tr("\ngot:      ", "\n实际：") + show(got, (int)bad);
    std::string hint;
    const float* xt = &x[(size_t)t * W.cols];
    if (!compare(want, got).empty()) {
        bool stub = true;
        for (float v : got) stub = stub && v == 0 && !std::signbit(v);
        hint = stub ? tr("every output is 0: is it still the stub?", "每个输出都是 0：是不是还是桩函数？")
                    : fmt(tr("out[%d][%d] is not even close. If the outputs before it are right, look at the edge of a "
                             "tile: the last tile of rows (or tokens, or columns) is shorter, min(r0 + RT, rows) - r0; "
                             "and the output's index is t * W.rows + r.",
                             "out[%d][%d] 差得很远。如果它前面的输出都对，就看看分块的边缘：行（或词元、列）的最后一块"
                             "更短，是 min(r0 + RT, rows) - r0；输出的下标是 t * W.rows + r。"),
                          t, r);
    } else if (got[bad] == variant("float", W, xt, bias, r))
        hint = tr("close but not the same bits: your running sum is a float. matmul_plain adds in a double and rounds "
                  "to float once, at the end.",
                  "很接近，但位不一样：你的累加和是 float。matmul_plain 用 double 累加，最后只舍入成 float 一次。");
    else if (bias && got[bad] == variant("bias last", W, xt, bias, r))
        hint = tr("close but not the same bits: you add the bias at the end. In matmul_plain the bias is the sum's "
                  "starting value, and a different first term changes every rounding after it.",
                  "很接近，但位不一样：你在最后才加偏置。在 matmul_plain 里，偏置是累加和的初始值，"
                  "第一项不同，之后的每一次舍入都会跟着变。");
    else
        hint = tr("close but not the same bits: some additions happen in another order (the order trap group below "
                  "shows which). Every product must be added to the one running sum of its output, in increasing c.",
                  "很接近，但位不一样：有些加法的顺序不同（下面“顺序陷阱”那一组会指出是哪些）。"
                  "每个乘积都必须按 c 从小到大，加到它那个输出唯一的累加和上。");
    g.fail(d, hint);
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "tiled-matmul",
                  "a cache-blocked matmul_plain, bit-equal to the untiled one",
                  "按缓存分块的 matmul_plain，与不分块的逐位相同");

    Group book(tr("worked by hand", "手算的例子"));
    {
        TestMat a;
        make_mat(a, {1, 2, 3, 4, 5, 6}, 2, 3, DType::F32);  // W = [[1 2 3] [4 5 6]], x = [1 1 1] and [1 0 -1]
        std::vector<float> x = {1, 1, 1, 1, 0, -1}, bias = {0.5f, -1};
        run_case(book, tr("W x = [6 15] and [-2 -2]", "W x = [6 15] 和 [-2 -2]"), a, x, nullptr, 2);
        run_case(book, tr("with the bias [0.5 -1]: [6.5 14] and [-1.5 -3]", "加上偏置 [0.5 -1]：[6.5 14] 和 [-1.5 -3]"), a, x, bias.data(), 2);
    }
    book.end();

    Group odd(tr("odd sizes: no dimension a multiple of a tile", "不规整的尺寸：没有哪一维是分块大小的整数倍"));
    int shapes[][3] = {{1, 1, 1}, {1, 17, 3}, {7, 5, 1}, {33, 31, 7}, {100, 33, 13}, {17, 129, 5}, {65, 257, 2}, {130, 896, 9}};
    for (auto& s : shapes)
        for (bool with_bias : {false, true}) {
            TestMat tm;
            make_mat(tm, gaussians(s[0] * s[1]), s[0], s[1], DType::F32);
            std::vector<float> x = gaussians(s[1] * s[2]), bias = gaussians(s[0]);
            run_case(odd, tr("random", "随机"), tm, x, with_bias ? bias.data() : nullptr, s[2]);
        }
    for (DType type : {DType::BF16, DType::Q8_0}) {
        TestMat tm;
        make_mat(tm, gaussians(37 * 96, 0.05f), 37, 96, type);
        std::vector<float> x = gaussians(96 * 6), bias = gaussians(37);
        run_case(odd, tr("the model's weight types", "模型用的权重类型"), tm, x, bias.data(), 6);
    }
    odd.end();

    Group trap(tr("the order trap: W row = [2^53, 1, 1, ..., 1, -2^53], x = all ones", "顺序陷阱：W 的行 = [2^53, 1, 1, ..., 1, -2^53]，x 全为 1"));
    for (int cols : {3, 40, 300, 1000, 4099}) {
        std::vector<float> w(3 * cols, 1.0f), x(2 * cols, 1.0f);
        for (int r = 0; r < 3; r++) w[r * cols] = 9007199254740992.0f, w[r * cols + cols - 1] = -9007199254740992.0f;
        TestMat tm;
        make_mat(tm, w, 3, cols, DType::F32);
        trap.start(fmt(tr("%d columns, 3 rows, 2 tokens: the result is 0", "%d 列，3 行，2 个词元：结果是 0"), cols));
        std::vector<float> got(6, std::nanf(""));
        matmul_plain_student(got.data(), x.data(), tm.m, nullptr, 2);
        for (int i = 0; i < 6; i++)
            if (got[i] != 0) {
                trap.fail(fmt(tr("out[token %d][row %d]: expected 0, got %.9g", "out[词元 %d][行 %d]：应为 0，实际是 %.9g"), i / 3,
                              i % 3, got[i]),
                          tr("in matmul_plain's order the running sum is 2^53 when each 1 arrives, and 2^53 + 1 rounds "
                             "back to 2^53 (a double has 53 bits), so every 1 is lost and -2^53 leaves exactly 0. A "
                             "non-zero result means some 1s were added up in partial sums of their own (one per column "
                             "tile?) and the partials added afterwards: another order, and float addition is not "
                             "associative. Carry each output's running sum from one column tile into the next.",
                             "按 matmul_plain 的顺序，每个 1 加进来时累加和都是 2^53，而 2^53 + 1 会舍入回 2^53"
                             "（double 只有 53 位），所以每个 1 都丢了，最后减去 2^53 正好剩 0。"
                             "结果不是 0，说明有些 1 先在各自的部分和里加了起来（每个列分块一个？），之后才把部分和相加："
                             "顺序变了，而浮点加法不满足结合律。要把每个输出的累加和从一个列分块带到下一个。"));
                break;
            }
    }
    trap.end();

    Group e2e(tr("end to end: models/tiny under --kernels plain, logits bit for bit", "端到端：--kernels plain 下的 models/tiny，logit 逐位相同"), 2);
    kernels_init(KernelSet::Plain, 1);
    Model m;
    Tokenizer tok;
    if (load_tiny(e2e, m, tok)) check_forward(e2e, m, tokenizer_encode(tok, "A tile of rows, used by every token."), 6, 0.0);
    e2e.end();

    // A measurement, not a check: a prompt-sized product, once with each.
    TestMat big;
    make_mat(big, gaussians(1536 * 896, 0.05f), 1536, 896, DType::BF16);
    std::vector<float> x = gaussians(896 * 32), out(1536 * 32);
    double ms[2];
    for (int side = 0; side < 2; side++) {
        auto t0 = std::chrono::steady_clock::now();
        (side ? matmul_plain_student : matmul_plain_reference)(out.data(), x.data(), big.m, nullptr, 32);
        ms[side] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (!g_json)
        printf(tr("\n      measured once (bf16 1536 x 896, 32 tokens, one thread; other work on the machine disturbs it):\n"
                  "      untiled matmul_plain %.0f ms, yours %.0f ms\n",
                  "\n      只测了一次（bf16 1536 x 896，32 个词元，单线程；机器上的其他任务会干扰它）：\n"
                  "      不分块的 matmul_plain %.0f ms，你的 %.0f ms\n"),
               ms[0], ms[1]);
    return finish("tiled-matmul");
}
