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
    return fmt(tr("%s: %s [%s], offset %zu, %zu bytes, data at file start + %zu",
                  "%s：%s [%s]，偏移 %zu，%zu 个字节，数据位于文件开头 + %zu"), t.name.c_str(), dtype_name(t.dtype),
               shape.c_str(), t.offset, t.nbytes, (size_t)t.data);
}

// "" when the two parses agree. The table is compared in (offset, name)
// order, since tensors of 0 bytes may share an offset; the student's must
// also be sorted by offset.
static std::string compare_parsed(Parsed want, Parsed got, std::string& hint) {
    if (want.threw) {
        if (!got.threw) {
            hint = tr("this file is damaged: refuse it with fail(), which throws LanternError.",
                      "这个文件是坏的：用 fail() 拒绝它，fail() 会抛出 LanternError。");
            return fmt(tr("expected an error, like the engine's: \"%s\"\nbut your parser accepted the file (%zu tensors)",
                          "应该报错，就像引擎报的：“%s”\n但你的解析器接受了这个文件（%zu 个张量）"),
                       want.error.c_str(), got.tensors.size());
        }
        if (got.error.rfind("NOT a LanternError", 0) == 0) {
            hint = tr("catch the library's exception and call fail() instead: ./run only turns LanternError into a clean "
                      "\"error:\" line.",
                      "捕获库抛出的异常，改为调用 fail()：./run 只会把 LanternError 变成一行干净的 \"error:\"。");
            return tr("expected a LanternError, got an exception of another type: ", "应为 LanternError，得到的却是另一种异常：") +
                   got.error;
        }
        return "";
    }
    if (got.threw) {
        hint = tr("this file is fine: your checks refuse too much.", "这个文件没有问题：你的检查拒绝得太多了。");
        return tr("expected no error, but your parser said: ", "不应报错，但你的解析器说：") + got.error;
    }
    if (got.header_len == 0 && got.tensors.empty()) {
        hint = tr("nothing was read: is it still the stub?", "什么也没有读：是不是还是桩函数？");
        return fmt(tr("expected header_len %zu and %zu tensors; m.header_len is 0 and m.tensors is empty",
                      "应为 header_len %zu 和 %zu 个张量；而 m.header_len 是 0，m.tensors 是空的"),
                   want.header_len, want.tensors.size());
    }
    if (got.header_len != want.header_len) {
        hint = tr("N is the u64 in the first 8 bytes, least significant byte first: N = b0 + b1*256 + b2*65536 + ...",
                  "N 是前 8 个字节里的 u64，最低位字节在前：N = b0 + b1*256 + b2*65536 + ...");
        return fmt(tr("header_len: expected %zu, got %zu", "header_len：应为 %zu，实际是 %zu"), want.header_len, got.header_len);
    }
    for (size_t i = 1; i < got.tensors.size(); i++)
        if (got.tensors[i].offset < got.tensors[i - 1].offset) {
            hint = tr("sort m.tensors by offset at the end (std::sort with a comparison on .offset).",
                      "最后把 m.tensors 按 offset 排序（用 std::sort，比较 .offset）。");
            return fmt(tr("m.tensors is not sorted by offset: entry %zu (%s) comes before entry %zu (%s)",
                          "m.tensors 没有按 offset 排序：第 %zu 项（%s）排在第 %zu 项（%s）前面"), i - 1,
                       describe(got.tensors[i - 1]).c_str(), i, describe(got.tensors[i]).c_str());
        }
    auto order = [](const TensorInfo& a, const TensorInfo& b) {
        return a.offset < b.offset || (a.offset == b.offset && a.name < b.name);
    };
    std::sort(want.tensors.begin(), want.tensors.end(), order);
    std::sort(got.tensors.begin(), got.tensors.end(), order);
    if (got.tensors.size() != want.tensors.size()) {
        hint = got.tensors.empty() ? tr("no tensors at all: is it still the stub?", "一个张量都没有：是不是还是桩函数？")
                                   : tr("one TensorInfo per key of the header, except \"__metadata__\".",
                                        "文件头的每个键对应一个 TensorInfo，\"__metadata__\" 除外。");
        return fmt(tr("expected %zu tensors, got %zu", "应有 %zu 个张量，实际有 %zu 个"), want.tensors.size(), got.tensors.size());
    }
    for (size_t i = 0; i < want.tensors.size(); i++) {
        const TensorInfo &w = want.tensors[i], &g = got.tensors[i];
        if (w.name == g.name && w.dtype == g.dtype && w.shape == g.shape && w.offset == g.offset && w.nbytes == g.nbytes &&
            w.data == g.data)
            continue;
        if (w.name == g.name && w.offset != g.offset && g.offset + 8 + want.header_len == w.offset)
            hint = tr("offset is from the start of the file: add the 8 bytes of N and the N bytes of header to begin.",
                      "offset 从文件开头算起：在 begin 上加上 N 的 8 个字节和文件头的 N 个字节。");
        else if (w.offset == g.offset && w.data != g.data)
            hint = tr("data must point at the tensor: (const uint8_t*)m.map + offset.",
                      "data 必须指向这个张量：(const uint8_t*)m.map + offset。");
        else if (w.nbytes != g.nbytes)
            hint = tr("nbytes = end - begin of data_offsets.", "nbytes = data_offsets 的 end - begin。");
        else
            hint = tr("compare the two lines field by field.", "逐个字段比较这两行。");
        return fmt(tr("tensor %zu differs:\nexpected %s\ngot      %s", "第 %zu 个张量不同：\n应为：%s\n实际：%s"), i,
                   describe(w).c_str(), describe(g).c_str());
    }
    return "";
}

// `why`, when given, replaces the generic hint: what this case is about.
static void run_case(Group& g, const std::string& name, const std::string& bytes, const std::string& why = "") {
    g.start(name);
    Parsed want = parse_with(parse_safetensors_reference, bytes);
    Parsed got = parse_with(parse_safetensors_student, bytes);
    std::string hint, d = compare_parsed(want, got, hint);
    if (!d.empty()) g.fail(d, why.empty() || hint.find(tr("stub", "桩函数")) != std::string::npos ? hint : why);
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
    checker_begin(argc, argv, "safetensors",
                  "the header: N, then JSON naming each tensor's dtype, shape and bytes",
                  "文件头：先是 N，然后是 JSON，写明每个张量的 dtype、形状和字节范围");

    Group small(tr("small valid files", "合法的小文件"));
    run_case(small, tr("one F32 tensor [2, 3]", "一个 F32 张量 [2, 3]"), valid_file({{"w", "F32", {2, 3}}}, {0}, 0));
    run_case(small, tr("three dtypes, header keys not in file order", "三种 dtype，文件头里键的顺序与数据在文件中的顺序不同"),
             valid_file({{"a.weight", "BF16", {4, 5}}, {"b.bias", "F16", {7}}, {"c", "F32", {3, 1, 2}}}, {2, 0, 1}, 0));
    run_case(small, tr("with __metadata__", "带 __metadata__"), valid_file({{"x", "F16", {8}}, {"y", "F32", {2}}}, {0, 1}, 0, "hello"));
    run_case(small, tr("a scalar (shape []) and a zero-size tensor at the end", "一个标量（形状 []），末尾还有一个大小为 0 的张量"),
             valid_file({{"s", "F32", {}}, {"v", "BF16", {5}}, {"empty", "F32", {0, 4}}}, {1, 2, 0}, 0));
    run_case(small, tr("gaps between tensors", "张量之间有空隙"), valid_file({{"p", "F32", {3}}, {"q", "F32", {3}}}, {1, 0}, 16));
    const std::string bytes_of_n =
        tr("N spans several bytes here: N = b[0] + b[1]*2^8 + b[2]*2^16 + ... (least significant first). Read "
           "wrongly, the \"header\" you parse is the wrong bytes.",
           "这里的 N 占了好几个字节：N = b[0] + b[1]*2^8 + b[2]*2^16 + ...（最低位在前）。"
           "读错了，你解析的“文件头”就是一段错误的字节。");
    run_case(small, tr("header longer than 255 bytes (N needs 2 bytes)", "文件头超过 255 字节（N 要用 2 个字节）"),
             valid_file({{"t", "F32", {2}}}, {0}, 0, std::string(300, 'm')), bytes_of_n);
    run_case(small, tr("header longer than 65,535 bytes (N needs 3 bytes)", "文件头超过 65,535 字节（N 要用 3 个字节）"),
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
        run_case(small, tr("40 tensors in shuffled order", "打乱顺序的 40 个张量"), valid_file(many, order, 0));
    }
    small.end();

    Group real(tr("the real files under models/", "models/ 下的真实文件"));
    for (const char* dir : {"models/tiny", "models/tiny-f32", "models/mha"}) {
        std::string bytes = read_whole(std::string(dir) + "/model.safetensors");
        if (bytes.empty()) {
            real.start(dir);
            real.fail(fmt(tr("%s/model.safetensors is missing", "缺少 %s/model.safetensors"), dir),
                      tr("run `make models` first.", "先运行 `make models`。"));
            continue;
        }
        run_case(real, std::string(dir) + "/model.safetensors", bytes);
    }
    real.end();

    Group bad(tr("damaged files: both must refuse them", "损坏的文件：两边都必须拒绝"));
    run_case(bad, tr("5 bytes in all", "总共只有 5 个字节"), std::string("\x10\0\0\0\0", 5));
    run_case(bad, "N = 0", u64le(0) + "{}");
    run_case(bad, tr("N past the end of the file (truncated inside the header)", "N 超出了文件末尾（文件头还没完就被截断了）"),
             u64le(1000) + "{\"a\":1}");
    run_case(bad, tr("N = 2^64 - 4: 8 + N wraps around to 4", "N = 2^64 - 4：8 + N 回绕成 4"), u64le(~3ull) + "{\"a\":1}  ",
             tr("8 + N overflowed: with N = 2^64 - 4 the sum is 4, which looks in range. Refuse N > 100,000,000 "
                "before adding.",
                "8 + N 溢出了：N = 2^64 - 4 时和是 4，看起来没有越界。在做加法之前，先拒绝 N > 100,000,000。"));
    run_case(bad, tr("N = 200,000,000 (over the 100 MB cap)", "N = 200,000,000（超过 100 MB 上限）"),
             u64le(200000000) + std::string(16, ' '));
    run_case(bad, tr("header is not JSON", "文件头不是 JSON"), file_of("{\"a\": {\"dtype\": ", 8));
    run_case(bad, tr("header is a JSON array", "文件头是一个 JSON 数组"), file_of("[1, 2, 3]", 8));
    run_case(bad, tr("a tensor without dtype", "一个没有 dtype 的张量"), with_entry("{\"shape\":[2],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("dtype I64 (not supported)", "dtype 为 I64（不支持）"),
             with_entry("{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("dtype is a number", "dtype 是一个数字"), with_entry("{\"dtype\":4,\"shape\":[2],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("no shape", "没有 shape"), with_entry("{\"dtype\":\"F32\",\"data_offsets\":[8,16]}"));
    run_case(bad, tr("a negative dimension", "有一个负的维度"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("a dimension that is a string", "有一个维度是字符串"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("no data_offsets", "没有 data_offsets"), with_entry("{\"dtype\":\"F32\",\"shape\":[2]}"));
    run_case(bad, tr("data_offsets with one number", "data_offsets 只有一个数"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}"));
    run_case(bad, tr("data_offsets negative", "data_offsets 是负的"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}"));
    run_case(bad, "begin > end", with_entry("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,8]}"));
    run_case(bad, tr("end past the data section (a truncated download)", "end 超出了数据区（下载不完整）"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[8,40]}"));
    run_case(bad, tr("bytes do not match shape x dtype (the header lies)", "字节数与 shape x dtype 不符（文件头说了假话）"),
             with_entry("{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[8,16]}"));
    run_case(bad, tr("BF16 counted as 4 bytes per element", "把 BF16 按每个元素 4 字节算"),
             with_entry("{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[8,24]}"));
    run_case(bad, tr("two tensors overlap", "两个张量重叠"), with_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}"));
    bad.end();

    Group e2e(tr("end to end: load_model + generate() on models/tiny with your parser",
                 "端到端：用你的解析器在 models/tiny 上运行 load_model + generate()"), 2);
    e2e.start(tr("load models/tiny with each parser, generate 16 tokens", "分别用两个解析器加载 models/tiny，各生成 16 个词元"));
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
            e2e.fail(tr("the generated ids differ: ", "生成的 id 不同：") + d,
                     g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。")
                                     : tr("the tensor table matched? Then look at the data pointers.",
                                          "张量表都对上了？那就看看 data 指针。"));
    } catch (const LanternError& e) {
        e2e.fail(tr("load_model or generate failed: ", "load_model 或 generate 失败：") + std::string(e.what()),
                 g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。") : "");
    }
    e2e.end();
    return finish("safetensors");
}
