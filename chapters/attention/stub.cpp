// chapters/attention/stub.cpp — one attention head over the KV cache
// (book/06-attention-kv-cache.md, "One head, by hand").
//
// Under --kernels plain the engine calls this once per layer, per query
// head, per new token: the token's query looks at the keys of every
// position so far (itself included), turns the scores into weights, and
// mixes the values. `make exercise EX=attention` builds this file into the
// engine in place of kernels.cpp's attention_head_plain and checks it.
#include <cmath>
#include "kernels.h"

// Element i of a cache row. The cache stores f32, or f16/bf16 to halve its
// memory (--kv-type); this widens one number to float whatever the type.
[[maybe_unused]] static float cache_at(const uint8_t* row, DType type, int i) {
    if (type == DType::F32) return ((const float*)row)[i];
    if (type == DType::F16) return f16_to_f32(((const uint16_t*)row)[i]);
    return bf16_to_f32(((const uint16_t*)row)[i]);
}

// TODO(student): attention for one head and one query.
//
//   q        [head_dim]  this head's query for the new token (already rotated by RoPE)
//   keys     row j (j = 0 .. n-1) is keys + j * stride: that position's key,
//            head_dim numbers of kv_type (read them with cache_at)
//   values   the same for the values: values + j * stride
//   stride   bytes from one position's row to the next. The cache stores
//            all KV heads of a position side by side, so stride is usually
//            more than head_dim numbers: step with it, not with head_dim.
//   n        how many positions the query sees (>= 1): 0 .. its own
//   scores   [n] write the attention weights here (after softmax)
//   out      [head_dim] write the result here
//
//   scores[j] = (q . k_j) / sqrt(head_dim)
//   scores    = softmax(scores)            (kernels.h has softmax(x, n))
//   out       = sum over j of scores[j] * v_j
//
// Hints: out starts as garbage, so zero it first. The checker feeds scores
// in the thousands: softmax must subtract the largest score before exp().
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim) {
    for (int d = 0; d < head_dim; d++) out[d] = 0.0f;  // the stub: no attention at all
    for (int j = 0; j < n; j++) scores[j] = 0.0f;
}
