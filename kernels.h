// kernels.h — the arithmetic of the forward pass.
//
// Every operation has a plain version (loops a reader can check by hand, the
// ground truth) and, where speed matters, a fast version beside it. The fast
// ones are chosen with --kernels fast (the default); tests check that each
// fast kernel equals its plain twin.
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

enum class KernelSet { Plain, Fast };
struct KernelConfig {
    KernelSet set = KernelSet::Fast;
    int threads = 0;  // 0: all cores
};
extern KernelConfig g_kernels;
void kernels_init(KernelSet set, int threads);  // applies threads to OpenMP

// out[t, r] = sum_c x[t, c] * W[r, c] (+ bias[r])     x: [T, cols]  out: [T, rows]
// The dispatcher picks plain or fast from g_kernels.
void matmul(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T);

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

// Quantize a bf16/f16/f32 matrix to Q8_0 into `storage`; returns a Mat
// pointing into it.
Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage);
