// chapters/bug-hunt/stub.cpp — four small kernels, one of them wrong
// (book/10-debugging.md).
//
// These are kernels.cpp's own softmax, swiglu, vec_dot_plain and
// vec_axpy_plain, copied here, and somewhere among them is one planted bug.
// The exercise is to find it the way chapter 10 finds bugs: not by reading
// (the file looks right), but by running the engine with these functions in
// it, comparing its tensors with the PyTorch reference, and letting the
// first tensor that differs point at the line.
//
//   make exercise EX=bug-hunt        builds this file into the engine and
//                                    checks it; the binary it builds,
//                                    build/exercise/bug-hunt/check, is also
//                                    ./run with these four functions in it:
//   /usr/bin/python3 tools/trace_diff.py models/tiny --tokens 1,2,3 --binary build/exercise/bug-hunt/check
//
// Fix the bug here (one line), run the checker again, and write down which
// tensor pointed at it and why that tensor and not an earlier one.
#include <cmath>
#include "kernels.h"

// One number of a cache or weight row, as float, whatever its storage type.
static float number_at(const void* p, DType t, int i) {
    if (t == DType::F32) return ((const float*)p)[i];
    if (t == DType::F16) return f16_to_f32(((const uint16_t*)p)[i]);
    return bf16_to_f32(((const uint16_t*)p)[i]);
}

// Attention's dot product: a query against one cached key row.
float vec_dot_plain(const float* a, const void* b, DType bt, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * number_at(b, bt, i);
    return (float)sum;
}

// Attention's weighted sum: y += alpha * one cached value row.
void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * number_at(x, xt, i);
}

// Scores into weights that sum to 1; the largest is subtracted first so
// that exp() cannot overflow.
void softmax(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 1; i < n; i++) x[i] *= inv;
}

// silu(g) = g * sigmoid(g); SwiGLU multiplies it by the "up" projection.
void swiglu(float* gate, const float* up, int n) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}
