// common.h — the few things every Lantern file needs: the error type and the
// number formats weights can come in.
//
// Errors: library code throws LanternError with a one-line message that names
// the file and the problem; run.cpp's main() catches it, prints
// "error: <message>" and exits with status 1. Tests can then check that bad
// input is refused without killing the test process.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

struct LanternError : std::runtime_error {
    explicit LanternError(const std::string& msg) : std::runtime_error(msg) {}
};

// printf-style helper that builds the message and throws.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// printf into a std::string (messages, JSON and HTML snippets).
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Seconds on a steady clock: the one clock every timing reads.
double now_s();

// Every file Lantern writes appears whole or not at all. OutFile writes to a
// temporary name beside `path` (the same folder, so the rename is atomic),
// and commit() flushes, fsyncs and renames it over `path`: a run killed
// halfway, or a full disk, leaves the old file (or none) under the name,
// never a truncated one. Destroyed without commit(), the temporary goes.
struct OutFile {
    explicit OutFile(const std::string& path);  // throws LanternError naming path
    ~OutFile();
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;
    void commit();  // throws LanternError naming path ("disk full?")
    FILE* f = nullptr;
    std::string path, tmp;
};
void write_file_whole(const std::string& path, const std::string& bytes);  // OutFile, for bytes in memory
// Refuses (LanternError) an output that is an input of the run: the file
// `in` itself, or any file in the folder `in` (a model's weights may be
// mapped while the output is written).
void refuse_output_over_input(const std::string& out, const std::string& in, const char* what);

// Element types a weight matrix can be stored in. The float types come from
// safetensors or GGUF files; the block-quantized ones (Q8_0 ... Q6_K, GGUF's
// layouts, see quants.cpp) from GGUF files or from --quant at load time.
enum class DType { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };
const char* dtype_name(DType t);

// bf16 is the top half of an f32: widening is a shift, narrowing rounds to
// nearest-even on the dropped 16 bits.
static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  // keep NaN a NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// exp and log of a double, computed by Lantern itself rather than the C
// library's: each libm rounds the last bit its own way (glibc, macOS's and
// the browser's musl differ on a few inputs in a million), and the sampler
// and the lens sum these values, so a different last bit can print a
// different probability or, rarely, pick a different token. These give the
// same bits on every machine (plain double arithmetic, no fused
// multiply-add), within one ulp of the true value (fdlibm's method;
// tests/test_exp_log.cpp compares them with libm). See book/18-browser.md.
double lantern_exp(double x);
double lantern_log(double x);
