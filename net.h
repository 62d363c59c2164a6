// net.h — the Qwen2 forward pass over a batch of T tokens.
#pragma once
#include <memory>
#include <vector>
#include "model.h"
#include "kv_pages.h"

// Keys and values of every past position, so a new token attends to the
// prompt without recomputing it. Layout: [n_layers, n_ctx, n_kv_heads*head_dim].
// Stored as f32, or as f16/bf16 (--kv-type): half the memory, rounded once
// when written and widened when read (kernels.h: attention_head).
struct KVCache {
    int n_ctx = 0;
    int kv_dim = 0;  // n_kv_heads * head_dim
    DType type = DType::F32;
    LineVector<uint8_t> k, v;
    size_t elt() const { return type == DType::F32 ? 4 : 2; }
    // Head `head` of layer `layer` at position `pos`: head_dim values of `type`.
    uint8_t* key(int layer, int pos, int head = 0, int head_dim = 0) {
        return &k[(((size_t)layer * n_ctx + pos) * kv_dim + (size_t)head * head_dim) * elt()];
    }
    uint8_t* value(int layer, int pos, int head = 0, int head_dim = 0) {
        return &v[(((size_t)layer * n_ctx + pos) * kv_dim + (size_t)head * head_dim) * elt()];
    }
};

struct Net {
    const Model* model = nullptr;
    KVCache kv;
    int first_pos = 0;  // positions first_pos..n_past-1 are in the cache; a
    int n_past = 0;     // sequence may start past 0 (./run fwd TOKEN POS)
    // Scratch activations, grown to the largest T seen. Shapes for a batch of T:
    // (LineVector: each starts on a cache line, kernels.h)
    LineVector<float> x;         // [T, hidden]   the residual stream
    LineVector<float> xn;        // [T, hidden]   normed input of a block
    LineVector<float> q;         // [T, n_heads*head_dim]
    LineVector<float> k, v;      // [T, n_kv_heads*head_dim]
    LineVector<float> att;       // [T, n_heads*head_dim]  attention output before o_proj
    LineVector<float> scores;    // [n_heads, T, n_past+T-first_pos]  attention weights, for a trace only
    KernelScratch kscratch;      // the kernels' own buffers (kernels.h), passed to every matmul and attention
    LineVector<float> gate, up;  // [T, intermediate]
    LineVector<float> logits;    // [T or 1, vocab]
    LineVector<uint8_t> gk, gv;  // one paged sequence's keys and values gathered into one run (forward_batch)
    std::shared_ptr<struct CudaNet> cuda;  // weights, cache and scratch on the GPU (net_cuda.cpp), --device cuda
};

// n_ctx: the KV cache length (--ctx); at most max_position_embeddings.
// kv_type: F32, F16 or BF16 (--kv-type).
void net_init(Net& net, const Model& m, int n_ctx, DType kv_type = DType::F32);
// Forget the cache (a new conversation).
void net_reset(Net& net);
// Run tokens[0..T) at positions pos..pos+T-1. pos may be at most n_past
// (a smaller pos rewinds the cache); on an empty cache any pos starts a new
// sequence there. Returns the logits: [T, vocab] when
// all_logits, else [1, vocab] for the last token only. Throws LanternError
// when pos+T exceeds the cache.
const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits);

// ---------------------------------------------------------------------------
// Several sequences in one call (the server's continuous batching).
//
// Sequence i brings T_i tokens at positions pos_i..pos_i+T_i-1 and keeps its
// keys and values in its own pages of a shared pool. The rows of all
// sequences go through every weight matrix together — one read of the
// weights for the whole batch — and only attention runs per sequence, each
// over its own cache. A matrix product sums each row in one order whatever
// the batch (kernels_fast.cpp), so a sequence's logits are the same bits
// alone or among others.
struct BatchSeq {
    const int* tokens = nullptr;
    int T = 0, pos = 0;     // pos: positions already in its cache (a new sequence: 0)
    KVSeq* kv = nullptr;    // its block table; grown here to pos+T positions
    bool logits = false;    // wanted: the logits of its last row
};
// Returns the logits of the sequences that want them, in order: [n_wanted,
// vocab]. Throws LanternError when the pool has no room (nothing is run).
const float* forward_batch(Net& net, KVPages& pages, BatchSeq* seqs, int n_seqs);
