// chapters/lens/stub.cpp — the logit lens at one depth (book/11-inside-the-prediction.md).
//
// `./run lens` and the report's lens panel call lens.cpp:lens_layer once per
// depth: "what would the model predict if it stopped here?" `make exercise
// EX=lens` builds the engine with yours in its place and compares the two on
// a hand-sized model, then on models/tiny at every depth, and last checks
// the identity that defines the lens: at the last depth it is the model's
// own logits.
#include "kernels.h"
#include "lens/lens.h"

// TODO(student): for every captured position p = 0 .. cap.n_pos-1, read the
// residual stream after `depth` layers (depth 0: the embedding, depth
// cap.n_layers: what the model's own final norm reads) and write what the
// model's output layer makes of it:
//
//   x = cap.resid_row(depth, p)                      [hidden]   the stream at that depth and position
//   h = rmsnorm(x) with the FINAL norm's weights     rmsnorm(out, in, m.final_norm.data(), hidden, m.cfg.eps)
//   logits[p] = lm_head h                            matmul(out, in, m.lm_head, nullptr, T): all rows at once
//
// logits is [cap.n_pos, vocab], position p's row at logits + p * vocab. The
// sizes are m.cfg.hidden and m.cfg.vocab.
//
// Hint: net.cpp:lm_head does exactly this for the last depth. Use the same
// two kernels in the same order and your lens at the last depth gives the
// model's logits bit for bit.
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits) {
    // the stub: nothing is written
}
