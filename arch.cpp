// arch.cpp — the table of model families (arch.h): one row per family.
//
// To add a family: its layer's tensor names (the list below the globals),
// one row in ARCHS, a chat style in tokenizer.h if its template is new, and
// a case in tests/test_family.cpp, which checks that every row's names are
// the ones the loaders bind and the converter writes.
#include "arch.h"

// Every Qwen names its embedding, final norm and LM head alike, in both
// formats. An untied head is lm_head.weight / output.weight; a tied one is
// the embedding, and no file holds it twice.
static const std::vector<ArchTensor> QWEN_GLOBALS = {
    {TensorRole::Embed, "model.embed_tokens.weight", "token_embd.weight"},
    {TensorRole::FinalNorm, "model.norm.weight", "output_norm.weight"},
    {TensorRole::LmHead, "lm_head.weight", "output.weight"},
};

// Qwen2 (and Qwen2.5): biases on q, k and v.
static const std::vector<ArchTensor> QWEN2_LAYER = {
    {TensorRole::AttnNorm, "input_layernorm.weight", "attn_norm.weight"},
    {TensorRole::Q, "self_attn.q_proj.weight", "attn_q.weight"},
    {TensorRole::QBias, "self_attn.q_proj.bias", "attn_q.bias"},
    {TensorRole::K, "self_attn.k_proj.weight", "attn_k.weight"},
    {TensorRole::KBias, "self_attn.k_proj.bias", "attn_k.bias"},
    {TensorRole::V, "self_attn.v_proj.weight", "attn_v.weight"},
    {TensorRole::VBias, "self_attn.v_proj.bias", "attn_v.bias"},
    {TensorRole::O, "self_attn.o_proj.weight", "attn_output.weight"},
    {TensorRole::FfnNorm, "post_attention_layernorm.weight", "ffn_norm.weight"},
    {TensorRole::Gate, "mlp.gate_proj.weight", "ffn_gate.weight"},
    {TensorRole::Up, "mlp.up_proj.weight", "ffn_up.weight"},
    {TensorRole::Down, "mlp.down_proj.weight", "ffn_down.weight"},
};

// Qwen3: no biases; a norm per head of q and of k instead.
static const std::vector<ArchTensor> QWEN3_LAYER = {
    {TensorRole::AttnNorm, "input_layernorm.weight", "attn_norm.weight"},
    {TensorRole::Q, "self_attn.q_proj.weight", "attn_q.weight"},
    {TensorRole::QNorm, "self_attn.q_norm.weight", "attn_q_norm.weight"},
    {TensorRole::K, "self_attn.k_proj.weight", "attn_k.weight"},
    {TensorRole::KNorm, "self_attn.k_norm.weight", "attn_k_norm.weight"},
    {TensorRole::V, "self_attn.v_proj.weight", "attn_v.weight"},
    {TensorRole::O, "self_attn.o_proj.weight", "attn_output.weight"},
    {TensorRole::FfnNorm, "post_attention_layernorm.weight", "ffn_norm.weight"},
    {TensorRole::Gate, "mlp.gate_proj.weight", "ffn_gate.weight"},
    {TensorRole::Up, "mlp.up_proj.weight", "ffn_up.weight"},
    {TensorRole::Down, "mlp.down_proj.weight", "ffn_down.weight"},
};

// The first row is also what a Config starts as (model.h), and what a
// config.json with an unknown model_type is tried as.
const Arch ARCHS[] = {
    {"qwen2", "qwen2", "Qwen2", /*qkv_bias*/ true, /*qk_norm*/ false, /*head_dim_stated*/ false, /*tied_head*/ true,
     ChatStyle::Qwen2, QWEN_GLOBALS, QWEN2_LAYER,
     {{"Qwen2.5-0.5B", 896, 24, 14, 2}, {"Qwen2.5-1.5B", 1536, 28, 12, 2}, {"Qwen2.5-3B", 2048, 36, 16, 2},
      {"Qwen2.5-7B", 3584, 28, 28, 4}}},
    // Qwen3-0.6B's heads are 128 wide while hidden / heads = 64: the head
    // dimension is stated.
    {"qwen3", "qwen3", "Qwen3", /*qkv_bias*/ false, /*qk_norm*/ true, /*head_dim_stated*/ true, /*tied_head*/ true,
     ChatStyle::Qwen3, QWEN_GLOBALS, QWEN3_LAYER,
     {{"Qwen3-0.6B", 1024, 28, 16, 8}}},
};
const int N_ARCHS = sizeof(ARCHS) / sizeof(ARCHS[0]);

const Arch* arch_by_model_type(const std::string& model_type) {
    for (const Arch& a : ARCHS)
        if (model_type == a.model_type) return &a;
    return nullptr;
}

const Arch* arch_by_gguf_name(const std::string& name) {
    for (const Arch& a : ARCHS)
        if (name == a.name) return &a;
    return nullptr;
}

std::string arch_names(const char* conjunction) {
    std::string s;
    for (int i = 0; i < N_ARCHS; i++)
        s += std::string(i == 0 ? "" : i == N_ARCHS - 1 ? std::string(" ") + conjunction + " " : ", ") + ARCHS[i].name;
    return s;
}

const ArchTensor* arch_tensor(const Arch& a, TensorRole role) {
    for (const std::vector<ArchTensor>* list : {&a.globals, &a.layer})
        for (const ArchTensor& t : *list)
            if (t.role == role) return &t;
    return nullptr;
}

std::string arch_hf_name(const Arch& a, TensorRole role, int layer) {
    const ArchTensor* t = arch_tensor(a, role);
    if (!t) return "";
    return layer < 0 ? t->hf : "model.layers." + std::to_string(layer) + "." + t->hf;
}

std::string arch_gguf_name(const Arch& a, TensorRole role, int layer) {
    const ArchTensor* t = arch_tensor(a, role);
    if (!t) return "";
    return layer < 0 ? t->gguf : "blk." + std::to_string(layer) + "." + t->gguf;
}

std::string arch_translate(const Arch& a, const std::string& name, bool to_gguf) {
    for (const ArchTensor& t : a.globals)
        if (name == (to_gguf ? t.hf : t.gguf)) return to_gguf ? t.gguf : t.hf;
    const std::string from = to_gguf ? "model.layers." : "blk.", to = to_gguf ? "blk." : "model.layers.";
    if (name.compare(0, from.size(), from) != 0) return "";
    size_t dot = name.find('.', from.size());
    if (dot == std::string::npos || dot == from.size()) return "";
    std::string layer = name.substr(from.size(), dot - from.size()), rest = name.substr(dot + 1);
    for (char ch : layer)
        if (ch < '0' || ch > '9') return "";
    for (const ArchTensor& t : a.layer)
        if (rest == (to_gguf ? t.hf : t.gguf)) return to + layer + "." + (to_gguf ? t.gguf : t.hf);
    return "";
}
