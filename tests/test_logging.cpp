// tests/test_logging.cpp — tensor statistics, the -vv filters, and what -v
// and -vv print for a real forward pass on models/tiny: every named tensor of
// every layer exactly once per forward call, between the right phase banners.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "logging.h"
#include "generate.h"

// Log lines go to a temporary file while a case runs; the level, the
// watching and the filters are put back afterwards.
struct CapturedLog {
    FILE* f = tmpfile();
    CapturedLog(int verbosity) {
        g_log_file = f;
        set_log_verbosity(verbosity);
    }
    ~CapturedLog() {
        g_log_file = nullptr;
        set_log_verbosity(0);
        g_watch_tensors = g_probe_forward = false;
        g_watch_filter = WatchFilter();
        fclose(f);
    }
    std::vector<std::string> lines() {
        fflush(f);
        rewind(f);
        std::vector<std::string> out;
        char buf[8192];
        while (fgets(buf, sizeof buf, f)) {
            std::string s = buf;
            if (!s.empty() && s.back() == '\n') s.pop_back();
            out.push_back(s);
        }
        return out;
    }
};

// "[T fwd ] L3.attn.q   [1, 64] ..." -> "L3.attn.q"; "" for other lines.
static std::string tensor_name(const std::string& line) {
    if (line.compare(0, 9, "[T fwd ] ") != 0) return "";
    std::istringstream in(line.substr(9));
    std::string name;
    in >> name;
    return name;
}

static const char* LAYER_TENSORS[] = {"attn_norm", "attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope",
                                      "attn.scores", "attn.out", "attn.o_proj", "ffn_norm", "mlp.gate", "mlp.up",
                                      "mlp.act", "mlp.down", "resid"};

static std::map<std::string, int> expected_names(int n_layers, int times) {
    std::map<std::string, int> m = {{"embed", times}, {"final_norm", times}, {"logits", times}};
    for (int l = 0; l < n_layers; l++)
        for (const char* n : LAYER_TENSORS) m["L" + std::to_string(l) + "." + n] = times;
    return m;
}

struct TinyLog {
    Model model;
    Tokenizer tok;
};
static TinyLog& tiny() {
    static std::unique_ptr<TinyLog> t;
    if (!t) {
        REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
        t.reset(new TinyLog);
        load_model(t->model, "models/tiny");
        tokenizer_load(t->tok, "models/tiny");
    }
    return *t;
}

// ---------------------------------------------------------------------------

TEST_CASE("tensor stats of a 4-element tensor, checkable by hand") {
    const float x[4] = {1, -2, 3, -4};
    TensorStats s;
    stats_add(s, x, 4);
    CHECK(s.n == 4);
    CHECK(s.bad == 0);
    CHECK(s.min == -4);
    CHECK(s.max == 3);
    CHECK(stats_mean(s) == doctest::Approx(-0.5));               // (1 - 2 + 3 - 4) / 4
    CHECK(stats_rms(s) == doctest::Approx(std::sqrt(7.5)));      // sqrt((1 + 4 + 9 + 16) / 4)
}

TEST_CASE("tensor stats count NaN and inf apart and leave them out") {
    const float x[5] = {2, NAN, -2, INFINITY, 0};
    TensorStats s;
    stats_add(s, x, 5);
    CHECK(s.n == 3);
    CHECK(s.bad == 2);
    CHECK(s.min == -2);
    CHECK(s.max == 2);
    CHECK(stats_mean(s) == doctest::Approx(0));
    CHECK(stats_rms(s) == doctest::Approx(std::sqrt(8.0 / 3)));
    TensorStats empty;
    CHECK(stats_mean(empty) == 0);
    CHECK(stats_rms(empty) == 0);
}

TEST_CASE("attention entropy: 0 bits on one key, 1 bit over two, log2 n over n") {
    const float p[3][4] = {{1, 0, 0, 0}, {0.5f, 0.5f, 0, 0}, {0.25f, 0.25f, 0.25f, 0.25f}};
    CHECK(mean_row_entropy_bits(p[0], 1, 4) == doctest::Approx(0));
    CHECK(mean_row_entropy_bits(p[1], 1, 4) == doctest::Approx(1));
    CHECK(mean_row_entropy_bits(p[2], 1, 4) == doctest::Approx(2));
    CHECK(mean_row_entropy_bits(&p[0][0], 3, 4) == doctest::Approx(1));  // the mean of 0, 1, 2
}

TEST_CASE("index lists for --trace-layers and --trace-pos") {
    CHECK(parse_index_list("--trace-layers", "0,3,5-7") == std::vector<int>{0, 3, 5, 6, 7});
    CHECK(parse_index_list("--trace-pos", "4") == std::vector<int>{4});
    CHECK_THROWS_AS(parse_index_list("--trace-layers", "x"), LanternError);
    CHECK_THROWS_AS(parse_index_list("--trace-layers", "3-1"), LanternError);
    CHECK_THROWS_AS(parse_index_list("--trace-layers", "-1"), LanternError);
    CHECK_THROWS_AS(parse_index_list("--trace-layers", ""), LanternError);
    CHECK(split_commas("attn.q,mlp") == std::vector<std::string>{"attn.q", "mlp"});
}

TEST_CASE("set_log_verbosity turns on only what the level prints") {
    set_log_verbosity(0);
    g_watch_tensors = g_probe_forward = false;
    CHECK(g_log_level == LOG_INFO);
    set_log_verbosity(1);
    CHECK(g_log_level == LOG_DEBUG);
    CHECK(g_watch_tensors);
    CHECK(g_probe_forward);
    set_log_verbosity(2);
    CHECK(g_log_level == LOG_TRACE);
    set_log_verbosity(0);
    g_watch_tensors = g_probe_forward = false;
}

// The "costs nothing" promise: with no -v and no report, a forward pass
// reaches neither watch_tensor nor the probes, so a listener hears nothing.
static int heard = 0;
static void count_tensor(const char*, int, int, const float*, int, int) { heard++; }
static void count_begin(const int*, int, int, double) { heard++; }

TEST_CASE("a plain run calls no watcher and no probe, and prints nothing") {
    const Model& model = tiny().model;  // loaded (and logged) before the capture
    CapturedLog log(0);
    g_watch_tensors = g_probe_forward = false;
    ProbeListener l = {count_begin, nullptr, nullptr, count_tensor};
    g_probe_listener = &l;
    heard = 0;
    Net net;
    net_init(net, model, 64);
    int tok = 100;
    forward(net, &tok, 1, 0, false);
    g_probe_listener = nullptr;
    CHECK(heard == 0);
    CHECK(log.lines().empty());
}

TEST_CASE("-vv: one forward of one token prints every named tensor of every layer exactly once") {
    tiny();
    CapturedLog log(2);
    Net net;
    net_init(net, tiny().model, 64);
    int tok = 9707;
    forward(net, &tok, 1, 0, false);
    std::map<std::string, int> seen;
    for (auto& line : log.lines())
        if (!tensor_name(line).empty()) seen[tensor_name(line)]++;
    CHECK(seen == expected_names(tiny().model.cfg.n_layers, 1));
}

TEST_CASE("-vv during generation: once per forward call, prefill between the phase banners") {
    std::vector<int> prompt = tokenizer_encode(tiny().tok, "Hello");
    REQUIRE(prompt.size() == 1);
    CapturedLog log(2);
    Net net;
    net_init(net, tiny().model, 64);
    Sampler s;
    sampler_init(s, SamplerParams{});
    GenerateParams p;
    p.n_predict = 3;
    GenerateResult r = generate(net, tiny().tok, s, prompt, 0, p);
    int forwards = 1 + r.decode_forwards;
    CHECK(forwards == (int)r.ids.size() + (r.finish == Finish::Stop ? 1 : 0));

    std::vector<std::string> lines = log.lines();
    std::map<std::string, int> seen;
    int banner1 = -1, banner2 = -1, first_tensor = -1, tensors_before_2 = 0;
    for (int i = 0; i < (int)lines.size(); i++) {
        if (lines[i].find("Phase 1: Prefill (processing 1 prompt tokens)") != std::string::npos) banner1 = i;
        if (lines[i].find("Phase 2: Decode") != std::string::npos) banner2 = i;
        std::string n = tensor_name(lines[i]);
        if (n.empty()) continue;
        seen[n]++;
        if (first_tensor < 0) first_tensor = i;
        if (banner2 < 0) tensors_before_2++;
    }
    CHECK(seen == expected_names(tiny().model.cfg.n_layers, forwards));
    // Phase 1's banner comes before the prefill's tensors, Phase 2's right
    // after them: exactly one forward call's worth lies between.
    REQUIRE(banner1 >= 0);
    REQUIRE(banner2 >= 0);
    CHECK(banner1 < first_tensor);
    CHECK(tensors_before_2 == (int)expected_names(tiny().model.cfg.n_layers, 1).size());
}

TEST_CASE("-v: one line per layer per forward with time, residual rms and attention entropy") {
    CapturedLog log(1);
    Net net;
    net_init(net, tiny().model, 64);
    int toks[3] = {9707, 1879, 13};
    forward(net, toks, 3, 0, false);
    int layer_lines = 0, forward_lines = 0, tensor_lines = 0;
    for (auto& line : log.lines()) {
        if (line.find("resid rms") != std::string::npos && line.find("attn entropy") != std::string::npos) layer_lines++;
        if (line.find("forward of 3 tokens at pos 0") != std::string::npos) forward_lines++;
        if (!tensor_name(line).empty()) tensor_lines++;
    }
    CHECK(layer_lines == tiny().model.cfg.n_layers);
    CHECK(forward_lines == 1);
    CHECK(tensor_lines == 0);  // tensors are -vv only
}

TEST_CASE("-vv filters: layers, names, positions") {
    int n_layers = tiny().model.cfg.n_layers;
    int toks[4] = {9707, 1879, 13, 220};
    auto run = [&](void (*set)()) {
        CapturedLog log(2);
        set();
        Net net;
        net_init(net, tiny().model, 64);
        forward(net, toks, 4, 0, false);
        std::vector<std::string> names, lines;
        for (auto& line : log.lines())
            if (!tensor_name(line).empty()) names.push_back(tensor_name(line)), lines.push_back(line);
        return std::make_pair(names, lines);
    };
    auto layer1 = run([] { g_watch_filter.layers = {1}; }).first;
    CHECK(layer1.size() == 15);
    for (auto& n : layer1) CHECK(n.compare(0, 3, "L1.") == 0);

    auto q = run([] { g_watch_filter.names = {"attn.q"}; }).first;  // attn.q and attn.q_rope
    CHECK(q.size() == (size_t)(2 * n_layers));

    auto pos = run([] {
        g_watch_filter.positions = {2};
        g_watch_filter.names = {"L0.attn_norm", "L0.attn.scores", "logits"};
    });
    REQUIRE(pos.first.size() == 2);  // logits hold the last position (3) only: skipped
    CHECK(pos.first[0] == "L0.attn_norm");
    CHECK(pos.second[0].find("1/4 rows") != std::string::npos);
    CHECK(pos.first[1] == "L0.attn.scores");
    CHECK(pos.second[1].find("4/16 rows") != std::string::npos);  // one row per head
}
