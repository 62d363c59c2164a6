// net.cpp — the Qwen2 forward pass (and Qwen3 dense: two guarded lines).
//
// One call runs T tokens at positions pos..pos+T-1 through every layer:
//
//   x = embed[tokens]                                   [T, hidden]
//   for each layer (decoder_layer):
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
// sequences' tokens through the same decoder_layer, and only the KV cache
// and attention are per sequence (a table of the rows, built once per
// call, says which row is whose; each sequence's cache is a KVView).
// forward() is the one-sequence case, with the Net's own contiguous cache.
#include "net.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include "logging.h"
#include "device.h"
#include "generate.h"  // ctx_hint

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

// Byte offset of position pos of layer `layer` in the view's k (or v).
static size_t kv_offset(const KVView& kv, int layer, int pos) {
    if (pos < kv.first || pos >= kv.n_pos)
        fail("KV cache: position %d is outside the sequence's positions [%d, %d)", pos, kv.first, kv.n_pos);
    return kv.blocks[pos / kv.block] * kv.block_bytes + ((size_t)layer * kv.block + pos % kv.block) * kv.row_bytes;
}

void kv_store(const KVView& kv, int layer, int pos, const float* k, const float* v) {
    size_t at = kv_offset(kv, layer, pos);
    int n = (int)(kv.row_bytes / (kv.type == DType::F32 ? 4 : 2));
    store_kv_row(kv.k + at, k, n, kv.type);
    store_kv_row(kv.v + at, v, n, kv.type);
}

void kv_read(Net& net, const KVView& kv, int layer, int end, const uint8_t** K, const uint8_t** V) {
    if (kv.first / kv.block == (end - 1) / kv.block) {  // one block holds them all: read them in place
        size_t at = kv_offset(kv, layer, kv.first);
        *K = kv.k + at;
        *V = kv.v + at;
        return;
    }
    grow_bytes(net.gk, (end - kv.first) * kv.row_bytes);
    grow_bytes(net.gv, (end - kv.first) * kv.row_bytes);
    for (int p = kv.first; p < end;) {  // the run of positions in p's block
        int n = std::min(kv.block - p % kv.block, end - p);
        size_t at = kv_offset(kv, layer, p), to = (p - kv.first) * kv.row_bytes;
        std::memcpy(&net.gk[to], kv.k + at, n * kv.row_bytes);
        std::memcpy(&net.gv[to], kv.v + at, n * kv.row_bytes);
        p += n;
    }
    *K = net.gk.data();
    *V = net.gv.data();
}

// The Net's own cache as a view: one block of n_ctx positions.
static KVView net_kv_view(Net& net) {
    static const int one_block[1] = {0};
    KVView v;
    v.k = net.kv.k.data();
    v.v = net.kv.v.data();
    v.type = net.kv.type;
    v.first = net.first_pos;
    v.n_pos = net.kv.n_ctx;
    v.block = net.kv.n_ctx;
    v.blocks = one_block;
    v.row_bytes = (size_t)net.kv.kv_dim * net.kv.elt();
    v.block_bytes = 0;
    return v;
}

// Grouped-query attention for the T rows of one sequence. Query head h
// reads KV head h / (n_heads / n_kv_heads): several query heads share one
// key/value head, which is what makes the 0.5B model's cache 7x smaller
// than its query width. Token t sits at position pos+t and may look at
// positions first..pos+t (causal; first is 0 unless the sequence started
// later).
static void attention(Net& net, int layer, const SeqRows& s) {
    const Config& c = net.model->cfg;
    int hd = c.head_dim, q_dim = c.n_heads * hd;
    int kv_len = s.pos + s.T - s.kv.first;  // keys visible to the last token
    // [n_heads, T, kv_len]: the attention weights, kept only for a trace
    // (-vv, --report); otherwise nothing of size T x kv_len is stored.
    float* scores = g_watch_tensors ? net.scores.data() : nullptr;
    float *out = &net.att[(size_t)s.row0 * q_dim], *q = &net.q[(size_t)s.row0 * q_dim];
    int end = s.pos + s.T, n_first = s.pos + 1 - s.kv.first;
    // Every head and token at once (kernels.h: attention_heads): one query
    // per head in decode, tiles of queries against blocks of keys in prefill.
    // The plain kernels read one run: kv_read gathers a sequence that spans
    // blocks. The fast ones read each block where it lies (a table of where
    // each position's row is): in a serving step of 8 sequences, gathering
    // copied every cached row of every layer again at every step.
    if (g_kernels.simd && s.kv.first / s.kv.block != (end - 1) / s.kv.block) {
        net.krows.resize(end - s.kv.first);
        net.vrows.resize(end - s.kv.first);
        for (int p = s.kv.first; p < end; p++) {
            size_t at = kv_offset(s.kv, layer, p);
            net.krows[p - s.kv.first] = s.kv.k + at;
            net.vrows[p - s.kv.first] = s.kv.v + at;
        }
        KVRows K, V;
        K.rows = net.krows.data(), V.rows = net.vrows.data(), K.stride = V.stride = s.kv.row_bytes;
        attention_heads_rows(out, scores, q, K, V, s.kv.type, c.n_heads, c.n_kv_heads, s.T, n_first, hd, &net.kscratch);
    } else {
        const uint8_t *K, *V;
        kv_read(net, s.kv, layer, end, &K, &V);
        attention_heads(out, scores, q, K, V, s.kv.row_bytes, s.kv.type, c.n_heads, c.n_kv_heads, s.T, n_first, hd,
                        &net.kscratch);
    }
    WATCH_TENSOR("attn.scores", layer, s.pos, scores, c.n_heads * s.T, kv_len);
}

// --ablate: zeros, written over what the head or the MLP computed. A head's
// slice of att is what the output projection turns into that head's share of
// the residual update (att Wo is a sum over heads), so zeroing it removes
// exactly that share and leaves the other heads' untouched.
void ablate_heads(const Net& net, int layer, float* att, int T) {
    const Config& c = net.model->cfg;
    for (const std::pair<int, int>& lh : net.ablate.heads)
        if (lh.first == layer)
            for (int t = 0; t < T; t++) std::memset(att + ((size_t)t * c.n_heads + lh.second) * c.head_dim, 0, c.head_dim * sizeof(float));
}

void ablate_mlp(const Net& net, int layer, float* mlp_out, int T) {
    for (int l : net.ablate.mlps)
        if (l == layer) std::memset(mlp_out, 0, (size_t)T * net.model->cfg.hidden * sizeof(float));
}

void decoder_layer(Net& net, int l, const Rows& rows) {
    const Config& c = net.model->cfg;
    const LayerWeights& L = net.model->layers[l];
    int T = rows.T, H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    float *x = net.x.data(), *xn = net.xn.data(), *q = net.q.data(), *k = net.k.data(), *v = net.v.data();
    int pos = rows.pos[0];  // the probes name a step by its first row's position
    PROBE_LAYER_BEGIN(l, x, T, H);

    // --- attention block ---
    for (int t = 0; t < T; t++) rmsnorm(xn + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
    WATCH_TENSOR("attn_norm", l, pos, xn, T, H);
    // q, k and v read the same xn: one pass over their rows (kernels.h:
    // matmul_many), the same bits as three matmuls, one meeting of the threads.
    MatmulOut qkv[3] = {{q, &L.wq, L.bq.data()},   // [T, q_dim]
                        {k, &L.wk, L.bk.data()},   // [T, kv_dim]
                        {v, &L.wv, L.bv.data()}};  // [T, kv_dim]
    matmul_many(qkv, 3, xn, T, &net.kscratch);
    WATCH_TENSOR("attn.q", l, pos, q, T, q_dim);
    WATCH_TENSOR("attn.k", l, pos, k, T, kv_dim);
    WATCH_TENSOR("attn.v", l, pos, v, T, kv_dim);
    // Qwen3 (QK-norm): RMSNorm over each head of q and of k before RoPE, so
    // a head's scores q.k/sqrt(hd) are bounded by the norm weights instead of
    // growing with the size of the projections.
    if (c.arch->qk_norm) {
        for (size_t i = 0; i < (size_t)T * c.n_heads; i++) rmsnorm(q + i * hd, q + i * hd, L.q_norm.data(), hd, c.eps);
        for (size_t i = 0; i < (size_t)T * c.n_kv_heads; i++) rmsnorm(k + i * hd, k + i * hd, L.k_norm.data(), hd, c.eps);
        WATCH_TENSOR("attn.q_norm", l, pos, q, T, q_dim);
        WATCH_TENSOR("attn.k_norm", l, pos, k, T, kv_dim);
    }
    // Each row rotated by its own position, its keys and values into its sequence's cache.
    for (int t = 0; t < T; t++) {
        apply_rope(q + (size_t)t * q_dim, c.n_heads, hd, rows.pos[t], c.rope_theta);
        apply_rope(k + (size_t)t * kv_dim, c.n_kv_heads, hd, rows.pos[t], c.rope_theta);
        kv_store(rows.seqs[rows.seq[t]].kv, l, rows.pos[t], k + (size_t)t * kv_dim, v + (size_t)t * kv_dim);
    }
    WATCH_TENSOR("attn.q_rope", l, pos, q, T, q_dim);
    WATCH_TENSOR("attn.k_rope", l, pos, k, T, kv_dim);
    for (const SeqRows& s : rows.seqs) attention(net, l, s);  // each sequence over its own keys
    ablate_heads(net, l, net.att.data(), T);
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
    ablate_mlp(net, l, xn, T);
    WATCH_TENSOR("mlp.down", l, pos, xn, T, H);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += xn[i];
    WATCH_TENSOR("resid", l, pos, x, T, H);
    PROBE_LAYER_END(l, x, T, H);
}

// The Net's scratch activations grown to T rows.
static void grow_rows(Net& net, size_t T) {
    const Config& c = net.model->cfg;
    size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
    grow(net.x, T * c.hidden);
    grow(net.xn, T * c.hidden);
    grow(net.q, T * q_dim);
    grow(net.k, T * kv_dim);
    grow(net.v, T * kv_dim);
    grow(net.att, T * q_dim);
    grow(net.gate, T * c.intermediate);
    grow(net.up, T * c.intermediate);
}

// A server's steps hold at most --batch-tokens rows and --parallel rows of
// logits, so it makes the scratch that large before the first request. Grown
// step by step instead, a burst of prompts longer than any before pays for
// new pages (zeroed, and the old rows copied) inside a step its clients wait
// for (book/A-measurements.md, "The Zen 5 machine, a fourth time").
void net_reserve(Net& net, int rows, int logit_rows) {
    grow_rows(net, (size_t)rows);
    grow(net.logits, (size_t)logit_rows * net.model->cfg.vocab);
}

// The row table of a step, and the Net's scratch grown to its T rows.
static Rows make_rows(Net& net, const std::vector<SeqRows>& seqs) {
    const Config& c = net.model->cfg;
    Rows rows;
    rows.seqs = seqs;
    size_t scores_size = 0;
    for (size_t i = 0; i < seqs.size(); i++) {
        rows.seqs[i].row0 = rows.T;
        for (int t = 0; t < seqs[i].T; t++) {
            rows.pos.push_back(seqs[i].pos + t);
            rows.seq.push_back((int)i);
        }
        rows.T += seqs[i].T;
        scores_size = std::max(scores_size, (size_t)c.n_heads * seqs[i].T * (seqs[i].pos + seqs[i].T - seqs[i].kv.first));
    }
    grow_rows(net, rows.T);
    if (g_watch_tensors) grow(net.scores, scores_size);
    return rows;
}

// x = embed[tokens]: row `token` of the embedding matrix, one per row.
static void embed(Net& net, const int* tokens, int T, int pos) {
    const Model& m = *net.model;
    for (int t = 0; t < T; t++) mat_row_to_f32(m.embed, tokens[t], &net.x[(size_t)t * m.cfg.hidden]);
    WATCH_TENSOR("embed", -1, pos, net.x.data(), T, m.cfg.hidden);
}

// The final norm and the LM head, only for the rows whose logits are
// wanted (during a prefill only the last token's prediction is sampled).
static const float* lm_head(Net& net, const Rows& rows, const std::vector<int>& out_rows) {
    const Model& m = *net.model;
    int H = m.cfg.hidden, n_out = (int)out_rows.size(), first = rows.pos[out_rows[0]];
    for (int i = 0; i < n_out; i++)
        rmsnorm(&net.xn[(size_t)i * H], &net.x[(size_t)out_rows[i] * H], m.final_norm.data(), H, m.cfg.eps);
    WATCH_TENSOR("final_norm", -1, first, net.xn.data(), n_out, H);
    grow(net.logits, (size_t)n_out * m.cfg.vocab);
    matmul(net.logits.data(), net.xn.data(), m.lm_head, nullptr, n_out, &net.kscratch);  // [n_out, vocab]
    WATCH_TENSOR("logits", -1, first, net.logits.data(), n_out, m.cfg.vocab);
    return net.logits.data();
}

const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits) {
    const Config& c = net.model->cfg;
    if (T <= 0) fail("forward: no tokens");
    if (net.n_past == net.first_pos) net.first_pos = net.n_past = pos;  // empty cache: the sequence starts here
    if (pos < net.first_pos || pos > net.n_past)
        fail("forward: position %d is outside the cached positions [%d, %d]", pos, net.first_pos, net.n_past);
    if (pos + T > net.kv.n_ctx)
        fail("context full: %d + %d tokens exceed the KV cache of %d positions (%s)", pos, T, net.kv.n_ctx, ctx_hint(net).c_str());
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= c.vocab) fail("token id %d is outside the vocabulary [0, %d)", tokens[t], c.vocab);
    if (g_device == Device::CUDA && (!net.ablate.heads.empty() || !net.ablate.mlps.empty()))
        fail("--ablate: ablation runs on the CPU only (--device cpu)");
    if (g_device == Device::CUDA && c.arch->qk_norm) fail("--device cuda: Qwen3's q_norm/k_norm are not on the GPU yet; use --device cpu");
    if (g_device == Device::CUDA) {  // same pass on the GPU; the probes time the call as a whole
        PROBE_FORWARD_BEGIN(tokens, T, pos);
        const float* logits = forward_cuda(net, tokens, T, pos, all_logits);
        PROBE_FORWARD_END();
        return logits;
    }
    SeqRows one;  // one sequence, in the Net's own cache
    one.T = T;
    one.pos = pos;
    one.kv = net_kv_view(net);
    Rows rows = make_rows(net, {one});
    std::vector<int> out_rows;
    for (int t = all_logits ? 0 : T - 1; t < T; t++) out_rows.push_back(t);

    PROBE_FORWARD_BEGIN(tokens, T, pos);  // -v timing, --report, --trace-json
    embed(net, tokens, T, pos);
    for (int l = 0; l < c.n_layers; l++) decoder_layer(net, l, rows);
    const float* logits = lm_head(net, rows, out_rows);
    PROBE_FORWARD_END();
    net.n_past = pos + T;
    return logits;
}

const float* forward_batch(Net& net, const BatchSeq* seqs, int n_seqs) {
    const Config& c = net.model->cfg;
    if (g_device == Device::CUDA) fail("forward_batch: several sequences at once run on the CPU only");
    if (n_seqs <= 0) fail("forward_batch: no sequences");
    std::vector<int> tokens, out_rows;  // all rows in order; the rows whose logits are wanted
    std::vector<SeqRows> runs;
    for (int i = 0; i < n_seqs; i++) {
        const BatchSeq& s = seqs[i];
        if (s.T <= 0 || !s.kv.blocks) fail("forward_batch: sequence %d has no tokens or no cache", i);
        if (s.pos < s.kv.first || s.pos + s.T > s.kv.n_pos)
            fail("forward_batch: sequence %d's positions %d..%d do not fit its cache", i, s.pos, s.pos + s.T - 1);
        if (s.pos + s.T > c.max_pos) fail("context full: %d + %d tokens exceed max_position_embeddings (%d)", s.pos, s.T, c.max_pos);
        for (int t = 0; t < s.T; t++) {
            if (s.tokens[t] < 0 || s.tokens[t] >= c.vocab)
                fail("token id %d is outside the vocabulary [0, %d)", s.tokens[t], c.vocab);
            tokens.push_back(s.tokens[t]);
        }
        if (s.logits) out_rows.push_back((int)tokens.size() - 1);
        SeqRows r;
        r.T = s.T;
        r.pos = s.pos;
        r.kv = s.kv;
        runs.push_back(r);
    }
    if (out_rows.empty()) out_rows.push_back((int)tokens.size() - 1);  // the logits buffer always holds a row
    Rows rows = make_rows(net, runs);

    PROBE_FORWARD_BEGIN(tokens.data(), rows.T, seqs[0].pos);  // -v timing, --report, --trace-json
    embed(net, tokens.data(), rows.T, seqs[0].pos);
    for (int l = 0; l < c.n_layers; l++) decoder_layer(net, l, rows);
    const float* logits = lm_head(net, rows, out_rows);
    PROBE_FORWARD_END();
    return logits;
}
