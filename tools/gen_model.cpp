// gen_model — writes a Qwen2-shaped Hugging Face model folder with
// deterministic random weights, so Lantern can be tested and benchmarked
// without downloading anything.
//
//   build/gen_model --preset tiny --out models/tiny
//   build/gen_model --preset qwen2.5-0.5b --out models/qwen2.5-0.5b-random
//   build/gen_model --preset tiny --dtype f32 --layers 2 --out /tmp/m
//
// The folder holds config.json, generation_config.json, the real tokenizer
// files (copied from --tokenizer, default models/qwen-tokenizer) and
// model.safetensors with Hugging Face's tensor names.
//
// Weights are uniform random numbers from a counter-based generator using
// integer arithmetic only, so the bytes are identical on every machine.
// Their scales are chosen so the model does something visible: with tied
// embeddings and small weights every position would just predict its own
// input token (the residual stream stays close to the input embedding, whose
// dot product with itself wins). Larger o_proj/down_proj outputs push the
// residual away from the input, and an embedding scale of ~4/sqrt(hidden)
// gives logits a standard deviation of about 4: a clear argmax and a top-k
// worth sampling from.
#include <sys/stat.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>
#include "common.h"

struct Spec {
    int hidden = 64, intermediate = 160, layers = 4, heads = 4, kv_heads = 2, vocab = 151936, max_pos = 4096;
    double rope_theta = 1000000.0, eps = 1e-6;
    bool f32 = false;
    uint64_t seed = 1234;
};

// splitmix64: a good 64-bit mixer; hashing (seed, tensor, index) makes every
// weight independent of generation order.
static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
// Uniform in [-1, 1): 24 random bits, exactly representable in float.
static float uniform(uint64_t key) { return (float)((int64_t)(mix(key) >> 40) - (1 << 23)) / (float)(1 << 23); }

struct Out {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

static Out make(const Spec& s, int id, const std::string& name, std::vector<int64_t> shape, float center, float spread) {
    Out o{name, shape, {}};
    size_t n = 1;
    for (auto d : shape) n *= (size_t)d;
    o.data.resize(n);
    uint64_t key = mix(s.seed * 1000003ull + (uint64_t)id) << 1;
    for (size_t i = 0; i < n; i++) o.data[i] = center + spread * uniform(key + i);
    return o;
}

static void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    if (!f) { fprintf(stderr, "gen_model: cannot write %s\n", path.c_str()); exit(1); }
    f << text;
}

static bool copy_file(const std::string& from, const std::string& to) {
    std::ifstream in(from, std::ios::binary);
    if (!in) return false;
    std::ofstream out(to, std::ios::binary);
    out << in.rdbuf();
    return true;
}

int main(int argc, char** argv) {
    Spec s;
    std::string out_dir, tok_dir = "models/qwen-tokenizer", preset = "tiny";
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) { fprintf(stderr, "gen_model: %s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "--preset") {
            preset = val();
            if (preset == "tiny") s = Spec();
            else if (preset == "mha") {  // differs from tiny in every dimension; n_kv_heads == n_heads
                s.hidden = 96; s.intermediate = 200; s.layers = 3; s.heads = 3; s.kv_heads = 3;
                s.vocab = 151680; s.rope_theta = 10000.0; s.eps = 1e-5; s.max_pos = 2048;
            } else if (preset == "qwen2.5-0.5b") {
                s.hidden = 896; s.intermediate = 4864; s.layers = 24; s.heads = 14; s.kv_heads = 2;
                s.vocab = 151936; s.rope_theta = 1000000.0; s.eps = 1e-6; s.max_pos = 32768;
            } else { fprintf(stderr, "gen_model: unknown preset %s (tiny, mha, qwen2.5-0.5b)\n", preset.c_str()); return 2; }
        }
        else if (a == "--out") out_dir = val();
        else if (a == "--tokenizer") tok_dir = val();
        else if (a == "--dtype") { std::string d = val(); if (d != "bf16" && d != "f32") { fprintf(stderr, "gen_model: --dtype bf16|f32\n"); return 2; } s.f32 = d == "f32"; }
        else if (a == "--seed") s.seed = strtoull(val().c_str(), nullptr, 10);
        else if (a == "--hidden") s.hidden = atoi(val().c_str());
        else if (a == "--intermediate") s.intermediate = atoi(val().c_str());
        else if (a == "--layers") s.layers = atoi(val().c_str());
        else if (a == "--heads") s.heads = atoi(val().c_str());
        else if (a == "--kv-heads") s.kv_heads = atoi(val().c_str());
        else if (a == "--vocab") s.vocab = atoi(val().c_str());
        else if (a == "--max-pos") s.max_pos = atoi(val().c_str());
        else if (a == "--rope-theta") s.rope_theta = atof(val().c_str());
        else if (a == "--eps") s.eps = atof(val().c_str());
        else { fprintf(stderr, "gen_model: unknown flag %s\nflags: --preset tiny|mha|qwen2.5-0.5b --out DIR --dtype bf16|f32 --seed N --hidden --intermediate --layers --heads --kv-heads --vocab --max-pos --rope-theta --eps --tokenizer DIR\n", a.c_str()); return 2; }
    }
    if (out_dir.empty()) { fprintf(stderr, "gen_model: --out DIR is required\n"); return 2; }
    if (s.hidden <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.hidden % s.heads || s.heads % s.kv_heads || (s.hidden / s.heads) % 2) {
        fprintf(stderr, "gen_model: hidden must split into an even head_dim and heads into kv-heads\n");
        return 2;
    }
    mkdir(out_dir.c_str(), 0755);

    int H = s.hidden, hd = H / s.heads, qd = s.heads * hd, kvd = s.kv_heads * hd, I = s.intermediate;
    float lin = 1.0f / std::sqrt((float)H) * std::sqrt(3.0f);  // uniform spread with std 1/sqrt(fan_in)
    std::vector<Out> ts;
    int id = 0;
    ts.push_back(make(s, id++, "model.embed_tokens.weight", {s.vocab, H}, 0, 4.0f / std::sqrt((float)H) * std::sqrt(3.0f)));
    for (int l = 0; l < s.layers; l++) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        ts.push_back(make(s, id++, p + "input_layernorm.weight", {H}, 1.0f, 0.2f));
        ts.push_back(make(s, id++, p + "self_attn.q_proj.weight", {qd, H}, 0, lin));
        ts.push_back(make(s, id++, p + "self_attn.q_proj.bias", {qd}, 0, 0.3f));
        ts.push_back(make(s, id++, p + "self_attn.k_proj.weight", {kvd, H}, 0, lin));
        ts.push_back(make(s, id++, p + "self_attn.k_proj.bias", {kvd}, 0, 0.3f));
        ts.push_back(make(s, id++, p + "self_attn.v_proj.weight", {kvd, H}, 0, lin));
        ts.push_back(make(s, id++, p + "self_attn.v_proj.bias", {kvd}, 0, 0.3f));
        ts.push_back(make(s, id++, p + "self_attn.o_proj.weight", {H, qd}, 0, 2.0f / std::sqrt((float)qd) * std::sqrt(3.0f)));
        ts.push_back(make(s, id++, p + "post_attention_layernorm.weight", {H}, 1.0f, 0.2f));
        ts.push_back(make(s, id++, p + "mlp.gate_proj.weight", {I, H}, 0, lin));
        ts.push_back(make(s, id++, p + "mlp.up_proj.weight", {I, H}, 0, lin));
        ts.push_back(make(s, id++, p + "mlp.down_proj.weight", {H, I}, 0, 3.0f / std::sqrt((float)I) * std::sqrt(3.0f)));
    }
    ts.push_back(make(s, id++, "model.norm.weight", {H}, 1.0f, 0.2f));

    // safetensors: header JSON (padded with spaces to a multiple of 8), data.
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
    size_t off = 0, elem = s.f32 ? 4 : 2;
    for (auto& t : ts) {
        size_t n = t.data.size() * elem;
        header += ",\"" + t.name + "\":{\"dtype\":\"" + (s.f32 ? "F32" : "BF16") + "\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); i++) header += (i ? "," : "") + std::to_string(t.shape[i]);
        header += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + n) + "]}";
        off += n;
    }
    header += "}";
    while (header.size() % 8) header += ' ';
    std::string path = out_dir + "/model.safetensors";
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) { fprintf(stderr, "gen_model: cannot write %s\n", path.c_str()); return 1; }
    uint64_t hl = header.size();
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(hl >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(header.data(), 1, header.size(), f);
    size_t params = 0;
    for (auto& t : ts) {
        params += t.data.size();
        if (s.f32) fwrite(t.data.data(), 4, t.data.size(), f);
        else {
            std::vector<uint16_t> b(t.data.size());
            for (size_t i = 0; i < b.size(); i++) b[i] = f32_to_bf16(t.data[i]);
            fwrite(b.data(), 2, b.size(), f);
        }
    }
    fclose(f);

    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\n  \"architectures\": [\"Qwen2ForCausalLM\"],\n  \"model_type\": \"qwen2\",\n"
             "  \"hidden_act\": \"silu\",\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
             "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n"
             "  \"max_position_embeddings\": %d,\n  \"max_window_layers\": %d,\n  \"rms_norm_eps\": %g,\n"
             "  \"rope_theta\": %.1f,\n  \"sliding_window\": %d,\n  \"use_sliding_window\": false,\n"
             "  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"%s\",\n  \"vocab_size\": %d,\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151645,\n  \"attention_dropout\": 0.0,\n"
             "  \"initializer_range\": 0.02,\n  \"use_cache\": true,\n  \"transformers_version\": \"4.43.1\",\n"
             "  \"lantern_generator\": \"tools/gen_model.cpp preset=%s seed=%llu (random weights)\"\n}\n",
             H, I, s.layers, s.heads, s.kv_heads, s.max_pos, s.layers, s.eps, s.rope_theta, s.max_pos,
             s.f32 ? "float32" : "bfloat16", s.vocab, preset.c_str(), (unsigned long long)s.seed);
    write_text(out_dir + "/config.json", cfg);
    write_text(out_dir + "/generation_config.json",
               "{\n  \"bos_token_id\": 151643,\n  \"eos_token_id\": [151645, 151643],\n  \"do_sample\": true,\n"
               "  \"pad_token_id\": 151643,\n  \"repetition_penalty\": 1.1,\n  \"temperature\": 0.7,\n"
               "  \"top_k\": 20,\n  \"top_p\": 0.8\n}\n");
    bool tok = copy_file(tok_dir + "/tokenizer.json", out_dir + "/tokenizer.json");
    copy_file(tok_dir + "/tokenizer_config.json", out_dir + "/tokenizer_config.json");
    printf("gen_model: wrote %s (%zu tensors, %zu parameters, %s)%s\n", out_dir.c_str(), ts.size(), params,
           s.f32 ? "F32" : "BF16", tok ? "" : " — no tokenizer copied (run make deps)");
    return 0;
}
