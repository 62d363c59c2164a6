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
// sequences' tokens through the same decoder_layer, and only attention is
// per sequence (net.cpp:attention, behind one call, as llama.cpp's
// build_attn). forward() is the case of one sequence, in the Net's own cache.
#include "net.h"
#include <algorithm>
#include <cstring>
#include "logging.h"

static void grow(LineVector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
}

// The CPU's pass (forward_cpu below) as a backend.
static const float* forward_cpu(Net& net, const BatchSeq* seqs, int n_seqs);
struct CpuBackend : Backend {
    const float* forward(Net& net, const BatchSeq* seqs, int n_seqs) override { return forward_cpu(net, seqs, n_seqs); }
};

void net_init(Net& net, const Model& m, int n_ctx, DType kv_type) {
    const Config& c = m.cfg;
    if (n_ctx <= 0) fail("--ctx %d: the context must hold at least one token", n_ctx);
    if (n_ctx > c.max_pos) fail("--ctx %d exceeds the model's max_position_embeddings (%d)", n_ctx, c.max_pos);
    kv_type_check(kv_type, c.head_dim);
    net.model = &m;
    net.kv.n_ctx = n_ctx;
    net.kv.kv_dim = c.n_kv_heads * c.head_dim;
    net.kv.type = kv_type;
    size_t n = (size_t)c.n_layers * n_ctx * net.kv.row_bytes();
    net.kv.k.resize(n);
    net.kv.v.resize(n);
    net.n_past = 0;
    net.backend = std::make_shared<CpuBackend>();  // a backend of another model or cache size is stale
    LOGD(CAT_LOAD, "KV cache: %d positions x %d layers x %d values x 2 (%s) = %.1f MB", n_ctx, c.n_layers,
         net.kv.kv_dim, dtype_name(kv_type), 2.0 * n / 1e6);
}

void net_reset(Net& net) { net.n_past = net.first_pos = 0; }

std::string ctx_hint(int n_ctx, int max_pos) {
    if (n_ctx < max_pos) return strprintf("raise --ctx, up to %d", max_pos);
    return strprintf("%d is the model's limit", max_pos);
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
// for (book/A-measurements.md, "The server's scratch made before its first
// request").
void net_reserve(Net& net, int rows, int logit_rows) {
    grow_rows(net, (size_t)rows);
    grow(net.logits, (size_t)logit_rows * net.model->cfg.vocab);
}

// --ablate: zeros, written over what the head or the MLP computed. A head's
// slice of attn.out is what the output projection turns into that head's
// share of the residual update (att Wo is a sum over heads), so zeroing it
// removes exactly that share and leaves the other heads' untouched.
static void ablate(const Net& net, const char* name, int layer, float* x, int rows, int cols) {
    int hd = net.model->cfg.head_dim;
    if (!strcmp(name, "attn.out"))
        for (const std::pair<int, int>& lh : net.ablate.heads)
            if (lh.first == layer)
                for (int t = 0; t < rows; t++) std::memset(x + (size_t)t * cols + lh.second * hd, 0, hd * sizeof(float));
    if (!strcmp(name, "mlp.down"))
        for (int l : net.ablate.mlps)
            if (l == layer) std::memset(x, 0, (size_t)rows * cols * sizeof(float));
}

void tap(Net& net, const char* name, int layer, float* x, int rows, int cols) {
    if (!net.ablate.empty()) ablate(net, name, layer, x, rows, cols);
    WATCH_TENSOR(name, layer, net.pos[0], x, rows, cols);  // the probes name a step by its first row's position
}

void attention(Net& net, int layer, const float* q, const float* k, const float* v, float* out) {
    const Config& c = net.model->cfg;
    int hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
    for (const SeqRows& s : net.seqs) {  // each sequence over its own keys
        for (int t = 0; t < s.T; t++) {
            size_t row = (size_t)s.row0 + t;
            kv_store(s.kv, layer, s.pos + t, k + row * kv_dim, v + row * kv_dim);
        }
        int end = s.pos + s.T, n_keys = end - s.kv.first;  // keys visible to the last token
        KVRows K = kv_rows(s.kv, layer, end, false, net.krows), V = kv_rows(s.kv, layer, end, true, net.vrows);
        // [n_heads, T, n_keys]: the attention weights, kept only for a trace
        // (-vv, --report); otherwise nothing of size T x n_keys is stored.
        float* scores = g_watch_tensors ? net.scores.data() : nullptr;
        // Every head and token at once (kernels.h: attention_heads): token t
        // sees the keys of positions kv.first .. pos+t.
        attention_heads(out + (size_t)s.row0 * q_dim, scores, q + (size_t)s.row0 * q_dim, K, V, s.kv.type, c.n_heads,
                        c.n_kv_heads, s.T, s.pos + 1 - s.kv.first, hd);
        WATCH_TENSOR("attn.scores", layer, s.pos, scores, c.n_heads * s.T, n_keys);
    }
}

void decoder_layer(Net& net, int l, int T, const int* pos) {
    const Config& c = net.model->cfg;
    const LayerWeights& L = net.model->layers[l];
    int H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    float *x = net.x.data(), *h = net.xn.data(), *q = net.q.data(), *k = net.k.data(), *v = net.v.data();
    float *att = net.att.data(), *gate = net.gate.data(), *up = net.up.data();

    // --- attention block ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
    tap(net, "attn_norm", l, h, T, H);
    // q, k and v read the same h: one pass over their rows (kernels.h:
    // matmul_many), the same bits as three matmuls.
    MatmulOut qkv[3] = {{q, &L.wq, L.bq.data()}, {k, &L.wk, L.bk.data()}, {v, &L.wv, L.bv.data()}};
    matmul_many(qkv, 3, h, T);
    tap(net, "attn.q", l, q, T, q_dim);
    tap(net, "attn.k", l, k, T, kv_dim);
    tap(net, "attn.v", l, v, T, kv_dim);
    // Qwen3 (QK-norm): RMSNorm over each head of q and of k before RoPE, so
    // a head's scores q.k/sqrt(hd) are bounded by the norm weights instead of
    // growing with the size of the projections.
    if (c.arch->qk_norm) {
        for (size_t i = 0; i < (size_t)T * c.n_heads; i++) rmsnorm(q + i * hd, q + i * hd, L.q_norm.data(), hd, c.eps);
        for (size_t i = 0; i < (size_t)T * c.n_kv_heads; i++) rmsnorm(k + i * hd, k + i * hd, L.k_norm.data(), hd, c.eps);
        tap(net, "attn.q_norm", l, q, T, q_dim);
        tap(net, "attn.k_norm", l, k, T, kv_dim);
    }
    for (int t = 0; t < T; t++) {  // each token rotated by its own position
        apply_rope(q + (size_t)t * q_dim, c.n_heads, hd, pos[t], c.rope_theta);
        apply_rope(k + (size_t)t * kv_dim, c.n_kv_heads, hd, pos[t], c.rope_theta);
    }
    tap(net, "attn.q_rope", l, q, T, q_dim);
    tap(net, "attn.k_rope", l, k, T, kv_dim);
    attention(net, l, q, k, v, att);
    tap(net, "attn.out", l, att, T, q_dim);
    matmul(h, att, L.wo, nullptr, T);  // [T, hidden], reuses h
    tap(net, "attn.o_proj", l, h, T, H);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];

    // --- MLP block (SwiGLU) ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.ffn_norm.data(), H, c.eps);
    tap(net, "ffn_norm", l, h, T, H);
    MatmulOut gate_up[2] = {{gate, &L.w_gate, nullptr}, {up, &L.w_up, nullptr}};
    matmul_many(gate_up, 2, h, T);
    tap(net, "mlp.gate", l, gate, T, I);
    tap(net, "mlp.up", l, up, T, I);
    swiglu(gate, up, T * I);
    tap(net, "mlp.act", l, gate, T, I);
    matmul(h, gate, L.w_down, nullptr, T);  // [T, hidden]
    tap(net, "mlp.down", l, h, T, H);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
    tap(net, "resid", l, x, T, H);
}

// The step's table: sequence i's rows follow sequence i-1's, each row at
// its position; the scratch grown to the step's rows. Returns all rows'
// tokens in order, and in out_rows the rows whose logits are wanted.
static std::vector<int> make_step(Net& net, const BatchSeq* seqs, int n_seqs, std::vector<int>& out_rows) {
    const Config& c = net.model->cfg;
    std::vector<int> tokens;
    size_t scores_size = 0;
    net.seqs.clear();
    net.pos.clear();
    for (int i = 0; i < n_seqs; i++) {
        const BatchSeq& b = seqs[i];
        SeqRows s;
        s.row0 = (int)tokens.size(), s.T = b.T, s.pos = b.pos, s.kv = b.kv;
        net.seqs.push_back(s);
        for (int t = 0; t < b.T; t++) {
            tokens.push_back(b.tokens[t]);
            net.pos.push_back(b.pos + t);
            if (b.all_logits || (b.logits && t == b.T - 1)) out_rows.push_back(s.row0 + t);
        }
        scores_size = std::max(scores_size, (size_t)c.n_heads * b.T * (b.pos + b.T - b.kv.first));
    }
    if (out_rows.empty()) out_rows.push_back((int)tokens.size() - 1);  // the logits buffer always holds a row
    grow_rows(net, tokens.size());
    if (g_watch_tensors) grow(net.scores, scores_size);
    return tokens;
}

// x = embed[tokens]: row `token` of the embedding matrix, one per row.
static void embed(Net& net, const std::vector<int>& tokens) {
    const Model& m = *net.model;
    for (size_t t = 0; t < tokens.size(); t++) mat_row_to_f32(m.embed, tokens[t], &net.x[t * m.cfg.hidden]);
    WATCH_TENSOR("embed", -1, net.pos[0], net.x.data(), (int)tokens.size(), m.cfg.hidden);
}

// The final norm and the LM head, only for the rows whose logits are
// wanted (during a prefill only the last token's prediction is sampled).
static const float* lm_head(Net& net, const std::vector<int>& out_rows) {
    const Model& m = *net.model;
    int H = m.cfg.hidden, n_out = (int)out_rows.size(), first = net.pos[out_rows[0]];
    for (int i = 0; i < n_out; i++)
        rmsnorm(&net.xn[(size_t)i * H], &net.x[(size_t)out_rows[i] * H], m.final_norm.data(), H, m.cfg.eps);
    WATCH_TENSOR("final_norm", -1, first, net.xn.data(), n_out, H);
    grow(net.logits, (size_t)n_out * m.cfg.vocab);
    matmul(net.logits.data(), net.xn.data(), m.lm_head, nullptr, n_out);  // [n_out, vocab]
    WATCH_TENSOR("logits", -1, first, net.logits.data(), n_out, m.cfg.vocab);
    return net.logits.data();
}

// The whole pass on the CPU: the embedding, every layer, the LM head.
static const float* forward_cpu(Net& net, const BatchSeq* seqs, int n_seqs) {
    const Config& c = net.model->cfg;
    std::vector<int> out_rows, tokens = make_step(net, seqs, n_seqs, out_rows);
    int T = (int)tokens.size();
    embed(net, tokens);
    for (int l = 0; l < c.n_layers; l++) {
        PROBE_LAYER_BEGIN(l, net.x.data(), T, c.hidden);  // -v: each layer's time and residual rms
        decoder_layer(net, l, T, net.pos.data());
        PROBE_LAYER_END(l, net.x.data(), T, c.hidden);
    }
    return lm_head(net, out_rows);
}

const float* forward_batch(Net& net, const BatchSeq* seqs, int n_seqs) {
    const Config& c = net.model->cfg;
    if (n_seqs <= 0) fail("forward_batch: no sequences");
    int n_tokens = 0;
    for (int i = 0; i < n_seqs; i++) {
        const BatchSeq& s = seqs[i];
        if (s.T <= 0 || !s.kv.blocks) fail("forward_batch: sequence %d has no tokens or no cache", i);
        if (s.pos < s.kv.first || s.pos + s.T > s.kv.n_pos)
            fail("forward_batch: sequence %d's positions %d..%d do not fit its cache", i, s.pos, s.pos + s.T - 1);
        if (s.pos + s.T > c.max_pos) fail("context full: %d + %d tokens exceed max_position_embeddings (%d)", s.pos, s.T, c.max_pos);
        for (int t = 0; t < s.T; t++)
            if (s.tokens[t] < 0 || s.tokens[t] >= c.vocab)
                fail("token id %d is outside the vocabulary [0, %d)", s.tokens[t], c.vocab);
        n_tokens += s.T;
    }
    PROBE_FORWARD_BEGIN(seqs[0].tokens, n_tokens, seqs[0].pos);  // -v timing, --report, --trace-json
    const float* logits = net.backend->forward(net, seqs, n_seqs);
    PROBE_FORWARD_END();
    return logits;
}

const float* forward(Net& net, const int* tokens, int T, int pos, bool all_logits) {
    if (T <= 0) fail("forward: no tokens");
    if (net.n_past == net.first_pos) net.first_pos = net.n_past = pos;  // empty cache: the sequence starts here
    if (pos < net.first_pos || pos > net.n_past)
        fail("forward: position %d is outside the cached positions [%d, %d]", pos, net.first_pos, net.n_past);
    if (pos + T > net.kv.n_ctx)
        fail("context full: %d + %d tokens exceed the KV cache of %d positions (%s)", pos, T, net.kv.n_ctx,
             ctx_hint(net.kv.n_ctx, net.model->cfg.max_pos).c_str());
    BatchSeq one;  // one sequence, in the Net's own cache
    one.tokens = tokens, one.T = T, one.pos = pos;
    one.kv = kv_view(net.kv, net.first_pos);
    one.logits = true, one.all_logits = all_logits;
    const float* logits = forward_batch(net, &one, 1);
    net.n_past = pos + T;
    return logits;
}
