// chapters/top-p/checker.cpp — the student's apply_top_p against the engine's.
//
// 1. the book's five tokens; 2. edge cases: p = 1, the exact boundary, ties
// (5 and 32 tokens: std::sort keeps equal elements in order only up to 16),
// tokens top-k already removed, one survivor, huge logits; 3. random rows
// up to the vocabulary's size (p kept away from rounding's reach); 4. whole
// generations of models/tiny with top-p on: the same token ids.
#include "../checker_common.h"

int apply_top_p_reference(float* logits, int n, float p, std::vector<int>& order);
int apply_top_p_student(float* logits, int n, float p, std::vector<int>& order);

// The engine's calls land here.
int apply_top_p(float* logits, int n, float p, std::vector<int>& order) {
    return g_side == Side::Reference ? apply_top_p_reference(logits, n, p, order) : apply_top_p_student(logits, n, p, order);
}

static const float NEG_INF = -std::numeric_limits<float>::infinity();

static std::string kept_list(const std::vector<float>& l) {
    std::string s;
    int shown = 0, total = 0;
    for (size_t i = 0; i < l.size(); i++)
        if (l[i] > NEG_INF) {
            total++;
            if (shown++ < 10) s += fmt("%s%zu", s.empty() ? "" : ", ", i);
        }
    if (total > 10) s += fmt(tr(", ... (%d in all)", ", ...（共 %d 个）"), total);
    return "{" + s + "}";
}

static void run_case(Group& g, const std::string& name, const std::vector<float>& in, float p, const std::string& hint = "") {
    int n = (int)in.size();
    g.start(fmt("%s (n=%d, p=%g)", name.c_str(), n, p));
    std::vector<float> want = in, got = in;
    std::vector<int> s1, s2 = {7, -3, 123456};  // scratch with junk in it, as the engine's may have
    int kw = apply_top_p_reference(want.data(), n, p, s1);
    int kg = apply_top_p_student(got.data(), n, p, s2);
    std::string input = n <= 12 ? tr("logits: ", "logit：") + show(in.data(), n, 0, 12) : "";
    for (int i = 0; i < n; i++) {
        bool masked_w = !(want[i] > NEG_INF), masked_g = !(got[i] > NEG_INF);
        if (masked_w != masked_g) {
            int nw = 0, ng = 0, alive = 0;
            for (int j = 0; j < n; j++) nw += want[j] > NEG_INF, ng += got[j] > NEG_INF, alive += in[j] > NEG_INF;
            std::string why = !hint.empty() ? hint
                            : ng == alive ? tr("nothing was masked: is it still the stub?", "什么都没有被屏蔽：是不是还是桩函数？")
                            : ng == nw + 1 ? tr("you keep one token too many: stop at the first token whose running total reaches p (>= p).",
                                                "你多留了一个词元：在累加和第一次达到 p（>= p）的那个词元处停下。")
                            : ng + 1 == nw ? tr("you keep one token too few: the token that crosses p is kept.",
                                                "你少留了一个词元：让累加和越过 p 的那个词元也要留下。")
                                      : tr("probabilities are softmax over the alive tokens; walk them largest first.",
                                           "概率是对还活着的词元做 softmax；从最大的开始往下走。");
            return g.fail(input + (input.empty() ? "" : "\n") +
                              fmt(tr("token %d: expected %s, got %s\nexpected survivors %s\ngot survivors      %s",
                                     "词元 %d：应为%s，实际是%s\n应留下的词元 %s\n实际留下的词元 %s"),
                                  i, masked_w ? tr("masked (-inf)", "屏蔽（-inf）") : tr("kept", "保留"),
                                  masked_g ? tr("masked (-inf)", "屏蔽（-inf）") : tr("kept", "保留"), kept_list(want).c_str(),
                                  kept_list(got).c_str()),
                          why);
        }
        if (!masked_w && want[i] != got[i])
            return g.fail(fmt(tr("token %d survives, but its logit changed: was %.9g, now %.9g",
                                 "词元 %d 留下了，但它的 logit 变了：原来是 %.9g，现在是 %.9g"), i, in[i], got[i]),
                          tr("survivors keep their raw logits; compute probabilities in a separate array.",
                             "留下的词元保持原始的 logit；概率要算在另一个数组里。"));
    }
    if (kw != kg)
        g.fail(fmt(tr("the right tokens are masked, but you returned %d instead of %d", "屏蔽的词元对了，但你返回的是 %d，而不是 %d"), kg, kw),
               !hint.empty() ? hint : tr("return the number of survivors (tokens not -inf afterwards).",
                                         "返回留下的词元个数（处理之后不是 -inf 的词元）。"));
}

// p moved away from every running total by at least `gap`, so a float
// summation's rounding cannot change which token crosses it.
static float safe_p(const std::vector<float>& l, float p, double gap) {
    std::vector<int> ids;
    for (int i = 0; i < (int)l.size(); i++)
        if (l[i] > NEG_INF) ids.push_back(i);
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    double max = l[ids[0]], sum = 0, c = 0;
    for (int i : ids) sum += std::exp(l[i] - max);
    for (int i : ids) {
        c += std::exp(l[i] - max) / sum;
        if (std::fabs(c - p) < gap) p = (float)(c + gap);
    }
    return p;
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "top-p",
                  "keep the fewest most likely tokens whose probabilities reach p",
                  "留下概率之和达到 p 的最少几个最可能的词元");

    Group book(tr("the book's five tokens", "书中的五个词元"));
    std::vector<float> five = {std::log(0.40f), std::log(0.30f), std::log(0.15f), std::log(0.10f), std::log(0.05f)};
    run_case(book, tr("probabilities 0.40 0.30 0.15 0.10 0.05, keep 3", "概率 0.40 0.30 0.15 0.10 0.05，留下 3 个"), five, 0.8f);
    {
        std::vector<float> shuffled = {five[3], five[0], five[4], five[2], five[1]};
        run_case(book, tr("the same five in another order", "同样五个词元，换一个顺序"), shuffled, 0.8f,
                 tr("the ids are the positions in logits: sort a list of ids by their logits, not the logits themselves.",
                    "id 就是在 logits 里的位置：按 logit 给一个 id 列表排序，而不是给 logit 本身排序。"));
    }
    book.end();

    Group edge(tr("edge cases", "边界情况"));
    run_case(edge, tr("p = 1 changes nothing", "p = 1 什么都不改变"), five, 1.0f,
             tr("p >= 1 means off: return the number of alive tokens.", "p >= 1 表示关闭：返回还活着的词元个数。"));
    run_case(edge, tr("exactly on p: 4 equal tokens, 0.25 + 0.25 = 0.5", "正好等于 p：4 个相同的词元，0.25 + 0.25 = 0.5"), {1, 1, 1, 1}, 0.5f,
             tr("at 0.25 + 0.25 = 0.5 the total reaches p = 0.5: stop there (>=), keeping two.",
                "到 0.25 + 0.25 = 0.5 时总和达到 p = 0.5：就在那里停下（>=），留下两个。"));
    run_case(edge, tr("ties at the cut: lower ids first", "截断处有并列：id 小的在前"), {0, 2, 2, 2, 2}, 0.3f,
             tr("equal logits are ordered by id: the lower id is kept first.", "logit 相同时按 id 排序：id 小的先留下。"));
    {
        // Past 16 elements std::sort stops being an insertion sort and no
        // longer keeps equal elements in id order: a comparator without the
        // tie-break passes the five-token case above by luck, not this one.
        std::vector<float> ties(32, 2.0f);
        ties[0] = 0.0f;
        run_case(edge, tr("31 tied tokens, the cut in the middle: lower ids first", "31 个并列的词元，截断在中间：id 小的在前"), ties, 0.3f,
                 tr("equal logits are ordered by id: sort with (l[a] > l[b]) || (l[a] == l[b] && a < b). std::sort "
                    "does not keep the order of equal elements.",
                    "logit 相同时按 id 排序：用 (l[a] > l[b]) || (l[a] == l[b] && a < b) 排序。std::sort "
                    "不保证相等元素的原有顺序。"));
    }
    {
        std::vector<float> l = {0.5f, NEG_INF, 3.0f, NEG_INF, 2.5f, 1.0f, NEG_INF};
        run_case(edge, tr("tokens top-k removed take no part", "被 top-k 去掉的词元不参与"), l, 0.6f,
                 tr("-inf entries are not candidates: leave them out of the softmax and the count.",
                    "-inf 的项不是候选：softmax 和计数都不算它们。"));
        run_case(edge, tr("tokens top-k removed, p = 1", "有被 top-k 去掉的词元，p = 1"), l, 1.0f,
                 tr("with p = 1 return the number of alive tokens (4 here).", "p = 1 时返回还活着的词元个数（这里是 4）。"));
    }
    run_case(edge, tr("a single alive token", "只有一个活着的词元"), {NEG_INF, 4.0f, NEG_INF}, 0.1f,
             tr("one alive token always survives.", "唯一活着的词元总会留下。"));
    run_case(edge, tr("one token in all", "总共只有一个词元"), {-2.0f}, 0.5f, "");
    run_case(edge, tr("logits in the hundreds", "几百大的 logit"), {1000.0f, 999.0f, 998.0f, 990.0f, -5.0f}, 0.9f,
             tr("exp(1000) overflows to inf: subtract the largest logit before exp().",
                "exp(1000) 会溢出成 inf：在 exp() 之前先减去最大的 logit。"));
    run_case(edge, tr("tiny p keeps only the best", "很小的 p 只留下最好的那个"), gaussians(50, 2.0f), 1e-6f, "");
    run_case(edge, tr("the whole vocabulary alive (-k 0)", "整个词表都活着（-k 0）"), gaussians(151936, 2.0f), 0.95f,
             tr("near the cut each of 151,936 probabilities is about 1e-6; a float running total drifts by more "
                "than that and cuts at another token. Add them up in double.",
                "在截断处附近，151,936 个概率每个只有约 1e-6；float 累加和的漂移比这还大，会在另一个词元处截断。"
                "用 double 累加。"));
    edge.end();

    Group rnd(tr("random rows", "随机的行"));
    for (int n : {2, 3, 10, 40, 100, 1000, 151936}) {
        for (int k = 0; k < 4; k++) {
            std::vector<float> l = gaussians(n, n > 1000 ? 3.0f : 1.5f);
            if (k % 2)  // half the rows as top-k leaves them: most tokens already -inf
                for (auto& x : l)
                    if (uniform(0, 1) < 0.7f) x = NEG_INF;
            if (!(*std::max_element(l.begin(), l.end()) > NEG_INF)) l[0] = 0.0f;
            float p = safe_p(l, uniform(0.05f, 0.9f), 1e-5);
            run_case(rnd, k % 2 ? tr("gaussian logits, 70% already masked", "高斯分布的 logit，70% 已被屏蔽") : tr("gaussian logits", "高斯分布的 logit"),
                     l, p, n > 10000 ? tr("with this many tokens, add the probabilities up in double.", "词元这么多时，用 double 累加概率。") : "");
        }
    }
    rnd.end();

    Group e2e(tr("end to end: generate() on models/tiny with top-p, the same token ids",
                 "端到端：打开 top-p，在 models/tiny 上运行 generate()，词元 id 必须相同"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Fast, 1);
    if (load_tiny(e2e, m, tok)) {
        struct Run { int top_k; float top_p; uint32_t seed; };
        for (Run run : {Run{40, 0.9f, 1}, Run{40, 0.5f, 2}, Run{0, 0.95f, 3}}) {
            GenerateParams p;
            p.n_predict = 16;
            p.sampling.temperature = 1.0f;
            p.sampling.top_k = run.top_k;
            p.sampling.top_p = run.top_p;
            p.sampling.seed = run.seed;
            check_generate(e2e, m, tok, "The nucleus is", p,
                           fmt(tr("-t 1 -k %d --top-p %g -s %u, 16 tokens", "-t 1 -k %d --top-p %g -s %u，16 个词元"), run.top_k,
                               run.top_p, run.seed),
                           tr("the cases above pass but generations differ? With -k 0 every one of the 151,936 tokens "
                              "is alive when top-p runs.",
                              "上面的用例都通过了，生成结果却不同？-k 0 时，top-p 运行时全部 151,936 个词元都还活着。"));
        }
    }
    e2e.end();
    return finish("top-p");
}
