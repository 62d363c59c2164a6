// A correct Llama row for chapters/family (the engine has none: SOLUTION=1 builds this file).
// chapters/family/stub.cpp — a new row of the family table (book/17-beyond-05b.md).
//
// arch.cpp:ARCHS has one row per model family Lantern reads: what config.json
// calls it, which optional tensors a layer has, what each tensor is named in
// a safetensors file and in a GGUF file. A family whose layer is Qwen2's
// without the biases needs no new code at all, only a row. This exercise
// writes one, for checkpoints saved by Hugging Face's LlamaForCausalLM.
// `make exercise EX=family` builds this file into the engine in place of
// arch.cpp's arch_by_model_type and checks it.
#include <cstring>
#include "arch.h"
#include "tokenizer.h"

// TODO(student): fill in the row. A Llama checkpoint (config.json
// "model_type": "llama") differs from Qwen2 in that
//   - its q, k and v projections have no bias, and there is no norm per head;
//   - its head dimension is hidden / heads unless config.json says otherwise;
//   - its head is not tied to the embedding unless config.json says so;
//   - its tensors are named as Qwen2's are, in both formats
//     (model.layers.N.self_attn.q_proj.weight, blk.N.attn_q.weight, ...),
//     with the same global tensors (embedding, final norm, LM head);
//   - its GGUF name (general.architecture) is "llama".
// Lantern has no Llama chat template: use ChatStyle::Qwen2 (the checker
// does not chat). Read arch.h for each field, and arch.cpp's two rows.
static const Arch LLAMA = {
    "llama", "llama", "Llama", /*qkv_bias*/ false, /*qk_norm*/ false, /*head_dim_stated*/ false, /*tied_head*/ false,
    ChatStyle::Qwen2,
    {{TensorRole::Embed, "model.embed_tokens.weight", "token_embd.weight"},
     {TensorRole::FinalNorm, "model.norm.weight", "output_norm.weight"},
     {TensorRole::LmHead, "lm_head.weight", "output.weight"}},
    {{TensorRole::AttnNorm, "input_layernorm.weight", "attn_norm.weight"},
     {TensorRole::Q, "self_attn.q_proj.weight", "attn_q.weight"},
     {TensorRole::K, "self_attn.k_proj.weight", "attn_k.weight"},
     {TensorRole::V, "self_attn.v_proj.weight", "attn_v.weight"},
     {TensorRole::O, "self_attn.o_proj.weight", "attn_output.weight"},
     {TensorRole::FfnNorm, "post_attention_layernorm.weight", "ffn_norm.weight"},
     {TensorRole::Gate, "mlp.gate_proj.weight", "ffn_gate.weight"},
     {TensorRole::Up, "mlp.up_proj.weight", "ffn_up.weight"},
     {TensorRole::Down, "mlp.down_proj.weight", "ffn_down.weight"}},
    {{"Llama-3.2-1B", 2048, 16, 32, 8}},
};

// The row for a config.json model_type: Llama's, or one of ARCHS, or none.
const Arch* arch_by_model_type(const std::string& model_type) {
    for (int i = 0; i < N_ARCHS; i++)
        if (model_type == ARCHS[i].model_type) return &ARCHS[i];
    if (model_type == LLAMA.model_type) return &LLAMA;
    return nullptr;
}
