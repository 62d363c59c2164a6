// The Qwen family beyond one file: shards and their index, untied heads,
// Qwen3's head_dim and QK-norm, and the names `run info` gives the shapes.
#include <doctest/doctest.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>
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
    CHECK(m.cfg.qwen3);
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
    c.qwen3 = true;
    CHECK(model_family(c) == "Qwen3-0.6B");
}

TEST_CASE("Qwen3's chat template: no default system message, old reasoning cut, thinking switchable") {
    ChatFormat q3{true, true}, q3_off{true, false};
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
    CHECK(apply_chat_template({{"user", "Hi"}}, true, ChatFormat{false, false}) ==
          apply_chat_template({{"user", "Hi"}}, true));
}
