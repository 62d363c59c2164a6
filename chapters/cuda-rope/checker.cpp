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
    g.start(fmt("n_heads=%d, head_dim=%d, pos=%d, theta=%g (%d pairs: %u blocks of 256 threads)", n_heads, hd, pos,
                theta, n_heads * hd / 2, blocks_for((size_t)n_heads * hd / 2, 256)));
    int n = n_heads * hd;
    std::vector<float> in = gaussians(n), want = in, got = in;
    got.resize(n + N_GUARD, GUARD);
    apply_rope_reference(want.data(), n_heads, hd, pos, theta);
    long before = g_simt_threads;
    apply_rope_student(got.data(), n_heads, hd, pos, theta);
    for (int k = n; k < n + N_GUARD; k++)
        if (got[k] != GUARD)
            return g.fail(fmt("vec has %d numbers; the one %d places after its end changed from %g to %g", n, k - n + 1,
                              GUARD, got[k]),
                          "the grid is whole blocks, so the last block has threads with no pair: they must return "
                          "before touching vec (if (idx >= T * n_heads * half) return;).");
    got.resize(n);
    std::string d = compare(want, got, 1e-5);
    if (d.empty()) return;
    std::string why = hint;
    if (got == in) why = g_simt_threads == before ? "no thread ran: does apply_rope still launch rope_kernel?"
                                                  : "vec is unchanged: is rope_kernel still the stub?";
    g.fail("vec in: " + show(in) + "\n" + d, why);
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "cuda-rope", "one CUDA thread per RoPE pair, run on the CPU, against kernels.cpp:apply_rope");
    const std::string generic =
        "idx -> (t, h, i): i = idx % half, h = idx / half % n_heads, t = idx / half / n_heads; the pair is "
        "(v[i], v[i + half]) of that head, angle = (pos0 + t) * theta^(-2i/head_dim).";

    Group book("the book's worked example, one head, as a grid");
    {
        book.start("v = (1, 0, 0, 1), pos 1, theta 10000");
        std::vector<float> want = {1, 0, 0, 1}, got = want;
        got.resize(4 + N_GUARD, GUARD);
        apply_rope_reference(want.data(), 1, 4, 1, 10000.0f);
        apply_rope_student(got.data(), 1, 4, 1, 10000.0f);
        got.resize(4);
        std::string d = compare(want, got, 1e-5);
        if (!d.empty()) book.fail(d, got == std::vector<float>{1, 0, 0, 1} ? "vec is unchanged: is rope_kernel still the stub?" : generic);
    }
    book.end();

    Group rnd("random heads (1 to 14 heads, widths 2 to 128) at positions up to 1000");
    for (int hd : {2, 6, 64, 128})
        for (int heads : {1, 2, 14})
            for (int pos : {1, 7, 999}) run_case(rnd, heads, hd, pos, 1e6f, generic);
    rnd.end();

    Group edge("threads past the end write nothing (sizes that are not whole blocks)");
    for (int heads : {3, 9, 17}) run_case(edge, heads, 64, 5, 1e6f, generic);
    bool in_bounds = edge.end();

    Group order("the threads' order does not matter (the same grid run last thread first)");
    for (int hd : {4, 64}) {
        order.start(fmt("n_heads=2, head_dim=%d, pos=3: first to last, then last to first", hd));
        std::vector<float> in = gaussians(2 * hd), a = in, b = in;
        a.resize(2 * hd + N_GUARD, GUARD), b.resize(2 * hd + N_GUARD, GUARD);  // room for a kernel without its bound
        apply_rope_student(a.data(), 2, hd, 3, 1e6f);
        g_simt_backwards = true;
        apply_rope_student(b.data(), 2, hd, 3, 1e6f);
        g_simt_backwards = false;
        a.resize(2 * hd), b.resize(2 * hd);
        std::string d = compare(a, b, 0.0);
        if (!d.empty())
            order.fail("run forwards vs backwards: " + d,
                       "the result depends on which thread runs first: two threads read or write the same number. "
                       "Give each thread a whole pair: it reads v[i] and v[i + half] before writing either, and no "
                       "other thread touches them.");
    }
    order.end();

    Group lng("long context: positions near 32767");
    for (int pos : {20000, 30000, 32767})
        run_case(lng, 2, 64, pos, 1e6f,
                 "near 30000 radians a float angle is only precise to ~0.002: compute the frequency and the angle in "
                 "double, as kernels.cpp:apply_rope does.");
    lng.end();

    Group e2e("end to end: models/tiny, logits at every step, your kernel rotating every q and k", 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (!in_bounds) {  // inside the engine, writes past the end would land in its own buffers
        e2e.start("not run");
        e2e.fail("a kernel that writes past the end of vec would overwrite the engine's memory",
                 "fix the group of threads past the end first.");
    } else if (load_tiny(e2e, m, tok)) {
        check_forward(e2e, m, tokenizer_encode(tok, "One thread per pair of numbers."), 8, 1e-4);
        check_forward(e2e, m, tokenizer_encode(tok, "Far along."), 4, 1e-4, 4000);
    }
    e2e.end();
    return finish("cuda-rope");
}
