// tests/test_gguf.cpp — GGUF files and the block formats.
//
//   1. Blocks checkable by hand: a Q4_0 and a Q4_K block built byte by byte
//      decode to the numbers the format's definition gives.
//   2. Every format: quantize -> dequantize stays within half a step; the
//      integer product against Q8_0 activations equals dequantized weights
//      times dequantized activations, its fast twins (portable, AVX2,
//      AVX-512) equal its reference bit for bit, and the f32 plain product
//      within what rounding the activations to 8 bits allows.
//   3. The file: values of every type survive write -> read; broken files
//      (built in memory) are refused with one line naming the file and the
//      problem.
//   4. The model: a bf16 or f32 GGUF written from a folder (Qwen2, Qwen3,
//      an untied head from shards) gives the same logits as the folder, bit
//      for bit; Qwen3 goes under qwen3.* keys with its head dimension and
//      q/k norms; its tokenizer encodes exactly like
//      tokenizer.json on llama.cpp's Qwen2 vectors and the golden corpus.
#include <doctest/doctest.h>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <omp.h>
#include <nlohmann/json.hpp>
#include "cli.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "model.h"
#include "net.h"
#include "gguf/quants.h"
#include "tokenizer.h"
#include "test_util.h"

static const DType BLOCK_TYPES[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                    DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

static void put_f16(uint8_t* p, float v) {
    uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
}

TEST_CASE("gguf: a Q4_0 block and a Q4_K block decoded by hand") {
    // Q4_0: d = 0.5; byte j holds weight j (low nibble) and j+16 (high).
    uint8_t q4[18];
    put_f16(q4, 0.5f);
    for (int j = 0; j < 16; j++) q4[2 + j] = (uint8_t)(j | (15 - j) << 4);
    float y[256];
    dequantize_row(DType::Q4_0, q4, 32, y);
    CHECK(y[0] == 0.5f * (0 - 8));    // -4
    CHECK(y[3] == 0.5f * (3 - 8));    // -2.5
    CHECK(y[16] == 0.5f * (15 - 8));  // 3.5
    CHECK(y[31] == 0.5f * (0 - 8));

    // Q4_K: d = 1, dmin = 0.25; sub-block 0 has scale 2, min 4; sub-block 5
    // has scale 37 (= 0b100101: low 4 bits in byte 9, top 2 in byte 1) and
    // min 50 (= 0b110010: low 4 bits in byte 9's high half, top 2 in byte 5).
    uint8_t k[144] = {};
    put_f16(k, 1.0f);
    put_f16(k + 2, 0.25f);
    uint8_t* sc = k + 4;
    sc[0] = 2;                            // scale of sub-block 0
    sc[4] = 4;                            // min of sub-block 0
    sc[1] = (uint8_t)((37 >> 4) << 6);    // top bits of scale 5
    sc[5] = (uint8_t)((50 >> 4) << 6);    // top bits of min 5
    sc[9] = (uint8_t)((37 & 15) | (50 & 15) << 4);
    uint8_t* qs = k + 16;
    qs[0] = 7;                 // weight 0: sub-block 0, low nibble
    qs[64 + 3] = 9 << 4;       // weight 32*5 + 3: sub-block 5 = bytes 64..95, high nibble
    dequantize_row(DType::Q4_K, k, 256, y);
    CHECK(y[0] == 1.0f * 2 * 7 - 0.25f * 4);       // 13
    CHECK(y[1] == -1.0f);                          // q = 0: just -min
    CHECK(y[5 * 32 + 3] == 37.0f * 9 - 0.25f * 50);  // 320.5
}

TEST_CASE("gguf: every block format round-trips within half a step") {
    std::mt19937 rng(5);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (DType t : BLOCK_TYPES) {
        INFO(dtype_name(t));
        int rows = 7, cols = 512;
        std::vector<float> w((size_t)rows * cols), back(cols);
        for (auto& v : w) v = g(rng);
        std::vector<uint8_t> storage;
        Mat W{DType::F32, rows, cols, w.data()};
        quantize_mat(W, t, storage);
        // Each block's error is at most about one step of its grid.
        double worst = 0;
        for (int r = 0; r < rows; r++) {
            dequantize_row(t, storage.data() + r * dtype_row_bytes(t, cols), cols, back.data());
            for (int c = 0; c < cols; c++) worst = std::max(worst, (double)std::fabs(back[c] - w[r * cols + c]));
        }
        int bits = t == DType::Q8_0 ? 8 : t == DType::Q6_K ? 6 : (t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q5_K) ? 5 : 4;
        CHECK(worst < 8.0 / (1 << bits) * 1.5);  // weights within about +-4: 2^bits steps across 8
        CHECK(worst > 0);
    }
}

// The integer path (quants.h): its reference dot_quant_q8 equals the
// dequantized weights times the dequantized activations (d_x * x_i) up to
// float rounding — so the integer sums, the offsets, Q6_K's int8 scales and
// the min terms are each in the right place; its fast twins equal it bit for
// bit for every block count (odd ones too), row count, batch size, thread
// count and instruction set; and against the f32 activations of the plain
// product it is off by no more than rounding the activations to 8 bits can make.
// Every kernel set of KERNEL_SETS that sums in the one order and runs
// here: each has its block-format tiles (or the reference), compared below.
static std::vector<const KernelSetInfo*> quant_sets() {
    std::vector<const KernelSetInfo*> sets;
    for (int i = 0; i < N_KERNEL_SETS; i++) {
        const KernelSetInfo& s = KERNEL_SETS[i];
        if (!s.exact || !s.kernels) continue;
        if (kernel_set_runs_here(s)) sets.push_back(&s);
        else MESSAGE("skipped: this build or CPU does not run the " << std::string(s.name) << " kernels, their integer tiles are not compared");
    }
    return sets;
}

TEST_CASE("gguf: the integer product of every low-bit format: reference, fast twins bit for bit, plain within the rounding") {
    std::mt19937 rng(11);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<const KernelSetInfo*> sets = quant_sets();
    int saved_threads = omp_get_max_threads();
    for (DType t : BLOCK_TYPES) {
        int block = dtype_block_size(t);
        for (int n_blocks : {1, 3, 4, block == 32 ? 28 : 19}) {  // 28 x 32 = 896, 19 x 256 = 4864
            int cols = n_blocks * block, rows = 7, T = STREAM_TOKENS + 1;  // the last batch in stripes, and one in token blocks
            INFO(std::string(dtype_name(t)) << ", " << rows << " x " << cols << ", " << T << " tokens");
            std::vector<float> w((size_t)rows * cols), x((size_t)T * cols), deq(cols), xd(cols);
            for (auto& v : w) v = g(rng);
            for (auto& v : x) v = g(rng);
            std::vector<uint8_t> storage, xq((size_t)T * cols / 32 * Q8_BLOCK_BYTES);
            Mat W{DType::F32, rows, cols, w.data()};
            Mat Q = quantize_mat(W, t, storage);
            size_t xq_bytes = (size_t)cols / 32 * Q8_BLOCK_BYTES, rb = dtype_row_bytes(t, cols);
            for (int k = 0; k < T; k++) quantize_row_q8_0(&x[(size_t)k * cols], cols, &xq[k * xq_bytes]);
            std::vector<float> ref((size_t)T * rows), plain((size_t)T * rows);
            matmul_quant_plain(plain.data(), x.data(), Q, nullptr, T);
            for (int r = 0; r < rows; r++) {
                dequantize_row(t, storage.data() + r * rb, cols, deq.data());
                for (int k = 0; k < T; k++) {
                    const uint8_t* xk = &xq[k * xq_bytes];
                    dequantize_row(DType::Q8_0, xk, cols, xd.data());
                    float got = dot_quant_q8(t, storage.data() + r * rb, xk, cols);
                    ref[(size_t)k * rows + r] = got;
                    double exact = 0, mag = 0, rounding = 0;
                    for (int c = 0; c < cols; c++) {
                        exact += (double)deq[c] * xd[c];
                        mag += std::fabs((double)deq[c] * xd[c]);
                        // an activation moves by at most half its block's step d_x
                        rounding += std::fabs((double)deq[c]) * f16_to_f32(xk[c / 32 * Q8_BLOCK_BYTES] |
                                                                           xk[c / 32 * Q8_BLOCK_BYTES + 1] << 8) * 0.5;
                    }
                    CHECK(std::fabs(got - exact) <= 1e-5 * mag);
                    CHECK(std::fabs(got - plain[(size_t)k * rows + r]) <= rounding * 1.01 + 1e-5 * mag);
                }
            }
            if (t == DType::Q8_0) {  // the same bits as kernels_fast.cpp's Q8_0 order (its scalar twin)
                std::vector<float> twin((size_t)T * rows);
                MatmulOut one = {twin.data(), &Q, nullptr};
                KernelScratch scratch;
                matmul_fast(&one, 1, x.data(), T, SCALAR_KERNELS, scratch);
                CHECK(std::memcmp(twin.data(), ref.data(), twin.size() * 4) == 0);
            }
            for (const KernelSetInfo* set : sets)
                for (int threads : {1, 3})
                    for (int batch : {1, 2, 3, 5, 9, STREAM_TOKENS, STREAM_TOKENS + 1}) {
                        omp_set_num_threads(threads);
                        std::vector<float> fast((size_t)batch * rows);
                        KernelScratch scratch;
                        matmul_quant_fast(fast.data(), x.data(), Q, nullptr, batch, *set->kernels, scratch);
                        int same = 0;
                        for (int i = 0; i < batch * rows; i++) same += std::memcmp(&fast[i], &ref[i], 4) == 0;
                        INFO(std::string(set->name) << ", " << threads << " threads, batch " << batch);
                        CHECK(same == batch * rows);  // bitwise: one summation order
                    }
        }
    }
    omp_set_num_threads(saved_threads);
}

TEST_CASE("gguf: every block format packed for the tiles keeps every bit of the product and every row") {
    std::mt19937 rng(12);
    std::normal_distribution<float> g(0.0f, 1.0f);
    int saved_threads = omp_get_max_threads();
    std::vector<const KernelSetInfo*> sets = quant_sets();
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K})
        for (int n_blocks : {dtype_block_size(t) / 32, 3 * dtype_block_size(t) / 32, 152}) {
            int cols = n_blocks * 32, rows = 48, T = 5;
            INFO(dtype_name(t) << ", " << rows << " x " << cols);
            std::vector<float> w((size_t)rows * cols), x((size_t)T * cols), bias(rows), a(cols), b(cols);
            for (auto& v : w) v = g(rng);
            for (auto& v : x) v = g(rng);
            for (auto& v : bias) v = g(rng);
            std::vector<uint8_t> file, packed, copy;
            Mat W{DType::F32, rows, cols, w.data()};
            Mat Q = quantize_mat(W, t, file);
            Mat P = Q;
            CHECK(can_pack(P));
            pack_mat(P, packed);  // a copy
            CHECK(P.data == packed.data());
            copy.assign(file.begin(), file.end());
            Mat R = Q;
            R.data = copy.data();
            pack_mat(R, copy);  // in place
            CHECK(R.packed == PACK_ROWS);
            CHECK(std::memcmp(P.data, R.data, Q.bytes()) == 0);
            CHECK(std::memcmp(P.data, Q.data, Q.bytes()) != 0);  // the bytes did move
            std::vector<uint8_t> row(dtype_row_bytes(t, cols));
            size_t rb = row.size();
            for (int r = 0; r < rows; r++) {
                packed_row(P, r, row.data());
                CHECK(std::memcmp(row.data(), file.data() + r * rb, rb) == 0);
                mat_row_to_f32(P, r, a.data());
                mat_row_to_f32(Q, r, b.data());
                CHECK(std::memcmp(a.data(), b.data(), cols * 4) == 0);
            }
            std::vector<float> ref((size_t)T * rows), got((size_t)T * rows);
            matmul_quant_plain(ref.data(), x.data(), Q, bias.data(), T);
            matmul_quant_plain(got.data(), x.data(), P, bias.data(), T);
            CHECK(std::memcmp(ref.data(), got.data(), ref.size() * 4) == 0);
            std::vector<uint8_t> xq((size_t)cols / 32 * Q8_BLOCK_BYTES);
            for (const KernelSetInfo* set : sets)
                for (int threads : {1, 3})
                    for (int batch : {1, 2, 5}) {
                        omp_set_num_threads(threads);
                        std::vector<float> fast((size_t)batch * rows);
                        KernelScratch scratch;
                        matmul_quant_fast(fast.data(), x.data(), P, bias.data(), batch, *set->kernels, scratch);
                        int same = 0;
                        for (int k = 0; k < batch; k++) {
                            quantize_row_q8_0(&x[(size_t)k * cols], cols, xq.data());
                            for (int r = 0; r < rows; r++) {
                                float want = dot_quant_q8(t, file.data() + r * rb, xq.data(), cols) + bias[r];
                                same += std::memcmp(&fast[(size_t)k * rows + r], &want, 4) == 0;
                            }
                        }
                        INFO(std::string(set->name) << ", " << threads << " threads, batch " << batch);
                        CHECK(same == batch * rows);  // bitwise: the reference's order
                    }
        }
    Mat odd{DType::Q4_0, 40, 64, nullptr};
    CHECK_FALSE(can_pack(odd));  // 40 rows are not groups of 16: such a matrix keeps the file's layout
    Mat f16{DType::F16, 48, 256, nullptr};
    CHECK_FALSE(can_pack(f16));  // a float matrix keeps its layout
    omp_set_num_threads(saved_threads);
}

// ---------------------------------------------------------------------------
// Files built in memory.

struct Bytes {
    std::string b;
    template <typename T> Bytes& put(T v) { b.append((const char*)&v, sizeof v); return *this; }
    Bytes& str(const std::string& s) { put<uint64_t>(s.size()); b += s; return *this; }
};

// A valid file: one u32 value, one f32 tensor of 8 floats.
static Bytes small_file(uint32_t version = 3, uint64_t offset = 0, uint64_t ne0 = 8) {
    Bytes f;
    f.b = "GGUF";
    f.put<uint32_t>(version).put<uint64_t>(1).put<uint64_t>(1);
    f.str("general.alignment").put<uint32_t>(GGUF_U32).put<uint32_t>(32);
    f.str("w").put<uint32_t>(1).put<uint64_t>(ne0).put<uint32_t>(0).put<uint64_t>(offset);
    f.b.resize((f.b.size() + 31) / 32 * 32, '\0');
    f.b.resize(f.b.size() + 64, '\1');
    return f;
}

static void parse(const Bytes& f) {
    GGUFFile g;
    gguf_parse(g, (const uint8_t*)f.b.data(), f.b.size(), "x.gguf");
}

TEST_CASE("gguf: broken files are refused with one line naming the file and the problem") {
    CHECK_NOTHROW(parse(small_file()));
    CHECK_NOTHROW(parse(small_file(2)));
    auto refused = [](const Bytes& f, const char* what) {
        INFO(what);
        CHECK_THROWS_WITH_AS(parse(f), doctest::Contains(what), LanternError);
        try { parse(f); } catch (const LanternError& e) {
            CHECK(std::string(e.what()).rfind("x.gguf: ", 0) == 0);
            CHECK(std::string(e.what()).find('\n') == std::string::npos);
        }
    };
    Bytes f = small_file();
    f.b[0] = 'X';
    refused(f, "not a GGUF file");
    refused(small_file(1), "version 1 is not supported");
    refused(small_file(4), "version 4 is not supported");
    f = small_file();
    f.b.resize(85);  // inside the tensor info's offset
    refused(f, "truncated");
    f.b.resize(28);  // inside the first key: the counts cannot fit
    refused(f, "does not fit in the file");
    f = small_file();
    std::memcpy(&f.b[24], "\xff\xff\xff\x00\x00\x00\x00\x00", 8);  // the key's length
    refused(f, "runs past the end");
    f = small_file();
    std::memcpy(&f.b[8], "\x00\x00\x00\x01\x00\x00\x00\x00", 8);  // tensor count 2^24
    refused(f, "tensor count");
    refused(small_file(3, 64), "outside");       // offset past the data
    refused(small_file(3, 8), "alignment");      // not a multiple of 32
    refused(small_file(3, 0, 1 << 20), "outside");  // shape needs more bytes than there are
    // Two tensors sharing bytes.
    Bytes two;
    two.b = "GGUF";
    two.put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(0);
    two.str("a").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(0);
    two.str("b").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(32);
    two.b.resize((two.b.size() + 31) / 32 * 32 + 128, '\0');
    refused(two, "overlap");
    // A block format whose row is not a multiple of its block.
    Bytes q;
    q.b = "GGUF";
    q.put<uint32_t>(3).put<uint64_t>(1).put<uint64_t>(0);
    q.str("q").put<uint32_t>(1).put<uint64_t>(48).put<uint32_t>(12).put<uint64_t>(0);
    q.b.resize(1024, '\0');
    refused(q, "not a multiple of Q4_K's block of 256");
}

TEST_CASE("gguf: values of every type survive write -> read") {
    std::vector<GGUFValue> kv = {gguf_str("s", "héllo"), gguf_u32("u", 4000000000u), gguf_f32("f", 0.125f), gguf_bool("b", true)};
    GGUFValue i8;
    i8.key = "i8", i8.type = GGUF_I8, i8.i64 = -5, i8.num = -5;
    GGUFValue f64;
    f64.key = "f64", f64.type = GGUF_F64, f64.num = 1e-300;
    GGUFValue arr;
    arr.key = "a", arr.type = GGUF_ARRAY, arr.elem_type = GGUF_I32, arr.nums = {1, -2, 3};
    GGUFValue sarr;
    sarr.key = "sa", sarr.type = GGUF_ARRAY, sarr.elem_type = GGUF_STRING, sarr.strs = {"x", "", "yz"};
    // Floats with no int64 value: read as numbers, their integer view 0.
    GGUFValue nan = gguf_f32("nan", NAN), big = gguf_f32("big", 1e30f);
    kv.insert(kv.end(), {i8, f64, arr, sarr, nan, big});
    float data[5] = {1, 2, 3, 4, 5};
    GGUFTensorOut t;
    t.info.name = "v", t.info.ggml_type = 0, t.info.ne = {5}, t.info.nbytes = 20, t.data = data;
    std::string path = "build/test_values.gguf";
    GGUFTensorOut t2 = t;
    t2.info.name = "w";
    gguf_write(path, kv, {t, t2});
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    GGUFFile f;
    gguf_parse(f, (const uint8_t*)bytes.data(), bytes.size(), path);
    CHECK(f.version == 3);
    CHECK(gguf_find(f, "s")->str == "héllo");
    CHECK(gguf_find(f, "u")->i64 == 4000000000ll);
    CHECK(gguf_find(f, "f")->num == 0.125);
    CHECK(gguf_find(f, "b")->i64 == 1);
    CHECK(gguf_find(f, "i8")->i64 == -5);
    CHECK(gguf_find(f, "f64")->num == 1e-300);
    CHECK(gguf_find(f, "a")->nums == std::vector<double>{1, -2, 3});
    CHECK(gguf_find(f, "sa")->strs == std::vector<std::string>{"x", "", "yz"});
    CHECK(std::isnan(gguf_find(f, "nan")->num));
    CHECK(gguf_find(f, "nan")->i64 == 0);
    CHECK(gguf_find(f, "big")->num == (double)1e30f);
    CHECK(gguf_find(f, "big")->i64 == 0);
    REQUIRE(f.tensors.size() == 2);
    CHECK(f.tensors[1].offset == 32);  // 20 bytes, padded to the alignment
    CHECK(std::memcmp(bytes.data() + f.data_start + 32, data, 20) == 0);
}

// ---------------------------------------------------------------------------
// Whole models.

static std::string convert_to(const std::string& model, const std::string& type) {
    std::string out = "build/test_" + model.substr(model.rfind('/') + 1) + "_" + type + ".gguf";
    std::vector<std::string> args = {model, out, "--type", type};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    REQUIRE(cmd_convert((int)argv.size(), argv.data()) == 0);
    return out;
}

static std::vector<float> logits_of(const std::string& path, const std::vector<int>& toks) {
    Model m;
    open_model(m, path);
    Net net;
    net_init(net, m, 32);
    const float* p = forward(net, toks.data(), (int)toks.size(), 0, true);
    return std::vector<float>(p, p + toks.size() * (size_t)m.cfg.vocab);
}

TEST_CASE("gguf: a bf16 / f32 GGUF gives the folder's logits bit for bit") {
    std::vector<int> toks = {9707, 11, 1879, 0, 576};
    for (const char* pair : {"models/tiny bf16", "models/tiny-f32 f32", "models/qwen3-tiny bf16", "models/qwen3-tiny-f32 f32",
                             "models/tiny-untied-sharded f32"}) {
        std::string s = pair, model = s.substr(0, s.find(' ')), type = s.substr(s.find(' ') + 1);
        INFO(model);
        std::string file = convert_to(model, type);
        CHECK(logits_of(file, toks) == logits_of(model, toks));
    }
}

TEST_CASE("gguf: shape, missing tensor and architecture problems name the file") {
    std::string good = convert_to("models/tiny", "q8_0");
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto rewrite = [&](const std::string& from, const std::string& to) {
        std::string b = bytes;
        size_t at = b.find(from);
        REQUIRE(at != std::string::npos);
        b.replace(at, from.size(), to);  // same length: offsets stay valid
        std::string path = "build/test_broken.gguf";
        std::ofstream(path, std::ios::binary) << b;
        return path;
    };
    Model m;
    CHECK_THROWS_WITH_AS(gguf_load_model(m, rewrite(std::string("\x05\0\0\0\0\0\0\0qwen2", 13), std::string("\x05\0\0\0\0\0\0\0llama", 13))), doctest::Contains("architecture"), LanternError);
    Model m2;
    CHECK_THROWS_WITH_AS(gguf_load_model(m2, rewrite("blk.3.ffn_up.weight", "blk.3.ffn_XX.weight")),
                         doctest::Contains("tensor blk.3.ffn_up.weight is missing"), LanternError);
    // qwen2.feed_forward_length 160 -> 128: every FFN matrix disagrees.
    std::string key = "qwen2.feed_forward_length";
    size_t at = bytes.find(key);
    REQUIRE(at != std::string::npos);
    std::string b = bytes;
    uint32_t v = 128;
    std::memcpy(&b[at + key.size() + 4], &v, 4);
    std::ofstream("build/test_broken.gguf", std::ios::binary) << b;
    Model m3;
    CHECK_THROWS_WITH_AS(gguf_load_model(m3, "build/test_broken.gguf"), doctest::Contains("the hyper-parameters imply"), LanternError);
}


TEST_CASE("gguf: Qwen3 is written and read as architecture qwen3") {
    std::string file = convert_to("models/qwen3-tiny", "bf16");
    std::string bytes = slurp(file);
    GGUFFile f;
    gguf_parse(f, (const uint8_t*)bytes.data(), bytes.size(), file);
    REQUIRE(gguf_find(f, "general.architecture") != nullptr);
    CHECK(gguf_find(f, "general.architecture")->str == "qwen3");
    CHECK(gguf_find(f, "qwen2.embedding_length") == nullptr);
    // qwen3-tiny: hidden 64 and 4 heads, but head_dim 32 (not 64 / 4).
    Model folder;
    load_model(folder, "models/qwen3-tiny");
    REQUIRE(gguf_find(f, "qwen3.attention.key_length") != nullptr);
    CHECK(gguf_find(f, "qwen3.attention.key_length")->i64 == folder.cfg.head_dim);
    CHECK(gguf_find(f, "qwen3.attention.value_length")->i64 == folder.cfg.head_dim);
    CHECK(folder.cfg.head_dim != folder.cfg.hidden / folder.cfg.n_heads);
    int norms = 0, biases = 0;
    for (const GGUFTensor& t : f.tensors) {
        bool norm = t.name.find("attn_q_norm.weight") != std::string::npos || t.name.find("attn_k_norm.weight") != std::string::npos;
        norms += norm;
        biases += t.name.find(".bias") != std::string::npos;
        if (norm) CHECK(t.ne == std::vector<int64_t>{folder.cfg.head_dim});
    }
    CHECK(norms == 2 * folder.cfg.n_layers);
    CHECK(biases == 0);
    Model m;
    gguf_load_model(m, file);
    CHECK(m.cfg.arch == arch_by_model_type("qwen3"));
    CHECK(m.cfg.arch->qk_norm);
    CHECK(m.cfg.head_dim == folder.cfg.head_dim);
    CHECK(m.layers[0].k_norm == folder.layers[0].k_norm);
    // Without its k-norm a Qwen3 layer cannot load; the error names llama.cpp's tensor.
    size_t at = bytes.find("blk.1.attn_k_norm.weight");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 24, "blk.1.attn_k_XXXX.weight");
    std::ofstream("build/test_broken.gguf", std::ios::binary) << bytes;
    Model m2;
    CHECK_THROWS_WITH_AS(gguf_load_model(m2, "build/test_broken.gguf"), doctest::Contains("tensor blk.1.attn_k_norm.weight is missing"),
                         LanternError);
}

TEST_CASE("gguf: the tokenizer from the file encodes exactly like tokenizer.json") {
    std::string file = convert_to("models/tiny", "q4_0");
    Tokenizer a, b;
    tokenizer_load(a, "models/tiny");
    gguf_load_tokenizer(b, file);
    CHECK(b.chat_template == a.chat_template);
    CHECK(b.eos_token == a.eos_token);
    CHECK(b.vocab_size == a.vocab_size);
    std::vector<std::string> texts;
    std::string inp = slurp("tests/data/tokenizer/ggml-vocab-qwen2.gguf.inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t p = 0, q; (q = inp.find(sep, p)) != std::string::npos; p = q + sep.size()) texts.push_back(inp.substr(p, q - p));
    for (const auto& c : nlohmann::json::parse(slurp("tests/data/tokenizer/goldens.json"))) texts.push_back(c["text"]);
    texts.push_back("<|im_start|>user\nHello<|im_end|>\n<|endoftext|>");
    REQUIRE(texts.size() > 300);
    int differ = 0;
    for (const std::string& t : texts) {
        std::vector<int> ia = tokenizer_encode(a, t), ib = tokenizer_encode(b, t);
        differ += ia != ib || tokenizer_decode(a, ia) != tokenizer_decode(b, ib);
    }
    CHECK(differ == 0);
}

// ---------------------------------------------------------------------------
// 5. What a converted file carries besides the weights, and what --quant and
//    convert do to a file that is already quantized.

// models/tiny's json files in build/test_models/NAME, its weights linked;
// `edit` rewrites generation_config.json and config.json first.
static std::string tiny_copy(const std::string& name, const std::string& gen_config, const std::string& eos = "") {
    std::string dir = "build/test_models/" + name;
    std::string cmd = "rm -rf " + dir + " && mkdir -p " + dir + " && cp models/tiny/*.json " + dir +
                      "/ && ln -s \"$PWD/models/tiny/model.safetensors\" " + dir + "/model.safetensors";
    REQUIRE(system(cmd.c_str()) == 0);
    if (gen_config.empty()) REQUIRE(system(("rm " + dir + "/generation_config.json").c_str()) == 0);
    else spit(dir + "/generation_config.json", gen_config);
    if (!eos.empty()) {
        nlohmann::json c = nlohmann::json::parse(slurp(dir + "/config.json"));
        c["eos_token_id"] = nlohmann::json::parse(eos);
        spit(dir + "/config.json", c.dump(2));
    }
    return dir;
}

static Options options_for(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    return parse_command("generate", (int)argv.size(), argv.data());
}

static void check_same_sampling(const SamplerParams& a, const SamplerParams& b) {
    CHECK(a.temperature == b.temperature);
    CHECK(a.top_k == b.top_k);
    CHECK(a.top_p == b.top_p);
    CHECK(a.repeat_penalty == b.repeat_penalty);
    CHECK(a.frequency_penalty == b.frequency_penalty);
    CHECK(a.presence_penalty == b.presence_penalty);
    CHECK(a.repeat_last_n == b.repeat_last_n);
    CHECK(a.seed == b.seed);
}

TEST_CASE("gguf: generation_config.json travels in the file: llama.cpp's general.sampling.* keys, the rest under lantern.generation.*") {
    std::string file = convert_to("models/tiny", "bf16");
    MappedGGUF g(file);
    // models/tiny/generation_config.json: temperature 0.7, top_k 20, top_p 0.8, repetition_penalty 1.1
    const GGUFValue* temp = gguf_find(g.f, "general.sampling.temp");
    REQUIRE(temp != nullptr);
    CHECK(temp->type == GGUF_F32);
    CHECK((float)temp->num == 0.7f);
    REQUIRE(gguf_find(g.f, "general.sampling.top_k") != nullptr);
    CHECK(gguf_find(g.f, "general.sampling.top_k")->type == GGUF_I32);
    CHECK(gguf_find(g.f, "general.sampling.top_k")->i64 == 20);
    REQUIRE(gguf_find(g.f, "general.sampling.top_p") != nullptr);
    CHECK((float)gguf_find(g.f, "general.sampling.top_p")->num == 0.8f);
    REQUIRE(gguf_find(g.f, "general.sampling.penalty_repeat") != nullptr);
    CHECK((float)gguf_find(g.f, "general.sampling.penalty_repeat")->num == 1.1f);
    const GGUFValue* eos = gguf_find(g.f, "lantern.generation.eos_token_id");
    REQUIRE(eos != nullptr);
    CHECK(eos->nums == std::vector<double>{151645, 151643});
    REQUIRE(gguf_find(g.f, "lantern.generation.do_sample") != nullptr);
    CHECK(gguf_find(g.f, "lantern.generation.do_sample")->type == GGUF_BOOL);
    CHECK(gguf_find(g.f, "lantern.generation.temperature") == nullptr);  // llama.cpp's key holds it
    // The same settings as the folder's, through the same reader, with and
    // without flags on top.
    check_same_sampling(options_for({file, "hi"}).gen.sampling, options_for({"models/tiny", "hi"}).gen.sampling);
    check_same_sampling(options_for({file, "hi", "-k", "3", "-s", "9"}).gen.sampling,
                        options_for({"models/tiny", "hi", "-k", "3", "-s", "9"}).gen.sampling);
    CHECK(options_for({file, "hi"}).gen.sampling.temperature == 0.7f);
    CHECK(options_for({file, "hi", "--no-gen-config"}).gen.sampling.temperature == SamplerParams().temperature);
    // A file converted from the file carries them on.
    std::string again = "build/test_tiny_again.gguf";
    std::vector<std::string> args = {file, again, "--type", "f32"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    REQUIRE(cmd_convert((int)argv.size(), argv.data()) == 0);
    CHECK(gguf_generation_config(again) == gguf_generation_config(file));
    check_same_sampling(options_for({again, "hi"}).gen.sampling, options_for({"models/tiny", "hi"}).gen.sampling);
}

TEST_CASE("gguf: do_sample false is temperature 0 in the file; no generation_config.json, no keys") {
    std::string dir = tiny_copy("tiny_greedy", R"({"do_sample": false, "temperature": 0.7, "top_k": 5})");
    std::string file = convert_to(dir, "bf16");
    MappedGGUF g(file);
    REQUIRE(gguf_find(g.f, "general.sampling.temp") != nullptr);
    CHECK(gguf_find(g.f, "general.sampling.temp")->num == 0);  // llama.cpp has no do_sample: greedy for it too
    check_same_sampling(options_for({file, "hi"}).gen.sampling, options_for({dir, "hi"}).gen.sampling);
    CHECK(options_for({file, "hi"}).gen.sampling.temperature == 0);

    std::string bare = tiny_copy("tiny_nogen", "");
    std::string file2 = convert_to(bare, "bf16");
    CHECK(gguf_generation_config(file2) == "");
    check_same_sampling(options_for({file2, "hi"}).gen.sampling, options_for({bare, "hi"}).gen.sampling);
}

TEST_CASE("gguf: generation keys of the wrong type or range are refused naming the file and the key") {
    auto file_with = [](const GGUFValue& v) {
        std::string path = "build/test_gen_keys.gguf";
        gguf_write(path, {gguf_str("general.architecture", "qwen2"), v}, {});
        return path;
    };
    CHECK_THROWS_WITH_AS(gguf_generation_config(file_with(gguf_str("general.sampling.temp", "hot"))),
                         doctest::Contains("key general.sampling.temp must be a number"), LanternError);
    CHECK_THROWS_WITH_AS(gguf_generation_config(file_with(gguf_f32("general.sampling.top_p", NAN))),
                         doctest::Contains("key general.sampling.top_p must be a finite number"), LanternError);
    // The ranges are generation_config.json's, checked by its reader.
    CHECK_THROWS_WITH_AS(options_for({file_with(gguf_f32("general.sampling.temp", -1)), "hi"}),
                         doctest::Contains("\"temperature\" must be a number in [0"), LanternError);
    CHECK_THROWS_WITH_AS(options_for({file_with(gguf_f32("general.sampling.top_p", 0)), "hi"}),
                         doctest::Contains("\"top_p\" must be in (0, 1]"), LanternError);
    // llama.cpp's key wins over a lantern.generation one of the same setting.
    std::string path = "build/test_gen_keys.gguf";
    gguf_write(path, {gguf_f32("lantern.generation.temperature", 0.2f), gguf_f32("general.sampling.temp", 0.5f)}, {});
    CHECK(options_for({path, "hi"}).gen.sampling.temperature == 0.5f);
}

TEST_CASE("gguf: config.json's list of stop ids survives convert (lantern.eos_token_ids)") {
    std::string dir = tiny_copy("tiny_eos", R"({"temperature": 0.5})", "[151645, 151643, 7]");
    std::string file = convert_to(dir, "bf16");
    Model folder, m;
    load_model(folder, dir);
    gguf_load_model(m, file);
    CHECK(folder.cfg.eos_ids == std::vector<int>{151645, 151643, 7});
    CHECK(m.cfg.eos_ids == folder.cfg.eos_ids);
    // One id that tokenizer.ggml.eos_token_id already says: no extra key.
    MappedGGUF g(convert_to("models/tiny", "bf16"));
    CHECK(gguf_find(g.f, "lantern.eos_token_ids") == nullptr);
}

static std::string convert_error(const std::vector<std::string>& words) {
    std::vector<std::string> args = words;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    try {
        cmd_convert((int)argv.size(), argv.data());
    } catch (const LanternError& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("gguf: a quantized file is not quantized again into another format without --force") {
    std::string q8 = convert_to("models/tiny", "q8_0");
    CHECK(requantize_is_lossy(DType::Q8_0, DType::Q4_0));
    CHECK(requantize_is_lossy(DType::Q4_0, DType::Q8_0));  // finer, but the Q4_0 rounding stays and Q8_0's joins it
    CHECK(requantize_is_lossy(DType::Q4_K, DType::BF16));
    CHECK(!requantize_is_lossy(DType::Q4_K, DType::Q4_K));
    CHECK(!requantize_is_lossy(DType::Q4_K, DType::F32));  // exact
    CHECK(!requantize_is_lossy(DType::BF16, DType::Q4_0));  // the first quantization
    // convert: refused before anything is written, naming the file and both formats.
    std::string out = "build/test_requant.gguf";
    std::remove(out.c_str());
    std::string e = convert_error({q8, out, "--type", "q4_0"});
    CHECK(e.find(q8) != std::string::npos);
    CHECK(e.find("already q8_0") != std::string::npos);
    CHECK(e.find("--type q4_0") != std::string::npos);
    CHECK(e.find("--force") != std::string::npos);
    CHECK(!std::ifstream(out).good());
    CHECK(convert_error({q8, out, "--type", "q4_0", "--force"}) == "");
    CHECK(convert_error({q8, out, "--type", "f32"}) == "");
    // The same type: every byte of every tensor as the source holds it.
    CHECK(convert_error({q8, out, "--type", "q8_0"}) == "");
    {
        MappedGGUF a(q8), b(out);
        REQUIRE(a.f.tensors.size() == b.f.tensors.size());
        for (size_t i = 0; i < a.f.tensors.size(); i++) {
            const GGUFTensor &x = a.f.tensors[i], &y = b.f.tensors[i];
            CHECK(x.ggml_type == y.ggml_type);
            REQUIRE(x.nbytes == y.nbytes);
            CHECK(memcmp((const uint8_t*)a.map + a.f.data_start + x.offset, (const uint8_t*)b.map + b.f.data_start + y.offset, x.nbytes) == 0);
        }
    }
    // --quant at load: the same rule; the same type leaves the file's bytes where they are.
    Model m;
    open_model(m, q8);
    CHECK_THROWS_WITH_AS(check_quantize_model(m, DType::Q4_0, false), doctest::Contains("already q8_0; --quant q4_0"), LanternError);
    CHECK_THROWS_WITH_AS(check_quantize_model(m, DType::Q4_K, false), doctest::Contains("already q8_0; --quant q4_k"), LanternError);
    CHECK_NOTHROW(check_quantize_model(m, DType::Q4_0, true));
    CHECK_NOTHROW(check_quantize_model(m, DType::F32, false));
    CHECK_NOTHROW(check_quantize_model(m, DType::Q8_0, false));
    const void* before = m.layers[0].wq.data;
    quantize_model(m, DType::Q8_0);
    CHECK(m.layers[0].wq.data == before);
    CHECK(m.owned.empty());
    // A bf16 file is quantized as a folder is.
    Model b;
    open_model(b, convert_to("models/tiny", "bf16"));
    CHECK_NOTHROW(check_quantize_model(b, DType::Q4_0, false));
}
