// arch.h — the model families Lantern runs, described in one table
// (arch.cpp:ARCHS, one row per family, in the spirit of llama.cpp's
// llama-arch.cpp).
//
// A family is what decides the code paths, not the numbers: whether the
// q/k/v projections have biases, whether each head of q and k is normed
// before RoPE (QK-norm), whether the head dimension is a number of its own,
// which chat template the model was trained on, and what every tensor is
// called in a Hugging Face folder and in a GGUF file. The engine asks a row
// for its features (`c.arch->qk_norm`), never which family it is, so
// adding a family is a row here, a chat style (tokenizer.h) if its template
// is new, and a test (tests/test_family.cpp). See book/17-beyond-05b.md.
#pragma once
#include <string>
#include <vector>
#include "tokenizer.h"

// What a tensor is to the engine, whatever a file calls it.
enum class TensorRole {
    Embed, FinalNorm, LmHead,                 // outside the layers
    AttnNorm, Q, QBias, QNorm, K, KBias, KNorm, V, VBias, O, FfnNorm, Gate, Up, Down,  // in each layer
};

// One tensor's two names. A layer's are written without the layer's
// prefix ("model.layers.N." and "blk.N."); arch_hf_name adds it.
struct ArchTensor {
    TensorRole role;
    const char* hf;    // Hugging Face (safetensors) name
    const char* gguf;  // llama.cpp's name
};

// A published checkpoint's shape, for `./run info`'s family line.
struct PublishedShape {
    const char* name;  // "Qwen2.5-7B"
    int hidden, layers, heads, kv_heads;
};

struct Arch {
    const char* name;        // GGUF general.architecture and the prefix of its keys ("qwen2.block_count")
    const char* model_type;  // config.json "model_type"
    const char* title;       // in messages: "Qwen2 architecture, not a published size"
    bool qkv_bias;           // the q, k and v projections add a bias
    bool qk_norm;            // RMSNorm over each head of q and of k, before RoPE
    // The head dimension: stated (config.json head_dim, GGUF
    // attention.key_length), because it need not be hidden / heads; false:
    // hidden / heads, as a reader assumes when no key says otherwise.
    bool head_dim_stated;
    bool tied_head;          // tie_word_embeddings when config.json does not say
    ChatStyle chat;          // the chat template it was trained on (tokenizer.h)
    std::vector<ArchTensor> globals;  // embedding, final norm, LM head
    std::vector<ArchTensor> layer;    // one layer's tensors, in the order a GGUF file lists them
    std::vector<PublishedShape> published;
};

extern const Arch ARCHS[];
extern const int N_ARCHS;

// The row whose model_type (config.json) or name (GGUF) this is; nullptr if none.
const Arch* arch_by_model_type(const std::string& model_type);
const Arch* arch_by_gguf_name(const std::string& name);
// Every row's name joined for an error message: "qwen2 or qwen3", "qwen2 and qwen3".
std::string arch_names(const char* conjunction);
// The row's tensor of this role; nullptr when the family has none (Qwen3's q bias).
const ArchTensor* arch_tensor(const Arch& a, TensorRole role);
// Full names: "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight"
// (layer -1 for a tensor outside the layers).
std::string arch_hf_name(const Arch& a, TensorRole role, int layer);
std::string arch_gguf_name(const Arch& a, TensorRole role, int layer);
// A full name translated: Hugging Face -> GGUF (to_gguf) or back; "" when
// the family has no tensor of that name.
std::string arch_translate(const Arch& a, const std::string& name, bool to_gguf);
