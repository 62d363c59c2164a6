// net.h — the Qwen2 forward pass over a batch of T tokens.
#pragma once
#include <memory>
#include <vector>
#include "model.h"

// Keys and values of every past position, so a new token attends to the
// prompt without recomputing it. Layout: [n_layers, n_ctx, n_kv_heads*head_dim].
struct KVCache {
    int n_ctx = 0;
    int kv_dim = 0;  // n_kv_heads * head_dim
    std::vector<float> k, v;
    float* key(int layer, int pos) { return &k[((size_t)layer * n_ctx + pos) * kv_dim]; }
    float* value(int layer, int pos) { return &v[((size_t)layer * n_ctx + pos) * kv_dim]; }
};

struct Net {
    const Model* model = nullptr;
    KVCache kv;
    int first_pos = 0;  // positions first_pos..n_past-1 are in the cache; a
    int n_past = 0;     // sequence may start past 0 (./run fwd TOKEN POS)
    // Scratch activations, grown to the largest T seen. Shapes for a batch of T:
    std::vector<float> x;       // [T, hidden]   the residual stream
    std::vector<float> xn;      // [T, hidden]   normed input of a block
    std::vector<float> q;       // [T, n_heads*head_dim]
    std::vector<float> k, v;    // [T, n_kv_heads*head_dim]
    std::vector<float> att;     // [T, n_heads*head_dim]  attention output before o_proj
    std::vector<float> scores;  // [n_heads, T, n_past+T-first_pos]  attention weights
    std::vector<float> gate, up;// [T, intermediate]
    std::vector<float> logits;  // [T or 1, vocab]
    std::shared_ptr<struct CudaNet> cuda;  // weights, cache and scratch on the GPU (net_cuda.cpp), --device cuda
};

// n_ctx: the KV cache length (--ctx); at most max_position_embeddings.
void net_init(Net& net, const Model& m, int n_ctx);
// Forget the cache (a new conversation).
void net_reset(Net& net);
// Run tokens[0..T) at positions pos..pos+T-1. pos may be at most n_past
// (a smaller pos rewinds the cache); on an empty cache any pos starts a new
// sequence there. Returns the logits: [T, vocab] when
// all_logits, else [1, vocab] for the last token only. Throws LanternError
// when pos+T exceeds the cache.
const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits);
