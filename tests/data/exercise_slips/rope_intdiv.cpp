// A classic slip in apply_rope (chapters/rope): the exponent -2 * i / head_dim
// computed in integers is 0 for every pair. tests/check_exercises.sh checks
// that the rope checker fails this and names the integer division.
#include <cmath>
#include "kernels.h"

void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        double freq = std::pow((double)theta, -2 * i / head_dim);
        double angle = pos * freq;
        float c = (float)std::cos(angle), s = (float)std::sin(angle);
        for (int h = 0; h < n_heads; h++) {
            float* v = vec + (size_t)h * head_dim;
            float a = v[i], b = v[i + half];
            v[i] = a * c - b * s;
            v[i + half] = b * c + a * s;
        }
    }
}
