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
    if (total > 10) s += fmt(", ... (%d in all)", total);
    return "{" + s + "}";
}

static void run_case(Group& g, const std::string& name, const std::vector<float>& in, float p, const std::string& hint = "") {
    int n = (int)in.size();
    g.start(fmt("%s (n=%d, p=%g)", name.c_str(), n, p));
    std::vector<float> want = in, got = in;
    std::vector<int> s1, s2 = {7, -3, 123456};  // scratch with junk in it, as the engine's may have
    int kw = apply_top_p_reference(want.data(), n, p, s1);
    int kg = apply_top_p_student(got.data(), n, p, s2);
    std::string input = n <= 12 ? "logits: " + show(in.data(), n, 0, 12) : "";
    for (int i = 0; i < n; i++) {
        bool masked_w = !(want[i] > NEG_INF), masked_g = !(got[i] > NEG_INF);
        if (masked_w != masked_g) {
            int nw = 0, ng = 0, alive = 0;
            for (int j = 0; j < n; j++) nw += want[j] > NEG_INF, ng += got[j] > NEG_INF, alive += in[j] > NEG_INF;
            std::string why = !hint.empty() ? hint
                            : ng == alive ? "nothing was masked: is it still the stub?"
                            : ng == nw + 1 ? "you keep one token too many: stop at the first token whose running total reaches p (>= p)."
                            : ng + 1 == nw ? "you keep one token too few: the token that crosses p is kept."
                                      : "probabilities are softmax over the alive tokens; walk them largest first.";
            return g.fail(input + (input.empty() ? "" : "\n") +
                              fmt("token %d: expected %s, got %s\nexpected survivors %s\ngot survivors      %s", i,
                                  masked_w ? "masked (-inf)" : "kept", masked_g ? "masked (-inf)" : "kept",
                                  kept_list(want).c_str(), kept_list(got).c_str()),
                          why);
        }
        if (!masked_w && want[i] != got[i])
            return g.fail(fmt("token %d survives, but its logit changed: was %.9g, now %.9g", i, in[i], got[i]),
                          "survivors keep their raw logits; compute probabilities in a separate array.");
    }
    if (kw != kg)
        g.fail(fmt("the right tokens are masked, but you returned %d instead of %d", kg, kw),
               !hint.empty() ? hint : "return the number of survivors (tokens not -inf afterwards).");
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
    checker_begin(argc, argv, "top-p", "keep the fewest most likely tokens whose probabilities reach p");

    Group book("the book's five tokens");
    std::vector<float> five = {std::log(0.40f), std::log(0.30f), std::log(0.15f), std::log(0.10f), std::log(0.05f)};
    run_case(book, "probabilities 0.40 0.30 0.15 0.10 0.05, keep 3", five, 0.8f);
    {
        std::vector<float> shuffled = {five[3], five[0], five[4], five[2], five[1]};
        run_case(book, "the same five in another order", shuffled, 0.8f,
                 "the ids are the positions in logits: sort a list of ids by their logits, not the logits themselves.");
    }
    book.end();

    Group edge("edge cases");
    run_case(edge, "p = 1 changes nothing", five, 1.0f, "p >= 1 means off: return the number of alive tokens.");
    run_case(edge, "exactly on p: 4 equal tokens, 0.25 + 0.25 = 0.5", {1, 1, 1, 1}, 0.5f,
             "at 0.25 + 0.25 = 0.5 the total reaches p = 0.5: stop there (>=), keeping two.");
    run_case(edge, "ties at the cut: lower ids first", {0, 2, 2, 2, 2}, 0.3f,
             "equal logits are ordered by id: the lower id is kept first.");
    {
        // Past 16 elements std::sort stops being an insertion sort and no
        // longer keeps equal elements in id order: a comparator without the
        // tie-break passes the five-token case above by luck, not this one.
        std::vector<float> ties(32, 2.0f);
        ties[0] = 0.0f;
        run_case(edge, "31 tied tokens, the cut in the middle: lower ids first", ties, 0.3f,
                 "equal logits are ordered by id: sort with (l[a] > l[b]) || (l[a] == l[b] && a < b). std::sort "
                 "does not keep the order of equal elements.");
    }
    {
        std::vector<float> l = {0.5f, NEG_INF, 3.0f, NEG_INF, 2.5f, 1.0f, NEG_INF};
        run_case(edge, "tokens top-k removed take no part", l, 0.6f,
                 "-inf entries are not candidates: leave them out of the softmax and the count.");
        run_case(edge, "tokens top-k removed, p = 1", l, 1.0f, "with p = 1 return the number of alive tokens (4 here).");
    }
    run_case(edge, "a single alive token", {NEG_INF, 4.0f, NEG_INF}, 0.1f, "one alive token always survives.");
    run_case(edge, "one token in all", {-2.0f}, 0.5f, "");
    run_case(edge, "logits in the hundreds", {1000.0f, 999.0f, 998.0f, 990.0f, -5.0f}, 0.9f,
             "exp(1000) overflows to inf: subtract the largest logit before exp().");
    run_case(edge, "tiny p keeps only the best", gaussians(50, 2.0f), 1e-6f, "");
    run_case(edge, "the whole vocabulary alive (-k 0)", gaussians(151936, 2.0f), 0.95f,
             "near the cut each of 151,936 probabilities is about 1e-6; a float running total drifts by more "
             "than that and cuts at another token. Add them up in double.");
    edge.end();

    Group rnd("random rows");
    for (int n : {2, 3, 10, 40, 100, 1000, 151936}) {
        for (int k = 0; k < 4; k++) {
            std::vector<float> l = gaussians(n, n > 1000 ? 3.0f : 1.5f);
            if (k % 2)  // half the rows as top-k leaves them: most tokens already -inf
                for (auto& x : l)
                    if (uniform(0, 1) < 0.7f) x = NEG_INF;
            if (!(*std::max_element(l.begin(), l.end()) > NEG_INF)) l[0] = 0.0f;
            float p = safe_p(l, uniform(0.05f, 0.9f), 1e-5);
            run_case(rnd, k % 2 ? "gaussian logits, 70% already masked" : "gaussian logits", l, p,
                     n > 10000 ? "with this many tokens, add the probabilities up in double." : "");
        }
    }
    rnd.end();

    Group e2e("end to end: generate() on models/tiny with top-p, the same token ids", 2);
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
                           fmt("-t 1 -k %d --top-p %g -s %u, 16 tokens", run.top_k, run.top_p, run.seed),
                           "the cases above pass but generations differ? With -k 0 every one of the 151,936 tokens "
                           "is alive when top-p runs.");
        }
    }
    e2e.end();
    return finish("top-p");
}
