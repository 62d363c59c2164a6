// A slip in lens_layer (chapters/lens): the LM head on the raw residual
// stream, without the final norm. tests/check_exercises.sh checks that the
// lens checker fails this and names the norm.
#include <algorithm>
#include "kernels.h"
#include "lens/lens.h"
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits) {
    int H = m.cfg.hidden, n = cap.n_pos;
    std::vector<float> h((size_t)n * H);
    for (int p = 0; p < n; p++) std::copy(cap.resid_row(depth, p), cap.resid_row(depth, p) + H, &h[(size_t)p * H]);
    matmul(logits, h.data(), m.lm_head, nullptr, n);
}
