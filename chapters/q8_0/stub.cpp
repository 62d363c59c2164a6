// chapters/q8_0/stub.cpp — your Q8_0 quantizer (book/12-performance.md, "Q8_0").
//
// --quant q8_0 turns every weight matrix into 8-bit blocks at load, the
// fast Q8_0 matmul quantizes each token's activations the same way before
// multiplying, and --kv-type q8_0 stores the KV cache's rows so. All call
// this one function. `make exercise EX=q8_0` builds
// this file into the engine in place of kernels.cpp's quantize_row_q8_0 and
// checks it.
#include <cmath>
#include <cstdint>
#include <cstring>
#include "common.h"
#include "kernels.h"

// TODO(student): quantize one row of n floats (n a multiple of 32) into
// n / 32 blocks of 34 bytes (Q8_BLOCK = 32, Q8_BLOCK_BYTES = 34), GGUF's
// block_q8_0:
//
//   for each block of 32 consecutive values xb[0..31]:
//     d     = max |xb[j]| / 127          the block's scale
//     q[j]  = round(xb[j] / d)           an int8 in [-127, 127]
//     bytes 0-1:  d as an IEEE half (f32_to_f16 in common.h), little-endian
//     bytes 2-33: q[0..31], one signed byte each
//
// To dequantize (what the matmul does): x[j] ~ d * q[j].
//
// Hints: a block of zeros has d = 0 — what is 0 / 0? Round halves away
// from zero (std::lround), as GGUF does; a rounding mode that sends 2.5 to 2
// gives other bytes. Multiplying by 1/d is what the engine does, and what
// the checker expects bit for bit.
void quantize_row_q8_0(const float* x, int n, uint8_t* out) {
    std::memset(out, 0, (size_t)n / Q8_BLOCK * Q8_BLOCK_BYTES);  // the stub: all blocks zero
}
