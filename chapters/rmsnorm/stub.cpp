// chapters/rmsnorm/stub.cpp — your RMSNorm (book/04-kernels.md, "2. RMSNorm").
//
// The engine calls this before every attention block, before every MLP and
// once before the LM head: 2 x 24 + 1 = 49 times per token for Qwen2.5-0.5B.
// `make exercise EX=rmsnorm` builds this file into the engine in place of
// kernels.cpp's rmsnorm and checks it.
#include <cmath>
#include "kernels.h"

// TODO(student): write RMSNorm.
//
//   rms    = sqrt( (x[0]² + ... + x[n-1]²) / n  + eps )
//   out[i] = x[i] / rms * w[i]
//
//   out  [n]  written, never read
//   x    [n]  one token's hidden state
//   w    [n]  the norm's learned weight, one gain per dimension
//   n    any size >= 1 (the model: 896; the checker also tries 1, 7, 13, ...)
//   eps  1e-6 in Qwen2.5: keeps an all-zero x at 0 instead of 0/0
//
// Hints: no mean is subtracted and there is no bias (that is LayerNorm).
// The checker also feeds values around 1e20: what is (1e20)² in float?
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    for (int i = 0; i < n; i++) out[i] = 0.0f;  // the stub: replace with RMSNorm
}
