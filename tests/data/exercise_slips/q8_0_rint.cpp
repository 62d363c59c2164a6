// A slip in quantize_row_q8_0 (chapters/q8_0): rounding with std::rint,
// which sends halves to the even neighbour (2.5 -> 2) where GGUF's Q8_0
// rounds them away from zero (2.5 -> 3). tests/check_exercises.sh checks that
// the q8_0 checker fails this and names the rounding.
#include <cmath>
#include <cstdint>
#include <cstring>
#include "common.h"
#include "gguf/quants.h"

void quantize_row_q8_0(const float* x, int n, uint8_t* out) {
    for (int b = 0; b < n / Q8_BLOCK; b++) {
        const float* xb = x + b * Q8_BLOCK;
        float amax = 0;
        for (int j = 0; j < Q8_BLOCK; j++) amax = std::fmax(amax, std::fabs(xb[j]));
        float d = amax / 127.0f;
        uint16_t dh = f32_to_f16(d);
        float inv = d > 0 ? 1.0f / d : 0.0f;
        uint8_t* blk = out + (size_t)b * Q8_BLOCK_BYTES;
        std::memcpy(blk, &dh, 2);
        for (int j = 0; j < Q8_BLOCK; j++) blk[2 + j] = (uint8_t)(int8_t)std::rint(xb[j] * inv);
    }
}
