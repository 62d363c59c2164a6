// tests/test_exp_log.cpp — lantern_exp and lantern_log (common.h), the
// engine's own exp and log: within one ulp of the C library's on millions of
// inputs over the ranges the sampler and the lens use and beyond, exact
// where the answer is exact, the C library's answer at the edges (zero,
// infinity, NaN, overflow, underflow, subnormals), and the same bits on
// every machine: a checksum of a million results, recorded here, must come
// out the same on x86, ARM (make test-arm64) and WebAssembly.
#include <doctest/doctest.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include "common.h"

static uint64_t bits_of(double x) {
    uint64_t u;
    std::memcpy(&u, &x, 8);
    return u;
}
// Distance in ulps between two finite doubles of the same sign.
static uint64_t ulps(double a, double b) {
    uint64_t x = bits_of(a), y = bits_of(b);
    return x > y ? x - y : y - x;
}
// A fixed stream of inputs: a 64-bit LCG, uniform in [lo, hi).
struct Inputs {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    double next(double lo, double hi) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        volatile double t = (hi - lo) * ((double)(s >> 11) * (1.0 / 9007199254740992.0));  // rounded here: no fused multiply-add
        return lo + t;
    }
};

TEST_CASE("lantern_exp is within one ulp of libm's exp") {
    Inputs in;
    uint64_t worst = 0, differ = 0;
    const int N = 2000000;
    for (int i = 0; i < N; i++) {
        // Most as the sampler calls it (logit - max: [-60, 0]), the rest over the whole range.
        double x = i % 4 ? in.next(-60, 0) : in.next(-745, 709.7);
        double a = lantern_exp(x), b = std::exp(x);
        if (b == 0 || std::isinf(b)) { CHECK(a == b); continue; }
        uint64_t d = ulps(a, b);
        worst = d > worst ? d : worst;
        differ += d != 0;
    }
    MESSAGE("exp: " << differ << " of " << N << " differ from libm in the last bit, worst " << worst << " ulp");
    CHECK(worst <= 1);
    CHECK(lantern_exp(0.0) == 1.0);
    CHECK(lantern_exp(-0.0) == 1.0);
    CHECK(lantern_exp(1e-300) == 1.0);
    CHECK(std::isinf(lantern_exp(710.0)));
    CHECK(lantern_exp(-746.0) == 0.0);
    CHECK(lantern_exp(-std::numeric_limits<double>::infinity()) == 0.0);
    CHECK(std::isinf(lantern_exp(std::numeric_limits<double>::infinity())));
    CHECK(std::isnan(lantern_exp(std::nan(""))));
    CHECK(ulps(lantern_exp(-740.0), std::exp(-740.0)) <= 1);  // a subnormal result
    CHECK(ulps(lantern_exp(709.78), std::exp(709.78)) <= 1);  // the largest finite results
}

TEST_CASE("lantern_log is within one ulp of libm's log") {
    Inputs in;
    uint64_t worst = 0, differ = 0;
    const int N = 2000000;
    for (int i = 0; i < N; i++) {
        // Sums of exponentials (the lens's log-sum-exp: [1, 1e6]), near 1, and any positive double.
        double x = i % 3 == 0 ? in.next(1, 1e6) : i % 3 == 1 ? in.next(0.5, 2) : std::exp(in.next(-700, 700));
        double a = lantern_log(x), b = std::log(x);
        uint64_t d = std::signbit(a) == std::signbit(b) ? ulps(a, b) : (a == 0 && b == 0 ? 0 : 99);
        worst = d > worst ? d : worst;
        differ += d != 0;
    }
    MESSAGE("log: " << differ << " of " << N << " differ from libm in the last bit, worst " << worst << " ulp");
    CHECK(worst <= 1);
    CHECK(lantern_log(1.0) == 0.0);
    CHECK(lantern_log(0.0) == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(lantern_log(-1.0)));
    CHECK(std::isnan(lantern_log(std::nan(""))));
    CHECK(std::isinf(lantern_log(std::numeric_limits<double>::infinity())));
    CHECK(ulps(lantern_log(4.9e-324), std::log(4.9e-324)) <= 1);  // the smallest subnormal
    CHECK(ulps(lantern_log(std::numeric_limits<double>::max()), std::log(std::numeric_limits<double>::max())) <= 1);
    for (int k = -1074; k <= 1023; k++) CHECK(ulps(lantern_log(std::ldexp(1.0, k)), std::log(std::ldexp(1.0, k))) <= 1);
}

// The same bits everywhere: FNV-1a over the bits of a million results. The
// recorded value was computed on x86-64; ARM and WebAssembly must match it.
TEST_CASE("lantern_exp and lantern_log give the same bits on every machine") {
    Inputs in;
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](double v) {
        uint64_t u = bits_of(v);
        for (int b = 0; b < 8; b++) h = (h ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    };
    for (int i = 0; i < 500000; i++) {
        mix(lantern_exp(in.next(-745, 709.7)));
        double m = in.next(1, 2);
        int e = (int)in.next(-1074, 1023);
        mix(lantern_log(std::ldexp(m, e)));
    }
    CHECK(h == 13248218350801574129ull);
}
