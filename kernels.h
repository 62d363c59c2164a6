// kernels.h — the arithmetic of the forward pass, the plain way
// (book/04-kernels.md).
//
// Every operation here is a plain loop a reader can check by hand: the
// ground truth. Three of them are where the time goes — matmul, swiglu and
// attention_heads — and run through one table of operations, g_ops: the
// plain loops of kernels.cpp until a kernel set is chosen at start
// (--kernels; cpu/kernel_sets.cpp:kernels_init fills the table once), the
// fast drivers of cpu/ after. So no kernel here asks which set is running,
// and the tests compare each set's table with the plain one.
#pragma once
#include <cstring>
#include <vector>
#include "tensor.h"

// The buffers a matrix product or attention works in (the activations as
// Q8_0 blocks or bf16, block sums, attention's transposed keys, keys
// gathered into one run). They grow to the largest call and are reused.
// A caller may pass its own; nullptr takes the calling thread's
// (kernel_scratch()), so two threads can run the kernels at once.
struct KernelScratch {
    LineVector<uint8_t> xq;         // [T][cols/32] Q8_0 blocks (quants.h:quantize_activations)
    LineVector<uint16_t> xb;        // [T][cols] bf16 (the bf16dot tiles)
    std::vector<int32_t> start[4];  // -offset * xs_j per code offset 8, 16, 32, 128 (BlockSums)
    std::vector<float> xsf;         // -xs_j, for the formats with a minimum
    LineVector<float> kt;           // [n_kv_heads][blocks][head_dim][ATT_BLOCK] (attention_heads_fast)
    LineVector<float> parts;        // a decode step's partial softmaxes, [n_heads][chunks][m, l, o...]
    LineVector<uint8_t> gk, gv;     // keys and values in pages, gathered into one run (the plain attention)
    // Where a forward's time goes, for the server's trace (trace_report.h:
    // StepRecord): seconds in weight products and in attention, added up
    // by matmul_many and attention_heads while `timed` is set.
    bool timed = false;
    double matmul_s = 0, attention_s = 0;
};
KernelScratch& kernel_scratch();  // the calling thread's own

// Where one sequence's cached rows (its keys, or its values) lie. In one
// run (a cache of its own, or a sequence inside one page): row j at
// base + j*stride. In pages (serve/kv_pages.h: blocks of positions anywhere
// in a pool): row j at rows[j], and the rows of one page stride apart.
struct KVRows {
    const uint8_t* base = nullptr;
    const uint8_t* const* rows = nullptr;  // one pointer per position, or nullptr: one run from base
    size_t stride = 0;                     // bytes from one position's row to the next within a run
    const uint8_t* at(int j) const { return rows ? rows[j] : base + (size_t)j * stride; }
    // How many of rows j .. j+n-1 follow one another stride apart (at least 1).
    int run(int j, int n) const {
        int r = 1;
        if (!rows) return n;
        while (r < n && rows[j + r] == rows[j] + (size_t)r * stride) r++;
        return r;
    }
};

// The operations a kernel set provides: what g_ops holds.
struct KernelOps {
    const char* name;  // "plain", "avx512", ...: what -v, bench and the report print
    void (*matmul)(const MatmulOut* outs, int n, const float* x, int T, KernelScratch& s);
    void (*swiglu)(float* gate, const float* up, int n);
    void (*attention)(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V, DType kv_type,
                      int n_heads, int n_kv_heads, int T, int n_first, int head_dim, KernelScratch& s);
};
extern const KernelOps PLAIN_OPS;  // kernels.cpp's loops
extern KernelOps g_ops;            // what runs: PLAIN_OPS until kernels_init
const char* kernel_path_name();    // g_ops.name

// out[t, r] = sum_c x[t, c] * W[r, c] (+ bias[r])     x: [T, cols]  out: [T, rows]
void matmul(float* out, const float* x, const Mat& W, const float* bias, int T, KernelScratch* scratch = nullptr);
// The plain product of a float or Q8_0 matrix, summed in double; the other
// block formats' is their own (tensor.h: WeightFormat::matmul_plain).
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T);
// Several matrices that multiply the same x, in one pass: q, k and v of a
// layer; gate and up. Each output gets the bits matmul(out, x, *W, bias, T)
// would give; a fast set runs all of them in one parallel loop, so the
// threads meet once instead of once per matrix (book/12-performance.md).
// (MatmulOut, MAX_MATMUL_OUTS: tensor.h)
void matmul_many(const MatmulOut* outs, int n, const float* x, int T, KernelScratch* scratch = nullptr);

// Attention's two inner loops, the plain way: the second operand is a row of
// the KV cache in f32, f16, bf16 or Q8_0 (--kv-type).
// vec_dot_plain: sum_i a[i] * b[i].      vec_axpy_plain: y[i] += alpha * x[i].
float vec_dot_plain(const float* a, const void* b, DType bt, int n);
void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n);

// out = x / rms(x) * w, over n elements.
void rmsnorm(float* out, const float* x, const float* w, int n, float eps);
// In place, numerically stable (subtract the max first).
void softmax(float* x, int n);
// SwiGLU's gate over n values: gate[i] = silu(gate[i]) * up[i]. g_ops's;
// the plain one is swiglu_plain, with std::exp.
void swiglu(float* gate, const float* up, int n);
void swiglu_plain(float* gate, const float* up, int n);
// RoPE, Hugging Face "rotate_half" layout: dimension i is paired with
// i + head_dim/2 (not with i+1). vec holds n_heads heads of head_dim each.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta);

// One attention head for one query over n >= 1 cached positions
// (chapters/attention):
//   scores[j] = softmax_j(q . k_j / sqrt(head_dim))      scores: [n], all n written
//   out       = sum_j scores[j] * v_j                    out, q: [head_dim]
// k_j and v_j are head_dim values of kv_type at keys + j*stride and
// values + j*stride (stride in bytes: one cache row, all KV heads).
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                          size_t stride, DType kv_type, int n, int head_dim);
// Attention for the T new tokens of one sequence, every head (g_ops's):
// token t (of T) sees the keys 0 .. n_first-1+t. q and out are
// [T, n_heads*head_dim]; query head h reads KV head h / (n_heads/n_kv_heads)
// of the rows K and V. scores: nullptr, or [n_heads, T, n_first-1+T] for a
// trace (the future as zeros).
void attention_heads(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V, DType kv_type,
                     int n_heads, int n_kv_heads, int T, int n_first, int head_dim, KernelScratch* scratch = nullptr);
// The plain one over keys in one run: attention_head_plain per head and
// token. Each (head, token) pair is one output row, computed whole by one
// thread, so the threads it spreads them over change no bit.
void attention_heads_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                           size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first,
                           int head_dim);

// Q8_0: every 32 consecutive values share one scale d = max|x|/127 and are
// stored as round(x/d) in int8: GGUF's block_q8_0, the f16 scale (2 bytes)
// then the 32 codes. It is a weight format (--quant q8_0), the form of the
// activations of every integer product, and a KV cache type (--kv-type
// q8_0): a quarter of f32's bytes, with one rounding of each value.
const int Q8_BLOCK = 32, Q8_BLOCK_BYTES = 34;
// One row of n floats (n a multiple of 32) to n/32 Q8_0 blocks of 34 bytes.
void quantize_row_q8_0(const float* x, int n, uint8_t* out);

// Value c of a row of bf16, f16, f32 or Q8_0 (its block's scale times its
// code) widened to f32.
static inline float widen(DType dt, const void* row, size_t c) {
    switch (dt) {
        case DType::BF16: return bf16_to_f32(((const uint16_t*)row)[c]);
        case DType::F16: return f16_to_f32(((const uint16_t*)row)[c]);
        case DType::Q8_0: {
            const uint8_t* blk = (const uint8_t*)row + c / Q8_BLOCK * Q8_BLOCK_BYTES;
            uint16_t d;
            std::memcpy(&d, blk, 2);
            return f16_to_f32(d) * (float)(int8_t)blk[2 + c % Q8_BLOCK];
        }
        default: return ((const float*)row)[c];
    }
}
// The bytes of n values of a KV cache type (f32, f16, bf16 or Q8_0; n a
// multiple of 32 for Q8_0): one head's row, or one position's.
static inline size_t kv_row_bytes(DType t, int n) {
    switch (t) {
        case DType::F32: return (size_t)n * 4;
        case DType::Q8_0: return (size_t)n / Q8_BLOCK * Q8_BLOCK_BYTES;
        default: return (size_t)n * 2;
    }
}
