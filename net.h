// net.h — the Qwen2 forward pass over a batch of T tokens.
#pragma once
#include <memory>
#include <utility>
#include <vector>
#include "kv_cache.h"
#include "model.h"

// Parts of the network switched off (--ablate, lens/lens.h): a head's
// attention output zeroed before the output projection, a layer's MLP output
// zeroed before it joins the residual stream. Empty lists: the whole
// network, and the forward pass does exactly what it does without them.
struct Ablation {
    std::vector<std::pair<int, int>> heads;  // (layer, head)
    std::vector<int> mlps;                   // layers
    bool empty() const { return heads.empty() && mlps.empty(); }
};

// One sequence's tokens in a forward call. Sequence i brings T tokens at
// positions pos..pos+T-1 and keeps its keys and values where its view says:
// the Net's own cache (forward), or pages of a pool it shares with others
// (the server's continuous batching: serve/kv_pages.h). The rows of all
// sequences go through every weight matrix together — one read of the
// weights for the whole batch — and only attention runs per sequence, each
// over its own keys. A matrix product sums each row in one order whatever
// the batch (cpu/kernels_fast.cpp), so a sequence's logits are the same
// bits alone or among others.
struct BatchSeq {
    const int* tokens = nullptr;
    int T = 0, pos = 0;       // pos: positions already in its cache (a new sequence: 0)
    KVView kv;                // its keys and values, with room for pos+T positions
    bool logits = false;      // wanted: the logits of its last row
    bool all_logits = false;  // wanted: the logits of every row (./run fwd, the lens)
};

struct Net;
// Where a forward pass runs. The CPU's pass is net.cpp's own, every Net's
// from net_init; a GPU build adds another (cuda/net_cuda.h: device_use),
// chosen once at load, so the forward pass never asks which device it is on.
struct Backend {
    virtual ~Backend() = default;
    // The logits of the rows the sequences want, in order: [n_wanted, vocab].
    virtual const float* forward(Net& net, const BatchSeq* seqs, int n_seqs) = 0;
};

// The rows of the step being run: rows row0..row0+T-1 of the step's buffers
// are one sequence's tokens at positions pos..pos+T-1.
struct SeqRows {
    int row0 = 0, T = 0, pos = 0;
    KVView kv;
};

struct Net {
    const Model* model = nullptr;
    Ablation ablate;
    KVCache kv;         // the cache of forward()'s one sequence
    int first_pos = 0;  // positions first_pos..n_past-1 are in it; a
    int n_past = 0;     // sequence may start past 0 (./run fwd TOKEN POS)
    std::shared_ptr<Backend> backend;  // where forward runs: the CPU unless the load chose another
    // The step being run: its sequences, and each row's position.
    std::vector<SeqRows> seqs;
    std::vector<int> pos;
    // Scratch activations, grown to the largest T seen. Shapes for a batch of T:
    // (LineVector: each starts on a cache line, tensor.h)
    LineVector<float> x;         // [T, hidden]   the residual stream
    LineVector<float> xn;        // [T, hidden]   normed input of a block, then its output
    LineVector<float> q;         // [T, n_heads*head_dim]
    LineVector<float> k, v;      // [T, n_kv_heads*head_dim]
    LineVector<float> att;       // [T, n_heads*head_dim]  attention output before o_proj
    LineVector<float> gate, up;  // [T, intermediate]
    LineVector<float> scores;    // [n_heads, T, keys]  attention weights, for a trace only
    LineVector<float> logits;    // [rows wanted, vocab]
    std::vector<const uint8_t*> krows, vrows;  // where a paged sequence's rows lie (kv_cache.h: kv_rows)
};

// n_ctx: the KV cache length (--ctx); at most max_position_embeddings.
// kv_type: F32, F16 or BF16 (--kv-type).
void net_init(Net& net, const Model& m, int n_ctx, DType kv_type = DType::F32);
// The scratch of a step of `rows` rows and `logit_rows` rows of logits, made
// now (a server, before its first request) instead of when a step first needs it.
void net_reserve(Net& net, int rows, int logit_rows);
// Forget the cache (a new conversation).
void net_reset(Net& net);
// What to say when the context is full: "raise --ctx (the model allows N)"
// when it could be larger, else the model's own limit.
std::string ctx_hint(int n_ctx, int max_pos);
// Run tokens[0..T) at positions pos..pos+T-1 through the Net's own cache.
// pos may be at most n_past (a smaller pos rewinds the cache); on an empty
// cache any pos starts a new sequence there. Returns the logits: [T, vocab]
// when all_logits, else [1, vocab] for the last token only. Throws
// LanternError when pos+T exceeds the cache.
const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits);
// Several sequences in one call (the server's continuous batching; forward
// is the case of one). Returns the logits the sequences want, in order:
// [n_wanted, vocab].
const float* forward_batch(Net& net, const BatchSeq* seqs, int n_seqs);

// One decoder layer over the T rows of a step, token t at position pos[t]:
// the residual stream net.x [T, hidden] goes through attention and the MLP
// of layer `layer`, in place. The layer exercise (chapters/layer) swaps a
// student's in for it.
void decoder_layer(Net& net, int layer, int T, const int* pos);
// The layer's attention (llama.cpp's build_attn): the step's k and v
// [T, n_kv_heads*head_dim] stored at each row's position in its sequence's
// cache, then each query of q [T, n_heads*head_dim] over the keys up to its
// own position, into out [T, n_heads*head_dim] (grouped-query: query head h
// reads KV head h / (n_heads / n_kv_heads)).
void attention(Net& net, int layer, const float* q, const float* k, const float* v, float* out);
// The one hook on the layer's tensors: every intermediate goes through it
// once, by name ("attn.q", "mlp.act", ...; the -vv names). -vv prints it,
// the report and the lens record it, and --ablate zeros what it switches
// off (a head's slice of "attn.out", a layer's "mlp.down"); a layer that
// skips a tap goes unseen there. x is [rows, cols].
void tap(Net& net, const char* name, int layer, float* x, int rows, int cols);
