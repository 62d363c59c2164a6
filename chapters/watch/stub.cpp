// chapters/watch/stub.cpp — the numbers behind -v and -vv
// (book/09-logging-visualization.md).
//
// Every line -vv prints for a tensor (min, max, mean, rms, a count of NaN
// and inf) comes from stats_add; every "attn entropy" of -v from
// mean_row_entropy_bits. `make exercise EX=watch` builds this file into the
// engine in place of logging.cpp's two functions and checks them.
#include <cmath>
#include "logging.h"

// TODO(student): add n numbers to the running statistics s.
//
//   s     TensorStats (logging.h): n finite values seen, bad (NaN or inf),
//         min, max, sum, sumsq. It may already hold earlier values: add to
//         it, do not reset it (a tensor can arrive in pieces).
//   x, n  the numbers
//
// A NaN or inf counts in s.bad and nowhere else. The first finite value
// sets min and max; later ones widen them. sum and sumsq are doubles: a
// [T, 4864] activation has tens of thousands of terms. stats_mean and
// stats_rms (logging.cpp) divide them by n.
void stats_add(TensorStats& s, const float* x, size_t n) {
    // the stub: adds nothing
}

// TODO(student): the mean entropy, in bits, of `rows` probability rows.
//
//   p     [rows, cols] attention weights; each row sums to 1
//
// The entropy of one row is H = -sum over c of p[c] * log2(p[c]), with
// 0 * log2(0) taken as 0. Return the average of H over the rows (0 when
// rows is 0). Uniform weights over k positions give log2(k) bits; all the
// weight on one position gives 0.
double mean_row_entropy_bits(const float* p, int rows, int cols) {
    return 0.0;  // the stub
}
