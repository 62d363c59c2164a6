// chapters/rng/checker.cpp — the student's rng_next, rng_uniform and
// sample_roulette against the engine's.
//
// 1. the book's numbers for seed 1; 2. long streams from many seeds (the
// outputs and the state left behind, bit for bit); 3. uniform's range at
// its extremes; 4. the roulette's boundaries, zeros and fallback, then
// random wheels up to the vocabulary's size; 5. whole generations of
// models/tiny at several seeds and temperatures: the same token ids.
#include "../checker_common.h"

uint32_t rng_next_reference(Rng& r);
uint32_t rng_next_student(Rng& r);
float rng_uniform_reference(Rng& r);
float rng_uniform_student(Rng& r);
int sample_roulette_reference(const float* probs, int n, double r);
int sample_roulette_student(const float* probs, int n, double r);

// The engine's calls land here.
uint32_t rng_next(Rng& r) { return g_side == Side::Reference ? rng_next_reference(r) : rng_next_student(r); }
float rng_uniform(Rng& r) { return g_side == Side::Reference ? rng_uniform_reference(r) : rng_uniform_student(r); }
int sample_roulette(const float* probs, int n, double r) {
    return g_side == Side::Reference ? sample_roulette_reference(probs, n, r) : sample_roulette_student(probs, n, r);
}

static std::string state(const Rng& r) { return fmt("x=%u y=%u z=%u w=%u", r.x, r.y, r.z, r.w); }

// rng_next from the same state on both sides, `count` times.
static void check_stream(Group& g, const std::string& name, Rng start, int count) {
    g.start(name + " (" + state(start) + ")");
    Rng a = start, b = start;
    for (int i = 0; i < count; i++) {
        Rng before = a;
        uint32_t want = rng_next_reference(a), got = rng_next_student(b);
        if (want != got || a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w) {
            std::string hint =
                got == 0 ? tr("your rng_next returned 0: is it still the stub?", "你的 rng_next 返回了 0：是不是还是桩函数？")
                : want != got
                    ? tr("t comes from the old x; the words move down (x <- y, y <- z, z <- w); the new w is built from "
                         "the old w and t. Every variable uint32_t. Retrace the book's step for seed 1 by hand.",
                         "t 由旧的 x 算出；几个字依次下移（x <- y，y <- z，z <- w）；新的 w 由旧的 w 和 t 构成。"
                         "每个变量都是 uint32_t。对照书中随机种子 1 的那一步，手算一遍。")
                    : tr("the number is right but the state is not: after the call x, y, z, w must hold the old y, z, w "
                         "and the new w.",
                         "返回的数对了，但状态不对：调用之后，x、y、z、w 必须依次是旧的 y、z、w 和新的 w。");
            return g.fail(fmt(tr("call #%d from state %s:\nexpected %u (0x%08x), state after: %s\ngot      %u (0x%08x), "
                                 "state after: %s",
                                 "第 %d 次调用，从状态 %s 开始：\n应为 %u (0x%08x)，之后的状态：%s\n实际 %u (0x%08x)，"
                                 "之后的状态：%s"),
                              i + 1, state(before).c_str(), want, want, state(a).c_str(), got, got, state(b).c_str()),
                          hint);
        }
    }
}

static void check_uniform(Group& g, const std::string& name, Rng start, int count) {
    g.start(name + " (" + state(start) + ")");
    Rng a = start, b = start;
    for (int i = 0; i < count; i++) {
        Rng before = a;
        float want = rng_uniform_reference(a), got = rng_uniform_student(b);
        if (want != got || !(got >= 0.0f && got < 1.0f)) {
            Rng copy = before;
            uint32_t bits = rng_next_reference(before), yours = rng_next_student(copy);
            std::string hint = bits != yours ? tr("your rng_next gives other bits here: fix it first (the group above).",
                                                  "你的 rng_next 在这里给出了不同的位：先修好它（上面那一组）。")
                             : got >= 1.0f ? tr("1.0 is outside [0, 1): with bits near 2^32, dividing all 32 bits in "
                                                "float rounds up to 1. Keep the top 24 bits (bits >> 8) and multiply "
                                                "by 2^-24.",
                                                "1.0 不在 [0, 1) 里：位接近 2^32 时，在 float 里用全部 32 位去除，"
                                                "会向上舍入成 1。只保留最高的 24 位（bits >> 8），再乘以 2^-24。")
                                           : tr("keep the top 24 of the 32 bits (bits >> 8) and scale by 1/16777216.",
                                                "保留 32 位中最高的 24 位（bits >> 8），再乘以 1/16777216。");
            return g.fail(fmt(tr("draw #%d: the next 32 random bits are %u (0x%08x)\nexpected %.9g (= %u / 2^24)\ngot      "
                                 "%.9g",
                                 "第 %d 次抽取：接下来的 32 个随机位是 %u (0x%08x)\n应为 %.9g（= %u / 2^24）\n实际 "
                                 "%.9g"),
                              i + 1, bits, bits, want, bits >> 8, got),
                          hint);
        }
    }
}

static void check_roulette(Group& g, const std::string& name, const std::vector<float>& probs, double r,
                           const std::string& hint) {
    int n = (int)probs.size();
    g.start(fmt("%s (n=%d, r=%.9g)", name.c_str(), n, r));
    int want = sample_roulette_reference(probs.data(), n, r), got = sample_roulette_student(probs.data(), n, r);
    if (want != got) {
        std::string s = fmt(tr("expected index %d, got %d\nweights: %s", "应为下标 %d，实际是 %d\n权重：%s"), want, got,
                            show(probs, want).c_str());
        if (got >= 0 && got < n) s += fmt(tr("\nthe weight at your index %d is %.9g", "\n你给出的下标 %d 处的权重是 %.9g"), got, probs[got]);
        g.fail(s, hint);
    }
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "rng",
                  "xorshift128, a uniform float, and the roulette draw",
                  "xorshift128、均匀分布的 float，以及轮盘抽取");

    Group book(tr("the book's numbers for seed 1", "书中随机种子 1 的那些数"));
    {
        Rng r;
        rng_seed(r, 1);
        book.start(tr("seed 1: first rng_next is 3690984874", "随机种子 1：第一次 rng_next 是 3690984874"));
        Rng s = r;
        uint32_t got = rng_next_student(s);
        if (got != 3690984874u)
            book.fail(fmt(tr("state x=1 y=1812433254 z=1900727103 w=3690981084\nexpected 3690984874, got %u",
                             "状态 x=1 y=1812433254 z=1900727103 w=3690981084\n应为 3690984874，实际是 %u"), got),
                      tr("t = 1 ^ (1 << 11) = 2049; new w = 3690981084 ^ (3690981084 >> 19) ^ 2049 ^ (2049 >> 8).",
                         "t = 1 ^ (1 << 11) = 2049；新的 w = 3690981084 ^ (3690981084 >> 19) ^ 2049 ^ (2049 >> 8)。"));
        book.start(tr("seed 1: first rng_uniform is 14417909 / 2^24 = 0.8594", "随机种子 1：第一次 rng_uniform 是 14417909 / 2^24 = 0.8594"));
        s = r;
        float u = rng_uniform_student(s);
        if (u != 14417909.0f / 16777216.0f)
            book.fail(fmt(tr("expected %.9g, got %.9g", "应为 %.9g，实际是 %.9g"), 14417909.0f / 16777216.0f, u),
                      tr("3690984874 >> 8 = 14417909; times 2^-24.", "3690984874 >> 8 = 14417909；再乘以 2^-24。"));
    }
    book.end();

    Group stream(tr("rng_next: 10,000 numbers from each of several states", "rng_next：从几个状态出发，各生成 10,000 个数"));
    for (uint32_t seed : {1u, 12345u, 42u, 4294967295u, 2166136261u}) {
        Rng r;
        rng_seed(r, seed);
        check_stream(stream, fmt(tr("seed %u", "随机种子 %u"), seed), r, 10000);
    }
    {
        Rng r;
        r.x = 0x80000000u, r.y = 0xFFFFFFFFu, r.z = 0x7FFFFFFFu, r.w = 0xFFFFFFFFu;  // sign bits set everywhere
        check_stream(stream, tr("top bits set", "最高位都置 1"), r, 1000);
    }
    stream.end();

    Group uni(tr("rng_uniform: [0, 1) and 24 bits", "rng_uniform：[0, 1) 和 24 位"));
    for (uint32_t seed : {1u, 12345u, 7u}) {
        Rng r;
        rng_seed(r, seed);
        check_uniform(uni, fmt(tr("seed %u, 10,000 draws", "随机种子 %u，抽取 10,000 次"), seed), r, 10000);
    }
    {
        // x = 0 makes t = 0, so the next output is w ^ (w >> 19):
        // w = 0xFFFFE000 gives 0xFFFFFFFF, the largest possible; w = 0 gives 0.
        Rng top{0, 5, 6, 0xFFFFE000u}, zero{0, 5, 6, 0};
        check_uniform(uni, tr("the largest bits 0xFFFFFFFF must stay below 1", "最大的位 0xFFFFFFFF 也必须小于 1"), top, 1);
        check_uniform(uni, tr("bits 0 give 0", "位为 0 时得到 0"), zero, 1);
    }
    uni.end();

    Group wheel(tr("sample_roulette: boundaries, zeros, fallback", "sample_roulette：边界、为 0 的权重、兜底"));
    check_roulette(wheel, tr("the book's wheel 0.60/0.25/0.15, first draw", "书中的轮盘 0.60/0.25/0.15，第一次抽取"),
                   {0.60f, 0.25f, 0.15f}, 0.1613,
                   tr("0.1613 lands in token 0's segment [0, 0.60).", "0.1613 落在词元 0 的区间 [0, 0.60) 里。"));
    check_roulette(wheel, tr("the book's wheel, second draw", "书中的轮盘，第二次抽取"), {0.60f, 0.25f, 0.15f}, 0.8553,
                   tr("0.8553 is past 0.60 + 0.25 = 0.85: token 2.", "0.8553 超过了 0.60 + 0.25 = 0.85：是词元 2。"));
    check_roulette(wheel, tr("r exactly on a boundary", "r 正好落在边界上"), {0.25f, 0.25f, 0.5f}, 0.25,
                   tr("the running total must be greater than r, strictly: at r = 0.25 token 0's segment [0, 0.25) "
                      "is already behind.",
                      "累加和必须严格大于 r：r = 0.25 时，词元 0 的区间 [0, 0.25) 已经过去了。"));
    check_roulette(wheel, tr("r = 0 with leading zero weights", "r = 0，开头几个权重为 0"), {0.0f, 0.0f, 0.5f, 0.5f}, 0.0,
                   tr("a token with weight 0 has an empty segment and can never be drawn.",
                      "权重为 0 的词元区间是空的，永远不会被抽中。"));
    check_roulette(wheel, tr("rounding: r a hair past the total", "舍入：r 比总和大了一丁点"), {0.5f, 0.5f, 0.0f, 0.0f}, 1.0000001,
                   tr("when the loop ends without finding r, take the last index with a nonzero weight (here 1), "
                      "not n - 1: tokens 2 and 3 have weight 0.",
                      "循环结束还没找到 r 时，取最后一个权重不为 0 的下标（这里是 1），而不是 n - 1：词元 2 和 3 的权重是 0。"));
    check_roulette(wheel, tr("all weights 0", "所有权重都是 0"), {0.0f, 0.0f, 0.0f}, 0.0,
                   tr("with nothing to draw, return 0.", "没有可抽的，就返回 0。"));
    check_roulette(wheel, tr("one token", "只有一个词元"), {0.7f}, 0.3, "");
    wheel.end();

    Group rndwheel(tr("sample_roulette: random wheels", "sample_roulette：随机的轮盘"));
    for (int n : {2, 5, 40, 1000, 151936}) {
        for (int k = 0; k < 8; k++) {
            std::vector<float> p(n);
            double sum = 0;
            for (auto& x : p) {
                x = uniform(0, 1) < 0.3f ? 0.0f : uniform(0, 1);
                sum += x;
            }
            double r = (k == 7 ? 0.9999 : uniform(0, 1)) * sum;
            check_roulette(rndwheel, tr("random weights, 30% zeros", "随机权重，30% 为 0"), p, r,
                           n > 10000 ? tr("with 151,936 weights a float running total drifts by whole weights; "
                                          "keep it in a double, like r.",
                                          "有 151,936 个权重时，float 的累加和会漂移整整几个权重那么多；像 r 一样，用 double 存它。")
                                     : tr("the first index whose running total (a double) is greater than r.",
                                          "第一个累加和（double）大于 r 的下标。"));
        }
    }
    rndwheel.end();

    Group e2e(tr("end to end: generate() on models/tiny, the same token ids", "端到端：在 models/tiny 上运行 generate()，词元 id 必须相同"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Fast, 1);
    if (load_tiny(e2e, m, tok)) {
        struct Run { float temp; int top_k; uint32_t seed; };
        for (Run run : {Run{0.8f, 40, 1}, Run{0.8f, 40, 12345}, Run{1.0f, 0, 7}, Run{1.5f, 0, 99}}) {
            GenerateParams p;
            p.n_predict = 24;
            p.sampling.temperature = run.temp;
            p.sampling.top_k = run.top_k;
            p.sampling.seed = run.seed;
            check_generate(e2e, m, tok, "Once upon a time", p,
                           fmt(tr("-t %g -k %d -s %u, 24 tokens", "-t %g -k %d -s %u，24 个词元"), run.temp, run.top_k, run.seed),
                           tr("the parts above pass but whole generations differ? Every token uses one rng_uniform "
                              "and one sample_roulette; with -k 0 the wheel has all 151,936 tokens.",
                              "上面的部分都通过了，整段生成却不同？每个词元用一次 rng_uniform 和一次 sample_roulette；"
                              "-k 0 时，轮盘上有全部 151,936 个词元。"));
        }
    }
    e2e.end();
    return finish("rng");
}
