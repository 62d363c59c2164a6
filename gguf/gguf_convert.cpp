// gguf_convert.cpp — `./run convert MODEL OUT.gguf --type TYPE`: a model
// (folder or GGUF file) written as one GGUF file that llama.cpp loads too.
//
// What goes in: the hyper-parameters llama.cpp reads, under the family's
// prefix (qwen2.*, qwen3.*: arch.h's Arch::name), the tokenizer as
// tokenizer.ggml.* (so the file runs without a tokenizer.json), and the
// tensors under llama.cpp's names, in the order and with the names of the
// family's row in arch.cpp. Matrices take
// the chosen type; vectors (norm weights, biases) stay f32, as llama.cpp
// keeps them.
//
// Which type a matrix gets. A block format needs rows that are a multiple
// of its block (32, or 256 for the k-quants). When a row is not, the
// matrix falls back the way llama-quantize does it: Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, and any format -> F16 when even 32 does not
// divide the row. Qwen2.5-0.5B's hidden size 896 = 3.5 x 256, so every
// matrix whose rows are 896 long falls back; only ffn_down (rows of
// 4864 = 19 x 256) keeps a k-quant.
//
// A source that is already quantized (a GGUF file of Q8_0, Q4_K, ...
// matrices) keeps a matrix whose type does not change byte for byte, and
// may be widened to f32 (exact); any other type rounds its rounded weights
// again, and is refused without --force (gguf_load.h:check_requantize).
//
// Besides the weights: the model's generation_config.json as llama.cpp's
// general.sampling.* keys and lantern.generation.* (gguf_load.h), and
// config.json's stop ids as lantern.eos_token_ids when the one
// tokenizer.ggml.eos_token_id cannot say them. So the file samples and
// stops as the folder does, with no file beside it.
//
// The presets q4_k_m and q5_k_m follow llama.cpp's "_M" mix: Q4_K (Q5_K)
// everywhere, but Q6_K for the output matrix (the embedding when it is
// tied) and for attn_v and ffn_down in the layers where more bits help
// most: the first and last eighth of the layers and every third layer in
// between (use_more_bits below).
#include <algorithm>
#include <cstdio>
#include <map>
#include "arch.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "cli.h"
#include "logging.h"
#include "model.h"
#include "gguf/quants.h"
#include "tokenizer.h"

struct ConvertType {
    const char* name;
    DType base;         // the type of most matrices
    bool mix;           // the _m preset rules
    uint32_t file_type; // general.file_type (llama.cpp's numbering)
};
static const ConvertType CONVERT_TYPES[] = {
    {"f32", DType::F32, false, 0},    {"f16", DType::F16, false, 1},    {"bf16", DType::BF16, false, 32},
    {"q8_0", DType::Q8_0, false, 7},  {"q4_0", DType::Q4_0, false, 2},  {"q4_1", DType::Q4_1, false, 3},
    {"q5_0", DType::Q5_0, false, 8},  {"q5_1", DType::Q5_1, false, 9},  {"q4_k", DType::Q4_K, false, 14},
    {"q5_k", DType::Q5_K, false, 16}, {"q6_k", DType::Q6_K, false, 18}, {"q4_k_m", DType::Q4_K, true, 15},
    {"q5_k_m", DType::Q5_K, true, 17},
};

static bool use_more_bits(int layer, int n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The type of one matrix: the preset's choice, then the fallbacks for rows
// the block does not divide.
DType convert_matrix_type(const ConvertType& ct, const std::string& gguf_name, int cols, int layer, int n_layers, bool tied) {
    DType t = ct.base;
    if (ct.mix) {
        bool output = gguf_name == "output.weight" || (tied && gguf_name == "token_embd.weight");
        bool more = layer >= 0 && use_more_bits(layer, n_layers) &&
                    (gguf_name.find("attn_v.weight") != std::string::npos || gguf_name.find("ffn_down.weight") != std::string::npos);
        if (output || more) t = DType::Q6_K;
    }
    t = block_fallback(t, cols);
    if (cols % dtype_block_size(t)) t = DType::F16;
    return t;
}

static GGUFValue string_array(const std::string& key, std::vector<std::string> v) {
    GGUFValue r;
    r.key = key, r.type = GGUF_ARRAY, r.elem_type = GGUF_STRING, r.strs = std::move(v);
    return r;
}

// tokenizer.ggml.*: the tokenizer as llama.cpp's "gpt2" (byte-level BPE)
// model with Qwen2's pre-tokenizer. Rows of the embedding past the
// tokenizer's last id get placeholder names and the type "unused". Returns
// the eos id it wrote (-1: none).
static int tokenizer_values(std::vector<GGUFValue>& kv, const Tokenizer& tok, const Config& c, const std::string& src) {
    if (tok.vocab_size > c.vocab)
        fail("%s: the tokenizer has %d ids but the model only %d embedding rows", src.c_str(), tok.vocab_size, c.vocab);
    std::vector<std::string> tokens(c.vocab);
    GGUFValue types;
    types.key = "tokenizer.ggml.token_type", types.type = GGUF_ARRAY, types.elem_type = GGUF_I32;
    types.nums.assign(c.vocab, 1);
    for (int i = 0; i < c.vocab; i++) {
        bool real = i < tok.vocab_size && !tok.id_to_piece[i].empty();
        tokens[i] = real ? tok.id_to_piece[i] : "[PAD" + std::to_string(i) + "]";
        if (!real) types.nums[i] = 5;
    }
    for (const AddedToken& a : tok.added) types.nums[a.id] = a.special ? 3 : 4;
    // The merges in rank order, as "left right" pieces (the table is a hash).
    std::vector<std::pair<int, uint64_t>> ranked;
    for (size_t s = 0; s < tok.merges.keys.size(); s++)
        if (tok.merges.keys[s]) ranked.push_back({tok.merges.values[s].rank, tok.merges.keys[s] - 1});
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::string> merges;
    for (auto& [rank, pair] : ranked)
        merges.push_back(tok.id_to_piece[pair >> 32] + " " + tok.id_to_piece[(uint32_t)pair]);
    kv.push_back(gguf_str("tokenizer.ggml.model", "gpt2"));
    kv.push_back(gguf_str("tokenizer.ggml.pre", "qwen2"));
    kv.push_back(string_array("tokenizer.ggml.tokens", std::move(tokens)));
    kv.push_back(types);
    kv.push_back(string_array("tokenizer.ggml.merges", std::move(merges)));
    int eos = tok.eos_token.empty() ? -1 : token_id(tok, tok.eos_token);
    if (eos < 0 && !c.eos_ids.empty()) eos = c.eos_ids[0];
    int pad = token_id(tok, "<|endoftext|>");
    if (c.bos_id >= 0) kv.push_back(gguf_u32("tokenizer.ggml.bos_token_id", c.bos_id));
    if (eos >= 0) kv.push_back(gguf_u32("tokenizer.ggml.eos_token_id", eos));
    if (pad >= 0) kv.push_back(gguf_u32("tokenizer.ggml.padding_token_id", pad));
    kv.push_back(gguf_bool("tokenizer.ggml.add_bos_token", false));
    if (!tok.chat_template.empty()) kv.push_back(gguf_str("tokenizer.chat_template", tok.chat_template));
    return eos;
}

int cmd_convert(int argc, char** argv) {
    // The flags are cli_flags.cpp's (group convert): MODEL, OUT.gguf and --type.
    Options o = parse_command("convert", argc, argv);
    if (o.engine.model.empty() || o.positional.empty())
        fail("convert: usage: ./run convert MODEL OUT.gguf --type TYPE (./run convert --help)");
    std::vector<std::string> pos = {o.engine.model, o.positional[0]};
    std::string type_name = o.convert_type;
    const ConvertType* ct = nullptr;
    for (const ConvertType& t : CONVERT_TYPES)
        if (type_name == t.name) ct = &t;
    if (!ct) fail("--type: \"%s\" is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m", type_name.c_str());

    Model m;
    open_model(m, pos[0]);  // a folder or a GGUF file (generate.h)
    Tokenizer tok;
    open_tokenizer(tok, m.dir);
    const Config& c = m.cfg;
    const Arch& family = *c.arch;
    bool tied = find_tensor(m, arch_hf_name(family, TensorRole::LmHead, -1)) == nullptr;

    // Each family is its own architecture for llama.cpp: the same keys under
    // its prefix; a family whose head dimension need not be hidden / heads
    // states it.
    const std::string arch = family.name, a = arch + ".";
    std::vector<GGUFValue> kv;
    kv.push_back(gguf_str("general.architecture", arch));
    std::string name = pos[0];
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    kv.push_back(gguf_str("general.name", name.substr(name.find_last_of('/') + 1)));
    kv.push_back(gguf_u32("general.file_type", ct->file_type));
    kv.push_back(gguf_u32("general.quantization_version", 2));
    kv.push_back(gguf_u32("general.alignment", 32));
    kv.push_back(gguf_u32(a + "context_length", c.max_pos));
    kv.push_back(gguf_u32(a + "embedding_length", c.hidden));
    kv.push_back(gguf_u32(a + "feed_forward_length", c.intermediate));
    kv.push_back(gguf_u32(a + "block_count", c.n_layers));
    kv.push_back(gguf_u32(a + "attention.head_count", c.n_heads));
    kv.push_back(gguf_u32(a + "attention.head_count_kv", c.n_kv_heads));
    if (family.head_dim_stated) {
        kv.push_back(gguf_u32(a + "attention.key_length", c.head_dim));
        kv.push_back(gguf_u32(a + "attention.value_length", c.head_dim));
    }
    kv.push_back(gguf_f32(a + "rope.freq_base", c.rope_theta));
    kv.push_back(gguf_f32(a + "attention.layer_norm_rms_epsilon", c.eps));
    int eos = tokenizer_values(kv, tok, c, pos[0]);
    // The folder stops at config.json's ids (generate.cpp:stop_token_ids);
    // when that is not the one eos id above, the list goes in as well.
    if (!c.eos_ids.empty() && c.eos_ids != std::vector<int>{eos}) {
        GGUFValue ids;
        ids.key = "lantern.eos_token_ids", ids.type = GGUF_ARRAY, ids.elem_type = GGUF_I32;
        ids.nums.assign(c.eos_ids.begin(), c.eos_ids.end());
        kv.push_back(ids);
    }
    gguf_generation_values(kv, pos[0]);  // sample as the folder does (gguf_load.h)

    // The tensors in the engine's order: embedding, each layer's in the
    // order of the family's row (Qwen2 with its q/k/v biases, Qwen3 with its
    // q/k norms), final norm, output.
    std::vector<std::string> hf = {arch_hf_name(family, TensorRole::Embed, -1)};
    for (int l = 0; l < c.n_layers; l++)
        for (const ArchTensor& t : family.layer) hf.push_back(arch_hf_name(family, t.role, l));
    hf.push_back(arch_hf_name(family, TensorRole::FinalNorm, -1));
    if (!tied) hf.push_back(arch_hf_name(family, TensorRole::LmHead, -1));

    // Each tensor's type first, so that a refused re-quantization writes nothing.
    std::vector<const TensorInfo*> src(hf.size());
    std::vector<DType> to(hf.size());
    std::vector<TypeChange> changes;
    for (size_t i = 0; i < hf.size(); i++) {
        src[i] = find_tensor(m, hf[i]);
        if (!src[i]) fail("%s: tensor %s is missing", m.weights_path.c_str(), hf[i].c_str());
        const TensorInfo* t = src[i];
        int cols = (int)t->shape.back();
        int layer = hf[i].rfind("model.layers.", 0) == 0 ? atoi(hf[i].c_str() + 13) : -1;
        to[i] = t->shape.size() == 2 ? convert_matrix_type(*ct, arch_translate(family, hf[i], true), cols, layer, c.n_layers, tied)
                                     : DType::F32;
        changes.push_back({t->dtype, to[i]});
    }
    check_requantize(pos[0], changes, "--type", ct->name, o.engine.force);

    std::vector<std::vector<uint8_t>> storage(hf.size());
    std::vector<GGUFTensorOut> out;
    std::map<std::string, int> counts;
    int kept = 0;
    for (size_t i = 0; i < hf.size(); i++) {
        const TensorInfo* t = src[i];
        bool matrix = t->shape.size() == 2;
        int rows = matrix ? (int)t->shape[0] : 1, cols = (int)t->shape.back();
        Mat s{t->dtype, rows, cols, t->data};
        GGUFTensorOut o;
        o.info.name = arch_translate(family, hf[i], true);
        // Already in its type: the bytes as they are (a block format read
        // and written again need not round to the same codes).
        Mat dst = s.dtype == to[i] ? s : quantize_mat(s, to[i], storage[i]);
        kept += matrix && dtype_block_size(s.dtype) > 1 && s.dtype == to[i];
        o.info.ggml_type = dtype_to_ggml_type(to[i]);
        o.info.ne = matrix ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
        o.info.nbytes = dst.bytes();
        o.data = dst.data;
        if (matrix) counts[dtype_name(to[i])]++;
        out.push_back(o);
    }
    gguf_write(pos[1], kv, out);
    std::string mix;
    for (auto& [t, n] : counts) mix += (mix.empty() ? "" : ", ") + std::to_string(n) + " " + t;
    LOGI(CAT_LOAD, "wrote %s (%s): %zu tensors; matrices: %s%s", pos[1].c_str(), ct->name, out.size(), mix.c_str(),
         kept ? strprintf(" (%d kept byte for byte from %s)", kept, pos[0].c_str()).c_str() : "");
    return 0;
}
