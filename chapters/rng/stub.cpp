// chapters/rng/stub.cpp — the random numbers and the draw
// (book/08-sampling-generation.md, "The draw: a roulette wheel" and
// "The random numbers: xorshift128").
//
// Every sampled token costs one random number: rng_uniform() gives r in
// [0, 1), the sampler scales it by the weights' sum, and sample_roulette()
// finds where it lands. `make exercise EX=rng` builds this file into the
// engine in place of sampler.cpp's three functions and checks them.
// rng_seed() stays the engine's: it fills x, y, z, w from the seed.
#include "sampler.h"

// TODO(student) 1/3: one step of xorshift128 (Marsaglia, 2003).
//
//   Rng r holds four 32-bit words x, y, z, w (sampler.h).
//   t = x ^ (x << 11)
//   the words move down one place: x <- y, y <- z, z <- w
//   the new w = w ^ (w >> 19) ^ t ^ (t >> 8)     (w here is the old w)
//   return the new w
//
// Hint: every variable must be uint32_t. On a signed int, >> copies the
// sign bit into the top, and << past the top is undefined behaviour.
uint32_t rng_next(Rng& r) {
    return 0;  // the stub
}

// TODO(student) 2/3: a float uniformly spread over [0, 1), from rng_next(r).
//
// A float has 24 significant bits, so keep the top 24 of the 32 random bits
// and scale them by 2^-24: every result is k / 2^24, never 1.
//
// Hint: (float)bits / 4294967296.0f looks right, but for bits near 2^32 the
// float rounds up to exactly 1.0, and then the draw can land past the end.
float rng_uniform(Rng& r) {
    return 0.0f;  // the stub
}

// TODO(student) 3/3: the roulette wheel.
//
//   probs  [n] weights >= 0, not normalised (0 for tokens top-k/top-p removed)
//   r      in [0, sum of probs): the random number already scaled by the sum
//   return the first index i whose running total probs[0] + ... + probs[i]
//          is greater than r (strictly)
//
// If rounding leaves the running total a hair below r at the end, return
// the last index with a nonzero weight (not simply n - 1: that token may
// have weight 0). If every weight is 0, return 0.
//
// Hint: r is a double; keep the running total in a double too. 151,936
// small floats added in float lose enough to land on a neighbouring token.
int sample_roulette(const float* probs, int n, double r) {
    return 0;  // the stub
}
