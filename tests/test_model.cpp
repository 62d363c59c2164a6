// Loading: a good folder loads; every kind of damage is refused with a
// one-line error that names the file and the problem.
#include <doctest/doctest.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include "gguf/gguf_load.h"  // quantize_model
#include "model.h"
#include "net.h"
#include "test_util.h"

TEST_CASE("a generated model loads and its tensors match the config") {
    std::string dir = small_model("good");
    Model m;
    load_model(m, dir);
    CHECK(m.cfg.hidden == 16);
    CHECK(m.cfg.head_dim == 8);
    CHECK(m.tensors.size() == 1 + 2 * 12 + 1);
    // embed 40x16, per layer: 2 norms 16 + q 16x16+16 + k,v 8x16+8 + o 16x16 + mlp 3x16x24
    size_t per_layer = 2 * 16 + (256 + 16) + 2 * (128 + 8) + 256 + 3 * 16 * 24;
    CHECK(parameter_count(m) == 40 * 16 + 2 * per_layer + 16);
    CHECK(m.lm_head.data == m.embed.data);  // tied
    CHECK(m.embed.dtype == DType::F32);
}

TEST_CASE("damaged inputs give one-line errors naming the file and the problem") {
    SUBCASE("truncated file") {
        std::string dir = small_model("truncated");
        std::string st = slurp(dir + "/model.safetensors");
        spit(dir + "/model.safetensors", st.substr(0, st.size() - 100));
        std::string e = load_error(dir);
        CHECK(e.find("model.safetensors") != std::string::npos);
        CHECK(e.find("outside") != std::string::npos);
    }
    SUBCASE("header length past the end") {
        std::string dir = small_model("hdrlen");
        std::string st = slurp(dir + "/model.safetensors");
        st[6] = 0x7f;  // header length now ~ 2^54
        spit(dir + "/model.safetensors", st);
        std::string e = load_error(dir);
        CHECK(e.find("header length") != std::string::npos);
    }
    SUBCASE("file shorter than 8 bytes") {
        std::string dir = small_model("short");
        spit(dir + "/model.safetensors", "abc");
        CHECK(load_error(dir).find("too short") != std::string::npos);
    }
    SUBCASE("a tensor missing") {
        std::string dir = small_model("missing");
        std::string st = slurp(dir + "/model.safetensors");
        size_t at = st.find("model.layers.1.mlp.up_proj.weight");
        REQUIRE(at != std::string::npos);
        st.replace(at, 5, "xodel");  // rename: the real name is now absent
        spit(dir + "/model.safetensors", st);
        std::string e = load_error(dir);
        CHECK(e.find("model.layers.1.mlp.up_proj.weight is missing") != std::string::npos);
    }
    SUBCASE("a wrong shape") {
        std::string dir = small_model("shape");
        std::string cfg = slurp(dir + "/config.json");
        size_t at = cfg.find("\"intermediate_size\": 24");
        REQUIRE(at != std::string::npos);
        cfg.replace(at, 23, "\"intermediate_size\": 12");
        spit(dir + "/config.json", cfg);
        std::string e = load_error(dir);
        CHECK(e.find("gate_proj.weight has shape [24, 16]") != std::string::npos);
        CHECK(e.find("[12, 16]") != std::string::npos);
    }
    SUBCASE("bad JSON in config.json") {
        std::string dir = small_model("badcfg");
        spit(dir + "/config.json", "{\"hidden_size\": 16,");
        std::string e = load_error(dir);
        CHECK(e.find("config.json: invalid JSON") != std::string::npos);
    }
    SUBCASE("bad JSON in the safetensors header") {
        std::string dir = small_model("badhdr");
        std::string st = slurp(dir + "/model.safetensors");
        st[8] = '[';
        st[9] = '{';
        spit(dir + "/model.safetensors", st);
        // Said once, in Lantern's words: the place and what was expected,
        // not the JSON library's exception text.
        std::string e = load_error(dir);
        CHECK(e.find("model.safetensors: header (from byte 8): invalid JSON at offset 2: '_', expected a string in quotes") !=
              std::string::npos);
        CHECK(e.find("json.exception") == std::string::npos);
        CHECK(e.find("invalid JSON") == e.rfind("invalid JSON"));
    }
    SUBCASE("unsupported dtype") {
        std::string dir = small_model("dtype");
        std::string st = slurp(dir + "/model.safetensors");
        size_t at = st.find("\"F32\"");
        st.replace(at, 5, "\"I32\"");
        spit(dir + "/model.safetensors", st);
        CHECK(load_error(dir).find("unsupported dtype I32") != std::string::npos);
    }
    SUBCASE("overlapping tensors") {
        std::string dir = small_model("overlap");
        std::string st = slurp(dir + "/model.safetensors");
        // the final norm (16 floats = 64 bytes) is written last; point it at the bytes before it
        size_t at = st.find("\"model.norm.weight\"");
        size_t o = st.find("data_offsets\":[", at) + 15;
        size_t comma = st.find(',', o), close = st.find(']', comma);
        long b = atol(st.substr(o, comma - o).c_str());
        std::string repl = std::to_string(b - 32) + "," + std::to_string(b + 32);
        repl.resize(close - o, ' ');  // keep the header length unchanged
        st.replace(o, close - o, repl);
        spit(dir + "/model.safetensors", st);
        CHECK(load_error(dir).find("overlap") != std::string::npos);
    }
    SUBCASE("missing folder") {
        CHECK(load_error("build/test_models/does-not-exist").find("does-not-exist: no such model folder") != std::string::npos);
    }
}

// Hostile config.json values: each is refused by parse_config with a
// LanternError naming the file and the key, before any allocation it sizes.
// (Before json_read.h: 1e400, "yes" and a number for torch_dtype escaped as
// foreign exceptions, 2000000000 layers died in std::bad_alloc, 4294967304
// became 8, and a deeply nested model_type overflowed the stack in dump().)
TEST_CASE("hostile config.json values are refused with the key named") {
    std::string dir = small_model("hostile_config");
    const std::string good = slurp(dir + "/config.json");
    REQUIRE(good.find("\"hidden_size\": 16") != std::string::npos);
    auto with = [&](const std::string& key, const std::string& raw) {  // key set to raw JSON text
        nlohmann::json j = nlohmann::json::parse(good);
        j[key] = "@@";
        std::string s = j.dump();
        return s.replace(s.find("\"@@\""), 4, raw);
    };
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    struct Case { std::string text, want; };
    std::vector<Case> cases = {
        {with("x", "1e400"), "invalid JSON"},
        {with("tie_word_embeddings", "\"yes\""), "\"tie_word_embeddings\" must be true or false, not a string"},
        {with("torch_dtype", "16"), "\"torch_dtype\" must be a string, not a number"},
        {with("num_hidden_layers", "2000000000"), "\"num_hidden_layers\" must be an integer in [1, 4096], not 2000000000"},
        {with("hidden_size", "4294967304"), "\"hidden_size\" must be an integer in [1, 1048576], not 4294967304"},
        {with("hidden_size", "16.5"), "\"hidden_size\" must be an integer"},
        {with("model_type", "[[[\"qwen2\"]]]"), "\"model_type\" must be a string, not an array"},
        {with("model_type", deep), "JSON nested deeper than 64 levels"},
        {with("rms_norm_eps", "\"small\""), "\"rms_norm_eps\" must be a number"},
        {with("rope_theta", "-1"), "\"rope_theta\" must be a number in [1, 1e+12], not -1"},
        {with("eos_token_id", "[2, 3.5]"), "\"eos_token_id[1]\" must be an integer"},
        {with("bos_token_id", "99999999999"), "\"bos_token_id\" must be an integer"},
    };
    for (size_t i = 0; i < cases.size(); i++) {
        INFO("case " << i << ": " << cases[i].text.substr(0, 120));
        spit(dir + "/config.json", cases[i].text);
        std::string e = load_error(dir);
        CHECK(e.find(dir + "/config.json: ") == 0);
        CHECK_MESSAGE(e.find(cases[i].want) != std::string::npos, e);
    }
    spit(dir + "/config.json", good);
    CHECK(load_error(dir) == "");
}

TEST_CASE("the KV cache limit is a clear error, not a crash") {
    std::string dir = small_model("ctx");
    Model m;
    load_model(m, dir);
    Net net;
    net_init(net, m, 8);
    std::vector<int> toks(6, 3);
    forward(net, toks.data(), 6, 0, false);
    CHECK_THROWS_WITH_AS(forward(net, toks.data(), 3, 6, false), doctest::Contains("context full"), LanternError);
    CHECK_THROWS_AS(net_init(net, m, 65), LanternError);  // past max_position_embeddings
    std::vector<int> bad = {40};
    net_reset(net);
    CHECK_THROWS_WITH_AS(forward(net, bad.data(), 1, 0, false), doctest::Contains("outside the vocabulary"), LanternError);
}

TEST_CASE("--quant q8_0 quantizes rows of 32k weights and keeps other matrices in their file type") {
    std::string dir = "build/test_models/q8";
    REQUIRE(system(("mkdir -p build/test_models && build/gen_model --dtype f32 --hidden 32 --intermediate 40 --layers 1 "
                    "--heads 2 --kv-heads 1 --vocab 48 --max-pos 64 --tokenizer /nonexistent --out " + dir + " >/dev/null")
                       .c_str()) == 0);
    Model plain, quant;
    load_model(plain, dir);
    load_model(quant, dir);
    quantize_model(quant);
    CHECK(quant.layers[0].wq.dtype == DType::Q8_0);      // 32 columns: one block per row
    CHECK(quant.layers[0].w_down.dtype == DType::F32);   // 40 columns: cannot be cut into blocks
    CHECK(quant.embed.dtype == DType::Q8_0);
    Net a, b;
    net_init(a, plain, 16);
    net_init(b, quant, 16);
    std::vector<int> toks = {1, 5, 9, 47};
    const float* pa = forward(a, toks.data(), 4, 0, false);
    std::vector<float> la(pa, pa + 48);
    const float* lb = forward(b, toks.data(), 4, 0, false);
    double worst = 0, spread = 0;
    for (int i = 0; i < 48; i++) {
        worst = std::max(worst, (double)std::fabs(la[i] - lb[i]));
        spread = std::max(spread, (double)std::fabs(la[i]));
    }
    CHECK(worst < 0.05 * spread);  // int8 weights: close, not equal
    CHECK(worst > 0);
}

// A line of /proc/self/status ("VmRSS", "VmHWM") in bytes; 0 if absent.
static size_t status_bytes(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line, k = std::string(key) + ":";
    while (std::getline(f, line))
        if (line.compare(0, k.size(), k) == 0) return (size_t)std::atoll(line.c_str() + k.size()) * 1024;
    return 0;
}

// --quant q8_0 copies every matrix into blocks; the file pages it read them
// from must then leave the resident set, or RSS is the file plus the copy
// (0.5B: 988 + 525 MB). The bounds come from the model itself: after the
// conversion, RSS may grow by the converted bytes plus two partial pages per
// matrix (the pages at a matrix's ends are shared with its neighbours and
// stay); at its peak, by that plus the largest source matrix (the one being
// read). A bf16 model of 30 MB (15 MB as Q8_0): keeping the file would be
// 30 MB over the bound.
TEST_CASE("--quant q8_0: the resident set is the converted weights, not the file as well") {
    std::string dir = "build/test_models/q8_rss";
    REQUIRE(system(("mkdir -p build/test_models && build/gen_model --dtype bf16 --hidden 512 --intermediate 1536 "
                    "--layers 2 --heads 8 --kv-heads 2 --vocab 16384 --max-pos 64 --tokenizer /nonexistent --out " +
                    dir + " >/dev/null").c_str()) == 0);
    Model m;
    load_model(m, dir);
    std::vector<const Mat*> mats = {&m.embed};
    for (const LayerWeights& L : m.layers)
        for (const Mat* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) mats.push_back(w);
    size_t largest = 0;
    for (const Mat* w : mats) largest = std::max(largest, w->bytes());
    size_t page = (size_t)sysconf(_SC_PAGESIZE), slack = 2 * page * mats.size();
    // Reset the peak (VmHWM) to the present RSS, where the kernel allows it.
    bool peak_reset = false;
    if (FILE* f = fopen("/proc/self/clear_refs", "w")) {
        peak_reset = fputs("5", f) >= 0;
        peak_reset = (fclose(f) == 0) && peak_reset;
    }
    size_t before = status_bytes("VmRSS");
    REQUIRE(before > 0);
    quantize_model(m);
    size_t converted = 0;
    for (const Mat* w : mats) {
        CHECK(w->dtype == DType::Q8_0);
        converted += w->bytes();
    }
    size_t after = status_bytes("VmRSS"), peak = status_bytes("VmHWM");
    MESSAGE("RSS grew by " << (after - before) / 1024 << " KiB for " << converted / 1024 << " KiB of Q8_0 weights; "
            "peak +" << (peak - before) / 1024 << " KiB; file " << weights_bytes(m) / 1024 << " KiB");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // A sanitizer's allocator adds its own redzones and shadow memory to
    // every copy, so the bound on bytes does not hold there.
    MESSAGE("skipped: built with a sanitizer, whose allocator adds memory; the RSS bounds are not checked");
    (void)largest, (void)slack, (void)peak_reset;
#else
    CHECK(after <= before + converted + slack);
    if (peak_reset) CHECK(peak <= before + converted + largest + slack);
    else MESSAGE("skipped: /proc/self/clear_refs cannot reset the peak here; the peak is not checked");
#endif
    // Released pages that are read again come back from the file unchanged.
    Model file;
    load_model(file, dir);
    Net net;
    net_init(net, file, 8);
    int tok = 7;
    const float* logits = forward(net, &tok, 1, 0, false);
    std::vector<float> first(logits, logits + file.cfg.vocab);
    release_file_pages(file, file.map, file.file_size);
    net_reset(net);
    const float* again = forward(net, &tok, 1, 0, false);
    CHECK(std::memcmp(first.data(), again, first.size() * sizeof(float)) == 0);
}
