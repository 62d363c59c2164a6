// chapters/lens/checker.cpp — the student's lens_layer against the engine's
// own (lens.cpp:lens_layer).
//
// 1. the book's worked example, a model of hidden size 4 and 3 tokens;
// 2. models/tiny: a prompt's residual stream captured by the engine
//    (lens.cpp:lens_forward), read at every depth by both versions;
// 3. the identity: at the last depth the lens is the model's own logits.
// A failed case says which slip the numbers match: the final norm
// forgotten or without its weights, another depth's row, another
// position's row, only the first row written.
#include "../checker_common.h"
#include "lens/lens.h"

void lens_layer_reference(const Model& m, const LensCapture& cap, int depth, float* logits);
void lens_layer_student(const Model& m, const LensCapture& cap, int depth, float* logits);

// The engine's calls land here.
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits) {
    if (g_side == Side::Reference) lens_layer_reference(m, cap, depth, logits);
    else lens_layer_student(m, cap, depth, logits);
}

// The lm_head of the given rows ([n, hidden] each), normed three ways:
// 0 RMSNorm with the final norm's weights, 1 not normed, 2 RMSNorm with
// weights of 1.
static std::vector<float> head_of(const Model& m, const std::vector<const float*>& rows, int how) {
    const Config& c = m.cfg;
    std::vector<float> ones(c.hidden, 1.0f), h(rows.size() * c.hidden), out(rows.size() * (size_t)c.vocab);
    for (size_t p = 0; p < rows.size(); p++) {
        float* hp = &h[p * c.hidden];
        if (how == 1) std::memcpy(hp, rows[p], c.hidden * sizeof(float));
        else rmsnorm(hp, rows[p], how == 0 ? m.final_norm.data() : ones.data(), c.hidden, c.eps);
    }
    matmul(out.data(), h.data(), m.lm_head, nullptr, (int)rows.size());
    return out;
}

static bool close(const std::vector<float>& want, const std::vector<float>& got) { return compare(want, got, 1e-5).empty(); }

// Which usual slip `got` is, from the capture itself.
static std::string diagnose(const Model& m, const LensCapture& cap, int depth, const std::vector<float>& got) {
    int n = cap.n_pos, V = m.cfg.vocab, H = cap.hidden;
    auto rows_at = [&](int d) {
        std::vector<const float*> r;
        for (int p = 0; p < n; p++) r.push_back(cap.resid_row(d, p));
        return r;
    };
    std::vector<const float*> here = rows_at(depth);
    if (close(head_of(m, here, 1), got))
        return tr("you forgot the final norm: the LM head reads rmsnorm(x) with m.final_norm, never the raw stream x "
                  "(its size grows layer by layer; the norm is part of what the model does with it).",
                  "你忘了最后的归一化：语言模型头读的是用 m.final_norm 做的 rmsnorm(x)，而不是原始的残差流 x"
                  "（它的大小一层层变大；归一化是模型处理它的一部分）。");
    if (close(head_of(m, here, 2), got))
        return tr("the final norm has weights: rmsnorm(out, x, m.final_norm.data(), hidden, eps), not a plain x / rms(x).",
                  "最后的归一化带权重：rmsnorm(out, x, m.final_norm.data(), hidden, eps)，而不是单纯的 x / rms(x)。");
    for (int d : {depth - 1, depth + 1})
        if (d >= 0 && d <= cap.n_layers && close(head_of(m, rows_at(d), 0), got))
            return fmt(tr("those are the logits of depth %d, not %d: depth d is the stream after d layers, "
                          "cap.resid_row(depth, p) (0 is the embedding).",
                          "这是深度 %d 的 logit，不是 %d 的：深度 d 是经过 d 层之后的残差流，"
                          "即 cap.resid_row(depth, p)（0 是嵌入）。"),
                       d, depth);
    std::vector<const float*> first(n, cap.resid_row(depth, 0));
    if (n > 1 && close(head_of(m, first, 0), got))
        return tr("every position got position 0's prediction: read row p of the stream for row p of the logits.",
                  "每个位置得到的都是位置 0 的预测：logit 的第 p 行要读残差流的第 p 行。");
    if (n > 1) {  // the capture read as [position][depth][hidden]: the wrong row of the buffer
        std::vector<const float*> swapped;
        for (int p = 0; p < n; p++) {
            size_t at = ((size_t)p * (cap.n_layers + 1) + depth) * H;
            swapped.push_back(at + H <= cap.resid.size() ? &cap.resid[at] : cap.resid_row(depth, p));
        }
        if (close(head_of(m, swapped, 0), got))
            return tr("the capture is depth-major: [n_layers+1, cap, hidden]. cap.resid_row(depth, p) finds the row.",
                      "捕获的数据按深度优先排列：[n_layers+1, cap, hidden]。用 cap.resid_row(depth, p) 找到那一行。");
        std::vector<float> want = head_of(m, here, 0);
        if (std::equal(want.begin(), want.begin() + V, got.begin()) && !close(want, got))
            return tr("row 0 is right, the others are not: fill logits + p * vocab for every p < cap.n_pos.",
                      "第 0 行对了，其余的不对：对每个 p < cap.n_pos 都要填写 logits + p * vocab。");
    }
    return tr("logits[p] = lm_head . rmsnorm(cap.resid_row(depth, p), m.final_norm): the two steps of net.cpp:lm_head.",
              "logits[p] = lm_head . rmsnorm(cap.resid_row(depth, p), m.final_norm)：就是 net.cpp:lm_head 的两步。");
}

// Both versions at one depth; a case fails with what it expected, got and why.
static void run_case(Group& g, const Model& m, const LensCapture& cap, int depth, const std::string& what) {
    g.start(what);
    std::vector<float> want((size_t)cap.n_pos * m.cfg.vocab), got(want.size(), 12345.0f);
    lens_layer_reference(m, cap, depth, want.data());
    lens_layer_student(m, cap, depth, got.data());
    std::string d = compare(want, got, 1e-5);
    if (!d.empty()) {
        bool stub = std::all_of(got.begin(), got.end(), [](float v) { return v == 12345.0f; });
        g.fail(d, stub ? tr("nothing was written to logits: is it still the stub?", "logits 里什么也没写：是不是还是桩函数？")
                       : diagnose(m, cap, depth, got));
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "lens",
                  "the logit lens at one depth: the residual stream through the final norm and the LM head",
                  "某一深度上的 logit 透镜：残差流经过最后的归一化和语言模型头");
    kernels_init(KernelSet::Plain, 1);

    // The book's worked example: hidden 4, vocabulary of 3, one layer, two
    // positions. Depth 1, position 0: x = (2, -2, 2, -2), rms 2, so
    // rmsnorm(x) * w = (1, -1, 1, -1) * (1, 2, 0.5, 1) = (1, -2, 0.5, -1),
    // and the three rows of the head give (1, 2, -1.5).
    Group book(tr("the book's worked example: x = (2, -2, 2, -2) -> logits (1, 2, -1.5)",
                  "书中的演算示例：x = (2, -2, 2, -2) -> logit (1, 2, -1.5)"));
    {
        Model m;
        m.cfg.hidden = 4;
        m.cfg.vocab = 3;
        m.cfg.n_layers = 1;
        m.cfg.n_heads = 1;
        m.cfg.head_dim = 4;
        m.cfg.eps = 0;
        m.final_norm = {1, 2, 0.5f, 1};
        static const float head[12] = {1, 0, 0, 0, 0, -1, 0, 0, 1, 1, 1, 1};
        m.lm_head.dtype = DType::F32;
        m.lm_head.rows = 3;
        m.lm_head.cols = 4;
        m.lm_head.data = head;
        LensCapture cap;
        lens_capture_init(cap, m.cfg, 2);
        cap.n_pos = 2;
        const float rows[2][2][4] = {{{1, 1, 1, 1}, {2, -2, 2, -2}}, {{0, 3, 0, -3}, {-1, 0, 4, 1}}};  // [pos][depth]
        for (int p = 0; p < 2; p++)
            for (int d = 0; d < 2; d++) std::memcpy(&cap.resid[((size_t)d * cap.cap + p) * 4], rows[p][d], sizeof rows[p][d]);
        run_case(book, m, cap, 1, tr("depth 1 (after the one layer), positions 0 and 1", "深度 1（经过那唯一的一层之后），位置 0 和 1"));
        run_case(book, m, cap, 0, tr("depth 0 (the embedding): x = (1, 1, 1, 1) -> (1, -2, 4.5) at position 0",
                                     "深度 0（嵌入）：位置 0 上 x = (1, 1, 1, 1) -> (1, -2, 4.5)"));
    }
    book.end();

    Group tiny(tr("models/tiny: a prompt's stream at every depth", "models/tiny：一个提示词在每个深度上的残差流"));
    Model m;
    Tokenizer tok;
    if (load_tiny(tiny, m, tok)) {
        Net net;
        net_init(net, m, 64);
        LensCapture cap;
        std::vector<int> tokens = tokenizer_encode(tok, "What would the model say if it stopped here?");
        std::vector<float> logits = lens_forward(net, cap, tokens);
        for (int d = 0; d <= m.cfg.n_layers; d++)
            run_case(tiny, m, cap, d,
                     d == 0 ? tr("depth 0: the embedding", "深度 0：嵌入") : fmt(tr("depth %d: after layer %d", "深度 %d：第 %d 层之后"), d, d - 1));
        tiny.end();

        Group id(tr("the identity: at the last depth the lens is the model's own logits",
                    "恒等关系：在最后一个深度上，透镜给出的就是模型自己的 logit"));
        id.start(fmt(tr("depth %d, %zu positions", "深度 %d，%zu 个位置"), m.cfg.n_layers, tokens.size()));
        std::vector<float> got(logits.size(), 12345.0f);
        lens_layer_student(m, cap, m.cfg.n_layers, got.data());
        std::string d = compare(logits, got, 1e-5);
        if (!d.empty())
            id.fail(d, g_groups_failed ? tr("fix the failures above first.", "先修好上面的失败。") : diagnose(m, cap, m.cfg.n_layers, got));
        else if (got != logits)
            printf("%s", tr("      (close, though not bit for bit: net.cpp:lm_head's rmsnorm then matmul give the same bits)\n",
                            "      （很接近，但不是逐位相同：net.cpp:lm_head 先 rmsnorm 再矩阵乘法，得到的是完全相同的位）\n"));
        id.end();
    } else {
        tiny.end();
    }
    return finish("lens");
}
