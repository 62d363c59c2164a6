// A slip in decoder_layer (chapters/layer): a correct layer that skips the
// two ablation hooks (net.h: ablate_heads, ablate_mlp), so --ablate would
// switch nothing off. tests/check_exercises.sh checks that the layer checker
// fails this and names the hooks.
#include "kernels.h"
#include "net.h"

void decoder_layer(Net& net, int layer, const Rows& rows) {
    const Config& c = net.model->cfg;
    const LayerWeights& L = net.model->layers[layer];
    int T = rows.T, H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    int group = c.n_heads / c.n_kv_heads;
    float *x = net.x.data(), *h = net.xn.data(), *q = net.q.data(), *k = net.k.data(), *v = net.v.data();
    // --- attention block ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
    matmul(q, h, L.wq, L.bq.data(), T);
    matmul(k, h, L.wk, L.bk.data(), T);
    matmul(v, h, L.wv, L.bv.data(), T);
    for (int t = 0; t < T; t++) {
        apply_rope(q + (size_t)t * q_dim, c.n_heads, hd, rows.pos[t], c.rope_theta);
        apply_rope(k + (size_t)t * kv_dim, c.n_kv_heads, hd, rows.pos[t], c.rope_theta);
        kv_store(rows.seqs[rows.seq[t]].kv, layer, rows.pos[t], k + (size_t)t * kv_dim, v + (size_t)t * kv_dim);
    }
    for (const SeqRows& s : rows.seqs) {
        const uint8_t *K, *V;
        kv_read(net, s.kv, layer, s.pos + s.T, &K, &V);
        size_t head_bytes = s.kv.row_bytes / c.n_kv_heads;
        for (int t = 0; t < s.T; t++)
            for (int i = 0; i < c.n_heads; i++) {
                size_t at = (size_t)(s.row0 + t) * q_dim + i * hd;
                attention_head(&net.att[at], nullptr, q + at, K + (i / group) * head_bytes, V + (i / group) * head_bytes,
                               s.kv.row_bytes, s.kv.type, s.pos + t + 1 - s.kv.first, hd);
            }
    }
    matmul(h, net.att.data(), L.wo, nullptr, T);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
    // --- MLP block (SwiGLU) ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.ffn_norm.data(), H, c.eps);
    matmul(net.gate.data(), h, L.w_gate, nullptr, T);
    matmul(net.up.data(), h, L.w_up, nullptr, T);
    for (int t = 0; t < T; t++) swiglu(&net.gate[(size_t)t * I], &net.up[(size_t)t * I], I);
    matmul(h, net.gate.data(), L.w_down, nullptr, T);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
}
