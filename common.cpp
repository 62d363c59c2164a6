// common.cpp — the error helper, writing a file whole, and the half-precision
// conversions.
#include "common.h"
#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

void fail(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw LanternError(buf);
}

std::string strprintf(const char* fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string s(n > 0 ? (size_t)n : 0, '\0');
    vsnprintf(&s[0], s.size() + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

OutFile::OutFile(const std::string& p) : path(p) {
    size_t slash = p.rfind('/');
    std::string dir = slash == std::string::npos ? "" : p.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
    if (base.empty()) fail("%s: not a file name", p.c_str());
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail("%s: is a folder, not a file", p.c_str());
    std::string name = dir + "." + base + ".XXXXXX";
    int fd = mkstemp(&name[0]);
    if (fd < 0) fail("%s: cannot write (%s)", p.c_str(), strerror(errno));
    // mkstemp makes 0600; the file gets what a plain create would, and its
    // owner keeps read and write (a WebAssembly page's umask is 0777).
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, (0666 & ~mask) | 0600);
    tmp = name;
    f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp.c_str());
        fail("%s: cannot write (%s)", p.c_str(), strerror(errno));
    }
}

OutFile::~OutFile() {
    if (f) {
        fclose(f);
        unlink(tmp.c_str());
    }
}

void OutFile::commit() {
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    f = nullptr;
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        fail("%s: write failed (%s; disk full?)", path.c_str(), strerror(err));
    }
}

void write_file_whole(const std::string& path, const std::string& bytes) {
    OutFile out(path);
    if (fwrite(bytes.data(), 1, bytes.size(), out.f) != bytes.size()) fail("%s: write failed (disk full?)", path.c_str());
    out.commit();
}

void refuse_output_over_input(const std::string& out, const std::string& in, const char* what) {
    struct stat so, si;
    if (stat(out.c_str(), &so) != 0 || stat(in.c_str(), &si) != 0) return;  // a new file is no input
    auto same = [&](const struct stat& s) { return s.st_dev == so.st_dev && s.st_ino == so.st_ino; };
    if (same(si)) fail("%s %s: that is the input; write to another file", what, out.c_str());
    if (!S_ISDIR(si.st_mode)) return;
    DIR* d = opendir(in.c_str());
    if (!d) return;
    for (struct dirent* e; (e = readdir(d));) {
        struct stat s;
        if (stat((in + "/" + e->d_name).c_str(), &s) == 0 && S_ISREG(s.st_mode) && same(s)) {
            closedir(d);
            fail("%s %s: that is the input's file %s; write to another file", what, out.c_str(), e->d_name);
        }
    }
    closedir(d);
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "F32";
        case DType::F16: return "F16";
        case DType::BF16: return "BF16";
        case DType::Q8_0: return "Q8_0";
        case DType::Q4_0: return "Q4_0";
        case DType::Q4_1: return "Q4_1";
        case DType::Q5_0: return "Q5_0";
        case DType::Q5_1: return "Q5_1";
        case DType::Q4_K: return "Q4_K";
        case DType::Q5_K: return "Q5_K";
        case DType::Q6_K: return "Q6_K";
    }
    return "?";
}

// IEEE half: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
// Written out by hand so the plain kernels need no F16C instruction; the
// fast kernels use the hardware conversion.
float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;  // +-0
        } else {       // subnormal: normalise it
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            man &= 0x3ff;
            u = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);  // inf / NaN
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);  // overflow: inf
    if (exp <= 0) {                                   // subnormal or zero
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - exp;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;  // may carry into the exponent: correct
    return (uint16_t)half;
}

// ---------------------------------------------------------------------------
// lantern_exp and lantern_log: fdlibm's algorithms (Sun Microsystems, 1993,
// freely redistributable), which are within one ulp. Every step is an IEEE
// operation rounded once, so the bits depend on nothing but the input —
// provided the compiler fuses no multiply and add, which would round once
// where these round twice: contraction is switched off for these two.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
// The same 8 bytes read as the other type (a double's bits, or bits as a double).
template <class To, class From> static inline To same_bits(From x) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    std::memcpy(&t, &x, sizeof t);
    return t;
}

// exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 in [-ln2/2, ln2/2]
// (ln 2 in two parts, so k ln2_hi is exact); exp(r) from a rational form
// with a degree-5 polynomial in r^2.
double lantern_exp(double x) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                 inv_ln2 = 1.44269504088896338700e+00, P1 = 1.66666666666666019037e-01,
                 P2 = -2.77777777770155933842e-03, P3 = 6.61375632143793436117e-05,
                 P4 = -1.65339022054652515390e-06, P5 = 4.13813679705723846039e-08;
    if (x != x) return x;                                       // NaN
    if (x > 7.09782712893383973096e+02) return same_bits<double>(0x7ff0000000000000ull);  // overflow: inf
    if (x < -7.45133219101941108420e+02) return 0.0;            // underflow
    double ax = x < 0 ? -x : x, hi = x, lo = 0;
    int k = 0;
    if (ax > 0.5 * 6.93147180559945286227e-01) {
        if (ax < 1.5 * 6.93147180559945286227e-01) k = x < 0 ? -1 : 1;
        else k = (int)(inv_ln2 * x + (x < 0 ? -0.5 : 0.5));
        hi = x - k * ln2_hi;
        lo = k * ln2_lo;
        x = hi - lo;
    } else if (ax < 3.7252902984e-09) {                         // |x| < 2^-28: 1 + x is exact enough
        return 1.0 + x;
    }
    double t = x * x;
    double c = x - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if (k == 0) return 1.0 - ((x * c) / (c - 2.0) - x);
    double y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    if (k >= -1021) return same_bits<double>(same_bits<uint64_t>(y) + ((uint64_t)(int64_t)k << 52));  // y * 2^k, exact
    return same_bits<double>(same_bits<uint64_t>(y) + ((uint64_t)(int64_t)(k + 1000) << 52)) * 9.33263618503218878990e-302;  // * 2^-1000
}

// log(x) = k ln 2 + log(1 + f), x = 2^k (1 + f) with 1 + f in [sqrt(2)/2,
// sqrt(2)); log(1 + f) = 2s + 2s^3/3 + ..., s = f / (2 + f), the tail as a
// degree-7 polynomial in s^2.
double lantern_log(double x) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10, two54 = 1.80143985094819840000e+16,
                 Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                 Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                 Lg7 = 1.479819860511658591e-01;
    uint64_t u = same_bits<uint64_t>(x);
    int32_t hx = (int32_t)(u >> 32);
    uint32_t lx = (uint32_t)u;
    int k = 0;
    if (hx < 0x00100000) {                                      // x < 2^-1022: zero, negative or subnormal
        if (((hx & 0x7fffffff) | lx) == 0) return -same_bits<double>(0x7ff0000000000000ull);  // log(0) = -inf
        if (hx < 0) return same_bits<double>(0x7ff8000000000000ull);  // log(negative) = NaN
        k -= 54;
        x *= two54;                                             // subnormal: scale up, exactly
        u = same_bits<uint64_t>(x);
        hx = (int32_t)(u >> 32);
    }
    if (hx >= 0x7ff00000) return x + x;                         // inf or NaN
    k += (hx >> 20) - 1023;
    hx &= 0x000fffff;
    int32_t i = (hx + 0x95f64) & 0x100000;
    x = same_bits<double>(((uint64_t)(uint32_t)(hx | (i ^ 0x3ff00000)) << 32) | (u & 0xffffffffull));  // x or x/2 in [sqrt(2)/2, sqrt(2))
    k += i >> 20;
    double f = x - 1.0, dk = (double)k;
    if ((0x000fffff & (2 + hx)) < 3) {                          // |f| < 2^-20
        if (f == 0.0) return k == 0 ? 0.0 : dk * ln2_hi + dk * ln2_lo;
        double R = f * f * (0.5 - 0.33333333333333333 * f);
        return k == 0 ? f - R : dk * ln2_hi - ((R - dk * ln2_lo) - f);
    }
    double s = f / (2.0 + f), z = s * s, w = z * z;
    int32_t j = 0x6b851 - hx;
    i = hx - 0x6147a;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6)), t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7))), R = t2 + t1;
    if ((i | j) > 0) {
        double hfsq = 0.5 * f * f;
        return k == 0 ? f - (hfsq - s * (hfsq + R)) : dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    }
    return k == 0 ? f - s * (f - R) : dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
