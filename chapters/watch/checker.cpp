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
    if (got.n == 0 && got.bad == 0 && got.sum == 0) return "nothing was added (is the function still the stub?)";
    if (got.bad != want.bad || got.n != want.n) {
        if (got.n == want.n + want.bad) return "n counts the finite values only: a NaN or inf goes to bad, not to n";
        if (had_start && got.n + 0 < want.n) return "s already held values: add to n, min, max, sum, sumsq; do not reset them";
        return "n or bad is off: every number is either finite (n) or NaN/inf (bad)";
    }
    if (!std::isfinite(got.sum) || !std::isfinite(got.sumsq)) return "a NaN or inf reached the sums: skip it after counting it in bad";
    if (got.min != want.min || got.max != want.max) {
        if (got.min == 0 || got.max == 0)
            return "min or max stayed at 0: the first finite value (s.n == 0) must set both, or an all-positive tensor "
                   "reports min 0";
        return "min or max is off: each finite value may widen them";
    }
    if (had_start) return "s already held values: add to sum and sumsq, do not overwrite them";
    return "sum or sumsq is off: add x and x*x in double";
}

static void stats_case(Group& g, const std::string& name, const std::vector<std::vector<float>>& parts,
                       const TensorStats& start = TensorStats()) {
    g.start(name);
    TensorStats want = start, got = start;
    std::string input;
    for (const auto& p : parts) {
        stats_add_reference(want, p.data(), p.size());
        stats_add_student(got, p.data(), p.size());
        input += (input.empty() ? "" : "\nthen ") + show(p);
    }
    bool had_start = start.n > 0 || parts.size() > 1;
    std::string d = diagnose(want, got, had_start);
    if (!d.empty())
        g.fail((start.n ? "s before: " + show_stats(start) + "\n" : std::string()) + "x: " + input + "\nexpected " +
                   show_stats(want) + "\ngot      " + show_stats(got),
               d);
}

static void entropy_case(Group& g, const std::string& name, const std::vector<float>& p, int rows, int cols) {
    g.start(fmt("%s (rows=%d, cols=%d)", name.c_str(), rows, cols));
    double want = mean_row_entropy_bits_reference(p.data(), rows, cols);
    double got = mean_row_entropy_bits_student(p.data(), rows, cols);
    if (close(want, got) || std::fabs(want - got) <= 1e-6 * (std::fabs(want) + 1e-3)) return;
    std::string hint = "H = -sum p log2(p) per row, then the mean over rows.";
    if (std::isnan(got)) hint = "NaN: a zero weight gives 0 * log2(0) = 0 * -inf; take 0 * log2(0) as 0 (skip p = 0)";
    else if (got == 0 && want != 0) hint = "0 where the answer is not: is the function still the stub?";
    else if (rows > 1 && close(want * rows, got)) hint = "that is the sum over the rows: return their mean";
    else if (close(want * std::log(2.0), got)) hint = "that is in nats (natural log): bits use log2";
    else if (close(-want, got)) hint = "the sign: H = -sum p log2 p is never negative";
    g.fail(fmt("p: %s\nexpected %.9g bits, got %.9g", show(p).c_str(), want, got), hint);
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
    checker_begin(argc, argv, "watch", "the statistics of a tensor (-vv) and the entropy of attention (-v)");

    Group book("the book's small examples");
    stats_case(book, "x = (1, -2, 3): n 3, min -2, max 3, mean 2/3, rms sqrt(14/3)", {{1, -2, 3}});
    entropy_case(book, "weights (0.5, 0.5, 0, 0): 1 bit", {0.5f, 0.5f, 0, 0}, 1, 4);
    book.end();

    Group two("statistics added in pieces, and all-positive or all-negative tensors");
    stats_case(two, "all positive (min must not stay 0)", {{3, 1, 4, 1, 5}});
    stats_case(two, "all negative (max must not stay 0)", {{-3, -1, -4}});
    stats_case(two, "two calls: (1, 2) then (-7, 0.5)", {{1, 2}, {-7, 0.5f}});
    {
        TensorStats start;
        std::vector<float> first = gaussians(100);
        stats_add_reference(start, first.data(), first.size());
        stats_case(two, "s already holds 100 values", {gaussians(37, 3.0f)}, start);
    }
    for (int n : {1, 7, 896, 4864}) stats_case(two, fmt("random, n=%d", n), {gaussians(n, 2.0f)});
    stats_case(two, "an empty piece", {{}, {2.5f}});
    two.end();

    Group bad("NaN and inf are counted, not summed");
    stats_case(bad, "one NaN", {{1, NAN, 2}});
    stats_case(bad, "+inf and -inf", {{INFINITY, 0.5f, -INFINITY, -0.25f}});
    stats_case(bad, "NaN first", {{NAN, 4, 5}});
    stats_case(bad, "only NaN", {{NAN, NAN}});
    bad.end();

    Group ent("entropy of rows of weights");
    for (int k : {1, 2, 3, 8, 100}) entropy_case(ent, "uniform over k: log2(k) bits", std::vector<float>(k, 1.0f / k), 1, k);
    entropy_case(ent, "all on one position: 0 bits", {0, 1, 0, 0, 0}, 1, 5);
    entropy_case(ent, "two rows: 1 bit and 0 bits, mean 0.5", {0.5f, 0.5f, 0, 1}, 2, 2);
    for (int rows : {1, 3, 14})
        for (int cols : {4, 33, 200}) entropy_case(ent, "random softmax rows", weight_rows(rows, cols, 2.0f), rows, cols);
    entropy_case(ent, "no rows: 0", {}, 0, 4);
    ent.end();

    Group e2e("end to end: models/tiny, the -vv tensor lines and the -v per-layer numbers", 2);
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);
    if (load_tiny(e2e, m, tok)) {
        std::vector<int> tokens = tokenizer_encode(tok, "Watch the tensors of every layer.");
        e2e.start("a forward pass with -vv");
        g_side = Side::Reference;
        Watched want = watch_forward(m, tokens);
        g_side = Side::Student;
        Watched got = watch_forward(m, tokens);
        std::string hint = g_groups_failed ? "fix the failures above first: they are smaller and say more." : "";
        if (want.lines.empty()) e2e.fail("the reference printed no -vv tensor line", "");
        else if (want.lines.size() != got.lines.size())
            e2e.fail(fmt("the reference printed %zu tensor lines, yours %zu", want.lines.size(), got.lines.size()), hint);
        else
            for (size_t i = 0; i < want.lines.size(); i++)
                if (want.lines[i] != got.lines[i]) {
                    e2e.fail(fmt("tensor line %zu differs:\nexpected %s\ngot      %s", i, want.lines[i].c_str(), got.lines[i].c_str()), hint);
                    break;
                }
        e2e.start("the per-layer numbers of -v: residual rms in and out, attention entropy");
        for (size_t l = 0; l < want.layers.size() && l < got.layers.size(); l++) {
            const LayerProbe &a = want.layers[l], &b = got.layers[l];
            if (a.rms_in != b.rms_in || a.rms_out != b.rms_out || std::fabs(a.entropy_bits - b.entropy_bits) > 1e-5f) {
                e2e.fail(fmt("layer %zu: expected rms %.6g -> %.6g, entropy %.6g bits; got rms %.6g -> %.6g, entropy %.6g", l,
                             a.rms_in, a.rms_out, a.entropy_bits, b.rms_in, b.rms_out, b.entropy_bits),
                         hint);
                break;
            }
        }
    }
    e2e.end();
    return finish("watch");
}
