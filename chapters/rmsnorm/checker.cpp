// chapters/rmsnorm/checker.cpp — the student's rmsnorm against the engine's.
//
// 1. the book's worked example; 2. random vectors of awkward sizes and
// scales; 3. edge cases (zeros, one element, huge and tiny values); 4. the
// whole model: logits of models/tiny at every step of a greedy generation.
#include "../checker_common.h"

void rmsnorm_reference(float* out, const float* x, const float* w, int n, float eps);
void rmsnorm_student(float* out, const float* x, const float* w, int n, float eps);

// The engine's calls land here.
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    if (g_side == Side::Reference) rmsnorm_reference(out, x, w, n, eps);
    else rmsnorm_student(out, x, w, n, eps);
}

// One case: both versions on the same input; 0.5 ulp-ish slack of float
// accumulation over n elements is allowed (rtol 1e-5).
static void run_case(Group& g, const std::string& name, const std::vector<float>& x, const std::vector<float>& w,
                     float eps, const std::string& hint) {
    int n = (int)x.size();
    g.start(fmt("%s (n=%d, eps=%g)", name.c_str(), n, eps));
    std::vector<float> want(n), got(n, 12345.0f);
    rmsnorm_reference(want.data(), x.data(), w.data(), n, eps);
    rmsnorm_student(got.data(), x.data(), w.data(), n, eps);
    std::string d = compare(want, got);
    if (!d.empty()) g.fail("x: " + show(x) + "\nw: " + show(w) + "\n" + d, hint);
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "rmsnorm", "out = x / sqrt(mean(x^2) + eps) * w", "out = x / sqrt(mean(x^2) + eps) * w");
    const std::string usual =
        tr("rms = sqrt(sum of x[i]^2 / n + eps): the mean of the squares (divide by n), eps inside the root, "
           "then multiply by w[i].",
           "rms = sqrt(x[i]^2 之和 / n + eps)：先求平方的均值（除以 n），eps 放在根号里面，再乘以 w[i]。");

    Group book(tr("the book's worked example", "书中的演算示例"));
    run_case(book, "x=(1,3,-5,-1), w=(1.5,1,0.6,3) -> (0.5,1,-1,-1)", {1, 3, -5, -1}, {1.5f, 1, 0.6f, 3}, 1e-6f, usual);
    book.end();

    Group rnd(tr("random vectors", "随机向量"));
    for (int n : {1, 2, 3, 7, 8, 9, 13, 31, 64, 100, 896, 1000}) {
        for (float scale : {1e-3f, 1.0f, 50.0f}) {
            std::vector<float> x = gaussians(n, scale), w(n);
            for (auto& v : w) v = 1.0f + gaussian(0.5f);
            run_case(rnd, fmt("x ~ N(0, %g^2), w ~ N(1, 0.25)", scale), x, w, 1e-6f, usual);
        }
    }
    rnd.end();

    Group edge(tr("edge cases", "边界情况"));
    run_case(edge, tr("all zeros", "全为 0"), std::vector<float>(16, 0.0f), std::vector<float>(16, 1.0f), 1e-6f,
             tr("x = 0 everywhere must give 0, not NaN: eps belongs inside the square root.",
                "x 处处为 0 时结果必须是 0，而不是 NaN：eps 应该放在平方根里面。"));
    run_case(edge, tr("eps matters: x tiny", "eps 起作用：x 很小"), std::vector<float>(8, 1e-4f), std::vector<float>(8, 1.0f), 1e-5f,
             tr("with x[i]^2 around eps, eps changes the answer: rms = sqrt(mean + eps), not sqrt(mean) + eps.",
                "x[i]^2 与 eps 差不多大时，eps 会改变结果：rms = sqrt(mean + eps)，而不是 sqrt(mean) + eps。"));
    run_case(edge, tr("one element", "只有一个元素"), {-3.0f}, {2.0f}, 1e-6f, usual);
    {
        std::vector<float> x = gaussians(37, 1e20f), w = gaussians(37);
        run_case(edge, tr("huge values (1e20)", "极大的值（1e20）"), x, w, 1e-6f,
                 tr("(1e20)^2 = 1e40 is larger than the largest float (3.4e38): it becomes inf. Add up the squares "
                    "in a double.",
                    "(1e20)^2 = 1e40 超过了 float 的最大值（3.4e38），会变成 inf。请用 double 累加平方和。"));
    }
    {
        std::vector<float> x = gaussians(37, 1e-3f), w = gaussians(37);
        x[5] = 0;
        run_case(edge, tr("negative gains and a zero", "负的增益和一个 0"), x, w, 1e-6f, usual);
    }
    edge.end();

    Group e2e(tr("end to end: models/tiny, logits at every step of a greedy generation",
                 "端到端：models/tiny，贪心解码每一步的 logit"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    g_side = Side::Student;
    if (load_tiny(e2e, m, tok))
        check_forward(e2e, m, tokenizer_encode(tok, "The quick brown fox jumps over the lazy dog."), 12, 1e-4);
    e2e.end();
    return finish("rmsnorm");
}
