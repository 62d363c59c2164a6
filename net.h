// net.h — the Qwen2 forward pass over a batch of T tokens.
#pragma once
#include <memory>
#include <utility>
#include <vector>
#include "model.h"

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

// Parts of the network switched off (--ablate, lens.h): a head's attention
// output zeroed before the output projection, a layer's MLP output zeroed
// before it joins the residual stream. Empty lists: the whole network, and
// the layer does exactly what it does without this struct.
struct Ablation {
    std::vector<std::pair<int, int>> heads;  // (layer, head)
    std::vector<int> mlps;                   // layers
};

struct Net {
    const Model* model = nullptr;
    Ablation ablate;
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
    LineVector<uint8_t> gk, gv;  // a sequence's keys and values gathered from its blocks into one run (kv_read)
    std::vector<const uint8_t*> krows, vrows;  // or where each position's row lies (net.cpp:attention, fast kernels)
    std::shared_ptr<struct CudaNet> cuda;  // weights, cache and scratch on the GPU (net_cuda.cpp), --device cuda
};

// n_ctx: the KV cache length (--ctx); at most max_position_embeddings.
// kv_type: F32, F16 or BF16 (--kv-type).
void net_init(Net& net, const Model& m, int n_ctx, DType kv_type = DType::F32);
// The scratch of a step of `rows` rows and `logit_rows` rows of logits, made
// now (a server, before its first request) instead of when a step first needs it.
void net_reserve(Net& net, int rows, int logit_rows);
// Forget the cache (a new conversation).
void net_reset(Net& net);
// Run tokens[0..T) at positions pos..pos+T-1. pos may be at most n_past
// (a smaller pos rewinds the cache); on an empty cache any pos starts a new
// sequence there. Returns the logits: [T, vocab] when
// all_logits, else [1, vocab] for the last token only. Throws LanternError
// when pos+T exceeds the cache.
const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits);
// The same pass on the GPU: same arguments, same result (the logits, in
// host memory owned by `net`). forward() calls it when g_device (device.h)
// is CUDA, after checking its arguments; the first call uploads the
// weights. It is net_cuda.cpp's (in a CPU-only build it only refuses), and
// declared here, with the Net it runs, so that net.cpp needs nothing of
// net_cuda.cpp but this line.
const float* forward_cuda(Net& net, const int* tokens, int T, int pos, bool all_logits);

// ---------------------------------------------------------------------------
// One sequence's keys and values, wherever they are stored. The layer
// writes and attention reads through this view, so neither knows whether
// the sequence has a cache of its own or pages of a pool shared with
// others. Storage is blocks of `block` positions; the sequence's blocks, in
// order, are blocks[0], blocks[1], ...; position p of layer l starts at byte
//
//   blocks[p / block] * block_bytes + (l * block + p % block) * row_bytes
//
// of k (its values: of v). The Net's own cache is one block of n_ctx
// positions (net.cpp: the view of net.kv); a sequence in the server's pool
// is its block table (kv_pages.h: kv_seq_view).
struct KVView {
    uint8_t *k = nullptr, *v = nullptr;
    DType type = DType::F32;      // as stored: f32, f16 or bf16
    int first = 0;                // positions first..n_pos-1 have room; first
    int n_pos = 0;                // is 0 unless the sequence started later
    int block = 0;                // positions per block
    const int* blocks = nullptr;  // the sequence's blocks, in order
    size_t row_bytes = 0;         // one position of one layer: n_kv_heads*head_dim values of `type`
    size_t block_bytes = 0;       // one block: every layer's `block` positions
};
// Store position pos's keys and values of one layer (n_kv_heads*head_dim
// floats each), rounded to the view's type.
void kv_store(const KVView& kv, int layer, int pos, const float* k, const float* v);
// Layer `layer`'s keys (*K) and values (*V) of positions first..end-1 as one
// run, one position every row_bytes: where they lie when they share a block,
// else gathered block by block into net.gk and net.gv (a little bandwidth;
// the attention kernels stay the one-run ones).
void kv_read(Net& net, const KVView& kv, int layer, int end, const uint8_t** K, const uint8_t** V);

// The rows of one step, built once per forward call: row t of the batch
// (net.x, net.q, ...) is at position pos[t] of sequence seq[t]. One
// sequence's rows are consecutive.
struct SeqRows {
    int row0 = 0, T = 0;  // rows row0..row0+T-1 of the batch
    int pos = 0;          // at positions pos..pos+T-1
    KVView kv;            // its keys and values
};
struct Rows {
    int T = 0;                  // rows in all
    std::vector<int> pos, seq;  // per row: its position, its sequence (an index into seqs)
    std::vector<SeqRows> seqs;
};

// One decoder layer over the T rows of a step: the residual stream net.x
// [T, hidden] goes through attention and the MLP of layer `layer`, in
// place. Every row goes through each weight matrix together, whichever
// sequence it belongs to; only attention runs per sequence, over its own
// keys. The layer exercise (chapters/layer) swaps a student's in for it.
void decoder_layer(Net& net, int layer, const Rows& rows);
// The layer's two ablation points (net.ablate), part of decoder_layer's
// contract so that a layer written elsewhere honours --ablate too:
// ablate_heads on att [T, n_heads*head_dim] just before the output
// projection, ablate_mlp on the MLP's output [T, hidden] just before the
// residual add. With nothing ablated in `layer` they touch nothing.
void ablate_heads(const Net& net, int layer, float* att, int T);
void ablate_mlp(const Net& net, int layer, float* mlp_out, int T);

// ---------------------------------------------------------------------------
// Several sequences in one call (the server's continuous batching).
//
// Sequence i brings T_i tokens at positions pos_i..pos_i+T_i-1 and keeps its
// keys and values where its view says (kv_pages.h: one pool of pages for
// them all). The rows of all sequences go through every weight matrix
// together — one read of the weights for the whole batch — and only
// attention runs per sequence, each over its own cache. A matrix product
// sums each row in one order whatever the batch (kernels_fast.cpp), so a
// sequence's logits are the same bits alone or among others.
struct BatchSeq {
    const int* tokens = nullptr;
    int T = 0, pos = 0;     // pos: positions already in its cache (a new sequence: 0)
    KVView kv;              // its keys and values, with room for pos+T positions (kv_pages.h: kv_batch_reserve)
    bool logits = false;    // wanted: the logits of its last row
};
// Returns the logits of the sequences that want them, in order: [n_wanted,
// vocab].
const float* forward_batch(Net& net, const BatchSeq* seqs, int n_seqs);
