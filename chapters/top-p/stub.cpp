// chapters/top-p/stub.cpp — nucleus sampling's filter
// (book/08-sampling-generation.md, "Top-p: keep the nucleus").
//
// The sampler runs penalties -> top-k -> top-p -> temperature -> draw, each
// stage editing one row of logits in place. `make exercise EX=top-p` builds
// this file into the engine in place of sampler.cpp's apply_top_p and
// checks it.
#include <algorithm>
#include <cmath>
#include <limits>
#include "sampler.h"

// TODO(student): keep the nucleus, mask the rest.
//
//   logits  [n]  raw scores; entries already -infinity were removed by top-k
//                and take no part (they stay -inf)
//   p       in (0, 1]; 1 means "off": change nothing
//   order   scratch space you may use (e.g. for the token ids you sort);
//           its contents on entry mean nothing
//   return  how many tokens survive (not -inf afterwards)
//
// The alive tokens' probabilities are softmax(logits) over the alive tokens
// only. Sort the alive tokens by logit, largest first (equal logits: lower
// id first), and walk down adding probabilities; the token whose addition
// makes the total reach p (>= p) is the last one kept. Set every other
// alive token to -infinity: std::numeric_limits<float>::infinity() negated.
//
// Survivors keep their raw logits, untouched: temperature comes next and
// scales logits, not probabilities.
//
// Hints: softmax = exp(l - max) / sum of exp(l - max); subtracting the max
// keeps exp() from overflowing with logits in the hundreds. Add the
// probabilities in double. A single alive token always survives.
int apply_top_p(float* logits, int n, float p, std::vector<int>& order) {
    return n;  // the stub: keeps everything
}
