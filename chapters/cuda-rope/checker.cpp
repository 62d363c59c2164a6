// chapters/cuda-rope/checker.cpp — the student's RoPE kernel, run as a grid
// of threads on the CPU (simt.h), against its CPU twin kernels.cpp:apply_rope.
//
// 1. the book's worked example; 2. random heads at many positions; 3. the
// threads past the end of the data must write nothing; 4. the threads'
// order must not matter; 5. long context; 6. the whole model on models/tiny
// with the kernel rotating every query and key.
#include "../checker_common.h"
#include "simt.h"

void apply_rope_reference(float* vec, int n_heads, int head_dim, int pos, float theta);
void apply_rope_student(float* vec, int n_heads, int head_dim, int pos, float theta);

// The engine's calls land here.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    if (g_side == Side::Reference) apply_rope_reference(vec, n_heads, head_dim, pos, theta);
    else apply_rope_student(vec, n_heads, head_dim, pos, theta);
}

static const float GUARD = -12345.0f;  // what the numbers after vec hold; no thread may change them
static const int N_GUARD = 512;

static void run_case(Group& g, int n_heads, int hd, int pos, float theta, const std::string& hint) {
    g.start(fmt(tr("n_heads=%d, head_dim=%d, pos=%d, theta=%g (%d pairs: %u blocks of 256 threads)",
                   "n_heads=%d, head_dim=%d, pos=%d, theta=%g（%d 对：%u 个线程块，每块 256 个线程）"), n_heads, hd, pos,
                theta, n_heads * hd / 2, blocks_for((size_t)n_heads * hd / 2, 256)));
    int n = n_heads * hd;
    std::vector<float> in = gaussians(n), want = in, got = in;
    got.resize(n + N_GUARD, GUARD);
    apply_rope_reference(want.data(), n_heads, hd, pos, theta);
    long before = g_simt_threads;
    apply_rope_student(got.data(), n_heads, hd, pos, theta);
    for (int k = n; k < n + N_GUARD; k++)
        if (got[k] != GUARD)
            return g.fail(fmt(tr("vec has %d numbers; the one %d places after its end changed from %g to %g",
                                 "vec 有 %d 个数；它末尾之后第 %d 个位置上的数从 %g 变成了 %g"), n, k - n + 1,
                              GUARD, got[k]),
                          tr("the grid is whole blocks, so the last block has threads with no pair: they must return "
                             "before touching vec (if (idx >= T * n_heads * half) return;).",
                             "网格由整数个线程块组成，所以最后一块里有些线程分不到数对：它们必须在碰 vec 之前就返回"
                             "（if (idx >= T * n_heads * half) return;）。"));
    got.resize(n);
    std::string d = compare(want, got, 1e-5);
    if (d.empty()) return;
    std::string why = hint;
    if (got == in) why = g_simt_threads == before ? tr("no thread ran: does apply_rope still launch rope_kernel?",
                                                       "一个线程都没有运行：apply_rope 还在启动 rope_kernel 吗？")
                                                  : tr("vec is unchanged: is rope_kernel still the stub?",
                                                       "vec 没有变化：rope_kernel 是不是还是桩函数？");
    g.fail(tr("vec in: ", "输入的 vec：") + show(in) + "\n" + d, why);
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "cuda-rope",
                  "one CUDA thread per RoPE pair, run on the CPU, against kernels.cpp:apply_rope",
                  "每个 RoPE 数对一个 CUDA 线程，在 CPU 上运行，与 kernels.cpp:apply_rope 对照");
    const std::string generic =
        tr("idx -> (t, h, i): i = idx % half, h = idx / half % n_heads, t = idx / half / n_heads; the pair is "
           "(v[i], v[i + half]) of that head, angle = (pos0 + t) * theta^(-2i/head_dim).",
           "idx -> (t, h, i)：i = idx % half，h = idx / half % n_heads，t = idx / half / n_heads；数对是"
           "该注意力头的 (v[i], v[i + half])，角度 = (pos0 + t) * theta^(-2i/head_dim)。");

    Group book(tr("the book's worked example, one head, as a grid", "书中的演算示例，一个注意力头，以网格运行"));
    {
        book.start("v = (1, 0, 0, 1), pos 1, theta 10000");
        std::vector<float> want = {1, 0, 0, 1}, got = want;
        got.resize(4 + N_GUARD, GUARD);
        apply_rope_reference(want.data(), 1, 4, 1, 10000.0f);
        apply_rope_student(got.data(), 1, 4, 1, 10000.0f);
        got.resize(4);
        std::string d = compare(want, got, 1e-5);
        if (!d.empty()) book.fail(d, got == std::vector<float>{1, 0, 0, 1}
                                 ? tr("vec is unchanged: is rope_kernel still the stub?", "vec 没有变化：rope_kernel 是不是还是桩函数？")
                                 : generic);
    }
    book.end();

    Group rnd(tr("random heads (1 to 14 heads, widths 2 to 128) at positions up to 1000",
                 "随机的注意力头（1 到 14 个，宽度 2 到 128），位置不超过 1000"));
    for (int hd : {2, 6, 64, 128})
        for (int heads : {1, 2, 14})
            for (int pos : {1, 7, 999}) run_case(rnd, heads, hd, pos, 1e6f, generic);
    rnd.end();

    Group edge(tr("threads past the end write nothing (sizes that are not whole blocks)",
                  "超出末尾的线程什么也不写（大小不是整数个线程块）"));
    for (int heads : {3, 9, 17}) run_case(edge, heads, 64, 5, 1e6f, generic);
    bool in_bounds = edge.end();

    Group order(tr("the threads' order does not matter (the same grid run last thread first)",
                   "线程的执行顺序无关紧要（同一个网格，从最后一个线程倒着运行）"));
    for (int hd : {4, 64}) {
        order.start(fmt(tr("n_heads=2, head_dim=%d, pos=3: first to last, then last to first",
                           "n_heads=2, head_dim=%d, pos=3：先从头到尾，再从尾到头"), hd));
        std::vector<float> in = gaussians(2 * hd), a = in, b = in;
        a.resize(2 * hd + N_GUARD, GUARD), b.resize(2 * hd + N_GUARD, GUARD);  // room for a kernel without its bound
        apply_rope_student(a.data(), 2, hd, 3, 1e6f);
        g_simt_backwards = true;
        apply_rope_student(b.data(), 2, hd, 3, 1e6f);
        g_simt_backwards = false;
        a.resize(2 * hd), b.resize(2 * hd);
        std::string d = compare(a, b, 0.0);
        if (!d.empty())
            order.fail(tr("run forwards vs backwards: ", "正着运行与倒着运行对比：") + d,
                       tr("the result depends on which thread runs first: two threads read or write the same number. "
                          "Give each thread a whole pair: it reads v[i] and v[i + half] before writing either, and no "
                          "other thread touches them.",
                          "结果取决于哪个线程先运行：有两个线程读写了同一个数。"
                          "让每个线程负责一整对：先读 v[i] 和 v[i + half]，再写其中任何一个，而且别的线程都不碰它们。"));
    }
    order.end();

    Group lng(tr("long context: positions near 32767", "长上下文：32767 附近的位置"));
    for (int pos : {20000, 30000, 32767})
        run_case(lng, 2, 64, pos, 1e6f,
                 tr("near 30000 radians a float angle is only precise to ~0.002: compute the frequency and the angle in "
                    "double, as kernels.cpp:apply_rope does.",
                    "在 30000 弧度附近，float 表示的角度只精确到约 0.002：像 kernels.cpp:apply_rope 那样，"
                    "用 double 计算频率和角度。"));
    lng.end();

    Group e2e(tr("end to end: models/tiny, logits at every step, your kernel rotating every q and k",
                 "端到端：models/tiny，每一步的 logit，由你的核函数旋转每个 q 和 k"), 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (!in_bounds) {  // inside the engine, writes past the end would land in its own buffers
        e2e.start(tr("not run", "未运行"));
        e2e.fail(tr("a kernel that writes past the end of vec would overwrite the engine's memory",
                    "写过 vec 末尾的核函数会覆盖引擎的内存"),
                 tr("fix the group of threads past the end first.", "先修好“超出末尾的线程”那一组。"));
    } else if (load_tiny(e2e, m, tok)) {
        check_forward(e2e, m, tokenizer_encode(tok, "One thread per pair of numbers."), 8, 1e-4);
        check_forward(e2e, m, tokenizer_encode(tok, "Far along."), 4, 1e-4, 4000);
    }
    e2e.end();
    return finish("cuda-rope");
}
