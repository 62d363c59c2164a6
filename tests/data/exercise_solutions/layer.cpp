// The solution of chapters/layer: net.cpp:forward_rows's layer body for one
// sequence, with the layer's cache in f32. tests/check_exercises.sh checks
// that the layer checker passes it (make exercise EX=layer SOLUTION=1).
#include <cstring>
#include "kernels.h"
#include "chapters/layer/layer.h"

void decoder_layer(float* x, int T, int pos, const Config& c, const LayerWeights& L, LayerCache& cache,
                   LayerBuffers& b) {
    int H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    int group = c.n_heads / c.n_kv_heads;
    float* h = b.h.data();
    // --- attention block ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
    matmul(b.q.data(), h, L.wq, L.bq.data(), T);
    matmul(b.k.data(), h, L.wk, L.bk.data(), T);
    matmul(b.v.data(), h, L.wv, L.bv.data(), T);
    for (int t = 0; t < T; t++) {
        apply_rope(&b.q[(size_t)t * q_dim], c.n_heads, hd, pos + t, c.rope_theta);
        apply_rope(&b.k[(size_t)t * kv_dim], c.n_kv_heads, hd, pos + t, c.rope_theta);
        std::memcpy(&cache.k[(size_t)(pos + t) * kv_dim], &b.k[(size_t)t * kv_dim], kv_dim * sizeof(float));
        std::memcpy(&cache.v[(size_t)(pos + t) * kv_dim], &b.v[(size_t)t * kv_dim], kv_dim * sizeof(float));
    }
    size_t stride = kv_dim * sizeof(float);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < c.n_heads; i++) {
            int kvh = i / group;
            attention_head(&b.att[(size_t)t * q_dim + i * hd], b.scores.data(), &b.q[(size_t)t * q_dim + i * hd],
                           (const uint8_t*)&cache.k[(size_t)kvh * hd], (const uint8_t*)&cache.v[(size_t)kvh * hd],
                           stride, DType::F32, pos + t + 1, hd);
        }
    matmul(h, b.att.data(), L.wo, nullptr, T);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
    // --- MLP block (SwiGLU) ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.ffn_norm.data(), H, c.eps);
    matmul(b.gate.data(), h, L.w_gate, nullptr, T);
    matmul(b.up.data(), h, L.w_up, nullptr, T);
    for (int t = 0; t < T; t++) swiglu(&b.gate[(size_t)t * I], &b.up[(size_t)t * I], I);
    matmul(h, b.gate.data(), L.w_down, nullptr, T);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
}
