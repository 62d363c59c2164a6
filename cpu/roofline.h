// roofline.h — the machine's two ceilings, memory read bandwidth and FMA
// peak, and which CPU they were measured on (cpu/roofline.cpp says how).
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "common.h"

// The median of a set of runs (the mean of the middle two for an even
// count): what every measurement here and in bench.cpp reports, each timed
// with common.h:now_s.
double median(std::vector<double> v);
// "note ..." on stdout when the load average says other programs are running.
void warn_if_busy();
// GB/s of one read of `bytes` at `data` by all the threads.
double read_bandwidth(const void* data, size_t bytes);
// The read bandwidth `./run bench` reports, GB/s: the better of two passes
// (the first may fault pages in) over `data` (the mapped model file) or,
// where data is null, over a buffer of `bytes` allocated each time.
struct Bandwidth {
    const void* data = nullptr;
    size_t bytes = 256u << 20;
    double measure() const;
};
// GFLOP/s of f32 FMAs by all the threads, 8 or 16 floats wide (16: AVX-512
// only), the median of `reps` runs.
double measure_fma_gflops(int reps, int width);
// One line: the CPU's name, vendor, family and model (/proc/cpuinfo) and its
// L2 and L3 sizes (sysfs).
std::string cpu_description();
