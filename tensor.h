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

// Weights per block (1 for the float types) and bytes per block, from the
// block formats' table (defined in quants.cpp, drawn there).
int dtype_block_size(DType t);
int dtype_block_bytes(DType t);
// Bytes of one row of n weights (n a multiple of the block size).
size_t dtype_row_bytes(DType t, int n);
// The 4-, 5- and 6-bit formats (Q4_0 ... Q6_K): every block format but Q8_0,
// which the float drivers also multiply (kernels.cpp:matmul says who runs what).
bool dtype_is_low_bit(DType t);

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
