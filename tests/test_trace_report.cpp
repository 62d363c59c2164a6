// tests/test_trace_report.cpp — the recorder behind --report, --trace-json and
// --graph: the trace's spans nest, the cost model matches a hand count, and a
// real run on models/tiny gives a report with the right token counts and one
// row of heatmaps per layer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "generate.h"
#include "trace_report.h"
#include "test_util.h"

int cmd_generate(int argc, char** argv);  // run.cpp


static std::string with_number(const char* f, int n) {
    char b[128];
    snprintf(b, sizeof b, f, n);
    return b;
}

static int count(const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) n++;
    return n;
}

// Runs ./run's generation command in this process.
static int run_cli(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    return cmd_generate((int)args.size(), argv.data());
}

// Every "X" event, and for each the name of the span it lies in ("" at the
// top). Fails the test when two spans overlap without one containing the
// other: viewers nest by time alone, so that would draw a wrong tree.
struct Span {
    std::string name, parent;
    double ts, end;
};
static std::vector<Span> nested_spans(const std::string& json) {
    nlohmann::json doc = nlohmann::json::parse(json);  // throws (fails the case) when it is not JSON
    std::vector<Span> spans;
    for (auto& e : doc.at("traceEvents")) {
        if (e.at("ph") != "X") continue;
        double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
        CHECK(dur >= 0);
        spans.push_back({e.at("name").get<std::string>(), "", ts, ts + dur});
    }
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
        return a.ts < b.ts || (a.ts == b.ts && a.end > b.end);
    });
    const double eps = 0.01;  // ts and dur are rounded to 0.001 us each
    std::vector<const Span*> open;
    for (Span& s : spans) {
        // Close the open spans that s does not fit in; s must start after they end.
        while (!open.empty() && s.end > open.back()->end + eps) {
            CHECK_MESSAGE(s.ts >= open.back()->end - eps, std::string(s.name + " overlaps " + open.back()->name));
            open.pop_back();
        }
        if (!open.empty()) s.parent = open.back()->name;
        open.push_back(&s);
    }
    return spans;
}

// ---------------------------------------------------------------------------

TEST_CASE("trace JSON of a made-up run: prefill, decode steps, layers and samples nest") {
    Recorder r;
    r.t_start_us = 1000;
    r.spans = {{"load", 1000, 1100}, {"tokenize", 1100, 1110}, {"generate", 1120, 1400}};
    auto fwd = [&](int T, int pos, bool prefill, double t0, double t1) {
        ForwardRecord f;
        f.T = T, f.pos = pos, f.prefill = prefill, f.t0_us = t0, f.t1_us = t1;
        for (int l = 0; l < 2; l++) {
            LayerProbe p;
            p.layer = l;
            p.t0_us = t0 + 1 + l * (t1 - t0 - 2) / 2;
            p.t1_us = t0 + 1 + (l + 1) * (t1 - t0 - 2) / 2;
            f.layers.push_back(p);
        }
        r.forwards.push_back(f);
    };
    auto tok = [&](int id, int pos, double t) {
        TokenRecord k;
        k.pos = pos, k.t_us = t, k.info.token = id, k.info.prob = 0.5f;
        r.tokens.push_back(k);
    };
    fwd(256, 0, true, 1121, 1200);  // a 300-token prompt in two chunks
    fwd(44, 256, true, 1200, 1240);
    tok(7, 300, 1245);
    fwd(1, 300, false, 1250, 1290);
    tok(8, 301, 1295);
    fwd(1, 301, false, 1300, 1340);
    tok(9, 302, 1345);

    std::vector<Span> spans = nested_spans(trace_json(r));
    std::map<std::string, int> n;
    for (const Span& s : spans) {
        n[s.name]++;
        if (s.name == "prefill" || s.name.compare(0, 11, "decode step") == 0) CHECK(s.parent == "generate");
        if (s.name == "forward" || s.name == "sample") CHECK((s.parent == "prefill" || s.parent.compare(0, 11, "decode step") == 0));
        if (s.name.compare(0, 6, "layer ") == 0) CHECK(s.parent == "forward");
    }
    CHECK(n["load"] == 1);
    CHECK(n["tokenize"] == 1);
    CHECK(n["prefill"] == 1);
    CHECK(n["decode step 1"] == 1);
    CHECK(n["decode step 2"] == 1);
    CHECK(n["forward"] == 4);
    CHECK(n["sample"] == 3);
    CHECK(n["layer 0"] == 4);
    CHECK(n["layer 1"] == 4);
}

// A serving run made up by hand: request 1 reads a 20-token prompt in two
// chunks and decodes; request 2 joins in step 2 and leaves in step 3.
static Recorder made_up_serving() {
    Recorder r;
    r.serving = true;
    r.t_start_us = 1000;
    auto seq = [](int req, int slot, bool prefill, int pos, int T, int blocks, int token, const char* left = nullptr) {
        StepSeq q;
        q.request = req, q.slot = slot, q.prefill = prefill, q.pos = pos, q.T = T, q.blocks = blocks, q.token = token, q.left = left;
        return q;
    };
    r.steps.push_back({1100, 1200, {seq(1, 0, true, 0, 16, 1, -1)}});
    r.steps.push_back({1200, 1300, {seq(1, 0, true, 16, 4, 2, 7), seq(2, 1, true, 0, 3, 1, 9)}});
    r.steps.push_back({1300, 1350, {seq(1, 0, false, 20, 1, 2, 8), seq(2, 1, false, 3, 1, 1, 10, "length")}});
    r.steps.push_back({1350, 1380, {seq(1, 0, false, 21, 1, 2, 11, "length")}});
    return r;
}

TEST_CASE("trace JSON of a made-up serving run: the steps, and a track per slot with a slice per step") {
    Recorder r = made_up_serving();
    nlohmann::json doc = nlohmann::json::parse(trace_json(r));
    std::map<int, std::string> track;  // tid -> its name
    std::vector<nlohmann::json> steps, slices;
    for (auto& e : doc.at("traceEvents")) {
        if (e.at("ph") == "M" && e.at("name") == "thread_name") track[e.at("tid").get<int>()] = e.at("args").at("name");
        if (e.at("ph") != "X") continue;
        (e.at("cat") == "step" ? steps : slices).push_back(e);
    }
    CHECK(track[1] == "scheduler");
    CHECK(track[2] == "slot 0");
    CHECK(track[3] == "slot 1");
    REQUIRE(steps.size() == 4);
    CHECK(steps[1].at("name") == "step 2");
    CHECK(steps[1].at("args").at("sequences") == 2);
    CHECK(steps[1].at("args").at("rows") == 7);
    CHECK(steps[1].at("args").at("prefill_rows") == 7);
    CHECK(steps[2].at("args").at("decode_rows") == 2);
    REQUIRE(slices.size() == 6);
    std::map<std::string, int> names;
    for (auto& e : slices) {
        const auto& a = e.at("args");
        names[e.at("name")]++;
        CHECK(e.at("tid") == 2 + a.at("slot").get<int>());  // on its slot's track
        CHECK(e.at("cat") == a.at("phase"));
        const nlohmann::json& st = steps[a.at("step").get<int>() - 1];
        CHECK(e.at("ts") == st.at("ts"));  // the slice is its step's time
        CHECK(e.at("dur") == st.at("dur"));
    }
    CHECK(names["#1 prefill"] == 2);
    CHECK(names["#1 decode"] == 2);
    CHECK(names["#2 prefill"] == 1);
    CHECK(names["#2 decode"] == 1);
    const auto& a = slices[4].at("args");  // request 2's decode step
    CHECK(a.at("request") == 2);
    CHECK(a.at("pos") == 3);
    CHECK(a.at("token") == 10);
    CHECK(a.at("finish") == "length");
    CHECK(slices[0].at("args").count("token") == 0);  // a prompt chunk before the last samples nothing
}

TEST_CASE("the report of a made-up serving run: the batch view, a cell per sequence per step, and the requests") {
    Recorder r = made_up_serving();
    std::string html = report_html(r);
    CHECK(html.find("<section id='batch'>") != std::string::npos);
    CHECK(html.find("<section id='requests'>") != std::string::npos);
    CHECK(html.find("<section id='attention'>") == std::string::npos);  // no probes in a batch
    CHECK(count(html, "class='cell ") == 6);
    CHECK(count(html, "class='cell b-prefill' data-request='1'") == 2);
    CHECK(count(html, "class='cell b-decode' data-request='2' data-step='3'") == 1);
    CHECK(html.find("request #2 decodes position 3") != std::string::npos);
    CHECK(html.find("leaves (length)") != std::string::npos);
    CHECK(html.find("<tr><th>#2</th><td>1</td><td>2&ndash;3</td>") != std::string::npos);  // slot 1, steps 2-3
}

TEST_CASE("cost model on models/tiny, counted by hand") {
    REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
    Model m;
    load_model(m, "models/tiny");
    const Config& c = m.cfg;
    REQUIRE(c.hidden == 64);
    REQUIRE(c.n_layers == 4);
    // Per layer: q 64x64, k and v 32x64, o 64x64, gate and up 160x64, down 64x160.
    double per_layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 160 * 64;  // 43,008
    CHECK(layer_params(m) == 4 * per_layer);
    CHECK(layer_weight_bytes(m) == 4 * per_layer * 2);  // bf16
    // One decode step at position 10: 11 keys per head per layer.
    ForwardCost k = forward_cost(m, 1, 10);
    double head = 151936.0 * 64;
    CHECK(k.flops == doctest::Approx(2 * 4 * per_layer + 4.0 * 16 * 4 * 11 * 4 + 2 * head));
    CHECK(k.weight_bytes == doctest::Approx(4 * per_layer * 2 + head * 2 + 64 * 2));
    CHECK(k.kv_bytes == doctest::Approx(2.0 * 4 * 11 * 32 * 4));
    // Prefill of 5 tokens: 1 + 2 + 3 + 4 + 5 = 15 (query, key) pairs per head.
    ForwardCost p = forward_cost(m, 5, 0);
    CHECK(p.flops == doctest::Approx(2 * 5 * 4 * per_layer + 4.0 * 16 * 4 * 15 * 4 + 2 * head));
}

TEST_CASE("--report and --trace-json on models/tiny: counts, heatmaps, nesting") {
    REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
    std::string prompt = "The quick brown fox";
    REQUIRE(run_cli({"models/tiny", prompt, "--raw", "-n", "5", "--report", "build/test_report.html",
                     "--trace-json", "build/test_trace.json"}) == 0);
    CHECK_FALSE(trace_recording());  // finished: the probes are off again
    CHECK(g_probe_listener == nullptr);

    Tokenizer tok;
    tokenizer_load(tok, "models/tiny");
    int n_prompt = (int)tokenizer_encode(tok, prompt).size();
    const Recorder& r = g_rec;
    CHECK(r.model == nullptr);  // the run's model is gone; the recorder let go of it
    int n_layers = r.cfg.n_layers, n_heads = r.cfg.n_heads;
    REQUIRE(n_layers == 4);
    int n_tokens = (int)r.tokens.size(), n_decode = 0;
    for (auto& f : r.forwards) n_decode += !f.prefill;
    REQUIRE(r.forwards.size() >= 1);
    CHECK(r.forwards[0].prefill);
    CHECK(r.forwards[0].T == n_prompt);
    CHECK(n_tokens >= 1);
    CHECK(n_tokens <= 5);
    CHECK(n_decode == n_tokens - 1);  // every sampled token but the last went back in
    for (auto& f : r.forwards) {  // each forward's time in products and attention, inside its own time
        CHECK(f.matmul_us > 0);
        CHECK(f.attention_us > 0);
        CHECK(f.matmul_us + f.attention_us <= f.t1_us - f.t0_us + 1);
    }

    std::string html = slurp("build/test_report.html");
    CHECK(html.find(with_number("%d tokens in 1 forward call", n_prompt)) != std::string::npos);
    CHECK(html.find(with_number("%d forward calls", n_decode)) != std::string::npos);
    CHECK(count(html, "<span class='tok' ") == n_tokens);  // the token stream
    for (int l = 0; l < n_layers; l++)  // one row of heatmaps per layer: the mean, then every head
        CHECK(count(html, "data-layer='" + std::to_string(l) + "'") == n_heads + 1);
    CHECK(count(html, "src='data:image/png;base64,") == n_layers * (n_heads + 1));
    CHECK(html.find("<section id='time'>") != std::string::npos);
    CHECK(html.find("<section id='bound'>") != std::string::npos);
    if (n_decode > 0) CHECK(html.find("Inside a decode step") != std::string::npos);
    // Self-contained: nothing points outside the file (the SVG's xmlns
    // attributes are names, not addresses).
    for (const char* link : {"src='http", "src=\"http", "href='http", "href=\"http", "url(http", "@import", "<link", "<script src"})
        CHECK_MESSAGE(html.find(link) == std::string::npos, link);

    std::vector<Span> spans = nested_spans(slurp("build/test_trace.json"));
    std::map<std::string, int> n;
    for (auto& s : spans) n[s.name]++;
    CHECK(n["load"] == 1);
    CHECK(n["tokenize"] == 1);
    CHECK(n["generate"] == 1);
    CHECK(n["prefill"] == 1);
    CHECK(n["decode step " + std::to_string(n_decode)] == 1);
    CHECK(n["forward"] == 1 + n_decode);
    CHECK(n["sample"] == n_tokens);
    for (int l = 0; l < n_layers; l++) CHECK(n["layer " + std::to_string(l)] == 1 + n_decode);
}

TEST_CASE("the graph: --graph writes DOT without generating; without dot the report shows the source") {
    REQUIRE_MESSAGE(access("models/tiny/config.json", F_OK) == 0, "run `make models` first");
    unlink("build/test_graph.dot");
    REQUIRE(run_cli({"models/tiny", "--graph", "build/test_graph.dot"}) == 0);
    std::string dot = slurp("build/test_graph.dot");
    CHECK(dot.compare(0, 16, "digraph lantern ") == 0);
    CHECK(dot.find("cluster_layer") != std::string::npos);
    CHECK(dot.find("decoder layer 3") != std::string::npos);

    setenv("LANTERN_DOT", "/nonexistent/dot", 1);
    REQUIRE(run_cli({"models/tiny", "Hi", "--raw", "-n", "2", "--report", "build/test_report_nodot.html"}) == 0);
    unsetenv("LANTERN_DOT");
    std::string html = slurp("build/test_report_nodot.html");
    CHECK(html.find("No graph drawn") != std::string::npos);
    CHECK(html.find("digraph lantern {") != std::string::npos);
}

TEST_CASE("without --report or --trace-json nothing is recorded") {
    trace_reset();
    REQUIRE(run_cli({"models/tiny", "Hi", "--raw", "-n", "2"}) == 0);
    CHECK_FALSE(trace_recording());
    CHECK(g_rec.forwards.empty());
    CHECK(g_probe_listener == nullptr);
    CHECK_FALSE(g_watch_tensors);
    CHECK_FALSE(g_probe_forward);
}
