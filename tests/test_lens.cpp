// tests/test_lens.cpp — the logit lens, direct logit attribution and
// ablation (lens.h) against the identities that define them: the lens at
// the last depth is the model's logits, the attribution's terms add up to
// the logit, and an ablation changes exactly the part it names.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include "cli.h"
#include "gguf/quants.h"
#include "lens/lens.h"
#include "test_util.h"

// A model folder converted to a GGUF file of `type` (./run convert), once per run.
static std::string lens_gguf(const std::string& model, const std::string& type) {
    std::string out = "build/test_lens_" + model.substr(model.rfind('/') + 1) + "_" + type + ".gguf";
    std::vector<std::string> args = {model, out, "--type", type};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    REQUIRE(cmd_convert((int)argv.size(), argv.data()) == 0);
    return out;
}

static void load(Engine& e, const std::string& path, KernelSet kernels = KernelSet::Fast, int ctx = 64) {
    EngineOptions o;
    o.model = path;
    o.ctx = ctx;
    o.kernels = kernels;
    engine_load(e, o, ENGINE_MODEL | ENGINE_NET);
}

// Token ids every test model has (the smallest vocabulary is 4,096).
static const std::vector<int> TOKENS = {785, 1156, 315, 279, 1879, 374, 264, 11};

static std::vector<float> plain_logits(Net& net, const std::vector<int>& toks) {
    net_reset(net);
    const float* p = forward(net, toks.data(), (int)toks.size(), 0, true);
    return std::vector<float>(p, p + toks.size() * (size_t)net.model->cfg.vocab);
}

// The models the lens must work on: Qwen2 and Qwen3, f32 and bf16 folders,
// GGUF files in a float and in a block format.
static std::vector<std::string> lens_models() {
    return {"models/tiny-f32", "models/qwen3-tiny-f32", "models/tiny", lens_gguf("models/qwen3-tiny", "bf16"),
            lens_gguf("models/tiny", "q8_0")};
}

TEST_CASE("lens: at the last depth the lens is the model's logits, bit for bit") {
    for (KernelSet ks : {KernelSet::Fast, KernelSet::Plain})
        for (const std::string& path : lens_models()) {
            INFO(path << (ks == KernelSet::Plain ? " (plain kernels)" : " (fast kernels)"));
            Engine e;
            load(e, path, ks);
            const Config& c = e.model.cfg;
            std::vector<float> want = plain_logits(e.net, TOKENS);  // nobody watching
            LensCapture cap;
            std::vector<float> lg = lens_forward(e.net, cap, TOKENS);
            size_t n = TOKENS.size() * (size_t)c.vocab;
            CHECK(lg == want);  // watching changes nothing
            REQUIRE(cap.n_pos == (int)TOKENS.size());
            std::vector<float> got(n), early(n);
            lens_layer(e.model, cap, c.n_layers, got.data());
            CHECK(std::memcmp(got.data(), want.data(), n * sizeof(float)) == 0);
            lens_layer(e.model, cap, 1, early.data());  // an earlier depth reads something else
            CHECK(std::memcmp(early.data(), want.data(), n * sizeof(float)) != 0);
            // The reading of a row: the top token is the argmax, its rank 1.
            LensReading r = lens_read(&got[0], c.vocab, 3, sample_argmax(&want[0], c.vocab));
            CHECK(r.top[0] == sample_argmax(&want[0], c.vocab));
            CHECK(r.target_rank == 1);
            CHECK(r.top_prob[0] >= r.top_prob[1]);
        }
}

TEST_CASE("lens: a prompt longer than a chunk is captured whole, with the logits of one forward call") {
    Engine e;
    load(e, "models/tiny-f32", KernelSet::Fast, 320);
    std::vector<int> toks;
    for (int i = 0; i < 300; i++) toks.push_back(5 + (i * 37) % 4000);
    std::vector<float> want = plain_logits(e.net, toks);  // all 300 in one call
    LensCapture cap;
    CHECK(lens_forward(e.net, cap, toks) == want);
    CHECK(cap.n_pos == 300);
    std::vector<float> got(want.size());
    lens_layer(e.model, cap, e.model.cfg.n_layers, got.data());
    CHECK(got == want);
}

TEST_CASE("lens: depth 0 is the embedding row through the final norm and the LM head") {
    Engine e;
    load(e, "models/tiny-f32");
    const Config& c = e.model.cfg;
    LensCapture cap;
    lens_forward(e.net, cap, TOKENS);
    std::vector<float> emb(c.hidden), xn(c.hidden), want(c.vocab), got(TOKENS.size() * (size_t)c.vocab);
    mat_row_to_f32(e.model.embed, TOKENS[2], emb.data());
    CHECK(std::memcmp(emb.data(), cap.resid_row(0, 2), c.hidden * sizeof(float)) == 0);
    // The same two steps, written out with the plain kernels.
    rmsnorm(xn.data(), emb.data(), e.model.final_norm.data(), c.hidden, c.eps);
    matmul_plain(want.data(), xn.data(), e.model.lm_head, nullptr, 1);
    lens_layer(e.model, cap, 0, got.data());
    for (int v = 0; v < c.vocab; v += 997) CHECK(got[2 * (size_t)c.vocab + v] == doctest::Approx(want[v]).epsilon(1e-5));
}

TEST_CASE("attribution: the terms add up to the logit, the heads to their layer's attention") {
    for (const std::string& path : {std::string("models/tiny-f32"), std::string("models/qwen3-tiny-f32"),
                                    lens_gguf("models/qwen3-tiny", "bf16")}) {
        INFO(path);
        Engine e;
        load(e, path);
        const Config& c = e.model.cfg;
        LensCapture cap;
        std::vector<float> lg = lens_forward(e.net, cap, TOKENS);
        for (int p = 0; p < (int)TOKENS.size(); p++) {
            const float* row = &lg[(size_t)p * c.vocab];
            for (int v : {sample_argmax(row, c.vocab), 17}) {
                Attribution a = attribute(e.model, cap, p, v);
                INFO("position " << p << ", token " << v << ": sum " << a.total << ", logit " << row[v]);
                CHECK(std::fabs(a.total - row[v]) <= 1e-4 * std::fabs(row[v]) + 1e-6);
                for (int l = 0; l < c.n_layers; l++) {
                    double heads = 0, size = std::fabs(a.attn[l]);
                    for (double h : a.heads[l]) heads += h, size += std::fabs(h);
                    CHECK(std::fabs(heads - a.attn[l]) <= 1e-4 * size + 1e-7);
                }
            }
        }
    }
}

TEST_CASE("ablation: nothing ablated is the same bits; a head or an MLP changes exactly its part") {
    for (const std::string& path : {std::string("models/tiny"), std::string("models/qwen3-tiny-f32")}) {
        INFO(path);
        Engine e;
        load(e, path);
        const Config& c = e.model.cfg;
        std::vector<float> base = plain_logits(e.net, TOKENS);
        LensCapture clean;
        lens_forward(e.net, clean, TOKENS);

        e.net.ablate = ablation_from_specs({"2.1"}, c);
        std::vector<float> head21 = plain_logits(e.net, TOKENS);
        LensCapture cap;
        lens_forward(e.net, cap, TOKENS);
        CHECK(head21 != base);
        size_t row = (size_t)TOKENS.size() * c.hidden;
        // Layers 0 and 1 run as before; layer 2 gets the head's slice as zeros.
        CHECK(std::memcmp(&cap.resid[0], &clean.resid[0], 3 * row * sizeof(float)) == 0);
        CHECK(std::memcmp(&cap.resid[3 * row], &clean.resid[3 * row], row * sizeof(float)) != 0);
        for (int p = 0; p < (int)TOKENS.size(); p++) {
            const float* h1 = &cap.heads[((size_t)2 * cap.cap + p) * cap.q_dim + c.head_dim];
            for (int j = 0; j < c.head_dim; j++) CHECK(h1[j] == 0.0f);
            CHECK(attribute(e.model, cap, p, 17).heads[2][1] == 0.0);
        }

        e.net.ablate = ablation_from_specs({"2.2"}, c);
        CHECK(plain_logits(e.net, TOKENS) != head21);  // another head, another answer

        e.net.ablate = ablation_from_specs({"1.mlp"}, c);
        CHECK(plain_logits(e.net, TOKENS) != base);
        lens_forward(e.net, cap, TOKENS);
        // The MLP adds zeros: after layer 1 the stream is its input plus the attention.
        for (size_t i = 0; i < row; i++) REQUIRE(cap.resid[2 * row + i] == cap.resid[row + i] + cap.attn[row + i]);

        e.net.ablate = ablation_from_specs({}, c);  // back to the whole network: today's bits
        CHECK(plain_logits(e.net, TOKENS) == base);
        LensCapture again;
        CHECK(lens_forward(e.net, again, TOKENS) == base);
    }
}

TEST_CASE("ablation: the batched forward honours it too, and the specs are checked") {
    Engine e;
    load(e, "models/tiny");
    const Config& c = e.model.cfg;
    e.net.ablate = ablation_from_specs({"0.3", "3.mlp"}, c);
    CHECK(e.net.ablate.heads.size() == 1);
    CHECK(e.net.ablate.mlps == std::vector<int>{3});
    std::vector<float> one = plain_logits(e.net, TOKENS);
    // The same sequence through forward_batch, its keys in the Net's own cache.
    net_reset(e.net);
    BatchSeq s;
    s.tokens = TOKENS.data();
    s.T = (int)TOKENS.size();
    s.logits = true;
    int block0 = 0;
    s.kv.k = e.net.kv.k.data();
    s.kv.v = e.net.kv.v.data();
    s.kv.n_pos = s.kv.block = e.net.kv.n_ctx;
    s.kv.blocks = &block0;
    s.kv.row_bytes = (size_t)e.net.kv.kv_dim * sizeof(float);
    const float* b = forward_batch(e.net, &s, 1);
    CHECK(std::memcmp(b, &one[(TOKENS.size() - 1) * c.vocab], c.vocab * sizeof(float)) == 0);

    CHECK_THROWS_WITH_AS(ablation_from_specs({"99.0"}, c), doctest::Contains("the model has layers 0 to 3"), LanternError);
    CHECK_THROWS_WITH_AS(ablation_from_specs({"0.4"}, c), doctest::Contains("heads 0 to 3"), LanternError);
    for (const char* bad : {"x", "1.", ".1", "1.2.3", "-1.0", "1.MLP", "a.mlp"})
        CHECK_THROWS_WITH_AS(ablation_from_specs({bad}, c), doctest::Contains("expected LAYER.HEAD or LAYER.mlp"), LanternError);
}

TEST_CASE("ablation: ranking the parts by what they do to the target's log-probability") {
    Engine e;
    load(e, "models/qwen3-tiny-f32");
    const Config& c = e.model.cfg;
    int pos = 5, target = 279;
    std::vector<AblationEffect> fx = ablation_effects(e.net, TOKENS, pos, target);
    REQUIRE(fx.size() == (size_t)c.n_layers * (c.n_heads + 1));
    for (size_t i = 1; i < fx.size(); i++) CHECK(fx[i - 1].delta <= fx[i].delta);
    CHECK(e.net.ablate.heads.empty());  // what it switched off is switched back on
    // One entry recomputed by hand: the most harmful part, ablated alone.
    std::vector<int> prefix(TOKENS.begin(), TOKENS.begin() + pos + 1);
    std::vector<float> base = plain_logits(e.net, prefix);
    e.net.ablate = ablation_from_specs({fx[0].head < 0 ? std::to_string(fx[0].layer) + ".mlp"
                                                       : std::to_string(fx[0].layer) + "." + std::to_string(fx[0].head)}, c);
    std::vector<float> off = plain_logits(e.net, prefix);
    auto logp = [&](const std::vector<float>& l) {
        const float* r = &l[(size_t)pos * c.vocab];
        double mx = *std::max_element(r, r + c.vocab), s = 0;
        for (int i = 0; i < c.vocab; i++) s += std::exp(r[i] - mx);
        return r[target] - mx - std::log(s);
    };
    CHECK(fx[0].delta == doctest::Approx(logp(off) - logp(base)).epsilon(1e-9));
    CHECK(fx[0].delta < 0);
}
