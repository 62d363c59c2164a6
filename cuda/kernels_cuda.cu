// kernels_cuda.cu — the forward pass's arithmetic on the GPU.
//
// Each operation of kernels.cpp appears here as a kernel: a function that
// runs once per thread, thousands of threads at a time. Threads come in
// warps of 32 that execute in lockstep, warps in blocks that share a small
// fast memory (shared memory) and can wait for each other (__syncthreads),
// blocks in a grid that covers the whole output.
//
// As on the CPU there are two versions where speed matters:
//   plain  one thread per output element, a loop a reader can check by hand
//          against kernels.cpp (accumulating in double, like matmul_plain);
//   fast   the layout a GPU wants: neighbouring threads read neighbouring
//          bytes (coalesced loads, 16 bytes at a time), a warp sums its 32
//          partial results with shuffles instead of through memory, and a
//          tile of the inputs is staged in shared memory and reused.
// The tests (tests/test_cuda.cpp) check both against the CPU plain kernels.
//
// Weights stay in their file format (bf16, f16 or f32) and are widened to
// f32 as they are read; activations are f32 throughout.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifndef LANTERN_CUDA
#define LANTERN_CUDA  // this file is CUDA whatever the flags say: declare the launchers
#endif
#include "cuda/kernels_cuda.h"

// ---------------------------------------------------------------------------
// Helpers

// One weight as f32, whatever its storage type (the GPU twin of kernels.h:widen).
__device__ inline float to_f32(float v) { return v; }
__device__ inline float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_f32(__half v) { return __half2float(v); }

// Calls fn with a value of the C++ type that stores W's elements, so one
// templated kernel serves every weight format. Q8_0 stays on the CPU.
template <class Fn>
static void by_dtype(DType t, Fn fn) {
    switch (t) {
        case DType::F32: fn(float{}); break;
        case DType::BF16: fn(__nv_bfloat16{}); break;
        case DType::F16: fn(__half{}); break;
        default: fail("CUDA kernels take f32, bf16 or f16 weights, not %s (drop --quant with --device cuda)", dtype_name(t));
    }
}

static unsigned blocks_for(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// Sum of one value from each of the 32 lanes of a warp, in 5 steps: lane i
// adds the value of lane i^16, then i^8, i^4, i^2, i^1. After step k every
// lane holds the sum of a group of 2^k lanes; after step 5, of all 32. No
// shared memory, no __syncthreads: the values move between registers.
__device__ inline float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
__device__ inline float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// The whole block's sum (or max), returned to every thread: each warp
// reduces its own 32 values, warp leaders meet in shared memory, and every
// warp reduces those (at most 32) partial results once more.
// blockDim.x must be a multiple of 32; every thread of the block must call it.
template <bool MAX>
__device__ float block_reduce(float v) {
    __shared__ float partial[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < n_warps ? partial[lane] : (MAX ? -INFINITY : 0.0f);
    v = MAX ? warp_max(v) : warp_sum(v);
    __syncthreads();  // partial[] may be reused by the next call
    return v;
}

// ---------------------------------------------------------------------------
// Embedding lookup: one thread per output float. Neighbouring threads copy
// neighbouring elements of one row, so this is already coalesced; there is
// no fast twin.
template <class Wt>
__global__ void embed_kernel(float* x, const int* tokens, const Wt* E, int T, int H) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * H) return;
    int t = (int)(i / H), c = (int)(i % H);
    x[i] = to_f32(E[(size_t)tokens[t] * H + c]);
}

void cuda_embed(float* x, const int* tokens, const Mat& E, int T, cudaStream_t s) {
    by_dtype(E.dtype, [&](auto tag) {
        using Wt = decltype(tag);
        embed_kernel<Wt><<<blocks_for((size_t)T * E.cols, 256), 256, 0, s>>>(x, tokens, (const Wt*)E.data, T, E.cols);
    });
    CUDA_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------------------
// RMSNorm. Plain: one thread per row does the whole row, like kernels.cpp.
__global__ void rmsnorm_plain_kernel(float* out, const float* x, const float* w, int T, int n, float eps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float* xt = x + (size_t)t * n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)xt[i] * xt[i];
    float scale = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[(size_t)t * n + i] = xt[i] * scale * w[i];
}

// Fast: one block per row. Thread j squares elements j, j+256, ... (so a
// warp reads 32 consecutive floats at a time), the block sums the partial
// sums, and every thread scales its own elements.
__global__ void rmsnorm_fast_kernel(float* out, const float* x, const float* w, int n, float eps) {
    const float* xt = x + (size_t)blockIdx.x * n;
    float* ot = out + (size_t)blockIdx.x * n;
    float ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xt[i] * xt[i];
    ss = block_reduce<false>(ss);
    float scale = rsqrtf(ss / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) ot[i] = xt[i] * scale * w[i];
}

void cuda_rmsnorm_plain(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s) {
    rmsnorm_plain_kernel<<<blocks_for(T, 64), 64, 0, s>>>(out, x, w, T, n, eps);
    CUDA_CHECK(cudaGetLastError());
}
void cuda_rmsnorm_fast(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s) {
    rmsnorm_fast_kernel<<<T, 256, 0, s>>>(out, x, w, n, eps);
    CUDA_CHECK(cudaGetLastError());
}
void cuda_rmsnorm(float* out, const float* x, const float* w, int T, int n, float eps, cudaStream_t s) {
    if (g_kernels.set == KernelSet::Plain) cuda_rmsnorm_plain(out, x, w, T, n, eps, s);
    else cuda_rmsnorm_fast(out, x, w, T, n, eps, s);
}

// ---------------------------------------------------------------------------
// Matmul, plain: one thread per output out[t, r], the loop of matmul_plain.
// Correct, and slow for a reason worth seeing: the 32 threads of a warp
// compute 32 neighbouring rows r, so at each step c they read 32 weights
// `cols` elements apart — 32 separate memory transactions where one would do.
template <class Wt>
__global__ void matmul_plain_kernel(float* out, const float* x, const Wt* W, const float* bias, int T, int rows,
                                    int cols) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * rows) return;
    int t = (int)(i / rows), r = (int)(i % rows);
    const float* xt = x + (size_t)t * cols;
    const Wt* w = W + (size_t)r * cols;
    double sum = bias ? bias[r] : 0.0;
    for (int c = 0; c < cols; c++) sum += (double)to_f32(w[c]) * xt[c];
    out[i] = (float)sum;
}

void cuda_matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s) {
    by_dtype(W.dtype, [&](auto tag) {
        using Wt = decltype(tag);
        matmul_plain_kernel<Wt><<<blocks_for((size_t)T * W.rows, 128), 128, 0, s>>>(out, x, (const Wt*)W.data, bias, T,
                                                                                     W.rows, W.cols);
    });
    CUDA_CHECK(cudaGetLastError());
}

// Matvec (decode, T = 1): one warp per output row, 8 rows per block. The
// warp walks its row 16 bytes per lane per step — 8 bf16 weights, and 32
// lanes together read 512 consecutive bytes, which the memory system
// serves as a few full transactions. Each lane keeps a partial sum; a
// warp_sum adds the 32 of them. Decode reads every weight exactly once per
// token, so this kernel's speed is the memory bandwidth (see the chapter).
// `vec` says the 16-byte path is allowed: cols is a multiple of the
// weights per 16 bytes and W and x are 16-byte aligned; otherwise lanes
// read one weight each, still side by side.
constexpr int MATVEC_WARPS = 8;

template <class Wt>
__global__ void matvec_kernel(float* out, const float* x, const Wt* W, const float* bias, int rows, int cols,
                              bool vec) {
    int lane = threadIdx.x % 32;
    int r = blockIdx.x * MATVEC_WARPS + threadIdx.x / 32;
    if (r >= rows) return;
    const Wt* w = W + (size_t)r * cols;
    float sum = 0;
    if (vec) {
        constexpr int V = 16 / sizeof(Wt);  // weights per 16-byte load: 8 (bf16, f16) or 4 (f32)
        const uint4* w16 = (const uint4*)w;
        const float4* x16 = (const float4*)x;
        for (int b = lane; b < cols / V; b += 32) {
            uint4 pack = w16[b];  // one 16-byte load
            const Wt* wv = (const Wt*)&pack;
            for (int j = 0; j < V; j += 4) {
                float4 xv = x16[(b * V + j) / 4];
                sum += to_f32(wv[j]) * xv.x + to_f32(wv[j + 1]) * xv.y + to_f32(wv[j + 2]) * xv.z +
                       to_f32(wv[j + 3]) * xv.w;
            }
        }
    } else {
        for (int c = lane; c < cols; c += 32) sum += to_f32(w[c]) * x[c];
    }
    sum = warp_sum(sum);
    if (lane == 0) out[r] = sum + (bias ? bias[r] : 0.0f);
}

void cuda_matvec(float* out, const float* x, const Mat& W, const float* bias, cudaStream_t s) {
    by_dtype(W.dtype, [&](auto tag) {
        using Wt = decltype(tag);
        int per16 = 16 / (int)sizeof(Wt);
        bool vec = W.cols % per16 == 0 && (uintptr_t)W.data % 16 == 0 && (uintptr_t)x % 16 == 0;
        matvec_kernel<Wt><<<blocks_for(W.rows, MATVEC_WARPS), MATVEC_WARPS * 32, 0, s>>>(
            out, x, (const Wt*)W.data, bias, W.rows, W.cols, vec);
    });
    CUDA_CHECK(cudaGetLastError());
}

// Tiled GEMM (prefill, T > 1): out [T, rows] = x [T, cols] W^T.
// A block computes a 64x64 tile of out: 64 tokens by 64 weight rows. It
// walks the shared dimension 16 columns at a time; each step the 256
// threads copy a 64x16 piece of x and of W into shared memory (widening
// the weights to f32 once), wait, and then every thread multiplies out its
// own 4x4 outputs from shared memory. Each weight read from main memory
// now serves 64 tokens instead of one — prefill becomes compute-bound.
// Thread (tx, ty) owns tokens ty + 16i and rows tx + 16j (i, j < 4), so
// the 16 threads of a half-warp read 16 consecutive floats of a tile row:
// no two hit the same shared-memory bank. The +1 column of padding does
// the same for the stores, which walk down columns.
constexpr int TILE_M = 64, TILE_N = 64, TILE_K = 16;

template <class Wt>
__global__ void gemm_tiled_kernel(float* out, const float* x, const Wt* W, const float* bias, int T, int rows,
                                  int cols) {
    __shared__ float xs[TILE_K][TILE_M + 1];  // xs[k][m] = x[m0 + m, k0 + k]
    __shared__ float ws[TILE_K][TILE_N + 1];  // ws[k][n] = W[n0 + n, k0 + k]
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int m0 = blockIdx.y * TILE_M, n0 = blockIdx.x * TILE_N;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < cols; k0 += TILE_K) {
        // 64x16 = 1024 elements per tile, 4 per thread; consecutive threads
        // take consecutive columns of a row (64 contiguous bytes of x).
        for (int p = 0; p < 4; p++) {
            int idx = threadIdx.x + 256 * p, row = idx / TILE_K, k = idx % TILE_K, c = k0 + k;
            int t = m0 + row, n = n0 + row;
            xs[k][row] = (t < T && c < cols) ? x[(size_t)t * cols + c] : 0.0f;
            ws[k][row] = (n < rows && c < cols) ? to_f32(W[(size_t)n * cols + c]) : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE_K; k++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) a[i] = xs[k][ty + 16 * i];
            for (int j = 0; j < 4; j++) b[j] = ws[k][tx + 16 * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();  // before the next step overwrites the tiles
    }
    for (int i = 0; i < 4; i++) {
        int t = m0 + ty + 16 * i;
        if (t >= T) continue;
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (n < rows) out[(size_t)t * rows + n] = acc[i][j] + (bias ? bias[n] : 0.0f);
        }
    }
}

void cuda_gemm_tiled(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s) {
    dim3 grid(blocks_for(W.rows, TILE_N), blocks_for(T, TILE_M));
    by_dtype(W.dtype, [&](auto tag) {
        using Wt = decltype(tag);
        gemm_tiled_kernel<Wt><<<grid, 256, 0, s>>>(out, x, (const Wt*)W.data, bias, T, W.rows, W.cols);
    });
    CUDA_CHECK(cudaGetLastError());
}

void cuda_matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s) {
    if (T == 1) cuda_matvec(out, x, W, bias, s);
    else cuda_gemm_tiled(out, x, W, bias, T, s);
}
void cuda_matmul(float* out, const float* x, const Mat& W, const float* bias, int T, cudaStream_t s) {
    if (g_kernels.set == KernelSet::Plain) cuda_matmul_plain(out, x, W, bias, T, s);
    else cuda_matmul_fast(out, x, W, bias, T, s);
}

// ---------------------------------------------------------------------------
// RoPE, Hugging Face layout (pairs i, i + head_dim/2), one thread per pair.
// The angle is computed in double, as in kernels.cpp:apply_rope, so both
// sides agree at large positions. Only one version: it touches T*q_dim
// floats, nothing next to the matmuls.
__global__ void rope_kernel(float* vec, int T, int n_heads, int head_dim, const int* step, float theta) {
    int half = head_dim / 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)T * n_heads * half) return;
    int i = (int)(idx % half), h = (int)(idx / half % n_heads), t = (int)(idx / half / n_heads);
    double freq = pow((double)theta, -2.0 * i / head_dim);
    double angle = (double)(step[0] + t) * freq;
    float c = (float)cos(angle), s = (float)sin(angle);
    float* v = vec + ((size_t)t * n_heads + h) * head_dim;
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

void cuda_rope(float* vec, int T, int n_heads, int head_dim, const int* step, float theta, cudaStream_t s) {
    size_t n = (size_t)T * n_heads * (head_dim / 2);
    rope_kernel<<<blocks_for(n, 256), 256, 0, s>>>(vec, T, n_heads, head_dim, step, theta);
    CUDA_CHECK(cudaGetLastError());
}

// The new keys and values go into the cache at positions step[0] + t.
__global__ void kv_store_kernel(float* kc, float* vc, const float* k, const float* v, int T, int kv_dim,
                                const int* step) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * kv_dim) return;
    size_t dst = (size_t)step[0] * kv_dim + i;  // row pos + t, since i = t * kv_dim + d
    kc[dst] = k[i];
    vc[dst] = v[i];
}

void cuda_kv_store(float* k_cache, float* v_cache, const float* k, const float* v, int T, int kv_dim,
                   const int* step, cudaStream_t s) {
    kv_store_kernel<<<blocks_for((size_t)T * kv_dim, 256), 256, 0, s>>>(k_cache, v_cache, k, v, T, kv_dim, step);
    CUDA_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------------------
// Attention. Plain: one thread per (head, token) does everything net.cpp's
// attention() does for it — scores, softmax, weighted sum of values —
// writing its scores to the scratch row scores[h, t, :].
__global__ void attention_plain_kernel(float* out, const float* q, const float* kc, const float* vc, float* scores,
                                       int T, int n_heads, int n_kv_heads, int hd, int ld, const int* step) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n_heads * T) return;
    int h = idx / T, t = idx % T;
    int pos = step[0], first = step[1];
    int n = pos + t + 1 - first;  // keys first .. pos+t
    int q_dim = n_heads * hd, kv_dim = n_kv_heads * hd, kvh = h / (n_heads / n_kv_heads);
    float scale = 1.0f / sqrtf((float)hd);
    const float* qv = q + (size_t)t * q_dim + h * hd;
    float* s = scores + ((size_t)h * T + t) * ld;
    float max = -INFINITY;
    for (int j = 0; j < n; j++) {
        const float* k = kc + (size_t)(first + j) * kv_dim + kvh * hd;
        float dot = 0;
        for (int i = 0; i < hd; i++) dot += qv[i] * k[i];
        s[j] = dot * scale;
        max = fmaxf(max, s[j]);
    }
    double sum = 0;
    for (int j = 0; j < n; j++) {
        s[j] = expf(s[j] - max);
        sum += s[j];
    }
    float inv = (float)(1.0 / sum);
    float* o = out + (size_t)t * q_dim + h * hd;
    for (int i = 0; i < hd; i++) {
        float acc = 0;
        for (int j = 0; j < n; j++) acc += s[j] * vc[(size_t)(first + j) * kv_dim + kvh * hd + i];
        o[i] = acc * inv;
    }
}

// Fast: one block of 256 threads per (head, token).
//   1. scores: warp w takes keys w, w+8, ...; its lanes split the head's
//      dimensions, so a key row is read as consecutive floats, and a
//      warp_sum makes the dot product;
//   2. softmax: block-wide max, then exp and a block-wide sum;
//   3. output: thread j handles dimension j % hd for the keys of slice
//      j / hd (256 / hd slices), and the slices' partial sums are added
//      in shared memory.
// Decode has only n_heads blocks here, too few to fill a big GPU; at short
// contexts that is fine because the matvecs dominate (see the chapter).
constexpr int ATT_THREADS = 256;

__global__ void attention_fast_kernel(float* out, const float* q, const float* kc, const float* vc, float* scores,
                                      int T, int n_heads, int n_kv_heads, int hd, int ld, const int* step) {
    __shared__ float qs[ATT_THREADS];
    __shared__ float part[ATT_THREADS];
    int h = blockIdx.x / T, t = blockIdx.x % T;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = ATT_THREADS / 32;
    int pos = step[0], first = step[1];
    int n = pos + t + 1 - first;
    int q_dim = n_heads * hd, kv_dim = n_kv_heads * hd, kvh = h / (n_heads / n_kv_heads);
    float scale = 1.0f / sqrtf((float)hd);
    const float* k0 = kc + (size_t)first * kv_dim + kvh * hd;  // key of position first, this head
    const float* v0 = vc + (size_t)first * kv_dim + kvh * hd;
    float* s = scores + ((size_t)h * T + t) * ld;
    for (int i = threadIdx.x; i < hd; i += ATT_THREADS) qs[i] = q[(size_t)t * q_dim + h * hd + i];
    __syncthreads();

    for (int j = warp; j < n; j += n_warps) {
        const float* k = k0 + (size_t)j * kv_dim;
        float dot = 0;
        for (int i = lane; i < hd; i += 32) dot += qs[i] * k[i];
        dot = warp_sum(dot);
        if (lane == 0) s[j] = dot * scale;
    }
    __syncthreads();  // all scores written (global memory, same block)

    float max = -INFINITY;
    for (int j = threadIdx.x; j < n; j += ATT_THREADS) max = fmaxf(max, s[j]);
    max = block_reduce<true>(max);
    float sum = 0;
    for (int j = threadIdx.x; j < n; j += ATT_THREADS) {
        float e = expf(s[j] - max);
        s[j] = e;
        sum += e;
    }
    sum = block_reduce<false>(sum);  // its __syncthreads also publishes the exps

    int slices = ATT_THREADS / hd, d = threadIdx.x % hd, slice = threadIdx.x / hd;
    if (slice < slices) {
        float acc = 0;
        for (int j = slice; j < n; j += slices) acc += s[j] * v0[(size_t)j * kv_dim + d];
        part[threadIdx.x] = acc;
    }
    __syncthreads();
    if (threadIdx.x < hd) {
        float acc = 0;
        for (int p = 0; p < slices; p++) acc += part[p * hd + threadIdx.x];
        out[(size_t)t * q_dim + h * hd + threadIdx.x] = acc / sum;
    }
}

static void check_heads(int n_heads, int n_kv_heads, int head_dim) {
    if (n_kv_heads <= 0 || n_heads % n_kv_heads) fail("attention: %d heads do not split into %d KV heads", n_heads, n_kv_heads);
    if (head_dim > ATT_THREADS) fail("CUDA attention supports head_dim up to %d, not %d", ATT_THREADS, head_dim);
}

void cuda_attention_plain(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                          int T, int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s) {
    check_heads(n_heads, n_kv_heads, head_dim);
    attention_plain_kernel<<<blocks_for((size_t)n_heads * T, 64), 64, 0, s>>>(out, q, k_cache, v_cache, scores, T,
                                                                              n_heads, n_kv_heads, head_dim, ld, step);
    CUDA_CHECK(cudaGetLastError());
}
void cuda_attention_fast(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores,
                         int T, int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s) {
    check_heads(n_heads, n_kv_heads, head_dim);
    attention_fast_kernel<<<n_heads * T, ATT_THREADS, 0, s>>>(out, q, k_cache, v_cache, scores, T, n_heads,
                                                              n_kv_heads, head_dim, ld, step);
    CUDA_CHECK(cudaGetLastError());
}
void cuda_attention(float* out, const float* q, const float* k_cache, const float* v_cache, float* scores, int T,
                    int n_heads, int n_kv_heads, int head_dim, int ld, const int* step, cudaStream_t s) {
    if (g_kernels.set == KernelSet::Plain)
        cuda_attention_plain(out, q, k_cache, v_cache, scores, T, n_heads, n_kv_heads, head_dim, ld, step, s);
    else cuda_attention_fast(out, q, k_cache, v_cache, scores, T, n_heads, n_kv_heads, head_dim, ld, step, s);
}

// ---------------------------------------------------------------------------
// Elementwise: one thread per element, neighbours touching neighbours —
// already the fastest layout, so no fast twins.
__global__ void swiglu_kernel(float* gate, const float* up, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i];
    gate[i] = g / (1.0f + expf(-g)) * up[i];
}
__global__ void add_kernel(float* x, const float* y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

void cuda_swiglu(float* gate, const float* up, size_t n, cudaStream_t s) {
    swiglu_kernel<<<blocks_for(n, 256), 256, 0, s>>>(gate, up, n);
    CUDA_CHECK(cudaGetLastError());
}
void cuda_add(float* x, const float* y, size_t n, cudaStream_t s) {
    add_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, y, n);
    CUDA_CHECK(cudaGetLastError());
}
