// A slip in lens_layer (chapters/lens): the capture read as if it were
// [position][depth][hidden], so most rows are another depth's or another
// position's. tests/check_exercises.sh checks that the lens checker fails
// this and names the layout.
#include <algorithm>
#include "kernels.h"
#include "lens/lens.h"
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits) {
    int H = m.cfg.hidden, n = cap.n_pos;
    std::vector<float> h((size_t)n * H);
    for (int p = 0; p < n; p++) rmsnorm(&h[(size_t)p * H], &cap.resid[((size_t)p * (cap.n_layers + 1) + depth) * H], m.final_norm.data(), H, m.cfg.eps);
    matmul(logits, h.data(), m.lm_head, nullptr, n);
}
