// model.h — a Hugging Face model folder in memory: config.json, the
// safetensors weights (one file or several shards, mmapped, never copied),
// and the named views the forward pass uses.
#pragma once
#include <string>
#include <vector>
#include "arch.h"
#include "common.h"
#include "kernels.h"

// The largest hyper-parameters a model file may state, config.json or
// GGUF (each later sizes an allocation or a loop: model.cpp:parse_config).
const int MAX_HIDDEN = 1 << 20, MAX_INTERMEDIATE = 1 << 22, MAX_LAYERS = 1 << 12, MAX_HEADS = 1 << 12,
          MAX_VOCAB = 1 << 24, MAX_POSITIONS = 1 << 30;

// The numbers of config.json that decide every shape.
struct Config {
    int hidden = 0;        // hidden_size              (0.5B: 896)
    int intermediate = 0;  // intermediate_size        (0.5B: 4864)
    int n_layers = 0;      // num_hidden_layers        (0.5B: 24)
    int n_heads = 0;       // num_attention_heads      (0.5B: 14)
    int n_kv_heads = 0;    // num_key_value_heads      (0.5B: 2)
    int head_dim = 0;      // head_dim, else hidden / n_heads (0.5B: 64; Qwen3-0.6B: 128)
    int vocab = 0;         // vocab_size               (0.5B: 151936)
    int max_pos = 0;       // max_position_embeddings  (0.5B: 32768)
    float eps = 1e-6f;     // rms_norm_eps
    float rope_theta = 10000.0f;
    bool tie_embeddings = true;
    const Arch* arch = &ARCHS[0];  // the family (arch.h): its features and tensor names; model_type picks it
    std::string torch_dtype;
    int bos_id = -1;
    std::vector<int> eos_ids;  // eos_token_id may be a number or a list
};

// One entry of the safetensors header.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    size_t offset = 0;  // from the start of the file (header already added)
    size_t nbytes = 0;
    const void* data = nullptr;
    int file = 0;       // which of Model::files holds it
};

// One mmapped safetensors file: the whole model, or one shard of it.
struct MappedFile {
    std::string path;
    void* map = nullptr;
    size_t size = 0;
};

struct LayerWeights {
    std::vector<float> attn_norm, ffn_norm;  // [hidden]
    Mat wq, wk, wv, wo;                       // [n_heads*hd, hidden] [n_kv*hd, hidden] x2, [hidden, n_heads*hd]
    std::vector<float> bq, bk, bv;            // [n_heads*hd] [n_kv*hd] [n_kv*hd] (zeros without Arch::qkv_bias)
    std::vector<float> q_norm, k_norm;        // [hd] each (empty without Arch::qk_norm)
    Mat w_gate, w_up, w_down;                 // [inter, hidden] x2, [hidden, inter]
};

struct Model {
    std::string dir;          // the folder
    std::string weights_path; // its model.safetensors (or model.safetensors.index.json)
    Config cfg;
    std::vector<TensorInfo> tensors;  // in file order (shard by shard)
    std::vector<std::string> checks;  // what load_model verified, for `run info`
    size_t header_len = 0;    // of the file parse_safetensors read last
    size_t file_size = 0;     // of the file map points to
    void* map = nullptr;      // the mmapped file parse_safetensors reads
    std::vector<MappedFile> files;  // every mapping, unmapped by ~Model
    Mat embed;            // [vocab, hidden]
    Mat lm_head;          // [vocab, hidden] (= embed when tied)
    std::vector<float> final_norm;  // [hidden]
    std::vector<LayerWeights> layers;
    std::vector<std::vector<uint8_t>> owned;  // storage for --quant copies

    Model() = default;
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
    ~Model();
};

// `path` is a model folder, its model.safetensors or its
// model.safetensors.index.json (shards). Throws LanternError naming the
// file and the problem when anything is off. A GGUF file is gguf_load.h's;
// generate.h:open_model is the one place that tells the two apart.
void load_model(Model& m, const std::string& path);
// The named views (embed, layers, ...) of m.tensors, each checked against
// m.cfg: the last step of either loader, folder or GGUF file.
void bind_weights(Model& m);
// Parses config.json alone (also used by the tokenizer-only commands).
Config parse_config(const std::string& config_path);
// Parses and validates the safetensors header of an mmapped file.
void parse_safetensors(Model& m);
// Every matrix the forward pass multiplies by, each once (a tied head is
// the embedding): what --quant converts and the fast kernels repack
// (gguf/gguf_load.cpp:quantize_model, cpu/quants_packed.cpp:pack_model).
std::vector<Mat*> weight_matrices(Model& m);
// Reserves `bytes` in v, asking for 2 MB pages where the kernel has them
// (a converted copy of the weights is read once per token).
void prefer_huge_pages(std::vector<uint8_t>& v, size_t bytes);
// True when `path` is a file that starts with the GGUF magic or ends in .gguf.
bool is_gguf_path(const std::string& path);
// Takes the whole pages of [p, p + n) out of the resident set if they belong
// to one of the model's mapped files (no-op otherwise); read again, they come
// back from the file.
void release_file_pages(const Model& m, const void* p, size_t n);
const TensorInfo* find_tensor(const Model& m, const std::string& name);
size_t parameter_count(const Model& m);
// Bytes of all weight files together (the model's size on disk).
size_t weights_bytes(const Model& m);
// "Qwen2.5-7B" / "Qwen3-0.6B" when the shape is one its family published
// (Arch::published), else the family ("Qwen2 architecture, not a published size").
std::string model_family(const Config& c);
// Resolve a folder or file argument to the folder.
std::string model_dir(const std::string& path);
