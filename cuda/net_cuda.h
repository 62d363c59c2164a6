// net_cuda.h — the GPU backend (net_cuda.cpp) as seen from plain C++: the
// choice of device and the GPU bench. The GPU forward pass itself is a
// Backend (net.h) that device_use gives a Net; forward() runs it.
//
// This header exists in every build: in a CPU-only build device_use(CUDA)
// says "this build has no CUDA (make cuda)", so the engine needs no #ifdef. The kernels the GPU pass launches
// are kernels_cuda.h's (CUDA builds only).
#pragma once
#include <cstddef>
#include <string>
#include "device.h"

struct Model;
struct Net;

// Makes `d` the device net's forward passes run on: the GPU's backend for
// CUDA (the CPU's pass is every Net's from net_init). Throws LanternError
// with a clear message when the build has no CUDA, no CUDA device can be
// found, or the Net asks for what the GPU pass does not do (net_cuda.cpp:
// refuse, the one list). engine_load calls it once, after net_init.
void device_use(Net& net, Device d);
// The same for a server, whose steps batch several sequences: on CUDA it
// says why not (after saying so first where the build or machine has none).
void device_use_batched(Device d);
// Whether a GPU can be used now; when not, *why says why ("CPU-only build",
// "no CUDA device found (...)"). Tests use it to skip.
bool cuda_available(std::string* why);

// Decode steps (T = 1) with --kernels fast are replayed from a CUDA Graph
// captured on the first step; false launches every kernel every time
// (for tests and for measuring what the graph saves).
extern bool g_cuda_graphs;

// What the GPU achieves on this model (the GPU bench, tests/test_cuda.cpp).
struct CudaBenchResult {
    std::string device;         // e.g. "NVIDIA H200 (132 SMs, 141 GB)"
    double copy_gbs = 0;        // device-to-device copy: bytes read + written per second / 1e9
    double prefill_tok_s = 0;   // one batch of prompt_len tokens
    double decode_tok_s = 0;    // T = 1 steps after that prompt
    double decode_bytes = 0;    // bytes one decode step must read: all weights + the KV cache it attends to
    double decode_gbs = 0;      // decode_bytes * decode_tok_s / 1e9: compare with copy_gbs
};
// Runs on the kernel set chosen by kernels_init (plain: the GPU's reference kernels); needs a GPU (throws otherwise).
CudaBenchResult cuda_bench(const Model& m, int prompt_len, int n_decode);

#ifdef LANTERN_CUDA
// Device-to-device copy bandwidth in GB/s (bytes read + written), measured
// with `bytes`-sized buffers; the ceiling decode can hope for.
double cuda_copy_bandwidth(size_t bytes);
#endif
