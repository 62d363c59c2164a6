// kernels.h — the arithmetic of the forward pass.
//
// Every operation has a plain version (loops a reader can check by hand, the
// ground truth) and, where speed matters, a fast version beside it. The fast
// ones are chosen with --kernels fast (the default); tests check that each
// fast kernel equals its plain twin. The plain kernels live in kernels.cpp,
// the fast drivers and their scalar twin in kernels_fast.cpp, the SIMD
// micro-kernels in kernels_avx2.cpp, kernels_avx512.cpp and kernels_neon.cpp (see
// book/11-performance.md).
#pragma once
#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>
#include "common.h"

// A vector whose data starts on a cache line (64 bytes), for the buffers
// the kernels read most: the activations. An AVX-512 load takes 64 bytes;
// from an address 16 bytes past a line (where malloc puts large blocks:
// after its 16-byte header on a fresh page) every such load touches two
// lines. The AVX-512 prefill tile loads 6 tokens' activations per 24
// fused multiply-adds; on the Intel Xeon (family 6 model 207) it ran
// 100-116 GFLOP/s on one thread from activations 16 bytes past a line and
// 125-129 from aligned ones (build/matmul_speed, 128 tokens), and a
// 512-token prefill of the 0.5B-shaped model on 2 threads gained 2-10%
// (4 runs of each build, alternated).
template <class T> struct LineAlloc {
    using value_type = T;
    LineAlloc() = default;
    template <class U> LineAlloc(const LineAlloc<U>&) {}
    T* allocate(size_t n) {
        // aligned_alloc wants a whole number of lines, and at least one
        void* p = std::aligned_alloc(64, std::max<size_t>(64, (n * sizeof(T) + 63) / 64 * 64));
        if (!p) throw std::bad_alloc();
        return (T*)p;
    }
    void deallocate(T* p, size_t) { std::free(p); }
    template <class U> bool operator==(const LineAlloc<U>&) const { return true; }
    template <class U> bool operator!=(const LineAlloc<U>&) const { return false; }
};
template <class T> using LineVector = std::vector<T, LineAlloc<T>>;

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
    // 0: rows one after another as the file stores them. PACK_ROWS (16): the
    // blocks of each 16 rows interleaved for the integer tiles (quants.h:pack_mat).
    int packed = 0;
};

// The kernel sets (--kernels). One rule for all of them: net.cpp calls the
// operation (matmul, attention_head, ...), which looks at g_kernels and runs
//   *_plain  the reference loops in kernels.cpp (one thread, double sums), or
//   *_fast   the threaded driver in kernels_fast.cpp, given the micro-kernels
//            of one instruction set: the scalar twin (portable C++), AVX2,
//            AVX-512 or NEON (64-bit ARM), each in its own file.
// Every SIMD set sums in the one order of kernels_fast.cpp, so scalar, AVX2
// and AVX-512 give bitwise identical results; "fast" is the best set this
// CPU runs, chosen at run time (cpuid). One set trades exactness for speed
// and says so in its name: bf16dot rounds the activations to bf16 for bf16
// weights (AVX512_BF16's vdpbf16ps), so it is equal only to its own scalar
// twin, BF16DOT_SCALAR_KERNELS, not to the others.
enum class KernelSet { Plain, Scalar, AVX2, AVX512, NEON, BF16Dot, Fast };
struct KernelSetInfo {
    KernelSet set;
    const char* name;  // the --kernels value
    const char* what;  // one line for --help
};
extern const KernelSetInfo KERNEL_SETS[];
extern const int N_KERNEL_SETS;

// The micro-kernels of one instruction set (kernels_fast.cpp drives them:
// threads, tiles, the Q8_0 activations). A tile is rows x tokens dot
// products at once; out[r][t] = row r of W . token t of x.
const int MAX_TILE = 8;
struct SimdKernels {
    const char* name;  // "scalar", "avx2", "avx512": what bench, -v and the report print
    int tile_rows, tile_tokens;        // float weights
    int q8_tile_rows, q8_tile_tokens;  // Q8_0 weights x Q8_0 activations
    // n_tokens <= tile_tokens (the last tokens of a batch come as a smaller tile)
    void (*tile)(DType dt, const uint8_t* const* w, const float* const* x, int n_tokens, int cols,
                 float out[MAX_TILE][MAX_TILE]);
    // nullptr (AVX-512): Q8_0 runs in quants_fast.cpp's VNNI tiles instead,
    // in the same order and bits (kernels.cpp:matmul chooses)
    void (*tile_q8)(const uint8_t* const* w, const uint8_t* const* x, int n_tokens, int n_blocks,
                    float out[MAX_TILE][MAX_TILE]);
    float (*dot)(const float* a, const uint8_t* b, DType bt, int n);  // one attention score
    // y += alpha[j] * x_j for the rows j = 0..n_rows-1 of x, `stride` bytes apart, each element
    // in order of j (one fma per row): the weighted sum of attention's value rows, a block at a time
    void (*axpy)(float* y, const float* alpha, const uint8_t* x, size_t stride, DType xt, int n_rows, int n);
    void (*exp_shift)(float* x, float m, int n);  // x[i] = exp(x[i] - m), x[i] <= m: kernels_fast.cpp's polynomial
    // bf16dot only (nullptr in the other sets): bf16 weights times
    // activations that the driver rounded to bf16 once per matmul
    // (round_bf16: f32_to_bf16_daz of each value), not once per tile, so the
    // tile loads half the bytes and converts nothing.
    void (*round_bf16)(const float* x, uint16_t* out, int n);
    void (*tile_bf16)(const uint8_t* const* w, const uint16_t* const* x, int n_tokens, int cols,
                      float out[MAX_TILE][MAX_TILE]);
    // Prefill attention's two tiles (kernels_attention.cpp:attention_heads_fast);
    // nullptr where a set has none: the driver then runs the scalar twin's
    // att_scores, or axpy once per query, which give the same bits.
    // s[i][j] = q_i . k_j for nq <= ATT_QUERIES queries (q_i at q + i*q_stride)
    // and the ATT_BLOCK keys of kt, stored transposed ([head_dim][ATT_BLOCK]):
    // each score one chain of fmas in order of the dimension, from +0.
    void (*att_scores)(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim);
    // o_i += sum_j p[i][j] v_j for nq queries (o: [nq][head_dim], p: [nq][ATT_BLOCK])
    // over the n_rows value rows at v, `stride` bytes apart: axpy's order.
    void (*att_pv)(float* o, const float* p, int nq, const uint8_t* v, size_t stride, DType vt, int n_rows,
                   int head_dim);
};
// Decode (one token) does little arithmetic per weight byte: what limits it
// is how many cache lines are on their way from memory at once. For one
// token a tile holds one row of each of its stripes (kernels_fast.cpp:
// tile_row_list), so a thread reads a few long streams that the hardware
// prefetcher follows; the float tiles need nothing more. The AVX2 Q8_0
// tile (kernels_avx2.cpp) also asks for the same columns PREFETCH_ROWS rows further
// down each stripe, early enough that they arrive before they are needed
// (the block formats' tiles do likewise: quants_fast.cpp:prefetch_distance).
// A prefetch never faults, past the matrix's end included, and changes no
// result.
const int PREFETCH_ROWS = 8;
static inline void prefetch_ahead(const uint8_t* p, size_t row_bytes) {
    __builtin_prefetch((const void*)((uintptr_t)p + PREFETCH_ROWS * row_bytes));
}
extern const SimdKernels SCALAR_KERNELS;
extern const SimdKernels AVX2_KERNELS;    // defined only on x86-64
extern const SimdKernels AVX512_KERNELS;  // defined only on x86-64
extern const SimdKernels NEON_KERNELS;    // defined only on 64-bit ARM
extern const SimdKernels AVX512_BF16DOT_KERNELS;  // --kernels bf16dot; defined only on x86-64
extern const SimdKernels BF16DOT_SCALAR_KERNELS;  // its scalar twin (vdpbf16ps's order in C++), for the tests
// An activation rounded to bf16 the way vcvtne2ps2bf16 does: to nearest
// even, a subnormal input to a zero of its sign.
uint16_t f32_to_bf16_daz(float x);
bool cpu_has_avx2();    // AVX2 + FMA + F16C
bool cpu_has_avx512();  // AVX-512 F, BW, VL, BF16, VNNI
bool cpu_has_neon();    // built for 64-bit ARM (every such core has NEON)

struct KernelConfig {
    KernelSet set = KernelSet::Fast;  // as asked
    const SimdKernels* simd = nullptr;  // what runs; nullptr under plain
    int threads = 0;  // 0: all cores
};
extern KernelConfig g_kernels;
// Applies threads to OpenMP and resolves "fast" to the best set this CPU
// runs; fails with a one-line error when the CPU lacks the set asked for.
void kernels_init(KernelSet set, int threads);
const char* kernel_set_name(KernelSet set);
// What runs now: "plain", "scalar", "avx2", "avx512", "avx512+bf16dot", ...
const char* kernel_path_name();

// out[t, r] = sum_c x[t, c] * W[r, c] (+ bias[r])     x: [T, cols]  out: [T, rows]
void matmul(float* out, const float* x, const Mat& W, const float* bias, int T);
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T);

// Several matrices that multiply the same x, in one pass: q, k and v of a
// layer; gate and up. Each output gets the bits matmul(out, x, *W, bias, T)
// would give; the fast kernels run all of them in one parallel loop, so the
// threads meet once instead of once per matrix (book/11-performance.md).
struct MatmulOut {
    float* out;          // [T, W->rows]
    const Mat* W;        // W->cols: the width of x
    const float* bias;   // [W->rows], or nullptr
};
const int MAX_MATMUL_OUTS = 4;
void matmul_many(const MatmulOut* outs, int n, const float* x, int T);
void matmul_fast(const MatmulOut* outs, int n, const float* x, int T, const SimdKernels& k);
// Which rows tile number `tile` holds: consecutive ones for a batch, one
// from each of tile_rows stripes for one token (kernels_fast.cpp).
int tile_row_list(int tile, int tile_rows, int n_rows, bool one_token, int rows[MAX_TILE]);

// Attention's two inner loops, the plain way: the second operand is a row of
// the KV cache in f32, f16 or bf16 (--kv-type).
// vec_dot_plain: sum_i a[i] * b[i].      vec_axpy_plain: y[i] += alpha * x[i].
float vec_dot_plain(const float* a, const void* b, DType bt, int n);
void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n);

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
// One attention head for one query over n >= 1 cached positions
// (net.cpp:attention calls it per head and query; chapters/attention):
//   scores[j] = softmax_j(q . k_j / sqrt(head_dim))      scores: [n]
//   out       = sum_j scores[j] * v_j                    out, q: [head_dim]
// k_j and v_j are head_dim values of kv_type at keys + j*stride and
// values + j*stride (stride in bytes: one cache row, all KV heads).
// attention_head's `scores` may be nullptr: only a trace wants the weights
// (the plain kernel then gets a buffer of the dispatcher's; it always
// writes all n scores, then the softmax); the fast one goes over the keys
// in blocks of ATT_BLOCK with an online softmax (a running maximum and sum),
// so its memory does not grow with n.
const int ATT_BLOCK = 64;
void attention_head(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim);
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                          size_t stride, DType kv_type, int n, int head_dim);
void attention_head_fast(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                         size_t stride, DType kv_type, int n, int head_dim, const SimdKernels& k);
// Attention for the T new tokens of one sequence, every head (net.cpp:
// attention): token t (of T) sees the keys 0 .. n_first-1+t. q and out are
// [T, n_heads*head_dim]; query head h reads KV head h / (n_heads/n_kv_heads)
// of keys/values (rows `stride` bytes apart, as attention_head). scores:
// nullptr, or [n_heads, T, n_first-1+T] for a trace (the future as zeros).
// The plain kernel runs attention_head_plain per head and token. The fast
// one runs attention_head_fast for one token (decode); for a batch
// (prefill) it takes ATT_QUERIES queries of one head against ATT_BLOCK keys
// at a time, as small tiles (kernels_attention.cpp:attention_heads_fast): its
// own summation order, equal to plain within float rounding, the same bits
// in every SIMD set, for every thread count, and for a token whichever
// batch it came in.
const int ATT_QUERIES = 8;
void attention_heads(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                     size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim);
void attention_heads_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                           size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first,
                           int head_dim);
void attention_heads_fast(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                          size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first,
                          int head_dim, const SimdKernels& k);
// The fast kernels' exp (kernels_fast.cpp): the scalar twin of every set's
// exp_shift, for x in [-87.33, 0] within 2 ulp of exp; 0 below.
float exp_poly(float x);

// The one summation order's 16 lanes (kernels_fast.cpp) and their fold and
// tree, written out; the SIMD versions add in this order.
const int LANES = 16;
static inline float sum_lanes(const float l[LANES]) {
    float u[8];
    for (int j = 0; j < 8; j++) u[j] = l[j] + l[j + 8];
    return ((u[0] + u[4]) + (u[2] + u[6])) + ((u[1] + u[5]) + (u[3] + u[7]));
}
// One weight of a bf16, f16 or f32 row widened to f32.
static inline float widen(DType dt, const void* row, int c) {
    switch (dt) {
        case DType::BF16: return bf16_to_f32(((const uint16_t*)row)[c]);
        case DType::F16: return f16_to_f32(((const uint16_t*)row)[c]);
        default: return ((const float*)row)[c];
    }
}

// Quantize a bf16/f16/f32 matrix to Q8_0 into `storage`; returns a Mat
// pointing into it.
Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage);
// One row of n floats (n a multiple of 32) to n/32 Q8_0 blocks of 34 bytes:
// the weights above, and the activations the fast Q8_0 matmul multiplies.
const int Q8_BLOCK = 32, Q8_BLOCK_BYTES = 34;
void quantize_row_q8_0(const float* x, int n, uint8_t* out);
// The same bits without a library call per value (kernels_fast.cpp): what
// quantize_activations runs.
void quantize_row_q8_0_fast(const float* x, int n, uint8_t* out);
// The T rows of x [T, cols] as Q8_0 blocks, in one buffer that the next call
// reuses: the activations of the integer matmuls (Q8_0 here, the 4-6-bit
// formats in quants_fast.cpp).
const uint8_t* quantize_activations(const float* x, int T, int cols);
