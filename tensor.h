// tensor.h — what the kernels and the block formats both speak: a weight
// matrix (Mat), the bytes its element types take, the line-aligned buffers
// the activations live in, and one matrix product's output (MatmulOut).
// kernels.h (the arithmetic) and quants.h (the block formats) both build on
// this file, and neither needs the other's header to say what a matrix is.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>
#include "common.h"

// From the table of weight types (WeightFormat, below): weights per block (1 for the float types), bytes per
// block, bytes of one row of n weights (n a multiple of the block size).
int dtype_block_size(DType t);
int dtype_block_bytes(DType t);
size_t dtype_row_bytes(DType t, int n);

// A vector whose data starts on a cache line (64 bytes), for the buffers
// the kernels read most: the activations. An AVX-512 load takes 64 bytes;
// from an address 16 bytes past a line (where malloc puts large blocks:
// after its 16-byte header on a fresh page) every such load touches two
// lines, and the prefill tile, which loads several tokens' activations per
// handful of fused multiply-adds, slows down by about a fifth
// (book/A-measurements.md, "Activations on a cache line").
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
// mmapped safetensors file (bf16/f16/f32); for a block format it points to
// the file's blocks (Q8_0: 32 int8 values with one f16 scale each, GGUF's
// block_q8_0 layout; the others in quants.cpp).
struct Mat {
    DType dtype = DType::F32;
    int rows = 0, cols = 0;
    const void* data = nullptr;
    size_t bytes() const { return (size_t)rows * dtype_row_bytes(dtype, cols); }
    // 0: rows one after another as the file stores them. PACK_ROWS (16): the
    // blocks of each 16 rows interleaved for the integer tiles (quants.h:pack_mat).
    int packed = 0;
};

// What a weight type is: its blocks, and how its rows become floats. One
// row per type in one table (kernels.cpp): the float types (f32, f16, bf16)
// are the core's own; the block formats (Q8_0 ... Q6_K, chapter 16) add
// theirs from gguf/quants.cpp, the one place that registers them (README.md:
// the map says why), so nothing here needs that folder's header.
struct WeightFormat {
    DType type;
    const char* name;  // "bf16", "q4_k": --quant and the messages
    int block, bytes;  // weights and bytes per block (a float type: 1 and its size)
    void (*row_to_f32)(const Mat& W, int r, float* out);  // row r of W as floats
    // The reference product out[t, r] = W[r, :] . x[t, :] (+ bias[r]), summed in double.
    void (*matmul_plain)(float* out, const float* x, const Mat& W, const float* bias, int T);
};
const int N_DTYPES = (int)DType::Q6_K + 1;
void register_weight_format(const WeightFormat& f);
// The row of type t; fails with a one-line error for a type no linked file registered.
const WeightFormat& weight_format(DType t);
bool weight_format_known(DType t);
// The 4-, 5- and 6-bit formats (Q4_0 ... Q6_K): every block format but Q8_0,
// which the float drivers also multiply (cpu/kernel_sets.cpp says who runs what).
bool dtype_is_low_bit(DType t);
// Row r of W as f32, whatever its type (the embedding lookup, the lens).
void mat_row_to_f32(const Mat& W, int r, float* out);

// One output of a matrix product: out[t, r] = W[r, :] . x[t, :] (+ bias[r]).
// Several of them that multiply the same x go to one call
// (kernels.h:matmul_many).
struct MatmulOut {
    float* out;          // [T, W->rows]
    const Mat* W;        // W->cols: the width of x
    const float* bias;   // [W->rows], or nullptr
};
const int MAX_MATMUL_OUTS = 4;

// The largest tile of rows x tokens any micro-kernel computes at once
// (kernels.h:SimdKernels): out[r][t] of float[MAX_TILE][MAX_TILE].
const int MAX_TILE = 8;
