// fuzz.h — what the libFuzzer targets in tests/fuzz/ share. Each target is
// one small file with LLVMFuzzerTestOneInput: it hands the fuzzer's bytes to
// one reader of untrusted input and checks that the only way out is a
// result or a LanternError (anything else -- a crash, a sanitizer report,
// a foreign exception, a broken invariant -- stops the fuzzer and saves the
// input). `make fuzz` runs them; tests/check_fuzz.sh runs them briefly.
#pragma once
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "common.h"
#include "logging.h"

// Targets that read files get them here: one folder per process.
static inline std::string fuzz_dir() {
    static std::string dir = [] {
        std::string d = (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + std::string("/lantern-fuzz-") + std::to_string(getpid());
        std::string cmd = "mkdir -p '" + d + "'";
        if (system(cmd.c_str()) != 0) abort();
        g_log_level = LOG_ERROR;  // refusals are the point here; keep the output to the fuzzer's own
        return d;
    }();
    return dir;
}

static inline void fuzz_write(const std::string& path, const uint8_t* data, size_t size) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) abort();
    if (size) fwrite(data, 1, size, f);
    fclose(f);
}

// A broken invariant: report and abort, which libFuzzer saves as a crash.
#define FUZZ_CHECK(cond)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                       \
        }                                                                  \
    } while (0)
