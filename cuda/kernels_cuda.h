// kernels_cuda.h — the CUDA kernels' interface (kernels_cuda.cu), for the
// GPU forward pass (net_cuda.cpp) and its tests.
//
// The forward pass can run on an NVIDIA GPU (./run --device cuda, built by
// `make cuda`). The weights are copied to the device once; activations,
// the KV cache and every intermediate stay there; only the logits come
// back, so the CPU sampler is unchanged. Four files:
//
//   kernels_cuda.cu   the kernels, each next to the idea of its CPU twin in
//                     kernels.cpp: a plain one (one thread per output, the
//                     teaching version) and, where speed matters, a fast one
//   kernels_cuda.h    this header: their launchers, CUDA_CHECK
//   net_cuda.cpp      the forward pass on the GPU (the twin of net.cpp's
//                     forward()), device selection, CUDA Graphs, the bench
//   net_cuda.h        what the engine sees of it, in every build (and
//                     net.h: the Backend it gives a Net)
//
// Everything below exists only when LANTERN_CUDA is defined; a CPU-only
// build includes nothing from here.
#pragma once
#include "cpu/kernel_sets.h"  // g_kernels: the plain set runs the GPU's reference kernels too

#ifdef LANTERN_CUDA
#include <cuda_runtime.h>  // with g++ too; its templates let cudaMalloc take float** etc.

// Every CUDA call goes through this: a failure becomes a LanternError that
// names the call, the file:line and CUDA's own words.
#define CUDA_CHECK(call)                                                                                \
    do {                                                                                                \
        cudaError_t err_ = (call);                                                                      \
        if (err_ != cudaSuccess) fail("CUDA: %s failed at %s:%d: %s", #call, __FILE__, __LINE__,       \
                                      cudaGetErrorString(err_));                                        \
    } while (0)

// --- kernel launchers (kernels_cuda.cu) ------------------------------------
// All pointers are device pointers; a Mat's data too. Each call only queues
// work on `s` and checks that the launch was accepted. Shapes as in kernels.h.
// `step` points to two ints in device memory: {pos, first} — the position of
// token 0 and the first position of the sequence. Reading them on the device
// (not passing them as arguments) is what lets one CUDA Graph serve every
// decode step.

// x[t, :] = E[tokens[t], :]                                   x: [T, hidden]
void cuda_embed(float* x, const int* tokens, const Mat& E, int T, cudaStream_t s);
// out[t, :] = rmsnorm(x[t, :]) * w                            [T, n]
void cuda_rmsnorm(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s);
void cuda_rmsnorm_plain(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s);
void cuda_rmsnorm_fast(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s);
// out[t, r] = sum_c x[t, c] W[r, c] (+ bias[r])               x: [T, cols] out: [T, rows]
// fast = matvec for T = 1 (decode), tiled GEMM otherwise (prefill).
void cuda_matmul(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s);
void cuda_matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s);
void cuda_matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s);
void cuda_matvec(float* out, const float* x, const Mat& W, const float* bias, cudaStream_t s);  // T = 1
void cuda_gemm_tiled(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s);
// RoPE on vec [T, n_heads*head_dim]; token t is at position step[0] + t.
void cuda_rope(float* vec, int T, int n_heads, int head_dim, const int* step, float theta, cudaStream_t s);
// Copy k, v [T, kv_dim] into one layer's cache [n_ctx, kv_dim] at positions step[0]...
void cuda_kv_store(float* k_cache, float* v_cache, const float* k, const float* v, int T, int kv_dim,
                   const int* step, cudaStream_t s);
// Causal grouped-query attention of q [T, n_heads*hd] over one layer's cache
// (positions step[1] .. step[0]+t for token t); out [T, n_heads*hd].
// scores: scratch [n_heads, T, ld] with ld >= step[0] + T - step[1].
void cuda_attention(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores, int T,
                    int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s);
void cuda_attention_plain(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                          int T, int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s);
void cuda_attention_fast(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                         int T, int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s);
// gate[i] = silu(gate[i]) * up[i]                             n elements
void cuda_swiglu(float* gate, const float* up, size_t n, cudaStream_t s);
// x[i] += y[i]                                                the residual add
void cuda_add(float* x, const float* y, size_t n, cudaStream_t s);
#endif
