// chapters/watch/checker.cpp — the student's stats_add and
// mean_row_entropy_bits against logging.cpp's.
//
// 1. the book's small examples; 2. statistics added in two calls; 3. NaN and
// inf; 4. entropies of rows of weights; 5. the whole model: the -vv tensor
// lines and the -v per-layer numbers of a forward pass of models/tiny, with
// each version doing the arithmetic.
#include <unistd.h>
#include "../checker_common.h"

void stats_add_reference(TensorStats& s, const float* x, size_t n);
void stats_add_student(TensorStats& s, const float* x, size_t n);
double mean_row_entropy_bits_reference(const float* p, int rows, int cols);
double mean_row_entropy_bits_student(const float* p, int rows, int cols);

// The engine's calls land here.
void stats_add(TensorStats& s, const float* x, size_t n) {
    if (g_side == Side::Reference) stats_add_reference(s, x, n);
    else stats_add_student(s, x, n);
}
double mean_row_entropy_bits(const float* p, int rows, int cols) {
    return g_side == Side::Reference ? mean_row_entropy_bits_reference(p, rows, cols)
                                     : mean_row_entropy_bits_student(p, rows, cols);
}

static std::string show_stats(const TensorStats& s) {
    return fmt("n=%zu bad=%zu min=%.9g max=%.9g sum=%.12g sumsq=%.12g", s.n, s.bad, s.min, s.max, s.sum, s.sumsq);
}
static bool close(double e, double g) { return e == g || std::fabs(e - g) <= 1e-9 * (std::fabs(e) + 1e-300); }

// What is wrong with got, when it is wrong; "" when it matches want.
static std::string diagnose(const TensorStats& want, const TensorStats& got, bool had_start) {
    if (want.n == got.n && want.bad == got.bad && want.min == got.min && want.max == got.max && close(want.sum, got.sum) &&
        close(want.sumsq, got.sumsq))
        return "";
    if (got.n == 0 && got.bad == 0 && got.sum == 0)
        return tr("nothing was added (is the function still the stub?)", "什么也没有累加上（这个函数是不是还是桩函数？）");
    if (got.bad != want.bad || got.n != want.n) {
        if (got.n == want.n + want.bad)
            return tr("n counts the finite values only: a NaN or inf goes to bad, not to n",
                      "n 只统计有限值：NaN 或 inf 要记到 bad 里，而不是 n 里");
        if (had_start && got.n + 0 < want.n)
            return tr("s already held values: add to n, min, max, sum, sumsq; do not reset them",
                      "s 里原来就有值：在 n、min、max、sum、sumsq 上接着累加，不要把它们清零");
        return tr("n or bad is off: every number is either finite (n) or NaN/inf (bad)",
                  "n 或 bad 不对：每个数要么是有限值（记入 n），要么是 NaN/inf（记入 bad）");
    }
    if (!std::isfinite(got.sum) || !std::isfinite(got.sumsq))
        return tr("a NaN or inf reached the sums: skip it after counting it in bad", "有 NaN 或 inf 进了累加和：把它记入 bad 之后就跳过");
    if (got.min != want.min || got.max != want.max) {
        if (got.min == 0 || got.max == 0)
            return tr("min or max stayed at 0: the first finite value (s.n == 0) must set both, or an all-positive tensor "
                      "reports min 0",
                      "min 或 max 停在了 0：第一个有限值（s.n == 0 时）必须同时设定这两个，否则全为正数的张量会报告 min 为 0");
        return tr("min or max is off: each finite value may widen them", "min 或 max 不对：每个有限值都可能扩大它们的范围");
    }
    if (had_start)
        return tr("s already held values: add to sum and sumsq, do not overwrite them", "s 里原来就有值：在 sum 和 sumsq 上接着累加，不要覆盖它们");
    return tr("sum or sumsq is off: add x and x*x in double", "sum 或 sumsq 不对：用 double 累加 x 和 x*x");
}

static void stats_case(Group& g, const std::string& name, const std::vector<std::vector<float>>& parts,
                       const TensorStats& start = TensorStats()) {
    g.start(name);
    TensorStats want = start, got = start;
    std::string input;
    for (const auto& p : parts) {
        stats_add_reference(want, p.data(), p.size());
        stats_add_student(got, p.data(), p.size());
        input += (input.empty() ? "" : tr("\nthen ", "\n然后 ")) + show(p);
    }
    bool had_start = start.n > 0 || parts.size() > 1;
    std::string d = diagnose(want, got, had_start);
    if (!d.empty())
        g.fail((start.n ? tr("s before: ", "之前的 s：") + show_stats(start) + "\n" : std::string()) + "x: " + input +
                   tr("\nexpected ", "\n应为：") + show_stats(want) + tr("\ngot      ", "\n实际：") + show_stats(got),
               d);
}

static void entropy_case(Group& g, const std::string& name, const std::vector<float>& p, int rows, int cols) {
    g.start(fmt("%s (rows=%d, cols=%d)", name.c_str(), rows, cols));
    double want = mean_row_entropy_bits_reference(p.data(), rows, cols);
    double got = mean_row_entropy_bits_student(p.data(), rows, cols);
    if (close(want, got) || std::fabs(want - got) <= 1e-6 * (std::fabs(want) + 1e-3)) return;
    std::string hint = tr("H = -sum p log2(p) per row, then the mean over rows.", "每一行算 H = -sum p log2(p)，再对各行求平均。");
    if (std::isnan(got))
        hint = tr("NaN: a zero weight gives 0 * log2(0) = 0 * -inf; take 0 * log2(0) as 0 (skip p = 0)",
                  "NaN：为 0 的权重会得到 0 * log2(0) = 0 * -inf；把 0 * log2(0) 当作 0（跳过 p = 0）");
    else if (got == 0 && want != 0)
        hint = tr("0 where the answer is not: is the function still the stub?", "答案不是 0，你却得到 0：这个函数是不是还是桩函数？");
    else if (rows > 1 && close(want * rows, got)) hint = tr("that is the sum over the rows: return their mean", "这是各行的总和：应该返回平均值");
    else if (close(want * std::log(2.0), got))
        hint = tr("that is in nats (natural log): bits use log2", "这是以奈特（自然对数）为单位的：比特要用 log2");
    else if (close(-want, got)) hint = tr("the sign: H = -sum p log2 p is never negative", "符号反了：H = -sum p log2 p 永远不会是负数");
    g.fail(fmt(tr("p: %s\nexpected %.9g bits, got %.9g", "p：%s\n应为 %.9g 比特，实际是 %.9g"), show(p).c_str(), want, got), hint);
}

// Rows of softmax weights, as attention makes them.
static std::vector<float> weight_rows(int rows, int cols, float spread) {
    std::vector<float> p((size_t)rows * cols);
    for (int r = 0; r < rows; r++) {
        float* row = &p[(size_t)r * cols];
        for (int c = 0; c < cols; c++) row[c] = gaussian(spread);
        softmax(row, cols);
    }
    return p;
}

// One forward pass of models/tiny with the probes on: the -vv tensor lines
// (written to stderr, caught in a file) and the per-layer probe numbers.
static std::vector<LayerProbe> s_layers;
static void on_layer(const LayerProbe& p) { s_layers.push_back(p); }
struct Watched {
    std::vector<std::string> lines;
    std::vector<LayerProbe> layers;
};
static Watched watch_forward(const Model& m, const std::vector<int>& tokens) {
    Watched w;
    Net net;
    net_init(net, m, (int)tokens.size() + 1);
    ProbeListener listener{};
    listener.layer_end = on_layer;
    s_layers.clear();
    g_probe_listener = &listener;
    FILE* tmp = tmpfile();
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    set_log_verbosity(2);
    forward(net, tokens.data(), (int)tokens.size(), 0, false);
    g_log_level = LOG_WARN;
    g_watch_tensors = g_probe_forward = false;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    g_probe_listener = nullptr;
    rewind(tmp);
    char line[1024];
    while (fgets(line, sizeof line, tmp))
        if (strstr(line, " rms ") && strstr(line, "first [")) w.lines.push_back(std::string(line, strcspn(line, "\n")));
    fclose(tmp);
    w.layers = s_layers;
    return w;
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "watch",
                  "the statistics of a tensor (-vv) and the entropy of attention (-v)",
                  "张量的统计量（-vv）和注意力的熵（-v）");

    Group book(tr("the book's small examples", "书中的小例子"));
    stats_case(book, tr("x = (1, -2, 3): n 3, min -2, max 3, mean 2/3, rms sqrt(14/3)",
                        "x = (1, -2, 3)：n 3，min -2，max 3，均值 2/3，rms sqrt(14/3)"), {{1, -2, 3}});
    entropy_case(book, tr("weights (0.5, 0.5, 0, 0): 1 bit", "权重 (0.5, 0.5, 0, 0)：1 比特"), {0.5f, 0.5f, 0, 0}, 1, 4);
    book.end();

    Group two(tr("statistics added in pieces, and all-positive or all-negative tensors", "分几次累加的统计量，以及全为正或全为负的张量"));
    stats_case(two, tr("all positive (min must not stay 0)", "全为正（min 不能停在 0）"), {{3, 1, 4, 1, 5}});
    stats_case(two, tr("all negative (max must not stay 0)", "全为负（max 不能停在 0）"), {{-3, -1, -4}});
    stats_case(two, tr("two calls: (1, 2) then (-7, 0.5)", "两次调用：先 (1, 2)，再 (-7, 0.5)"), {{1, 2}, {-7, 0.5f}});
    {
        TensorStats start;
        std::vector<float> first = gaussians(100);
        stats_add_reference(start, first.data(), first.size());
        stats_case(two, tr("s already holds 100 values", "s 里已有 100 个值"), {gaussians(37, 3.0f)}, start);
    }
    for (int n : {1, 7, 896, 4864}) stats_case(two, fmt(tr("random, n=%d", "随机，n=%d"), n), {gaussians(n, 2.0f)});
    stats_case(two, tr("an empty piece", "有一段是空的"), {{}, {2.5f}});
    two.end();

    Group bad(tr("NaN and inf are counted, not summed", "NaN 和 inf 只计数，不累加"));
    stats_case(bad, tr("one NaN", "一个 NaN"), {{1, NAN, 2}});
    stats_case(bad, tr("+inf and -inf", "+inf 和 -inf"), {{INFINITY, 0.5f, -INFINITY, -0.25f}});
    stats_case(bad, tr("NaN first", "NaN 在最前面"), {{NAN, 4, 5}});
    stats_case(bad, tr("only NaN", "只有 NaN"), {{NAN, NAN}});
    bad.end();

    Group ent(tr("entropy of rows of weights", "权重各行的熵"));
    for (int k : {1, 2, 3, 8, 100})
        entropy_case(ent, tr("uniform over k: log2(k) bits", "在 k 个位置上均匀分布：log2(k) 比特"), std::vector<float>(k, 1.0f / k), 1, k);
    entropy_case(ent, tr("all on one position: 0 bits", "全部集中在一个位置：0 比特"), {0, 1, 0, 0, 0}, 1, 5);
    entropy_case(ent, tr("two rows: 1 bit and 0 bits, mean 0.5", "两行：1 比特和 0 比特，平均 0.5"), {0.5f, 0.5f, 0, 1}, 2, 2);
    for (int rows : {1, 3, 14})
        for (int cols : {4, 33, 200})
            entropy_case(ent, tr("random softmax rows", "随机的 softmax 行"), weight_rows(rows, cols, 2.0f), rows, cols);
    entropy_case(ent, tr("no rows: 0", "没有行：0"), {}, 0, 4);
    ent.end();

    Group e2e(tr("end to end: models/tiny, the -vv tensor lines and the -v per-layer numbers",
                 "端到端：models/tiny，-vv 的张量行和 -v 的逐层数值"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (load_tiny(e2e, m, tok)) {
        std::vector<int> tokens = tokenizer_encode(tok, "Watch the tensors of every layer.");
        e2e.start(tr("a forward pass with -vv", "带 -vv 的一次前向传播"));
        g_side = Side::Reference;
        Watched want = watch_forward(m, tokens);
        g_side = Side::Student;
        Watched got = watch_forward(m, tokens);
        std::string hint = g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。") : "";
        if (want.lines.empty()) e2e.fail(tr("the reference printed no -vv tensor line", "参考实现一行 -vv 张量行也没有打印"), "");
        else if (want.lines.size() != got.lines.size())
            e2e.fail(fmt(tr("the reference printed %zu tensor lines, yours %zu", "参考实现打印了 %zu 行张量行，你的打印了 %zu 行"),
                         want.lines.size(), got.lines.size()),
                     hint);
        else
            for (size_t i = 0; i < want.lines.size(); i++)
                if (want.lines[i] != got.lines[i]) {
                    e2e.fail(fmt(tr("tensor line %zu differs:\nexpected %s\ngot      %s", "第 %zu 行张量行不同：\n应为：%s\n实际：%s"), i,
                                 want.lines[i].c_str(), got.lines[i].c_str()),
                             hint);
                    break;
                }
        e2e.start(tr("the per-layer numbers of -v: residual rms in and out, attention entropy",
                     "-v 的逐层数值：残差流进出时的 rms，注意力的熵"));
        for (size_t l = 0; l < want.layers.size() && l < got.layers.size(); l++) {
            const LayerProbe &a = want.layers[l], &b = got.layers[l];
            if (a.rms_in != b.rms_in || a.rms_out != b.rms_out || std::fabs(a.entropy_bits - b.entropy_bits) > 1e-5f) {
                e2e.fail(fmt(tr("layer %zu: expected rms %.6g -> %.6g, entropy %.6g bits; got rms %.6g -> %.6g, entropy %.6g",
                                "第 %zu 层：应为 rms %.6g -> %.6g，熵 %.6g 比特；实际 rms %.6g -> %.6g，熵 %.6g"), l,
                             a.rms_in, a.rms_out, a.entropy_bits, b.rms_in, b.rms_out, b.entropy_bits),
                         hint);
                break;
            }
        }
    }
    e2e.end();
    return finish("watch");
}
