// net.cpp — the Qwen2 forward pass (and Qwen3 dense: two guarded lines).
//
// One call runs T tokens at positions pos..pos+T-1 through every layer:
//
//   x = embed[tokens]                                   [T, hidden]
//   for each layer:
//     h = rmsnorm(x)                                    [T, hidden]
//     q, k, v = h Wq + bq, h Wk + bk, h Wv + bv         [T, q_dim] [T, kv_dim] x2
//     (Qwen3: biases are zero; each head of q and k is RMS-normed)
//     rotate q and k by their positions (RoPE)
//     append k, v to the KV cache
//     a = causal attention of q over the cached keys    [T, q_dim]
//     x = x + a Wo
//     h = rmsnorm(x)
//     x = x + (silu(h Wgate) * (h Wup)) Wdown           [T, intermediate] -> [T, hidden]
//   logits = rmsnorm(x) embed^T                         [T, vocab]
//
// T = 1 is one decode step; the whole prompt can go through as one batch
// (prefill), which turns each matrix-vector product into a matrix-matrix
// product — the same weights read once for T tokens.
//
// The rows need not belong to one sequence: forward_batch runs several
// sequences' tokens through the same layers, and only the KV cache and
// attention are per sequence. forward() is the one-sequence case, with the
// Net's own contiguous cache.
#include "net.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include "logging.h"
#include "kernels_cuda.h"

static void grow(LineVector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
}
static void grow_bytes(LineVector<uint8_t>& v, size_t n) {
    if (v.size() < n) v.resize(n);
}

void net_init(Net& net, const Model& m, int n_ctx, DType kv_type) {
    const Config& c = m.cfg;
    if (n_ctx <= 0) fail("--ctx %d: the context must hold at least one token", n_ctx);
    if (n_ctx > c.max_pos) fail("--ctx %d exceeds the model's max_position_embeddings (%d)", n_ctx, c.max_pos);
    net.model = &m;
    net.kv.n_ctx = n_ctx;
    net.kv.kv_dim = c.n_kv_heads * c.head_dim;
    if (kv_type == DType::Q8_0) fail("--kv-type: q8_0 is not a KV cache type (f32, f16 or bf16)");
    net.kv.type = kv_type;
    size_t n = (size_t)c.n_layers * n_ctx * net.kv.kv_dim;
    net.kv.k.resize(n * net.kv.elt());
    net.kv.v.resize(n * net.kv.elt());
    net.n_past = 0;
    net.cuda.reset();  // a GPU copy of another model or cache size is stale
    LOGD(CAT_LOAD, "KV cache: %d positions x %d layers x %d values x 2 (%s) = %.1f MB", n_ctx, c.n_layers,
         net.kv.kv_dim, dtype_name(kv_type), 2.0 * n * net.kv.elt() / 1e6);
}

void net_reset(Net& net) { net.n_past = net.first_pos = 0; }

// One row of keys or values into the cache, rounded to its type.
static void store_kv_row(uint8_t* dst, const float* src, int n, DType type) {
    if (type == DType::F32) std::memcpy(dst, src, n * sizeof(float));
    else if (type == DType::F16)
        for (int i = 0; i < n; i++) ((uint16_t*)dst)[i] = f32_to_f16(src[i]);
    else
        for (int i = 0; i < n; i++) ((uint16_t*)dst)[i] = f32_to_bf16(src[i]);
}

// Grouped-query attention for T new tokens. Query head h reads KV head
// h / (n_heads / n_kv_heads): several query heads share one key/value head,
// which is what makes the 0.5B model's cache 7x smaller than its query width.
// Token t sits at position pos+t and may look at positions first..pos+t
// (causal; first is 0 unless the sequence started later).
//
// The T rows of sequence `seq` start at row `row0` of the batch. Its keys
// start at position `first` at `K` (values at `V`), one position every
// `stride` bytes: the Net's own cache, or — for a sequence in pages — its
// rows gathered from the blocks into one run (copying costs a little
// bandwidth; the attention kernels stay the one-sequence ones).
static void attention(Net& net, int layer, const BatchSeq& seq, int row0, KVPages* pages) {
    const Config& c = net.model->cfg;
    int hd = c.head_dim, q_dim = c.n_heads * hd;
    int T = seq.T, pos = seq.pos;
    int first = seq.kv ? 0 : net.first_pos;
    int kv_len = pos + T - first;  // keys visible to the last token
    // [n_heads, T, kv_len]: the attention weights, kept only for a trace
    // (-vv, --report); otherwise nothing of size T x kv_len is stored.
    float* scores = g_watch_tensors ? net.scores.data() : nullptr;

    DType kv_type = seq.kv ? pages->type : net.kv.type;
    size_t elt = seq.kv ? pages->elt() : net.kv.elt();
    size_t stride = (size_t)c.n_kv_heads * hd * elt;  // cache bytes from one position to the next
    const uint8_t *K, *V;
    if (!seq.kv) {
        K = net.kv.key(layer, first);
        V = net.kv.value(layer, first);
    } else {
        grow_bytes(net.gk, kv_len * stride);
        grow_bytes(net.gv, kv_len * stride);
        for (int p = 0; p < kv_len; p += pages->block) {  // one block's run of positions at a time
            size_t n = std::min(pages->block, kv_len - p) * stride;
            std::memcpy(&net.gk[p * stride], kv_key(*pages, *seq.kv, layer, p), n);
            std::memcpy(&net.gv[p * stride], kv_value(*pages, *seq.kv, layer, p), n);
        }
        K = net.gk.data();
        V = net.gv.data();
    }

    // Every head and token at once (kernels.h: attention_heads): one query
    // per head in decode, tiles of queries against blocks of keys in prefill.
    attention_heads(&net.att[(size_t)row0 * q_dim], scores, &net.q[(size_t)row0 * q_dim], K, V, stride, kv_type,
                    c.n_heads, c.n_kv_heads, T, pos + 1 - first, hd, &net.kscratch);
    WATCH_TENSOR("attn.scores", layer, pos, scores, c.n_heads * T, kv_len);
}

static const float* forward_rows(Net& net, KVPages* pages, const BatchSeq* seqs, int n_seqs, const int* tokens, int T,
                                 const std::vector<int>& out_rows);

const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits) {
    const Model& m = *net.model;
    const Config& c = m.cfg;
    if (T <= 0) fail("forward: no tokens");
    if (net.n_past == net.first_pos) net.first_pos = net.n_past = pos;  // empty cache: the sequence starts here
    if (pos < net.first_pos || pos > net.n_past)
        fail("forward: position %d is outside the cached positions [%d, %d]", pos, net.first_pos, net.n_past);
    if (pos + T > net.kv.n_ctx)
        fail("context full: %d + %d tokens exceed the KV cache of %d positions (raise --ctx)", pos, T, net.kv.n_ctx);
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= c.vocab) fail("token id %d is outside the vocabulary [0, %d)", tokens[t], c.vocab);
    if (g_device == Device::CUDA && c.qwen3) fail("--device cuda: Qwen3's q_norm/k_norm are not on the GPU yet; use --device cpu");
    if (g_device == Device::CUDA) {  // same pass on the GPU; the probes time the call as a whole
        PROBE_FORWARD_BEGIN(tokens, T, pos);
        const float* logits = forward_cuda(net, tokens, T, pos, all_logits);
        PROBE_FORWARD_END();
        return logits;
    }
    BatchSeq one;  // one sequence in the Net's own cache
    one.tokens = tokens;
    one.T = T;
    one.pos = pos;
    std::vector<int> out_rows;  // during prefill only the last token's prediction is ever sampled
    for (int t = all_logits ? 0 : T - 1; t < T; t++) out_rows.push_back(t);
    const float* logits = forward_rows(net, nullptr, &one, 1, tokens, T, out_rows);
    net.n_past = pos + T;
    return logits;
}

const float* forward_batch(Net& net, KVPages& pages, BatchSeq* seqs, int n_seqs) {
    const Config& c = net.model->cfg;
    if (g_device == Device::CUDA) fail("forward_batch: several sequences at once run on the CPU only");
    if (n_seqs <= 0) fail("forward_batch: no sequences");
    std::vector<int> tokens, out_rows;  // all rows in order; the rows whose logits are wanted
    int blocks_needed = 0;
    for (int i = 0; i < n_seqs; i++) {
        const BatchSeq& s = seqs[i];
        if (s.T <= 0 || !s.kv) fail("forward_batch: sequence %d has no tokens or no block table", i);
        if (s.pos != s.kv->n_pos) fail("forward_batch: sequence %d continues at %d but holds %d positions", i, s.pos, s.kv->n_pos);
        if (s.pos + s.T > c.max_pos) fail("context full: %d + %d tokens exceed max_position_embeddings (%d)", s.pos, s.T, c.max_pos);
        for (int t = 0; t < s.T; t++) {
            if (s.tokens[t] < 0 || s.tokens[t] >= c.vocab)
                fail("token id %d is outside the vocabulary [0, %d)", s.tokens[t], c.vocab);
            tokens.push_back(s.tokens[t]);
        }
        if (s.logits) out_rows.push_back((int)tokens.size() - 1);
        blocks_needed += kv_blocks_for(pages, s.pos + s.T) - (int)s.kv->blocks.size();
    }
    if (blocks_needed > kv_blocks_free(pages))
        fail("KV pages: the batch needs %d more blocks, %d are free", blocks_needed, kv_blocks_free(pages));
    for (int i = 0; i < n_seqs; i++) kv_seq_grow(pages, *seqs[i].kv, seqs[i].pos + seqs[i].T);
    if (out_rows.empty()) out_rows.push_back((int)tokens.size() - 1);  // the logits buffer always holds a row
    return forward_rows(net, &pages, seqs, n_seqs, tokens.data(), (int)tokens.size(), out_rows);
}

// The layers, for T rows from n_seqs sequences (the checks are done).
static const float* forward_rows(Net& net, KVPages* pages, const BatchSeq* seqs, int n_seqs, const int* tokens, int T,
                                 const std::vector<int>& out_rows) {
    const Model& m = *net.model;
    const Config& c = m.cfg;
    int H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    int pos = seqs[0].pos;  // for the trace: where the first sequence's rows start
    // Row t of the batch is token row_pos[t] of sequence row_seq[t].
    std::vector<int> row_seq, row_pos;
    size_t scores_size = 0;
    for (int i = 0; i < n_seqs; i++) {
        for (int t = 0; t < seqs[i].T; t++) {
            row_seq.push_back(i);
            row_pos.push_back(seqs[i].pos + t);
        }
        int first = seqs[i].kv ? 0 : net.first_pos;
        scores_size = std::max(scores_size, (size_t)c.n_heads * seqs[i].T * (seqs[i].pos + seqs[i].T - first));
    }

    grow(net.x, (size_t)T * H);
    grow(net.xn, (size_t)T * H);
    grow(net.q, (size_t)T * q_dim);
    grow(net.k, (size_t)T * kv_dim);
    grow(net.v, (size_t)T * kv_dim);
    grow(net.att, (size_t)T * q_dim);
    if (g_watch_tensors) grow(net.scores, scores_size);
    grow(net.gate, (size_t)T * I);
    grow(net.up, (size_t)T * I);
    float *x = net.x.data(), *xn = net.xn.data();

    PROBE_FORWARD_BEGIN(tokens, T, pos);  // -v timing, --report, --trace-json
    // Embedding: row `token` of the embedding matrix.
    for (int t = 0; t < T; t++) mat_row_to_f32(m.embed, tokens[t], x + (size_t)t * H);
    WATCH_TENSOR("embed", -1, pos, x, T, H);

    for (int l = 0; l < c.n_layers; l++) {
        const LayerWeights& L = m.layers[l];
        PROBE_LAYER_BEGIN(l, x, T, H);

        // --- attention block ---
        for (int t = 0; t < T; t++) rmsnorm(xn + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
        WATCH_TENSOR("attn_norm", l, pos, xn, T, H);
        // q, k and v read the same xn: one pass over their rows (kernels.h:
        // matmul_many), the same bits as three matmuls, one meeting of the threads.
        MatmulOut qkv[3] = {{net.q.data(), &L.wq, L.bq.data()},   // [T, q_dim]
                            {net.k.data(), &L.wk, L.bk.data()},   // [T, kv_dim]
                            {net.v.data(), &L.wv, L.bv.data()}};  // [T, kv_dim]
        matmul_many(qkv, 3, xn, T, &net.kscratch);
        WATCH_TENSOR("attn.q", l, pos, net.q.data(), T, q_dim);
        WATCH_TENSOR("attn.k", l, pos, net.k.data(), T, kv_dim);
        WATCH_TENSOR("attn.v", l, pos, net.v.data(), T, kv_dim);
        // Qwen3 (QK-norm): RMSNorm over each head of q and of k before RoPE, so
        // a head's scores q.k/sqrt(hd) are bounded by the norm weights instead of
        // growing with the size of the projections.
        if (c.qwen3) {
            for (size_t i = 0; i < (size_t)T * c.n_heads; i++) rmsnorm(&net.q[i * hd], &net.q[i * hd], L.q_norm.data(), hd, c.eps);
            for (size_t i = 0; i < (size_t)T * c.n_kv_heads; i++) rmsnorm(&net.k[i * hd], &net.k[i * hd], L.k_norm.data(), hd, c.eps);
            WATCH_TENSOR("attn.q_norm", l, pos, net.q.data(), T, q_dim);
            WATCH_TENSOR("attn.k_norm", l, pos, net.k.data(), T, kv_dim);
        }
        for (int t = 0; t < T; t++) {
            const BatchSeq& s = seqs[row_seq[t]];
            int p = row_pos[t];
            apply_rope(&net.q[(size_t)t * q_dim], c.n_heads, hd, p, c.rope_theta);
            apply_rope(&net.k[(size_t)t * kv_dim], c.n_kv_heads, hd, p, c.rope_theta);
            if (s.kv) {
                store_kv_row(kv_key(*pages, *s.kv, l, p), &net.k[(size_t)t * kv_dim], kv_dim, pages->type);
                store_kv_row(kv_value(*pages, *s.kv, l, p), &net.v[(size_t)t * kv_dim], kv_dim, pages->type);
            } else {
                store_kv_row(net.kv.key(l, p), &net.k[(size_t)t * kv_dim], kv_dim, net.kv.type);
                store_kv_row(net.kv.value(l, p), &net.v[(size_t)t * kv_dim], kv_dim, net.kv.type);
            }
        }
        WATCH_TENSOR("attn.q_rope", l, pos, net.q.data(), T, q_dim);
        WATCH_TENSOR("attn.k_rope", l, pos, net.k.data(), T, kv_dim);
        for (int i = 0, row0 = 0; i < n_seqs; row0 += seqs[i++].T) attention(net, l, seqs[i], row0, pages);
        WATCH_TENSOR("attn.out", l, pos, net.att.data(), T, q_dim);
        matmul(xn, net.att.data(), L.wo, nullptr, T, &net.kscratch);  // [T, hidden], reuses xn
        WATCH_TENSOR("attn.o_proj", l, pos, xn, T, H);
        for (size_t i = 0; i < (size_t)T * H; i++) x[i] += xn[i];

        // --- MLP block (SwiGLU) ---
        for (int t = 0; t < T; t++) rmsnorm(xn + (size_t)t * H, x + (size_t)t * H, L.ffn_norm.data(), H, c.eps);
        WATCH_TENSOR("ffn_norm", l, pos, xn, T, H);
        MatmulOut gate_up[2] = {{net.gate.data(), &L.w_gate, nullptr},  // [T, I]
                                {net.up.data(), &L.w_up, nullptr}};     // [T, I]
        matmul_many(gate_up, 2, xn, T, &net.kscratch);
        WATCH_TENSOR("mlp.gate", l, pos, net.gate.data(), T, I);
        WATCH_TENSOR("mlp.up", l, pos, net.up.data(), T, I);
        // One exp per value, T x 4864 of them in a prefill: threads over the
        // tokens (each value on its own, so the same bits on any thread count).
        #pragma omp parallel for schedule(static) if (T > 1)
        for (int t = 0; t < T; t++) swiglu(&net.gate[(size_t)t * I], &net.up[(size_t)t * I], I);
        WATCH_TENSOR("mlp.act", l, pos, net.gate.data(), T, I);
        matmul(xn, net.gate.data(), L.w_down, nullptr, T, &net.kscratch);  // [T, hidden]
        WATCH_TENSOR("mlp.down", l, pos, xn, T, H);
        for (size_t i = 0; i < (size_t)T * H; i++) x[i] += xn[i];
        WATCH_TENSOR("resid", l, pos, x, T, H);
        PROBE_LAYER_END(l, x, T, H);
    }

    // Final norm and LM head, only for the rows whose logits are wanted.
    int n_out = (int)out_rows.size(), first = row_pos[out_rows[0]];
    for (int i = 0; i < n_out; i++) rmsnorm(xn + (size_t)i * H, x + (size_t)out_rows[i] * H, m.final_norm.data(), H, c.eps);
    WATCH_TENSOR("final_norm", -1, first, xn, n_out, H);
    grow(net.logits, (size_t)n_out * c.vocab);
    matmul(net.logits.data(), xn, m.lm_head, nullptr, n_out, &net.kscratch);  // [n_out, vocab]
    WATCH_TENSOR("logits", -1, first, net.logits.data(), n_out, c.vocab);
    PROBE_FORWARD_END();
    return net.logits.data();
}
