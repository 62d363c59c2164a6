// chapters/attention-hard/stub.cpp — one attention head from its contract
// (book/06-attention-kv-cache.md).
//
// The harder variant of the attention exercise: this file says what the
// function must compute, not how. `make exercise EX=attention-hard` builds
// it into the engine in place of kernels.cpp's attention_head_plain and runs
// the attention checker.
#include <cmath>
#include "kernels.h"

// TODO(student): scaled dot-product attention of one query over n cached positions.
//
//   q        [head_dim] one head's query, already rotated
//   keys     position j's key starts at keys + j * stride (bytes); values likewise
//   kv_type  how the cache stores its numbers: F32, F16 or BF16 (kernels.h converts)
//   n >= 1   positions 0 .. n-1, the query's own included
//   scores   [n] out: the attention weights, a probability distribution over j
//   out      [head_dim] out: the weighted mix of the values
//
// The contract: the weights are the softmax of the dot products q . k_j
// scaled as in "Attention Is All You Need"; the function must stay exact
// when the scores are in the thousands; nothing may be read outside the n
// rows; agree with the engine within 1e-5 relative.
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim) {
    for (int d = 0; d < head_dim; d++) out[d] = 0.0f;  // the stub: no attention at all
    for (int j = 0; j < n; j++) scores[j] = 0.0f;
}
