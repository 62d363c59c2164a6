// chapters/layer/layer.h — what decoder_layer works with: the stub, the
// checker and the solution share these two structs.
#pragma once
#include <vector>
#include "model.h"

// The layer's own KV cache, f32: position p's keys are the kv_dim floats at
// k[p * kv_dim] (kv_dim = n_kv_heads * head_dim: all KV heads side by side),
// its values the same in v. Positions 0..pos-1 hold the earlier tokens.
struct LayerCache {
    std::vector<float> k, v;  // [n_ctx, kv_dim] each
};

// The buffers for T tokens, the ones net.cpp keeps in its Net. The checker
// compares each with the engine's own after the call, so it can say which
// step went wrong: fill them with what the comment says.
struct LayerBuffers {
    std::vector<float> h;          // [T, hidden]       scratch: the normed x, then projections back to hidden
    std::vector<float> q;          // [T, n_heads*hd]   queries, after RoPE
    std::vector<float> k, v;       // [T, n_kv*hd]      this call's keys (after RoPE) and values
    std::vector<float> att;        // [T, n_heads*hd]   attention's output, before o_proj
    std::vector<float> scores;     // [n_ctx]           one head's scores (attention_head's scratch)
    std::vector<float> gate, up;   // [T, intermediate] up = h W_up; gate = silu(h W_gate) * up
};

void decoder_layer(float* x, int T, int pos, const Config& c, const LayerWeights& L, LayerCache& cache,
                   LayerBuffers& b);
