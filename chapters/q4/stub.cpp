// chapters/q4/stub.cpp — your Q4_0 and Q4_K decoders (book/16-gguf-quantization.md,
// "Principle 2: blocks, worked by hand").
//
// A GGUF file stores most weights of a "Q4" model in these two formats.
// Every matrix product over such a file unpacks its rows with them (the
// plain and the fast kernels both call quants.cpp:dequantize_row, which
// calls these two for every block). `make exercise EX=q4` builds this file
// into the engine in place of quants.cpp's two functions and checks them.
#include <cstdint>
#include <cstring>
#include "common.h"

// Reads the little-endian IEEE half at p as a float.
static float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_to_f32(h);
}

// TODO(student): one Q4_0 block, 18 bytes, into 32 floats y[0..31]:
//
//   bytes 0-1    d, the block's scale, an IEEE half (half_at above)
//   bytes 2-17   16 bytes of 4-bit codes: byte 2 + j holds the code of
//                weight j in its LOW 4 bits and of weight j + 16 in its
//                HIGH 4 bits (j = 0..15)
//
//   y[i] = d * (q_i - 8)       q_i in 0..15, so y in [-8d, 7d]
//
// Worked example (the book's): d = 0.5 and byte 2 + 3 = 0xC3 give
// y[3] = 0.5 * (3 - 8) = -2.5 and y[19] = 0.5 * (12 - 8) = 2.
void dequantize_block_q4_0(const uint8_t* in, float* y) {
    std::memset(y, 0, 32 * sizeof(float));  // the stub: every weight 0
}

// TODO(student): one Q4_K super-block, 144 bytes, into 256 floats y[0..255].
// Eight sub-blocks j = 0..7 of 32 weights each, weight 32 * j + i:
//
//   bytes 0-1     d     (half): the scale of the sub-block scales
//   bytes 2-3     dmin  (half): the scale of the sub-block minimums
//   bytes 4-15    s[0..11]: eight 6-bit scales sc_j and eight 6-bit
//                 minimums m_j, packed:
//                   j < 4:  sc_j = s[j] & 63            m_j = s[j + 4] & 63
//                   j >= 4: sc_j = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4
//                           m_j  = (s[j + 4] >> 4) | (s[j] >> 6) << 4
//                 (sub-blocks 4..7 keep their low 4 bits in s[8..11] and
//                 their top 2 bits in the spare top bits of s[0..7])
//   bytes 16-143  qs[0..127], the 4-bit codes: sub-blocks 2c and 2c + 1
//                 share the 32 bytes qs[32c .. 32c + 31]; weight i of
//                 sub-block 2c is the LOW half of qs[32c + i], weight i of
//                 sub-block 2c + 1 the HIGH half of the same byte
//
//   y[32 * j + i] = (d * sc_j) * q - (dmin * m_j)      q in 0..15
//
// Worked example (the book's): d = 1, dmin = 0.25, sub-block 5 with
// sc = 37 and m = 50; a weight of it with code 9 is 37 * 9 - 12.5 = 320.5.
//
// Hint: write a little helper that returns (sc_j, m_j) for a given j, and
// test it on the worked example by hand before the loop over the codes.
void dequantize_block_q4_k(const uint8_t* in, float* y) {
    std::memset(y, 0, 256 * sizeof(float));  // the stub: every weight 0
}
