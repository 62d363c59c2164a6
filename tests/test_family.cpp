// The Qwen family beyond one file: shards and their index, untied heads,
// Qwen3's head_dim and QK-norm, the names `run info` gives the shapes, and
// the architecture table (arch.cpp) driving both loaders and the converter.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>
#include "cli.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "model.h"
#include "net.h"
#include "tokenizer.h"
#include "test_util.h"

static std::vector<float> logits_of(const Model& m) {
    Net net;
    net_init(net, m, 8);
    std::vector<int> toks = {1, 7, 3, 39};
    const float* l = forward(net, toks.data(), 4, 0, false);
    return std::vector<float>(l, l + m.cfg.vocab);
}

static const char* SHARD2 = "/model-00002-of-00003.safetensors";

TEST_CASE("a sharded folder loads the same tensors and gives the same logits as one file") {
    std::string one = small_model("family-one"), three = small_model("family-three", "--shards 3");
    Model a, b;
    load_model(a, one);
    load_model(b, three);
    CHECK(a.files.size() == 1);
    CHECK(b.files.size() == 3);
    CHECK(b.weights_path == three + "/model.safetensors.index.json");
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const TensorInfo& t : a.tensors) {
        const TensorInfo* u = find_tensor(b, t.name);
        REQUIRE(u != nullptr);
        CHECK(u->shape == t.shape);
        CHECK(memcmp(u->data, t.data, t.nbytes) == 0);
    }
    CHECK(logits_of(a) == logits_of(b));  // the same numbers, bit for bit
    // The index file itself is also a valid argument.
    Model c;
    load_model(c, three + "/model.safetensors.index.json");
    CHECK(c.files.size() == 3);
}

TEST_CASE("an untied head in shards is its own matrix, not the embedding") {
    std::string dir = small_model("family-untied", "--untied --shards 2");
    Model m;
    load_model(m, dir);
    CHECK_FALSE(m.cfg.tie_embeddings);
    const TensorInfo* head = find_tensor(m, "lm_head.weight");
    REQUIRE(head != nullptr);
    CHECK(m.lm_head.data == head->data);
    CHECK(m.lm_head.data != m.embed.data);
    CHECK(head->file == (int)m.files.size() - 1);  // written last, so in the last shard
    // Tied and untied models of the same seed differ only by the head: the logits differ.
    Model tied;
    load_model(tied, small_model("family-tied", "--shards 2"));
    CHECK(logits_of(m) != logits_of(tied));
    // Without lm_head.weight an untied model cannot load.
    std::string ix = slurp(dir + "/model.safetensors.index.json");
    size_t at = ix.find(",\n    \"lm_head.weight\"");
    REQUIRE(at != std::string::npos);
    spit(dir + "/model.safetensors.index.json", ix.substr(0, at) + "\n  }\n}\n");
    // The shard still holds it, so the index and the shard disagree first.
    CHECK(load_error(dir).find("lm_head.weight is not listed in") != std::string::npos);
}

TEST_CASE("index and shards that disagree are one-line errors naming the file") {
    SUBCASE("a shard missing") {
        std::string dir = small_model("family-noshard", "--shards 3");
        REQUIRE(remove((dir + SHARD2).c_str()) == 0);
        std::string e = load_error(dir);
        CHECK(e.find("model-00002-of-00003.safetensors") != std::string::npos);
        CHECK(e.find("is missing") != std::string::npos);
        CHECK(e.find('\n') == std::string::npos);
    }
    SUBCASE("a tensor listed in the index but not in its shard") {
        std::string dir = small_model("family-ghost", "--shards 3");
        std::string ix = slurp(dir + "/model.safetensors.index.json");
        size_t at = ix.find("\"weight_map\": {") + 15;
        ix.insert(at, "\n    \"model.layers.9.ghost.weight\": \"model-00002-of-00003.safetensors\",");
        spit(dir + "/model.safetensors.index.json", ix);
        std::string e = load_error(dir);
        CHECK(e.find("model.layers.9.ghost.weight") != std::string::npos);
        CHECK(e.find("the shard has no such tensor") != std::string::npos);
    }
    SUBCASE("the same tensor in two shards") {
        std::string dir = small_model("family-dup", "--shards 3");
        // Shard 3 becomes a copy of shard 2: its tensors now appear twice.
        spit(dir + "/model-00003-of-00003.safetensors", slurp(dir + SHARD2));
        std::string e = load_error(dir);
        CHECK(e.find("is also in model-00002-of-00003.safetensors") != std::string::npos);
    }
    SUBCASE("a tensor in a shard the index does not name for it") {
        std::string dir = small_model("family-moved", "--shards 3");
        std::string ix = slurp(dir + "/model.safetensors.index.json");
        size_t at = ix.find("\"model.norm.weight\": \"model-0000");
        REQUIRE(at != std::string::npos);
        ix.replace(at + 32, 1, ix[at + 32] == '1' ? "2" : "1");
        spit(dir + "/model.safetensors.index.json", ix);
        std::string e = load_error(dir);
        CHECK(e.find("model.norm.weight") != std::string::npos);
    }
    SUBCASE("an index without weight_map") {
        std::string dir = small_model("family-nomap", "--shards 2");
        spit(dir + "/model.safetensors.index.json", "{\"metadata\": {}}");
        CHECK(load_error(dir).find("no \"weight_map\"") != std::string::npos);
    }
    SUBCASE("an index that is not JSON") {
        std::string dir = small_model("family-badjson", "--shards 2");
        spit(dir + "/model.safetensors.index.json", "{\"weight_map\": ");
        std::string e = load_error(dir);
        CHECK(e.find("model.safetensors.index.json: invalid JSON") != std::string::npos);
    }
    SUBCASE("a shard name that leaves the folder") {
        std::string dir = small_model("family-escape", "--shards 2");
        std::string ix = slurp(dir + "/model.safetensors.index.json");
        size_t at = ix.find("\"model-00001-of-00002.safetensors\"");
        ix.replace(at, 1, "\"../");
        spit(dir + "/model.safetensors.index.json", ix);
        CHECK(load_error(dir).find("must be the name of a file in the folder") != std::string::npos);
    }
}

TEST_CASE("Qwen3: head_dim comes from config.json, q_norm/k_norm are required, biases are absent") {
    std::string dir = small_model("family-qwen3", "--preset qwen3-tiny --head-dim 12");  // 12 != hidden/heads = 8
    Model m;
    load_model(m, dir);
    CHECK(m.cfg.arch == arch_by_model_type("qwen3"));
    CHECK(m.cfg.head_dim == 12);
    CHECK(m.layers[0].wq.rows == 2 * 12);
    CHECK(m.layers[0].q_norm.size() == 12);
    CHECK(find_tensor(m, "model.layers.0.self_attn.q_proj.bias") == nullptr);
    std::vector<float> l = logits_of(m);
    for (float x : l) REQUIRE(std::isfinite(x));

    // The norms matter: a model whose q_norm is scaled gives other logits.
    std::string st = slurp(dir + "/model.safetensors");
    const TensorInfo* qn = find_tensor(m, "model.layers.0.self_attn.q_norm.weight");
    REQUIRE(qn != nullptr);
    std::string scaled = st;
    for (int i = 0; i < 12; i++) {
        float v;
        memcpy(&v, st.data() + qn->offset + 4 * i, 4);
        v *= 3.0f;
        memcpy(&scaled[qn->offset + 4 * i], &v, 4);
    }
    spit(dir + "/model.safetensors", scaled);
    Model m2;
    load_model(m2, dir);
    CHECK(logits_of(m2) != l);

    // Without its k_norm a Qwen3 folder is refused, naming the tensor.
    std::string cfg = slurp(dir + "/config.json");
    spit(dir + "/model.safetensors", st);
    size_t at = st.find("model.layers.1.self_attn.k_norm.weight");
    REQUIRE(at != std::string::npos);
    std::string renamed = st;
    renamed.replace(at, 38, "model.layers.1.self_attn.k_nrrm.weight");
    spit(dir + "/model.safetensors", renamed);
    CHECK(load_error(dir).find("model.layers.1.self_attn.k_norm.weight is missing") != std::string::npos);
}

TEST_CASE("model_family names the published shapes") {
    Config c;
    c.hidden = 3584, c.n_heads = 28, c.n_kv_heads = 4, c.n_layers = 28;
    CHECK(model_family(c) == "Qwen2.5-7B");
    c.n_layers = 2;
    CHECK(model_family(c) == "Qwen2.5-7B shape, 2 of its 28 layers");
    c.hidden = 1024, c.n_heads = 16, c.n_kv_heads = 8, c.n_layers = 28;
    CHECK(model_family(c) == "Qwen2 architecture, not a published size");  // that shape is Qwen3's
    c.arch = arch_by_model_type("qwen3");
    CHECK(model_family(c) == "Qwen3-0.6B");
}

TEST_CASE("Qwen3's chat template: no default system message, old reasoning cut, thinking switchable") {
    ChatFormat q3{ChatStyle::Qwen3, true}, q3_off{ChatStyle::Qwen3, false};
    CHECK(apply_chat_template({{"user", "Hi"}}, true, q3) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK(apply_chat_template({{"user", "Hi"}}, true, q3_off) ==
          "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    // An earlier answer loses its think block; the system message is kept as given.
    std::string t = apply_chat_template({{"system", "Be brief."}, {"user", "2+2?"},
                                         {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "3+3?"}},
                                        true, q3);
    CHECK(t == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
               "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n");
    // Qwen2.5's template is untouched by the thinking switch.
    CHECK(apply_chat_template({{"user", "Hi"}}, true, ChatFormat{ChatStyle::Qwen2, false}) ==
          apply_chat_template({{"user", "Hi"}}, true));
}

// ---------------------------------------------------------------------------
// The architecture table (arch.cpp) is what the loaders read: for every row,
// a generated model of that family holds exactly the row's Hugging Face
// names, model.cpp binds them all, the converter writes exactly the row's
// GGUF names, and gguf_load.cpp reads them back to the same family.

// A small model of each family with its tokenizer (`make models`; a new
// family adds its row here and its preset to tools/gen_model.cpp).
static std::string family_model(const Arch& a) {
    static const std::pair<const char*, const char*> MODELS[] = {{"qwen2", "models/tiny"}, {"qwen3", "models/qwen3-tiny"}};
    for (auto& [name, dir] : MODELS)
        if (std::string(name) == a.name) return dir;
    FAIL("no test model for architecture " << a.name << " (add one to family_model)");
    return "";
}

// Every name the row gives a model of n_layers layers, in one format.
static std::vector<std::string> row_names(const Arch& a, int n_layers, bool gguf, bool tied) {
    std::vector<std::string> names;
    for (const ArchTensor& t : a.globals)
        if (!(tied && t.role == TensorRole::LmHead)) names.push_back(gguf ? t.gguf : t.hf);
    for (int l = 0; l < n_layers; l++)
        for (const ArchTensor& t : a.layer)
            names.push_back(gguf ? arch_gguf_name(a, t.role, l) : arch_hf_name(a, t.role, l));
    std::sort(names.begin(), names.end());
    return names;
}

TEST_CASE("arch: every row's features agree with its tensor list") {
    for (int i = 0; i < N_ARCHS; i++) {
        const Arch& a = ARCHS[i];
        INFO(a.name);
        CHECK(arch_by_model_type(a.model_type) == &a);
        CHECK(arch_by_gguf_name(a.name) == &a);
        for (TensorRole r : {TensorRole::QBias, TensorRole::KBias, TensorRole::VBias})
            CHECK((arch_tensor(a, r) != nullptr) == a.qkv_bias);
        for (TensorRole r : {TensorRole::QNorm, TensorRole::KNorm}) CHECK((arch_tensor(a, r) != nullptr) == a.qk_norm);
        for (TensorRole r : {TensorRole::Embed, TensorRole::FinalNorm, TensorRole::LmHead, TensorRole::AttnNorm, TensorRole::Q,
                             TensorRole::K, TensorRole::V, TensorRole::O, TensorRole::FfnNorm, TensorRole::Gate, TensorRole::Up,
                             TensorRole::Down})
            CHECK(arch_tensor(a, r) != nullptr);
        // Translation works both ways for every name.
        for (const std::string& n : row_names(a, 2, false, false)) CHECK(arch_translate(a, arch_translate(a, n, true), false) == n);
    }
    CHECK(arch_names("or") == "qwen2 or qwen3");
}

TEST_CASE("arch: the table's names are what model.cpp binds, the converter writes and gguf_load.cpp reads") {
    for (int i = 0; i < N_ARCHS; i++) {
        const Arch& a = ARCHS[i];
        INFO(a.name);
        std::string dir = family_model(a);
        Model m;
        load_model(m, dir);
        REQUIRE(m.cfg.arch == &a);  // config.json's model_type picked the row
        bool tied = m.lm_head.data == m.embed.data;
        std::vector<std::string> in_file;
        for (const TensorInfo& t : m.tensors) in_file.push_back(t.name);
        std::sort(in_file.begin(), in_file.end());
        CHECK(in_file == row_names(a, m.cfg.n_layers, false, tied));  // the folder holds the row's names, no more
        CHECK(m.layers[0].q_norm.empty() == !a.qk_norm);

        // The converter writes the row's GGUF names and the row's name as the architecture.
        std::string out = "build/test_arch_" + std::string(a.name) + ".gguf";
        std::vector<std::string> args = {dir, out, "--type", "f32"};
        std::vector<char*> argv;
        for (auto& s : args) argv.push_back(&s[0]);
        REQUIRE(cmd_convert((int)argv.size(), argv.data()) == 0);
        MappedGGUF g(out);
        REQUIRE(gguf_find(g.f, "general.architecture") != nullptr);
        CHECK(gguf_find(g.f, "general.architecture")->str == a.name);
        CHECK((gguf_find(g.f, std::string(a.name) + ".attention.key_length") != nullptr) == a.head_dim_stated);
        std::vector<std::string> written;
        for (const GGUFTensor& t : g.f.tensors) written.push_back(t.name);
        std::sort(written.begin(), written.end());
        CHECK(written == row_names(a, m.cfg.n_layers, true, tied));

        // Read back: the same family, every tensor under its Hugging Face name.
        Model back;
        gguf_load_model(back, out);
        CHECK(back.cfg.arch == &a);
        std::vector<std::string> names;
        for (const TensorInfo& t : back.tensors) names.push_back(t.name);
        std::sort(names.begin(), names.end());
        CHECK(names == in_file);
    }
}
