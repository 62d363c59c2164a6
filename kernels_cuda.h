// kernels_cuda.h — the GPU backend, as seen from plain C++.
//
// The forward pass can run on an NVIDIA GPU (./run --device cuda, built by
// `make cuda`). The weights are copied to the device once; activations,
// the KV cache and every intermediate stay there; only the logits come
// back, so the CPU sampler is unchanged. Three files:
//
//   kernels_cuda.cu   the kernels, each next to the idea of its CPU twin in
//                     kernels.cpp: a plain one (one thread per output, the
//                     teaching version) and, where speed matters, a fast one
//   net_cuda.cpp      the forward pass on the GPU (the twin of net.cpp's
//                     forward()), device selection, CUDA Graphs, the bench
//   kernels_cuda.h    this header, included by g++-compiled code
//
// The top half below exists in every build: in a CPU-only build
// device_select("cuda") says "this build has no CUDA (make cuda)", so the
// command line and net.cpp need no #ifdef. The bottom half (kernel
// launchers, CUDA_CHECK) exists only when LANTERN_CUDA is defined.
#pragma once
#include <string>
#include "kernels.h"

struct Net;
struct Model;

enum class Device { CPU, CUDA };
extern Device g_device;  // set by device_select; forward() reads it

// "cpu" or "cuda". Throws LanternError with a clear message when the name is
// unknown, the build has no CUDA, or no CUDA device can be found.
void device_select(const std::string& name);
// Whether a GPU can be used now; when not, *why says why ("CPU-only build",
// "no CUDA device found (...)"). Tests use it to skip.
bool cuda_available(std::string* why);

// The forward pass of net.h on the GPU: same arguments, same result (the
// logits, in host memory owned by `net`). forward() calls it when g_device
// is CUDA, after checking its arguments. The first call uploads the weights.
const float* forward_cuda(Net& net, const int* tokens, int T, int pos, bool all_logits);

// Decode steps (T = 1) with --kernels fast are replayed from a CUDA Graph
// captured on the first step; false launches every kernel every time
// (for tests and for measuring what the graph saves).
extern bool g_cuda_graphs;

// ./run bench --device cuda: what the GPU achieves on this model.
struct CudaBenchResult {
    std::string device;         // e.g. "NVIDIA H200 (132 SMs, 141 GB)"
    double copy_gbs = 0;        // device-to-device copy: bytes read + written per second / 1e9
    double prefill_tok_s = 0;   // one batch of prompt_len tokens
    double decode_tok_s = 0;    // T = 1 steps after that prompt
    double decode_bytes = 0;    // bytes one decode step must read: all weights + the KV cache it attends to
    double decode_gbs = 0;      // decode_bytes * decode_tok_s / 1e9: compare with copy_gbs
};
// Runs on the current g_kernels set; needs a GPU (throws otherwise).
CudaBenchResult cuda_bench(const Model& m, int prompt_len, int n_decode);

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
// Device-to-device copy bandwidth in GB/s (bytes read + written), measured
// with `bytes`-sized buffers; the ceiling decode can hope for.
double cuda_copy_bandwidth(size_t bytes);
#endif
