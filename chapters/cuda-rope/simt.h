// chapters/cuda-rope/simt.h — just enough of CUDA to run a simple kernel on the CPU.
//
// A CUDA kernel is the body of one thread; the GPU runs it once for every
// thread of a grid of blocks, each thread finding its work from blockIdx,
// blockDim and threadIdx. Here, without a GPU, LAUNCH runs the same body in
// a loop over every block and every thread, setting those three before each
// call. That is faithful for a kernel whose threads never wait for each
// other (no __syncthreads, no shared memory, no warp shuffles), which is the
// kind this exercise writes. The order of the threads is the GPU's to
// choose, so a correct kernel may not depend on it: the checker runs the
// threads first to last and last to first and compares.
//
// Compiled by nvcc instead, the same kernel and the same LAUNCH line are
// real CUDA: __global__, the built-in indices and kernel<<<grid, block>>>.
#pragma once
#ifdef __CUDACC__
#define LAUNCH(kernel, grid, block) kernel<<<(grid), (block)>>>
#else
#include <cstddef>

#define __global__
#define __device__

struct SimtDim {
    unsigned x = 0, y = 0, z = 0;
};
inline SimtDim blockIdx, blockDim, threadIdx, gridDim;
inline bool g_simt_backwards = false;  // run the threads last to first
inline long g_simt_threads = 0;        // threads run so far (the checker reads it)

template <class Kernel>
struct SimtLaunch {
    Kernel kernel;
    unsigned grid, block;
    template <class... Args>
    void operator()(Args... args) const {
        gridDim.x = grid, blockDim.x = block;
        for (unsigned k = 0; k < grid * block; k++) {
            unsigned t = g_simt_backwards ? grid * block - 1 - k : k;
            blockIdx.x = t / block, threadIdx.x = t % block;
            kernel(args...);
            g_simt_threads++;
        }
    }
};
template <class Kernel>
SimtLaunch<Kernel> simt_launch(Kernel k, unsigned grid, unsigned block) {
    return {k, grid, block};
}
#define LAUNCH(kernel, grid, block) simt_launch(kernel, (grid), (block))
#endif

// Enough blocks of `threads` for n threads: the last block may hang over the end.
inline unsigned blocks_for(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }
