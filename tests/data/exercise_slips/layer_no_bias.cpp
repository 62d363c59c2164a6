// A slip in decoder_layer (chapters/layer): q, k and v without their biases
// (Qwen2 has them; Llama does not). tests/check_exercises.sh checks that the
// layer checker fails this and names the bias.
#include "kernels.h"
#include "net.h"

void decoder_layer(Net& net, int layer, int T, const int* pos) {
    const Config& c = net.model->cfg;
    const LayerWeights& L = net.model->layers[layer];
    int H = c.hidden, hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    float *x = net.x.data(), *h = net.xn.data(), *q = net.q.data(), *k = net.k.data(), *v = net.v.data();
    float *att = net.att.data(), *gate = net.gate.data(), *up = net.up.data();
    // --- attention block ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.attn_norm.data(), H, c.eps);
    tap(net, "attn_norm", layer, h, T, H);
    matmul(q, h, L.wq, nullptr, T);
    matmul(k, h, L.wk, nullptr, T);
    matmul(v, h, L.wv, nullptr, T);
    tap(net, "attn.q", layer, q, T, q_dim);
    tap(net, "attn.k", layer, k, T, kv_dim);
    tap(net, "attn.v", layer, v, T, kv_dim);
    for (int t = 0; t < T; t++) {
        apply_rope(q + (size_t)t * q_dim, c.n_heads, hd, pos[t], c.rope_theta);
        apply_rope(k + (size_t)t * kv_dim, c.n_kv_heads, hd, pos[t], c.rope_theta);
    }
    tap(net, "attn.q_rope", layer, q, T, q_dim);
    tap(net, "attn.k_rope", layer, k, T, kv_dim);
    attention(net, layer, q, k, v, att);
    tap(net, "attn.out", layer, att, T, q_dim);
    matmul(h, att, L.wo, nullptr, T);
    tap(net, "attn.o_proj", layer, h, T, H);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
    // --- MLP block (SwiGLU) ---
    for (int t = 0; t < T; t++) rmsnorm(h + (size_t)t * H, x + (size_t)t * H, L.ffn_norm.data(), H, c.eps);
    tap(net, "ffn_norm", layer, h, T, H);
    matmul(gate, h, L.w_gate, nullptr, T);
    matmul(up, h, L.w_up, nullptr, T);
    tap(net, "mlp.gate", layer, gate, T, I);
    tap(net, "mlp.up", layer, up, T, I);
    swiglu(gate, up, T * I);
    tap(net, "mlp.act", layer, gate, T, I);
    matmul(h, gate, L.w_down, nullptr, T);
    tap(net, "mlp.down", layer, h, T, H);
    for (size_t i = 0; i < (size_t)T * H; i++) x[i] += h[i];
    tap(net, "resid", layer, x, T, H);
}
