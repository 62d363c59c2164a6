// chapters/rope-hard/stub.cpp — RoPE from its contract (book/04-kernels.md, "5. RoPE").
//
// The harder variant of the rope exercise: this file says what the function
// must do, not how. `make exercise EX=rope-hard` builds it into the engine
// in place of kernels.cpp's apply_rope and runs the rope checker.
#include <cmath>
#include "kernels.h"

// TODO(student): rotary position embedding, as Qwen2 applies it.
//
//   vec       [n_heads * head_dim]  the heads one after the other; rewritten in place
//   head_dim  even; pos 0 .. 32767; theta is config.json's rope_theta
//
// The contract:
//   - each head is rotated by its own position alone: for two vectors q and
//     k rotated at positions m and n, q . k depends on m - n only;
//   - the head's numbers form head_dim / 2 planes, each turned at its own
//     frequency, from 1 radian per position down to about 1/theta, the way
//     Hugging Face's Qwen2 pairs them (not the way the RoFormer paper does);
//   - at position 0 nothing moves; the length of each head is unchanged;
//   - agree with the engine within 1e-5 relative, at every position up to 32767.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    // the stub: leaves vec as it is
}
