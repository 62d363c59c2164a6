// roofline.cpp — the machine's two ceilings, measured: how many bytes per
// second the cores read from memory, and how many fused multiply-adds per
// second they do. Decode reads every weight once per token, so bandwidth /
// bytes per token is its ceiling; prefill reuses each weight for many
// tokens, so its ceiling is FLOP/s / FLOPs per token (book/12-performance.md
// draws the two as a roofline). And which CPU it was: a speed means nothing
// without its machine. `./run bench` (bench.cpp:cmd_bench) prints all three
// before it measures the model.
#include "cpu/roofline.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <omp.h>
#include "logging.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif


double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Other programs running at the same time take cores and memory bandwidth,
// and threads that wait for each other suffer most: say so up front.
void warn_if_busy() {
    if (!busy_note().empty()) printf("note       %s\n", busy_note().c_str());
}

// Read bandwidth: the threads add up the 32-bit words of a buffer far
// larger than the last-level cache, each its own contiguous part (as the
// matmul threads read their rows), with 4 independent 8-wide integer
// accumulators so that only memory can be the limit. The buffer is the
// mmapped model file itself when it is large enough (no extra memory, and
// the same pages decode streams), else 256 MB allocated for the purpose.
double read_bandwidth(const void* data, size_t bytes) {
    const uint32_t* p = (const uint32_t*)data;
    size_t n = bytes / 4 / 32 * 32;
    uint32_t total = 0;
    double t0 = now_s();
    #pragma omp parallel reduction(+ : total)
    {
#if defined(__AVX2__)
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        #pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 32) {
            a0 = _mm256_add_epi32(a0, _mm256_loadu_si256((const __m256i*)(p + i)));
            a1 = _mm256_add_epi32(a1, _mm256_loadu_si256((const __m256i*)(p + i + 8)));
            a2 = _mm256_add_epi32(a2, _mm256_loadu_si256((const __m256i*)(p + i + 16)));
            a3 = _mm256_add_epi32(a3, _mm256_loadu_si256((const __m256i*)(p + i + 24)));
        }
        uint32_t lanes[8];
        _mm256_storeu_si256((__m256i*)lanes, _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)));
        for (uint32_t v : lanes) total += v;
#else
        uint32_t acc[32] = {0};  // the compiler vectorizes this form
        #pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 32)
            for (int j = 0; j < 32; j++) acc[j] += p[i + j];
        for (uint32_t v : acc) total += v;
#endif
    }
    double dt = now_s() - t0;
    volatile uint32_t sink = total;
    (void)sink;
    return n * 4.0 / dt / 1e9;
}


double Bandwidth::measure() const {
    std::vector<uint32_t> own;
    const void* p = data;
    if (!p) {
        own.assign(bytes / 4, 1);
        p = own.data();
    }
    return std::max(read_bandwidth(p, bytes), read_bandwidth(p, bytes));
}

// FMA throughput: 12 independent chains of fused multiply-adds per thread,
// 8 floats wide (AVX2) or 16 (AVX-512). A core with two FMA units of 4
// cycles' latency keeps both busy with 8 chains in flight; 12 leave margin.
// Peak = 2 units x 8 floats x 2 FLOPs = 32 FLOP per cycle per core. A CPU
// whose units are 512 bits wide does twice that with zmm registers, and
// the avx512 kernels use them: their %FMA is against the 16-wide loop, or
// it would overstate by 2x. (A core that splits a zmm FMA in two halves
// measures the same in both loops.)
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float fma_chains_16(long iters) {
    __m512 acc[12];
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++) acc[j] = _mm512_set1_ps(j * 1e-3f);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
    }
    float total = 0, lanes[16];
    for (int j = 0; j < 12; j++) {
        _mm512_storeu_ps(lanes, acc[j]);
        for (float v : lanes) total += v;
    }
    return total;
}
#endif

static float fma_chains_8(long iters) {
    float total = 0;
#if defined(__AVX2__) && defined(__FMA__)
    __m256 acc[12];
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++) acc[j] = _mm256_set1_ps(j * 1e-3f);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
    }
    float lanes[8];
    for (int j = 0; j < 12; j++) {
        _mm256_storeu_ps(lanes, acc[j]);
        for (float v : lanes) total += v;
    }
#else
    float acc[96];
    for (int j = 0; j < 96; j++) acc[j] = j * 1e-3f;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 96; j++) acc[j] = std::fma(acc[j], 0.999999f, 1e-7f);
    for (float v : acc) total += v;
#endif
    return total;
}

double measure_fma_gflops(int reps, int width) {
    const long iters = 20000000 * 8 / width;  // the same FLOPs either way
    std::vector<double> gf;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        float total = 0;
        #pragma omp parallel reduction(+ : total)
        {
#if defined(__x86_64__)
            if (width == 16) total += fma_chains_16(iters);
            else
#endif
                total += fma_chains_8(iters);
        }
        double dt = now_s() - t0;
        volatile float sink = total;
        (void)sink;
        gf.push_back(2.0 * 12 * width * (double)iters * omp_get_max_threads() / dt / 1e9);
    }
    return median(gf);
}

// Which CPU the numbers came from: its name, family and model as the
// kernel reports them (/proc/cpuinfo), and its caches (sysfs). Speeds
// mean little without it: the same cloud VM type can be a different CPU
// from one day to the next.
std::string cpu_description() {
    auto chomp = [](std::string s) {  // without the line's end and trailing spaces
        while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
        return s;
    };
    std::string name, vendor, family, model;
    if (FILE* f = fopen("/proc/cpuinfo", "r")) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            std::string l = line;
            size_t colon = l.find(':');
            if (colon == std::string::npos) {
                if (!name.empty()) break;  // the first CPU's block is enough
                continue;
            }
            std::string key = l.substr(0, l.find_last_not_of(" \t", colon - 1) + 1);
            std::string value = chomp(l.substr(std::min(l.size(), colon + 2)));
            if (key == "model name" && name.empty()) name = value;
            else if (key == "vendor_id" && vendor.empty()) vendor = value;
            else if (key == "cpu family" && family.empty()) family = value;
            else if (key == "model" && model.empty()) model = value;
        }
        fclose(f);
    }
    auto cache = [&](int index) {
        std::string size;
        if (FILE* f = fopen(("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size").c_str(), "r")) {
            char buf[64] = {0};
            if (fgets(buf, sizeof buf, f)) size = chomp(buf);
            fclose(f);
        }
        long kb = atol(size.c_str());  // sysfs says e.g. "2048K"
        if (kb >= 1024 && kb % 1024 == 0 && size.back() == 'K') size = std::to_string(kb / 1024) + " MB";
        return size;
    };
    std::string out = name.empty() ? "unknown CPU" : name;
    if (!vendor.empty()) out += " (" + vendor + (family.empty() ? "" : ", family " + family + " model " + model) + ")";
    std::string l2 = cache(2), l3 = cache(3);
    if (!l2.empty()) out += "; L2 " + l2 + " a core";
    if (!l3.empty()) out += ", L3 " + l3;
    return out;
}
