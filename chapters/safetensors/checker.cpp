// chapters/safetensors/checker.cpp — the student's parse_safetensors
// against the engine's.
//
// 1. small hand-made files (dtypes, shapes, key order, metadata, padding,
// a header longer than 255 and than 65,535 bytes); 2. the real files under
// models/; 3. damaged files, which both must refuse with LanternError;
// 4. load_model + generate on models/tiny with the student's parser.
//
// Every file sits in memory so that its last byte is followed by a page
// that may not be read: reading past the end of the file crashes at once
// (and the crash message names the case) instead of reading whatever
// happens to lie there.
#include <sys/mman.h>
#include <algorithm>
#include "../checker_common.h"

void parse_safetensors_reference(Model& m);
void parse_safetensors_student(Model& m);

// The engine's calls land here.
void parse_safetensors(Model& m) {
    if (g_side == Side::Reference) parse_safetensors_reference(m);
    else parse_safetensors_student(m);
}

// A file's bytes, ending right before an unreadable page.
struct GuardedFile {
    uint8_t* region = nullptr;
    size_t region_size = 0;
    const uint8_t* data = nullptr;
    explicit GuardedFile(const std::string& bytes) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t pages = (bytes.size() + page - 1) / page + 1;
        region_size = (pages + 1) * page;
        region = (uint8_t*)mmap(nullptr, region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(region + pages * page, page, PROT_NONE);
        uint8_t* at = region + pages * page - bytes.size();
        memcpy(at, bytes.data(), bytes.size());
        data = at;
    }
    ~GuardedFile() { munmap(region, region_size); }
};

struct Parsed {
    bool threw = false;
    std::string error;
    size_t header_len = 0;
    std::vector<TensorInfo> tensors;
};

// Runs one side's parser on `bytes` as if they were an mmapped file.
static Parsed parse_with(void (*parse)(Model&), const std::string& bytes) {
    GuardedFile f(bytes);
    Parsed r;
    Model m;
    m.weights_path = "test.safetensors";
    m.map = (void*)f.data;
    m.file_size = bytes.size();
    try {
        parse(m);
    } catch (const LanternError& e) {
        r.threw = true;
        r.error = e.what();
    } catch (const std::exception& e) {
        r.threw = true;
        r.error = std::string("NOT a LanternError: ") + e.what();
    }
    // Offsets and pointers are compared relative to the file's start.
    for (auto& t : m.tensors) t.data = (const void*)((const uint8_t*)t.data - f.data);
    r.header_len = m.header_len;
    r.tensors = m.tensors;
    m.map = nullptr;  // not an mmap of a file: ~Model must not unmap it
    return r;
}

static std::string describe(const TensorInfo& t) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); i++) shape += fmt("%s%lld", i ? ", " : "", (long long)t.shape[i]);
    return fmt("%s: %s [%s], offset %zu, %zu bytes, data at file start + %zu", t.name.c_str(), dtype_name(t.dtype),
               shape.c_str(), t.offset, t.nbytes, (size_t)t.data);
}

// "" when the two parses agree. The table is compared in (offset, name)
// order, since tensors of 0 bytes may share an offset; the student's must
// also be sorted by offset.
static std::string compare_parsed(Parsed want, Parsed got, std::string& hint) {
    if (want.threw) {
        if (!got.threw) {
            hint = "this file is damaged: refuse it with fail(), which throws LanternError.";
            return "expected an error, like the engine's: \"" + want.error + "\"\nbut your parser accepted the file (" +
                   std::to_string(got.tensors.size()) + " tensors)";
        }
        if (got.error.rfind("NOT a LanternError", 0) == 0) {
            hint = "catch the library's exception and call fail() instead: ./run only turns LanternError into a clean "
                   "\"error:\" line.";
            return "expected a LanternError, got an exception of another type: " + got.error;
        }
        return "";
    }
    if (got.threw) {
        hint = "this file is fine: your checks refuse too much.";
        return "expected no error, but your parser said: " + got.error;
    }
    if (got.header_len == 0 && got.tensors.empty()) {
        hint = "nothing was read: is it still the stub?";
        return fmt("expected header_len %zu and %zu tensors; m.header_len is 0 and m.tensors is empty", want.header_len,
                   want.tensors.size());
    }
    if (got.header_len != want.header_len) {
        hint = "N is the u64 in the first 8 bytes, least significant byte first: N = b0 + b1*256 + b2*65536 + ...";
        return fmt("header_len: expected %zu, got %zu", want.header_len, got.header_len);
    }
    for (size_t i = 1; i < got.tensors.size(); i++)
        if (got.tensors[i].offset < got.tensors[i - 1].offset) {
            hint = "sort m.tensors by offset at the end (std::sort with a comparison on .offset).";
            return fmt("m.tensors is not sorted by offset: entry %zu (%s) comes before entry %zu (%s)", i - 1,
                       describe(got.tensors[i - 1]).c_str(), i, describe(got.tensors[i]).c_str());
        }
    auto order = [](const TensorInfo& a, const TensorInfo& b) {
        return a.offset < b.offset || (a.offset == b.offset && a.name < b.name);
    };
    std::sort(want.tensors.begin(), want.tensors.end(), order);
    std::sort(got.tensors.begin(), got.tensors.end(), order);
    if (got.tensors.size() != want.tensors.size()) {
        hint = got.tensors.empty() ? "no tensors at all: is it still the stub?"
                                   : "one TensorInfo per key of the header, except \"__metadata__\".";
        return fmt("expected %zu tensors, got %zu", want.tensors.size(), got.tensors.size());
    }
    for (size_t i = 0; i < want.tensors.size(); i++) {
        const TensorInfo &w = want.tensors[i], &g = got.tensors[i];
        if (w.name == g.name && w.dtype == g.dtype && w.shape == g.shape && w.offset == g.offset && w.nbytes == g.nbytes &&
            w.data == g.data)
            continue;
        if (w.name == g.name && w.offset != g.offset && g.offset + 8 + want.header_len == w.offset)
            hint = "offset is from the start of the file: add the 8 bytes of N and the N bytes of header to begin.";
        else if (w.offset == g.offset && w.data != g.data)
            hint = "data must point at the tensor: (const uint8_t*)m.map + offset.";
        else if (w.nbytes != g.nbytes)
            hint = "nbytes = end - begin of data_offsets.";
        else
            hint = "compare the two lines field by field.";
        return "tensor " + std::to_string(i) + " differs:\nexpected " + describe(w) + "\ngot      " + describe(g);
    }
    return "";
}

// `why`, when given, replaces the generic hint: what this case is about.
static void run_case(Group& g, const std::string& name, const std::string& bytes, const std::string& why = "") {
    g.start(name);
    Parsed want = parse_with(parse_safetensors_reference, bytes);
    Parsed got = parse_with(parse_safetensors_student, bytes);
    std::string hint, d = compare_parsed(want, got, hint);
    if (!d.empty()) g.fail(d, why.empty() || hint.find("stub") != std::string::npos ? hint : why);
}

// ---------------------------------------------------------------------------
// Making files.

static std::string u64le(uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; i++) s[i] = (char)(n >> (8 * i));
    return s;
}
// N, the header padded with spaces to a multiple of 8 (as writers do), data.
static std::string file_of(std::string header, size_t data_bytes, bool pad = true) {
    if (pad)
        while ((8 + header.size()) % 8) header += ' ';
    std::string data(data_bytes, '\0');
    for (size_t i = 0; i < data_bytes; i++) data[i] = (char)(i * 7);
    return u64le(header.size()) + header + data;
}

struct Spec {
    std::string name, dtype;
    std::vector<long long> shape;
};
static size_t elem_size(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

// A valid file: tensors back to back (with `gap` spare bytes after each),
// written to the header in `order` (a permutation of the specs).
static std::string valid_file(const std::vector<Spec>& specs, const std::vector<int>& order, size_t gap,
                              const std::string& metadata = "") {
    std::vector<size_t> begin(specs.size()), end(specs.size());
    size_t at = 0;
    for (size_t i = 0; i < specs.size(); i++) {
        size_t count = 1;
        for (long long d : specs[i].shape) count *= (size_t)d;
        begin[i] = at;
        end[i] = at + count * elem_size(specs[i].dtype);
        at = end[i] + gap;
    }
    std::string h = "{";
    if (!metadata.empty()) h += "\"__metadata__\":{\"format\":\"pt\",\"note\":\"" + metadata + "\"}";
    for (int i : order) {
        const Spec& s = specs[i];
        std::string shape;
        for (size_t d = 0; d < s.shape.size(); d++) shape += fmt("%s%lld", d ? "," : "", s.shape[d]);
        h += fmt("%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", h.size() > 1 ? "," : "",
                 s.name.c_str(), s.dtype.c_str(), shape.c_str(), begin[i], end[i]);
    }
    return file_of(h + "}", at);
}

static std::string read_whole(const std::string& path) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return "";
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    fclose(f);
    return s;
}

// A bad tensor entry inside an otherwise fine file with 24 data bytes.
static std::string with_entry(const std::string& entry, size_t data = 24) {
    return file_of("{\"ok\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"bad\":" + entry + "}", data);
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "safetensors", "the header: N, then JSON naming each tensor's dtype, shape and bytes");

    Group small("small valid files");
    run_case(small, "one F32 tensor [2, 3]", valid_file({{"w", "F32", {2, 3}}}, {0}, 0));
    run_case(small, "three dtypes, header keys not in file order",
             valid_file({{"a.weight", "BF16", {4, 5}}, {"b.bias", "F16", {7}}, {"c", "F32", {3, 1, 2}}}, {2, 0, 1}, 0));
    run_case(small, "with __metadata__", valid_file({{"x", "F16", {8}}, {"y", "F32", {2}}}, {0, 1}, 0, "hello"));
    run_case(small, "a scalar (shape []) and a zero-size tensor at the end",
             valid_file({{"s", "F32", {}}, {"v", "BF16", {5}}, {"empty", "F32", {0, 4}}}, {1, 2, 0}, 0));
    run_case(small, "gaps between tensors", valid_file({{"p", "F32", {3}}, {"q", "F32", {3}}}, {1, 0}, 16));
    const std::string bytes_of_n =
        "N spans several bytes here: N = b[0] + b[1]*2^8 + b[2]*2^16 + ... (least significant first). Read "
        "wrongly, the \"header\" you parse is the wrong bytes.";
    run_case(small, "header longer than 255 bytes (N needs 2 bytes)",
             valid_file({{"t", "F32", {2}}}, {0}, 0, std::string(300, 'm')), bytes_of_n);
    run_case(small, "header longer than 65,535 bytes (N needs 3 bytes)",
             valid_file({{"t", "BF16", {2}}}, {0}, 0, std::string(70000, 'm')), bytes_of_n);
    {
        std::vector<Spec> many;
        std::vector<int> order;
        for (int i = 0; i < 40; i++) {
            many.push_back({fmt("layers.%d.w", i), i % 3 == 0 ? "F32" : i % 3 == 1 ? "F16" : "BF16",
                            {rand_int(1, 9), rand_int(1, 9)}});
            order.push_back(i);
        }
        std::shuffle(order.begin(), order.end(), rng());
        run_case(small, "40 tensors in shuffled order", valid_file(many, order, 0));
    }
    small.end();

    Group real("the real files under models/");
    for (const char* dir : {"models/tiny", "models/tiny-f32", "models/mha"}) {
        std::string bytes = read_whole(std::string(dir) + "/model.safetensors");
        if (bytes.empty()) {
            real.start(dir);
            real.fail(std::string(dir) + "/model.safetensors is missing", "run `make models` first.");
            continue;
        }
        run_case(real, std::string(dir) + "/model.safetensors", bytes);
    }
    real.end();

    Group bad("damaged files: both must refuse them");
    run_case(bad, "5 bytes in all", std::string("\x10\0\0\0\0", 5));
    run_case(bad, "N = 0", u64le(0) + "{}");
    run_case(bad, "N past the end of the file (truncated inside the header)", u64le(1000) + "{\"a\":1}");
    run_case(bad, "N = 2^64 - 4: 8 + N wraps around to 4", u64le(~3ull) + "{\"a\":1}  ",
             "8 + N overflowed: with N = 2^64 - 4 the sum is 4, which looks in range. Refuse N > 100,000,000 "
             "before adding.");
    run_case(bad, "N = 200,000,000 (over the 100 MB cap)", u64le(200000000) + std::string(16, ' '));
    run_case(bad, "header is not JSON", file_of("{\"a\": {\"dtype\": ", 8));
    run_case(bad, "header is a JSON array", file_of("[1, 2, 3]", 8));
    run_case(bad, "a tensor without dtype", with_entry("{\"shape\":[2],\"data_offsets\":[8,16]}"));
    run_case(bad, "dtype I64 (not supported)", with_entry("{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[8,16]}"));
    run_case(bad, "dtype is a number", with_entry("{\"dtype\":4,\"shape\":[2],\"data_offsets\":[8,16]}"));
    run_case(bad, "no shape", with_entry("{\"dtype\":\"F32\",\"data_offsets\":[8,16]}"));
    run_case(bad, "a negative dimension", with_entry("{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[8,16]}"));
    run_case(bad, "a dimension that is a string", with_entry("{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[8,16]}"));
    run_case(bad, "no data_offsets", with_entry("{\"dtype\":\"F32\",\"shape\":[2]}"));
    run_case(bad, "data_offsets with one number", with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}"));
    run_case(bad, "data_offsets negative", with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}"));
    run_case(bad, "begin > end", with_entry("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,8]}"));
    run_case(bad, "end past the data section (a truncated download)",
             with_entry("{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[8,40]}"));
    run_case(bad, "bytes do not match shape x dtype (the header lies)",
             with_entry("{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[8,16]}"));
    run_case(bad, "BF16 counted as 4 bytes per element",
             with_entry("{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[8,24]}"));
    run_case(bad, "two tensors overlap", with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}"));
    bad.end();

    Group e2e("end to end: load_model + generate() on models/tiny with your parser", 2);
    e2e.start("load models/tiny with each parser, generate 16 tokens");
    kernels_init(KernelSet::Fast, 1);
    try {
        Tokenizer tok;
        tokenizer_load(tok, TINY);
        Model m_ref, m_stu;
        g_side = Side::Reference;
        load_model(m_ref, TINY);
        g_side = Side::Student;
        load_model(m_stu, TINY);
        GenerateParams p;
        p.n_predict = 16;
        GenerateResult a = run_generate(m_ref, tok, "In the beginning", p), b = run_generate(m_stu, tok, "In the beginning", p);
        std::string d = compare_ids(a.ids, b.ids);
        if (!d.empty())
            e2e.fail("the generated ids differ: " + d, g_groups_failed ? "fix the failures above first: they are smaller "
                                                                         "and say more."
                                                                       : "the tensor table matched? Then look at the "
                                                                         "data pointers.");
    } catch (const LanternError& e) {
        e2e.fail(std::string("load_model or generate failed: ") + e.what(),
                 g_groups_failed ? "fix the failures above first: they are smaller and say more." : "");
    }
    e2e.end();
    return finish("safetensors");
}
