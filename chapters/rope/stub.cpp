// chapters/rope/stub.cpp — your RoPE (book/04-kernels.md, "5. RoPE").
//
// The engine rotates every query and every key by its token's position
// before attention, so that q . k depends on how far apart the two tokens
// are. `make exercise EX=rope` builds this file into the engine in place of
// kernels.cpp's apply_rope and checks it.
#include <cmath>
#include "kernels.h"

// TODO(student): rotate each head of `vec` in place by position `pos`.
//
//   vec       [n_heads * head_dim]  n_heads heads, one after the other
//   head_dim  even (the model: 64; the checker also tries 2, 6, 10, ...)
//   pos       the token's position, 0 .. 32767
//   theta     rope_theta from config.json (Qwen2.5: 1,000,000)
//
// Within one head v (head_dim numbers) and half = head_dim / 2, for every
// i in 0 .. half-1 the pair (v[i], v[i + half]) turns by the angle
//
//   angle = pos * theta^(-2i / head_dim)
//   (a, b) -> (a cos(angle) - b sin(angle),  b cos(angle) + a sin(angle))
//
// Hints: the pairs are (i, i + half), Hugging Face's "rotate_half" layout,
// not neighbours (2i, 2i+1). Read both numbers of a pair before writing
// either. Positions go up to 32767: how precise is a float near 30000?
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    // the stub: leaves vec as it is
}
