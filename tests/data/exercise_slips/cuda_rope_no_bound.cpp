// A slip for chapters/cuda-rope: no bound check, so the last block's spare threads write past vec.
// chapters/cuda-rope/stub.cpp — RoPE as a CUDA kernel, run on the CPU (book/14-cuda.md).
//
// On the GPU every thread does a little of the work: here, one thread per
// rotated pair. simt.h runs the kernel's threads one after the other when
// there is no GPU, so the checker can compare it with the CPU twin,
// kernels.cpp:apply_rope, and run the whole model with it.
// `make exercise EX=cuda-rope` builds this file into the engine in place of
// apply_rope and checks it.
#include <cmath>
#include "chapters/cuda-rope/simt.h"
#include "kernels.h"

// TODO(student): the body of one thread of the RoPE kernel.
//
//   vec       [T, n_heads * head_dim]  T tokens, each n_heads heads of head_dim numbers
//   pos0      the position of token 0 (token t is at pos0 + t)
//   theta     rope_theta
//
// The grid has one thread per pair: T * n_heads * (head_dim / 2) of them,
// in blocks of 256, so the last block hangs over the end. Thread number
//
//   idx = blockIdx.x * blockDim.x + threadIdx.x
//
// 1. returns at once when idx is past the last pair;
// 2. finds its pair: i = idx % half, then the head h, then the token t
//    (i varies fastest, so neighbouring threads touch neighbouring numbers);
// 3. rotates (v[i], v[i + half]) of head h of token t by
//    angle = (pos0 + t) * theta^(-2i / head_dim), computed in double.
//
// Hints: a thread owns both numbers of its pair, and no other thread reads
// them: that is what makes the threads' order irrelevant. Use size_t for
// idx and for offsets into vec.
__global__ void rope_kernel(float* vec, int T, int n_heads, int head_dim, int pos0, float theta) {
    int half = head_dim / 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int i = (int)(idx % half), h = (int)(idx / half % n_heads), t = (int)(idx / half / n_heads);
    double angle = (double)(pos0 + t) * std::pow((double)theta, -2.0 * i / head_dim);
    float c = (float)std::cos(angle), s = (float)std::sin(angle);
    float* v = vec + ((size_t)t * n_heads + h) * head_dim;
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

// The launch, as cuda/kernels_cuda.cu's cuda_rope does it: one thread per
// pair, 256 threads to a block. The engine rotates one token at a time.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    size_t pairs = (size_t)n_heads * (head_dim / 2);
    LAUNCH(rope_kernel, blocks_for(pairs, 256), 256)(vec, 1, n_heads, head_dim, pos, theta);
}
