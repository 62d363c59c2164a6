// A slip in dequantize_block_q4_k (chapters/q4): the scales and minimums of
// sub-blocks 4..7 read as 4-bit numbers, without the two top bits that Q4_K
// keeps in the spare top bits of bytes s[0..7]. Everything else is right.
// tests/check_exercises.sh checks that the q4 checker fails this and names
// the missing top bits.
#include <cstdint>
#include <cstring>
#include "common.h"

static float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_to_f32(h);
}

void dequantize_block_q4_0(const uint8_t* in, float* y) {
    float d = half_at(in);
    for (int j = 0; j < 16; j++) {
        y[j] = d * ((in[2 + j] & 15) - 8);
        y[j + 16] = d * ((in[2 + j] >> 4) - 8);
    }
}

void dequantize_block_q4_k(const uint8_t* in, float* y) {
    float d = half_at(in), dmin = half_at(in + 2);
    const uint8_t* s = in + 4;
    const uint8_t* qs = in + 16;
    for (int j = 0; j < 8; j++) {
        int sc = j < 4 ? s[j] & 63 : s[j + 4] & 15;  // the slip: no top bits for j >= 4
        int m = j < 4 ? s[j + 4] & 63 : s[j + 4] >> 4;
        float scale = d * sc, minimum = dmin * m;
        for (int i = 0; i < 32; i++) {
            uint8_t b = qs[32 * (j / 2) + i];
            int q = j % 2 == 0 ? b & 15 : b >> 4;
            y[32 * j + i] = scale * q - minimum;
        }
    }
}
