// gguf.cpp — the GGUF file format: the reader (header, metadata, tensor
// infos) and the one writer. What a model or a tokenizer makes of the
// values is gguf_load.cpp's; this file knows neither.
//
// A GGUF file is, in order (all little-endian):
//
//   "GGUF"                      4 bytes of magic
//   version                     u32 (2 or 3; version 1 used 32-bit counts)
//   tensor count, value count   u64, u64
//   key/values                  string key, u32 type, the value
//   tensor infos                string name, u32 n_dims, u64 ne[n_dims],
//                               u32 ggml type, u64 offset into the data
//   padding                     zeros up to a multiple of general.alignment
//   data                        each tensor at its offset, each offset a
//                               multiple of the alignment
//
// A string is a u64 length and that many bytes (no terminating zero). An
// array value is a u32 element type, a u64 count and the elements. ne[0] is
// the fastest-varying dimension, so a PyTorch [rows, cols] matrix is
// ne = {cols, rows} with the same bytes in the same order.
//
// The reader trusts nothing: every length and count is checked against the
// bytes that are left before it is used, so a truncated or hostile file gets
// a one-line error, never a read past the end.
#include "gguf/gguf.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include "logging.h"

// ---------------------------------------------------------------------------
// ggml's tensor types: number, name, weights per block, bytes per block.
// Lantern computes with the ones that have a DType; the others are named in
// the error that refuses them.
struct GGMLType {
    uint32_t id;
    const char* name;
    int block, bytes;
};
static const GGMLType GGML_TYPES[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},        {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},         {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
};
static const GGMLType* ggml_type(uint32_t t) {
    for (const GGMLType& g : GGML_TYPES)
        if (g.id == t) return &g;
    return nullptr;
}
const char* ggml_type_name(uint32_t t) {
    const GGMLType* g = ggml_type(t);
    return g ? g->name : "unknown";
}

static const std::pair<uint32_t, DType> COMPUTABLE[] = {
    {0, DType::F32},  {1, DType::F16},  {30, DType::BF16}, {8, DType::Q8_0},  {2, DType::Q4_0},  {3, DType::Q4_1},
    {6, DType::Q5_0}, {7, DType::Q5_1}, {12, DType::Q4_K}, {13, DType::Q5_K}, {14, DType::Q6_K},
};
bool ggml_type_to_dtype(uint32_t t, DType& out) {
    for (auto& [id, dt] : COMPUTABLE)
        if (id == t) { out = dt; return true; }
    return false;
}
uint32_t dtype_to_ggml_type(DType t) {
    for (auto& [id, dt] : COMPUTABLE)
        if (dt == t) return id;
    fail("no ggml type for %s", dtype_name(t));
}

// ---------------------------------------------------------------------------
// Reading: a cursor over the bytes that fails instead of overrunning.

struct Cursor {
    const uint8_t* p;
    size_t size, pos;
    const std::string& path;
    void need(size_t n, const char* what) {
        if (n > size - pos) fail("%s: truncated: %s at byte %zu needs %zu bytes, %zu left", path.c_str(), what, pos, n, size - pos);
    }
    template <typename T> T get(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string str(const char* what) {
        uint64_t n = get<uint64_t>(what);
        if (n > size - pos)
            fail("%s: %s at byte %zu: string length %llu runs past the end of the file", path.c_str(), what, pos - 8,
                 (unsigned long long)n);
        std::string s((const char*)p + pos, n);
        pos += n;
        return s;
    }
};

static size_t value_size(uint32_t t) {
    switch (t) {
        case GGUF_U8: case GGUF_I8: case GGUF_BOOL: return 1;
        case GGUF_U16: case GGUF_I16: return 2;
        case GGUF_U32: case GGUF_I32: case GGUF_F32: return 4;
        case GGUF_U64: case GGUF_I64: case GGUF_F64: return 8;
        case GGUF_STRING: return 8;  // at least its length
    }
    return 0;
}

// One number of type t as (double, int64).
static void read_number(Cursor& c, uint32_t t, double& d, int64_t& i, const char* what) {
    switch (t) {
        case GGUF_U8: i = c.get<uint8_t>(what); break;
        case GGUF_I8: i = c.get<int8_t>(what); break;
        case GGUF_BOOL: i = c.get<uint8_t>(what) != 0; break;
        case GGUF_U16: i = c.get<uint16_t>(what); break;
        case GGUF_I16: i = c.get<int16_t>(what); break;
        case GGUF_U32: i = c.get<uint32_t>(what); break;
        case GGUF_I32: i = c.get<int32_t>(what); break;
        case GGUF_U64: i = (int64_t)c.get<uint64_t>(what); break;
        case GGUF_I64: i = c.get<int64_t>(what); break;
        case GGUF_F32: d = c.get<float>(what); break;
        case GGUF_F64: d = c.get<double>(what); break;
    }
    // A float's integer part only where it has one (converting 1e30 or NaN
    // to an integer is undefined behaviour); need_int refuses floats anyway.
    if (t == GGUF_F32 || t == GGUF_F64) i = std::isfinite(d) && std::fabs(d) < 9e18 ? (int64_t)d : 0;
    else d = (double)i;
}

static void read_value(Cursor& c, GGUFValue& v) {
    const char* what = v.key.c_str();
    if (v.type == GGUF_STRING) {
        v.str = c.str(what);
    } else if (v.type == GGUF_ARRAY) {
        v.elem_type = c.get<uint32_t>(what);
        uint64_t n = c.get<uint64_t>(what);
        size_t es = value_size(v.elem_type);
        if (es == 0) fail("%s: key %s: array of type %u is not supported", c.path.c_str(), what, v.elem_type);
        if (n > (c.size - c.pos) / es)
            fail("%s: key %s: array of %llu elements runs past the end of the file", c.path.c_str(), what, (unsigned long long)n);
        if (v.elem_type == GGUF_STRING) {
            v.strs.resize(n);
            for (auto& s : v.strs) s = c.str(what);
        } else {
            v.nums.resize(n);
            int64_t ignored;
            for (auto& x : v.nums) read_number(c, v.elem_type, x, ignored, what);
        }
    } else if (value_size(v.type)) {
        read_number(c, v.type, v.num, v.i64, what);
    } else {
        fail("%s: key %s has unknown value type %u", c.path.c_str(), what, v.type);
    }
}

void gguf_parse(GGUFFile& f, const uint8_t* data, size_t size, const std::string& path) {
    f = GGUFFile();
    f.path = path;
    f.size = size;
    Cursor c{data, size, 0, f.path};
    if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) fail("%s: not a GGUF file (the first 4 bytes are not \"GGUF\")", path.c_str());
    c.pos = 4;
    f.version = c.get<uint32_t>("version");
    if (f.version != 2 && f.version != 3) fail("%s: GGUF version %u is not supported (2 and 3 are)", path.c_str(), f.version);
    uint64_t n_tensors = c.get<uint64_t>("tensor count"), n_kv = c.get<uint64_t>("key/value count");
    // Each value takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 4 + 8.
    if (n_kv > (size - c.pos) / 13) fail("%s: key/value count %llu does not fit in the file", path.c_str(), (unsigned long long)n_kv);
    if (n_tensors > (size - c.pos) / 24) fail("%s: tensor count %llu does not fit in the file", path.c_str(), (unsigned long long)n_tensors);

    for (uint64_t i = 0; i < n_kv; i++) {
        GGUFValue v;
        v.key = c.str("key");
        v.type = c.get<uint32_t>("value type");
        read_value(c, v);
        if (v.key == "general.alignment") {
            if (v.type != GGUF_U32 || v.i64 == 0 || (v.i64 & (v.i64 - 1)))
                fail("%s: general.alignment must be a power of two stored as u32", path.c_str());
            f.alignment = (uint32_t)v.i64;
        }
        f.kv.push_back(std::move(v));
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        GGUFTensor t;
        t.name = c.str("tensor name");
        uint32_t n_dims = c.get<uint32_t>("tensor dimensions");
        if (n_dims == 0 || n_dims > 4) fail("%s: tensor %s has %u dimensions (1 to 4 allowed)", path.c_str(), t.name.c_str(), n_dims);
        uint64_t count = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            uint64_t ne = c.get<uint64_t>("tensor shape");
            if (ne == 0 || ne > (1ull << 40) || count > (1ull << 50) / ne)
                fail("%s: tensor %s has an impossible shape", path.c_str(), t.name.c_str());
            count *= ne;
            t.ne.push_back((int64_t)ne);
        }
        t.ggml_type = c.get<uint32_t>("tensor type");
        t.offset = c.get<uint64_t>("tensor offset");
        const GGMLType* g = ggml_type(t.ggml_type);
        if (!g) fail("%s: tensor %s has unknown type %u", path.c_str(), t.name.c_str(), t.ggml_type);
        if (t.ne[0] % g->block)
            fail("%s: tensor %s: rows of %lld are not a multiple of %s's block of %d", path.c_str(), t.name.c_str(),
                 (long long)t.ne[0], g->name, g->block);
        t.nbytes = count / g->block * g->bytes;
        for (const GGUFTensor& o : f.tensors)
            if (o.name == t.name) fail("%s: tensor %s is listed twice", path.c_str(), t.name.c_str());
        f.tensors.push_back(std::move(t));
    }
    f.data_start = (c.pos + f.alignment - 1) / f.alignment * f.alignment;
    if (f.data_start > size) fail("%s: truncated: the data section would start at byte %zu of %zu", path.c_str(), f.data_start, size);
    size_t data_size = size - f.data_start;
    for (const GGUFTensor& t : f.tensors) {
        if (t.offset % f.alignment)
            fail("%s: tensor %s: offset %llu is not a multiple of the alignment %u", path.c_str(), t.name.c_str(),
                 (unsigned long long)t.offset, f.alignment);
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            fail("%s: tensor %s: %zu bytes at offset %llu lie outside the %zu-byte data section (truncated file?)",
                 path.c_str(), t.name.c_str(), t.nbytes, (unsigned long long)t.offset, data_size);
    }
    std::vector<const GGUFTensor*> byoff;
    for (const GGUFTensor& t : f.tensors) byoff.push_back(&t);
    std::sort(byoff.begin(), byoff.end(), [](auto a, auto b) { return a->offset < b->offset; });
    for (size_t i = 1; i < byoff.size(); i++)
        if (byoff[i]->offset < byoff[i - 1]->offset + byoff[i - 1]->nbytes)
            fail("%s: tensors %s and %s overlap", path.c_str(), byoff[i - 1]->name.c_str(), byoff[i]->name.c_str());
}

const GGUFValue* gguf_find(const GGUFFile& f, const std::string& key) {
    for (const GGUFValue& v : f.kv)
        if (v.key == key) return &v;
    return nullptr;
}

void* gguf_map_file(const std::string& path, size_t& size) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) fail("%s: cannot open (%s)", path.c_str(), strerror(errno));
    struct stat st;
    fstat(fd, &st);
    size = (size_t)st.st_size;
    if (size == 0) {
        close(fd);
        fail("%s: file is empty", path.c_str());
    }
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("%s: mmap failed (%s)", path.c_str(), strerror(errno));
    return p;
}

MappedGGUF::MappedGGUF(const std::string& path) {
    map = gguf_map_file(path, size);
    try {
        gguf_parse(f, (const uint8_t*)map, size, path);
    } catch (...) {
        munmap(map, size);
        throw;
    }
}
MappedGGUF::~MappedGGUF() { munmap(map, size); }

// ---------------------------------------------------------------------------
// Writing.

GGUFValue gguf_str(const std::string& key, const std::string& v) {
    GGUFValue r;
    r.key = key, r.type = GGUF_STRING, r.str = v;
    return r;
}
GGUFValue gguf_u32(const std::string& key, uint32_t v) {
    GGUFValue r;
    r.key = key, r.type = GGUF_U32, r.i64 = v, r.num = v;
    return r;
}
GGUFValue gguf_f32(const std::string& key, float v) {
    GGUFValue r;
    r.key = key, r.type = GGUF_F32, r.num = v;
    return r;
}
GGUFValue gguf_bool(const std::string& key, bool v) {
    GGUFValue r;
    r.key = key, r.type = GGUF_BOOL, r.i64 = v, r.num = v;
    return r;
}

static void put_bytes(std::string& out, const void* p, size_t n) { out.append((const char*)p, n); }
template <typename T> static void put(std::string& out, T v) { put_bytes(out, &v, sizeof v); }
static void put_str(std::string& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out += s;
}
static void put_number(std::string& out, uint32_t t, double d, int64_t i) {
    switch (t) {
        case GGUF_U8: put<uint8_t>(out, (uint8_t)i); break;
        case GGUF_I8: put<int8_t>(out, (int8_t)i); break;
        case GGUF_BOOL: put<uint8_t>(out, i != 0); break;
        case GGUF_U16: put<uint16_t>(out, (uint16_t)i); break;
        case GGUF_I16: put<int16_t>(out, (int16_t)i); break;
        case GGUF_U32: put<uint32_t>(out, (uint32_t)i); break;
        case GGUF_I32: put<int32_t>(out, (int32_t)i); break;
        case GGUF_U64: put<uint64_t>(out, (uint64_t)i); break;
        case GGUF_I64: put<int64_t>(out, i); break;
        case GGUF_F32: put<float>(out, (float)d); break;
        case GGUF_F64: put<double>(out, d); break;
        default: fail("gguf_write: value type %u is not a number", t);
    }
}

void gguf_write(const std::string& path, const std::vector<GGUFValue>& kv, const std::vector<GGUFTensorOut>& tensors,
                uint32_t alignment) {
    std::string h = "GGUF";
    put<uint32_t>(h, 3);
    put<uint64_t>(h, tensors.size());
    put<uint64_t>(h, kv.size());
    for (const GGUFValue& v : kv) {
        put_str(h, v.key);
        put<uint32_t>(h, v.type);
        if (v.type == GGUF_STRING) put_str(h, v.str);
        else if (v.type == GGUF_ARRAY) {
            put<uint32_t>(h, v.elem_type);
            if (v.elem_type == GGUF_STRING) {
                put<uint64_t>(h, v.strs.size());
                for (const std::string& s : v.strs) put_str(h, s);
            } else {
                put<uint64_t>(h, v.nums.size());
                for (double x : v.nums) put_number(h, v.elem_type, x, (int64_t)x);
            }
        } else put_number(h, v.type, v.num, v.i64);
    }
    uint64_t offset = 0;
    for (const GGUFTensorOut& t : tensors) {
        put_str(h, t.info.name);
        put<uint32_t>(h, (uint32_t)t.info.ne.size());
        for (int64_t ne : t.info.ne) put<uint64_t>(h, (uint64_t)ne);
        put<uint32_t>(h, t.info.ggml_type);
        put<uint64_t>(h, offset);
        offset += (t.info.nbytes + alignment - 1) / alignment * alignment;
    }
    h.resize((h.size() + alignment - 1) / alignment * alignment, '\0');
    OutFile out(path);  // whole or not at all: a killed convert leaves no half file under the name
    FILE* fp = out.f;
    bool ok = fwrite(h.data(), 1, h.size(), fp) == h.size();
    static const char zeros[64] = {};
    for (const GGUFTensorOut& t : tensors) {
        ok = ok && fwrite(t.data, 1, t.info.nbytes, fp) == t.info.nbytes;
        size_t pad = (alignment - t.info.nbytes % alignment) % alignment;
        while (ok && pad) {
            size_t n = std::min(pad, sizeof zeros);
            ok = fwrite(zeros, 1, n, fp) == n;
            pad -= n;
        }
    }
    if (!ok) fail("%s: write failed (disk full?)", path.c_str());
    out.commit();
}
