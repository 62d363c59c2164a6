// chapters/tiled-matmul/stub.cpp — a cache-blocked matrix product
// (book/04-kernels.md, matrix multiplication; book/12-performance.md, "One
// summation order" and the tiles of steps 4 and 5).
//
// kernels.cpp:matmul_plain reads every weight once per token: for a prompt
// of T tokens the whole matrix streams from memory T times. A tiled product
// takes a few rows at a time, widens them to f32 once, and uses them for
// every token while they sit in the cache. `make exercise EX=tiled-matmul`
// builds this file into the engine in place of matmul_plain (run with
// --kernels plain) and checks that every output is the same float, bit for
// bit — not merely close.
#include <algorithm>
#include <cstring>
#include <vector>
#include "kernels.h"

// TODO(student): for T tokens, out[t * W.rows + r] = bias[r] + sum over c of
// W[r][c] * x[t * W.cols + c]  (x: [T, W.cols], out: [T, W.rows], bias may be
// null), computed tile by tile, giving exactly the bits of the untiled loop:
//
//   for each token t, each row r:
//       double sum = bias ? bias[r] : 0.0;                 the bias is where the sum starts
//       for c = 0 .. W.cols-1:  sum += (double)W[r][c] * x[t][c];
//       out[t][r] = (float)sum;
//
// Tiles: RT rows at a time (say 16): widen them into a buffer of RT * W.cols
// floats with mat_row_to_f32(W, row, dst) (W may be f32, bf16, f16 or
// q8_0), then compute those RT outputs for every token. The last tile of
// rows (and of tokens, if you tile them too) may be shorter: the checker's
// sizes are never multiples of a tile.
//
// Bit-equal means: the same additions, of the same numbers, in the same
// order. You may also split the columns into tiles, but then each output's
// running sum must carry on from one column tile into the next — adding up
// one partial sum per tile is another order, and float addition is not
// associative. Hint: book/11's "One summation order".
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    std::memset(out, 0, sizeof(float) * W.rows * T);  // the stub: all zeros
}
