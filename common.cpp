// common.cpp — the error helper, writing a file whole, and the half-precision
// conversions.
#include "common.h"
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
    mode_t mask = umask(0);  // mkstemp makes 0600; the file gets what a plain create would
    umask(mask);
    fchmod(fd, 0666 & ~mask);
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
