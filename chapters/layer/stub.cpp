// chapters/layer/stub.cpp — one Qwen2 decoder layer (book/05-forward.md).
//
// The forward pass is the same layer run n_layers times over the residual
// stream x. net.cpp:forward_rows runs it inline, for every layer; here you
// write it as one function from the engine's kernels. `make exercise
// EX=layer` runs yours on layer 0 of models/tiny and compares it with the
// engine's own layer, buffer by buffer, then stacks it four times into the
// whole model and compares the logits.
#include <cstring>
#include "kernels.h"
#include "chapters/layer/layer.h"

// TODO(student): x holds T tokens' residual stream [T, hidden], at positions
// pos..pos+T-1; update it in place through one layer (c: the sizes, L: this
// layer's weights, cache: this layer's keys and values of positions 0..pos-1).
//
//   h = rmsnorm(x) with L.attn_norm                     rmsnorm(out, in, w, n, c.eps), one token row at a time
//   q = h Wq + bq,  k = h Wk + bk,  v = h Wv + bv       matmul(out, in, W, bias, T): all T rows at once
//   rotate q and k of token t by position pos + t       apply_rope(vec, n_heads, head_dim, pos, c.rope_theta)
//   store k and v of token t in cache row pos + t
//   att = causal attention: token t, query head i,      attention_head(out, b.scores.data(), q, keys, values,
//         over cache positions 0..pos+t                     stride_bytes, DType::F32, n, head_dim)
//   x = x + att Wo        (Wo has no bias)
//   h = rmsnorm(x) with L.ffn_norm
//   gate = h W_gate, up = h W_up, gate = silu(gate) * up    swiglu(gate, up, n)
//   x = x + gate W_down
//
// All of these are in kernels.h. Grouped-query attention: query head i
// reads KV head i / (n_heads / n_kv_heads); in a cache row that head's keys
// start at float kvh * head_dim, and rows are kv_dim floats apart. Use the
// buffers of b as layer.h describes (the checker reads them).
//
// Hint: chapter 5's shape table; the order matters — a residual adds to
// x itself, never to its normed copy h.
void decoder_layer(float* x, int T, int pos, const Config& c, const LayerWeights& L, LayerCache& cache,
                   LayerBuffers& b) {
    // the stub: x passes through unchanged
}
