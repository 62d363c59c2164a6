// chapters/layer/stub.cpp — one Qwen2 decoder layer (book/05-forward.md).
//
// The forward pass is the same layer run n_layers times over the residual
// stream x: net.cpp's forward pass calls net.cpp:decoder_layer once per
// layer. `make exercise EX=layer` builds the engine with yours in its
// place, compares it with the engine's own on layer 0 of models/tiny,
// buffer by buffer, then runs the whole model with yours in every layer and
// compares the logits.
#include "kernels.h"
#include "net.h"

// TODO(student): the T tokens of this step are the residual stream net.x
// [T, hidden]; token t sits at position pos[t]. Update net.x in place
// through layer `layer` (weights: L = net.model->layers[layer], sizes:
// c = net.model->cfg, head_dim hd).
//
//   h = rmsnorm(x) with L.attn_norm                  rmsnorm(out, in, w, n, c.eps), one token at a time; h: net.xn
//   q = h Wq + bq,  k = h Wk + bk,  v = h Wv + bv    matmul(out, in, W, bias, T): all T tokens at once,
//                                                    into net.q [T, n_heads*hd], net.k and net.v [T, n_kv_heads*hd]
//   rotate q and k of token t by position pos[t]     apply_rope(vec, n_heads, hd, pos, c.rope_theta)
//   att = attention(q, k, v)                         attention(net, layer, q, k, v, att): stores k and v in the
//                                                    cache, each query over the keys up to its position; att: net.att
//   x = x + att Wo        (Wo has no bias)
//   h = rmsnorm(x) with L.ffn_norm
//   gate = h W_gate, up = h W_up                     net.gate and net.up [T, intermediate]
//   gate = silu(gate) * up                           swiglu(gate, up, n), over all T * intermediate values
//   x = x + gate W_down
//
// Name each tensor right after you compute it with tap(net, name, layer,
// data, rows, cols) (net.h): -vv prints it, the report and the lens record
// it, and --ablate switches heads and MLPs off through it. The names, in
// order: attn_norm, attn.q, attn.k, attn.v, attn.q_rope, attn.k_rope,
// attn.out, attn.o_proj, ffn_norm, mlp.gate, mlp.up, mlp.act, mlp.down,
// resid (x at the end). Fill the Net's buffers as the comments above say
// (the checker reads them).
//
// Hint: chapter 5's shape table; the order matters — a residual adds to
// x itself, never to its normed copy h.
void decoder_layer(Net& net, int layer, int T, const int* pos) {
    // the stub: x passes through unchanged
}
