// kernels.h — the arithmetic of the forward pass.
//
// Every operation has a plain version (loops a reader can check by hand, the
// ground truth) and, where speed matters, a fast version beside it. The fast
// ones are chosen with --kernels fast (the default); tests check that each
// fast kernel equals its plain twin. The plain kernels live in kernels.cpp,
// the fast ones in kernels_fast.cpp (see book/11-performance.md).
#pragma once
#include <vector>
#include "common.h"

// A weight matrix W of shape [rows, cols], row-major, as PyTorch stores
// nn.Linear.weight: y = W x, so each output element is the dot product of
// one row of W with the input. `data` usually points straight into the
// mmapped safetensors file (bf16/f16/f32); for Q8_0 it points to blocks of
// 32 int8 values with one f16 scale each (GGUF's block_q8_0 layout).
struct Mat {
    DType dtype = DType::F32;
    int rows = 0, cols = 0;
    const void* data = nullptr;
    size_t bytes() const;
};

// Plain: the reference loops (one thread, double accumulation).
// Scalar: the fast kernels' threads and summation order in portable C++,
//         without SIMD — what "fast" compiles to on a CPU without AVX2.
// Fast:   the same with AVX2 + FMA where the compiler targets it, else Scalar.
// Scalar and Fast give bitwise identical results (see kernels_fast.cpp).
enum class KernelSet { Plain, Scalar, Fast };
struct KernelConfig {
    KernelSet set = KernelSet::Fast;
    int threads = 0;  // 0: all cores
};
extern KernelConfig g_kernels;
void kernels_init(KernelSet set, int threads);  // applies threads to OpenMP
const char* kernel_set_name(KernelSet set);
// What the fast kernels were compiled with: "AVX2+FMA+F16C" or "scalar".
const char* simd_name();

// out[t, r] = sum_c x[t, c] * W[r, c] (+ bias[r])     x: [T, cols]  out: [T, rows]
// The dispatcher picks plain or fast from g_kernels.
void matmul(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T);
// The portable twin of matmul_fast (same threads and summation order, no SIMD).
void matmul_scalar(float* out, const float* x, const Mat& W, const float* bias, int T);

// Attention's two inner loops, dispatched like matmul. The second operand
// is a row of the KV cache: f32, f16 or bf16 (--kv-type).
// vec_dot: sum_i a[i] * b[i].      vec_axpy: y[i] += alpha * x[i].
float vec_dot(const float* a, const void* b, DType bt, int n);
void vec_axpy(float* y, float alpha, const void* x, DType xt, int n);
float vec_dot_plain(const float* a, const void* b, DType bt, int n);
void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n);
// simd false: the scalar twin (bitwise equal to the AVX2 version).
float vec_dot_fast(const float* a, const void* b, DType bt, int n, bool simd);
void vec_axpy_fast(float* y, float alpha, const void* x, DType xt, int n, bool simd);

// Row r of W widened to f32 (embedding lookup, tests).
void mat_row_to_f32(const Mat& W, int r, float* out);

// out = x / rms(x) * w, over n elements.
void rmsnorm(float* out, const float* x, const float* w, int n, float eps);
// In place, numerically stable (subtract the max first).
void softmax(float* x, int n);
// SwiGLU's gate: gate[i] = silu(gate[i]) * up[i].
void swiglu(float* gate, const float* up, int n);
// RoPE, Hugging Face "rotate_half" layout: dimension i is paired with
// i + head_dim/2 (not with i+1). vec holds n_heads heads of head_dim each.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta);
// One attention head for one query over n >= 1 cached positions, the plain
// way (net.cpp calls it under --kernels plain; chapters/attention):
//   scores[j] = softmax_j(q . k_j / sqrt(head_dim))      scores: [n]
//   out       = sum_j scores[j] * v_j                    out, q: [head_dim]
// k_j and v_j are head_dim values of kv_type at keys + j*stride and
// values + j*stride (stride in bytes: one cache row, all KV heads).
void attention_head(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim);
// Its fast twin (kernels_fast.cpp): scores for 4 keys at a time with SIMD;
// simd false runs the scalar twin, bitwise equal.
void attention_head_fast(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                         size_t stride, DType kv_type, int n, int head_dim, bool simd);

// Quantize a bf16/f16/f32 matrix to Q8_0 into `storage`; returns a Mat
// pointing into it.
Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage);
// One row of n floats (n a multiple of 32) to n/32 Q8_0 blocks of 34 bytes:
// the weights above, and the activations the fast Q8_0 matmul multiplies.
const int Q8_BLOCK = 32, Q8_BLOCK_BYTES = 34;
void quantize_row_q8_0(const float* x, int n, uint8_t* out);
// Any matrix converted to f32, f16 or bf16 (the benchmark's weight types).
Mat convert_mat(const Mat& W, DType to, std::vector<uint8_t>& storage);
