// gen_model — writes a Qwen2- or Qwen3-shaped Hugging Face model folder
// with deterministic random weights, so Lantern can be tested and
// benchmarked without downloading anything.
//
//   build/gen_model --preset tiny --out models/tiny
//   build/gen_model --preset qwen2.5-0.5b --out models/qwen2.5-0.5b-random
//   build/gen_model --preset tiny --dtype f32 --layers 2 --out /tmp/m
//   build/gen_model --preset qwen2.5-7b --layers 2 --shards 3 --out /tmp/7b2
//
// The folder holds config.json, generation_config.json, the real tokenizer
// files (copied from --tokenizer, default models/qwen-tokenizer) and
// model.safetensors with Hugging Face's tensor names — or, with --shards N,
// N files and the model.safetensors.index.json that maps names to files.
// A --preset sets every shape; flags after it change single numbers.
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
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>
#include "common.h"

struct Spec {
    int hidden = 64, intermediate = 160, layers = 4, heads = 4, kv_heads = 2, vocab = 151936, max_pos = 4096;
    int head_dim = 0;   // 0: hidden / heads (Qwen2); Qwen3 states its own
    double rope_theta = 1000000.0, eps = 1e-6;
    bool f32 = false;
    bool tied = true;   // false: a separate lm_head.weight (Qwen2.5-7B)
    bool qwen3 = false; // Qwen3 dense: q_norm/k_norm per head, no q/k/v biases
    int shards = 1;     // >1: model-0000k-of-0000N.safetensors + model.safetensors.index.json
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

// A tensor to write: its numbers are center + spread * uniform(key + i),
// produced only when it is written, so a 7B-shaped model (15 GB) never has
// to fit in memory — one tensor at a time does.
struct Out {
    std::string name;
    std::vector<int64_t> shape;
    int id;
    float center, spread;
    size_t count() const {
        size_t n = 1;
        for (auto d : shape) n *= (size_t)d;
        return n;
    }
};

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

// One safetensors file: header JSON (padded with spaces to a multiple of 8),
// then the tensors' bytes in header order.
static void write_safetensors(const std::string& path, const Spec& s, const std::vector<Out>& ts) {
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
    size_t off = 0, elem = s.f32 ? 4 : 2;
    for (auto& t : ts) {
        size_t n = t.count() * elem;
        header += ",\"" + t.name + "\":{\"dtype\":\"" + (s.f32 ? "F32" : "BF16") + "\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); i++) header += (i ? "," : "") + std::to_string(t.shape[i]);
        header += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + n) + "]}";
        off += n;
    }
    header += "}";
    while (header.size() % 8) header += ' ';
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) { fprintf(stderr, "gen_model: cannot write %s\n", path.c_str()); exit(1); }
    uint64_t hl = header.size();
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(hl >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(header.data(), 1, header.size(), f);
    for (auto& t : ts) {
        uint64_t key = mix(s.seed * 1000003ull + (uint64_t)t.id) << 1;
        std::vector<float> v(t.count());
        for (size_t i = 0; i < v.size(); i++) v[i] = t.center + t.spread * uniform(key + i);
        if (s.f32) fwrite(v.data(), 4, v.size(), f);
        else {
            std::vector<uint16_t> b(v.size());
            for (size_t i = 0; i < b.size(); i++) b[i] = f32_to_bf16(v[i]);
            fwrite(b.data(), 2, b.size(), f);
        }
    }
    if (fclose(f) != 0) { fprintf(stderr, "gen_model: writing %s failed (disk full?)\n", path.c_str()); exit(1); }
}

// The presets: every shape of config.json as the published models state it
// (weights random). The Qwen2.5 sizes differ only in their numbers — and the
// 7B model unties its LM head; Qwen3-0.6B adds q_norm/k_norm, drops the
// biases and states head_dim (128, not hidden/heads = 64).
static bool preset_spec(const std::string& name, Spec& s) {
    Spec d;  // keep what is not a shape
    d.f32 = s.f32; d.seed = s.seed; d.shards = s.shards;
    auto set = [&](int h, int inter, int layers, int heads, int kv, int vocab, int max_pos) {
        d.hidden = h; d.intermediate = inter; d.layers = layers; d.heads = heads; d.kv_heads = kv;
        d.vocab = vocab; d.max_pos = max_pos;
    };
    if (name == "tiny") {
    } else if (name == "mha") {  // differs from tiny in every dimension; n_kv_heads == n_heads
        set(96, 200, 3, 3, 3, 151680, 2048); d.rope_theta = 10000.0; d.eps = 1e-5;
    } else if (name == "qwen2.5-0.5b") set(896, 4864, 24, 14, 2, 151936, 32768);
    else if (name == "qwen2.5-1.5b") set(1536, 8960, 28, 12, 2, 151936, 32768);
    else if (name == "qwen2.5-3b") set(2048, 11008, 36, 16, 2, 151936, 32768);
    else if (name == "qwen2.5-7b") { set(3584, 18944, 28, 28, 4, 152064, 32768); d.tied = false; }
    else if (name == "qwen3-0.6b") { set(1024, 3072, 28, 16, 8, 151936, 40960); d.head_dim = 128; d.qwen3 = true; }
    else if (name == "qwen3-tiny") { set(64, 160, 4, 4, 2, 151936, 4096); d.head_dim = 32; d.qwen3 = true; }
    else return false;
    s = d;
    return true;
}

int main(int argc, char** argv) {
    Spec s;
    std::string out_dir, tok_dir = "models/qwen-tokenizer", preset = "tiny";
    const char* presets = "tiny, mha, qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-3b, qwen2.5-7b, qwen3-0.6b, qwen3-tiny";
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) { fprintf(stderr, "gen_model: %s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "--preset") {
            preset = val();
            if (!preset_spec(preset, s)) { fprintf(stderr, "gen_model: unknown preset %s (%s)\n", preset.c_str(), presets); return 2; }
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
        else if (a == "--head-dim") s.head_dim = atoi(val().c_str());
        else if (a == "--vocab") s.vocab = atoi(val().c_str());
        else if (a == "--max-pos") s.max_pos = atoi(val().c_str());
        else if (a == "--rope-theta") s.rope_theta = atof(val().c_str());
        else if (a == "--eps") s.eps = atof(val().c_str());
        else if (a == "--untied") s.tied = false;
        else if (a == "--shards") s.shards = atoi(val().c_str());
        else { fprintf(stderr, "gen_model: unknown flag %s\nflags: --preset NAME (%s) --out DIR --dtype bf16|f32 --seed N --hidden --intermediate --layers --heads --kv-heads --head-dim --vocab --max-pos --rope-theta --eps --untied --shards N --tokenizer DIR\n", a.c_str(), presets); return 2; }
    }
    if (out_dir.empty()) { fprintf(stderr, "gen_model: --out DIR is required\n"); return 2; }
    if (s.hidden <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.layers <= 0 || s.heads % s.kv_heads ||
        (!s.head_dim && s.hidden % s.heads) || s.head_dim < 0) {
        fprintf(stderr, "gen_model: hidden, heads, kv-heads and layers must be positive, heads a multiple of kv-heads, and hidden a multiple of heads unless --head-dim is given\n");
        return 2;
    }
    int hd = s.head_dim ? s.head_dim : s.hidden / s.heads;
    if (hd % 2) { fprintf(stderr, "gen_model: head_dim %d must be even for RoPE\n", hd); return 2; }
    mkdir(out_dir.c_str(), 0755);

    int H = s.hidden, qd = s.heads * hd, kvd = s.kv_heads * hd, I = s.intermediate;
    float lin = 1.0f / std::sqrt((float)H) * std::sqrt(3.0f);  // uniform spread with std 1/sqrt(fan_in)
    std::vector<Out> ts;
    int id = 0;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float center, float spread) {
        ts.push_back(Out{name, shape, id++, center, spread});
    };
    add("model.embed_tokens.weight", {s.vocab, H}, 0, 4.0f / std::sqrt((float)H) * std::sqrt(3.0f));
    for (int l = 0; l < s.layers; l++) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        add(p + "input_layernorm.weight", {H}, 1.0f, 0.2f);
        add(p + "self_attn.q_proj.weight", {qd, H}, 0, lin);
        if (!s.qwen3) add(p + "self_attn.q_proj.bias", {qd}, 0, 0.3f);
        add(p + "self_attn.k_proj.weight", {kvd, H}, 0, lin);
        if (!s.qwen3) add(p + "self_attn.k_proj.bias", {kvd}, 0, 0.3f);
        add(p + "self_attn.v_proj.weight", {kvd, H}, 0, lin);
        if (!s.qwen3) add(p + "self_attn.v_proj.bias", {kvd}, 0, 0.3f);
        if (s.qwen3) {
            add(p + "self_attn.q_norm.weight", {hd}, 1.0f, 0.2f);
            add(p + "self_attn.k_norm.weight", {hd}, 1.0f, 0.2f);
        }
        add(p + "self_attn.o_proj.weight", {H, qd}, 0, 2.0f / std::sqrt((float)qd) * std::sqrt(3.0f));
        add(p + "post_attention_layernorm.weight", {H}, 1.0f, 0.2f);
        add(p + "mlp.gate_proj.weight", {I, H}, 0, lin);
        add(p + "mlp.up_proj.weight", {I, H}, 0, lin);
        add(p + "mlp.down_proj.weight", {H, I}, 0, 3.0f / std::sqrt((float)I) * std::sqrt(3.0f));
    }
    add("model.norm.weight", {H}, 1.0f, 0.2f);
    // An untied head is a second [vocab, hidden] matrix; random like the
    // embedding but drawn independently, so tying mistakes show in the logits.
    if (!s.tied) add("lm_head.weight", {s.vocab, H}, 0, 4.0f / std::sqrt((float)H) * std::sqrt(3.0f));

    size_t params = 0, elem = s.f32 ? 4 : 2;
    for (auto& t : ts) params += t.count();
    if (s.shards <= 1) write_safetensors(out_dir + "/model.safetensors", s, ts);
    else {
        // Sharded like Hugging Face's save_pretrained: tensors in order, a new
        // file when the running total passes the next 1/N of the bytes, and
        // model.safetensors.index.json mapping every tensor to its file.
        if ((size_t)s.shards > ts.size()) { fprintf(stderr, "gen_model: --shards %d exceeds the %zu tensors\n", s.shards, ts.size()); return 2; }
        size_t total = params * elem, done = 0;
        std::vector<std::vector<Out>> parts(s.shards);
        int k = 0, n = (int)ts.size();
        for (int i = 0; i < n; i++) {
            int want = std::max(std::min(s.shards - 1, (int)(done * s.shards / total)), s.shards - (n - i));
            if (want > k && !parts[k].empty()) k++;  // one file at a time: none is left empty
            parts[k].push_back(ts[i]);
            done += ts[i].count() * elem;
        }
        std::string index = "{\n  \"metadata\": {\"total_size\": " + std::to_string(total) + "},\n  \"weight_map\": {";
        bool first = true;
        for (int k = 0; k < s.shards; k++) {
            char file[64];
            snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", k + 1, s.shards);
            write_safetensors(out_dir + "/" + file, s, parts[k]);
            for (auto& t : parts[k]) {
                index += std::string(first ? "" : ",") + "\n    \"" + t.name + "\": \"" + file + "\"";
                first = false;
            }
        }
        write_text(out_dir + "/model.safetensors.index.json", index + "\n  }\n}\n");
    }

    std::string head_dim_line = s.qwen3 ? "  \"head_dim\": " + std::to_string(hd) + ",\n  \"attention_bias\": false,\n" : "";
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n%s"
             "  \"hidden_act\": \"silu\",\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
             "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n"
             "  \"max_position_embeddings\": %d,\n  \"max_window_layers\": %d,\n  \"rms_norm_eps\": %g,\n"
             "  \"rope_theta\": %.1f,\n  \"sliding_window\": %d,\n  \"use_sliding_window\": false,\n"
             "  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\",\n  \"vocab_size\": %d,\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151645,\n  \"attention_dropout\": 0.0,\n"
             "  \"initializer_range\": 0.02,\n  \"use_cache\": true,\n  \"transformers_version\": \"%s\",\n"
             "  \"lantern_generator\": \"tools/gen_model.cpp preset=%s seed=%llu (random weights)\"\n}\n",
             s.qwen3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM", s.qwen3 ? "qwen3" : "qwen2", head_dim_line.c_str(),
             H, I, s.layers, s.heads, s.kv_heads, s.max_pos, s.layers, s.eps, s.rope_theta, s.max_pos,
             s.tied ? "true" : "false", s.f32 ? "float32" : "bfloat16", s.vocab, s.qwen3 ? "4.51.0" : "4.43.1",
             preset.c_str(), (unsigned long long)s.seed);
    write_text(out_dir + "/config.json", cfg);
    // generation_config.json as each family publishes it: Qwen3 samples
    // cooler and wider (its thinking mode's settings) and has no repetition penalty.
    if (s.qwen3)
        write_text(out_dir + "/generation_config.json",
                   "{\n  \"bos_token_id\": 151643,\n  \"eos_token_id\": [151645, 151643],\n  \"do_sample\": true,\n"
                   "  \"pad_token_id\": 151643,\n  \"temperature\": 0.6,\n  \"top_k\": 20,\n  \"top_p\": 0.95\n}\n");
    else
        write_text(out_dir + "/generation_config.json",
                   "{\n  \"bos_token_id\": 151643,\n  \"eos_token_id\": [151645, 151643],\n  \"do_sample\": true,\n"
                   "  \"pad_token_id\": 151643,\n  \"repetition_penalty\": 1.1,\n  \"temperature\": 0.7,\n"
                   "  \"top_k\": 20,\n  \"top_p\": 0.8\n}\n");
    bool tok = copy_file(tok_dir + "/tokenizer.json", out_dir + "/tokenizer.json");
    copy_file(tok_dir + "/tokenizer_config.json", out_dir + "/tokenizer_config.json");
    printf("gen_model: wrote %s (%zu tensors, %zu parameters, %s%s%s)%s\n", out_dir.c_str(), ts.size(), params,
           s.f32 ? "F32" : "BF16", s.tied ? "" : ", untied head",
           s.shards > 1 ? (", " + std::to_string(s.shards) + " shards").c_str() : "",
           tok ? "" : " — no tokenizer copied (run make deps)");
    return 0;
}
