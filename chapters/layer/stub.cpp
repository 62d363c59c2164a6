// chapters/layer/stub.cpp — one Qwen2 decoder layer (book/05-forward.md).
//
// The forward pass is the same layer run n_layers times over the residual
// stream x: net.cpp:forward calls net.cpp:decoder_layer once per layer,
// and so does the server's batched forward_batch. `make exercise EX=layer`
// builds the engine with yours in its place, compares it with the engine's
// own on layer 0 of models/tiny, buffer by buffer, then runs the whole
// model with yours in every layer and compares the logits.
#include "kernels.h"
#include "net.h"

// TODO(student): the T = rows.T rows of this step are the residual stream
// net.x [T, hidden]; row t is the token at position rows.pos[t] of sequence
// rows.seq[t]. Update net.x in place through layer `layer` (weights:
// net.model->layers[layer], sizes: net.model->cfg).
//
//   h = rmsnorm(x) with L.attn_norm                     rmsnorm(out, in, w, n, c.eps), one row at a time; h: net.xn
//   q = h Wq + bq,  k = h Wk + bk,  v = h Wv + bv       matmul(out, in, W, bias, T): all T rows at once,
//                                                       into net.q [T, n_heads*hd], net.k and net.v [T, n_kv*hd]
//   rotate q and k of row t by position rows.pos[t]     apply_rope(vec, n_heads, head_dim, pos, c.rope_theta)
//   store k and v of row t in its sequence's cache      kv_store(rows.seqs[rows.seq[t]].kv, layer, pos, k, v)
//   att = causal attention, per sequence s of           kv_read(net, s.kv, layer, s.pos + s.T, &K, &V): its keys
//         rows.seqs: its row s.row0 + t, query head i,     and values of positions s.kv.first.. in one run, rows
//         over positions s.kv.first..s.pos+t                s.kv.row_bytes apart; then attention_head(out, nullptr,
//                                                           q, keys, values, s.kv.row_bytes, s.kv.type, n, hd)
//   ablate_heads(net, layer, net.att.data(), T)         --ablate's switched-off heads become zeros (net.h)
//   x = x + att Wo        (att: net.att [T, n_heads*hd]; Wo has no bias)
//   h = rmsnorm(x) with L.ffn_norm
//   gate = h W_gate, up = h W_up, gate = silu(gate) * up    swiglu(gate, up, n); net.gate and net.up [T, intermediate]
//   out = gate W_down, ablate_mlp(net, layer, out, T)    --ablate's switched-off MLP: zeros
//   x = x + out
//
// All the kernels are in kernels.h, the cache view and the rows in net.h.
// Grouped-query attention: query head i reads KV head kvh = i / (n_heads /
// n_kv_heads), whose keys start kvh * (s.kv.row_bytes / n_kv_heads) bytes
// into a row. Fill the Net's buffers as the comments above say (the checker
// reads them).
//
// Hint: chapter 5's shape table; the order matters — a residual adds to
// x itself, never to its normed copy h.
void decoder_layer(Net& net, int layer, const Rows& rows) {
    // the stub: x passes through unchanged
}
