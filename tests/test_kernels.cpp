// tests/test_kernels.cpp — every fast kernel against its plain twin.
//
// Random inputs, many shapes: rows, columns and token counts that are and
// are not multiples of the tiles (up to 4 rows x 6 tokens), the SIMD width
// (16 lanes) and the Q8_0 block (32). Three kinds of check:
//
//   1. fast ≈ plain within a stated bound (below), for every weight type;
//   2. scalar == AVX2 == AVX-512, bitwise: every instruction set sums in the
//      one 16-lane order (kernels_fast.cpp), so they must agree exactly; a
//      set this CPU lacks is skipped with a message;
//   3. bitwise equal for 1 and 2 threads, and for a batch of T tokens versus
//      the same tokens one at a time (decode and prefill agree).
//
// The bound for float weights. The plain kernel sums in double and rounds
// once; the fast one sums in float, in 16 lanes of cols/16 fused
// multiply-adds each, then 4 more additions. Each step rounds by at most
// u = 2^-24 relative, so (the textbook bound for recursive summation)
//     |fast - exact| <= (cols/16 + 5) * u * sum_c |w_c * x_c|
// and adding the bias in float rounds once more, by u * |result|; the plain
// result itself is within u * |result| of exact. A wrong index or a lost tail is off by
// a whole term, far above this.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/kernel_sets.h"
#include "gguf/quants.h"

static const double U = 1.0 / (1 << 24);

// A random matrix in any type, owning its storage.
struct TestMat {
    std::vector<float> f32;       // the values as f32 (before rounding to dtype)
    std::vector<uint8_t> storage;
    Mat m;
};

// values (f32, rows x cols) stored in dt
static TestMat mat_from_f32(DType dt, int rows, int cols, std::vector<float> values) {
    TestMat t;
    t.f32 = std::move(values);
    Mat src;
    src.dtype = DType::F32;
    src.rows = rows;
    src.cols = cols;
    src.data = t.f32.data();
    t.m = src;
    if (dt == DType::Q8_0) t.m = quantize_q8_0(src, t.storage);
    else if (dtype_is_low_bit(dt)) t.m = quantize_mat(src, dt, t.storage);
    else if (dt != DType::F32) {  // rounded to nearest-even, as the converters in common.h do
        t.storage.resize(t.f32.size() * 2);
        uint16_t* h = (uint16_t*)t.storage.data();
        for (size_t i = 0; i < t.f32.size(); i++) h[i] = dt == DType::BF16 ? f32_to_bf16(t.f32[i]) : f32_to_f16(t.f32[i]);
        t.m.dtype = dt;
        t.m.data = h;
    }
    return t;
}

static TestMat random_mat(DType dt, int rows, int cols, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v((size_t)rows * cols);
    for (float& x : v) x = dist(rng);
    return mat_from_f32(dt, rows, cols, std::move(v));
}

static std::vector<float> random_vec(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

static std::vector<float> run_matmul(KernelSet set, int threads, const std::vector<float>& x, const Mat& W,
                                     const float* bias, int T) {
    kernels_init(set, threads);
    std::vector<float> out((size_t)T * W.rows, NAN);
    matmul(out.data(), x.data(), W, bias, T);
    kernels_init(KernelSet::Fast, 0);
    return out;
}

// The SIMD kernel sets this CPU runs (scalar always); the others are named
// in a message, so a skip shows in the test output.
// Every row of KERNEL_SETS that sums in the one order (kernels.h: exact),
// so a new set is compared without being named here.
static std::vector<KernelSet> simd_sets() {
    std::vector<KernelSet> sets;
    for (int i = 0; i < N_KERNEL_SETS; i++) {
        const KernelSetInfo& s = KERNEL_SETS[i];
        if (s.set == KernelSet::Fast || s.set == KernelSet::Plain || !s.exact) continue;
        if (kernel_set_runs_here(s)) sets.push_back(s.set);
        else MESSAGE("skipped: this build or CPU does not run the " << std::string(s.name) << " kernels, they are not compared"
                     << std::string(s.set == KernelSet::NEON ? " (make test-arm64 runs them)" : ""));
    }
    return sets;
}
static const SimdKernels& simd_table(KernelSet set) {
    kernels_init(set, 0);
    return *g_kernels.simd;
}

static bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// sum_c |w_c * x_c| for output (t, r): the scale of the rounding bound.
static double abs_dot(const Mat& W, int r, const float* xt) {
    std::vector<float> w(W.cols);
    mat_row_to_f32(W, r, w.data());
    double s = 0;
    for (int c = 0; c < W.cols; c++) s += std::fabs((double)w[c] * xt[c]);
    return s;
}

TEST_CASE("matmul_plain: a 2x3 example by hand") {
    float w[6] = {1, 2, 3, 4, 5, 6}, x[3] = {1, 0, -1}, bias[2] = {0.5f, -0.5f}, out[2];
    Mat W;
    W.rows = 2;
    W.cols = 3;
    W.data = w;
    matmul_plain(out, x, W, bias, 1);
    CHECK(out[0] == 1 - 3 + 0.5f);
    CHECK(out[1] == 4 - 6 - 0.5f);
}

// Every SIMD set on this CPU, 1 and 2 threads, all bitwise equal to the
// scalar twin; the batch equal to its tokens one at a time.
static void check_sets_equal(const std::vector<float>& x, const Mat& W, const float* b, int T,
                             const std::vector<float>& want) {
    int cols = W.cols, rows = W.rows;
    for (KernelSet set : simd_sets())
        for (int threads : {1, 2}) {
            std::string name = kernel_set_name(set);
            CAPTURE(name);
            CAPTURE(threads);
            CHECK(bitwise_equal(run_matmul(set, threads, x, W, b, T), want));
            if (threads == 2)
                for (int t = 0; t < T; t++) {
                    std::vector<float> xt(x.begin() + (size_t)t * cols, x.begin() + (size_t)(t + 1) * cols);
                    std::vector<float> one = run_matmul(set, 2, xt, W, b, 1);
                    CHECK(std::memcmp(one.data(), &want[(size_t)t * rows], rows * sizeof(float)) == 0);
                }
        }
}

TEST_CASE("matmul: scalar, avx2 and avx512 bitwise equal, and plain within the bound (f32, bf16, f16), many shapes, 1 and 2 threads") {
    std::mt19937 rng(42);
    const int row_counts[] = {1, 3, 4, 5, 13};
    const int col_counts[] = {1, 7, 15, 16, 17, 31, 33, 64, 100, 203};
    // 1 to 64 tokens take the stripes, 65 the token blocks (kernels.h:STREAM_TOKENS)
    const int token_counts[] = {1, 2, 3, 5, 6, 7, 13, 65};
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
        for (int rows : row_counts)
            for (int cols : col_counts)
                for (int T : token_counts) {
                    std::string type = dtype_name(dt);
                    CAPTURE(type);
                    CAPTURE(rows);
                    CAPTURE(cols);
                    CAPTURE(T);
                    TestMat W = random_mat(dt, rows, cols, rng);
                    std::vector<float> x = random_vec((size_t)T * cols, rng), bias = random_vec(rows, rng);
                    const float* b = (rows % 2) ? bias.data() : nullptr;  // with and without bias
                    std::vector<float> plain = run_matmul(KernelSet::Plain, 1, x, W.m, b, T);
                    std::vector<float> scalar = run_matmul(KernelSet::Scalar, 1, x, W.m, b, T);
                    check_sets_equal(x, W.m, b, T, scalar);
                    int worst = 0;
                    for (int t = 0; t < T; t++)
                        for (int r = 0; r < rows; r++) {
                            size_t i = (size_t)t * rows + r;
                            double bound = (cols / 16 + 5) * U * abs_dot(W.m, r, &x[(size_t)t * cols]) +
                                           2 * U * std::fabs(plain[i]) + 1e-30;
                            if (std::fabs((double)scalar[i] - plain[i]) > bound) worst++;
                        }
                    CHECK(worst == 0);
                }
}

TEST_CASE("matmul at the 0.5B model's widths (896, 4864 columns): every SIMD set bitwise equal to the scalar twin") {
    std::mt19937 rng(17);
    for (DType dt : {DType::BF16, DType::F32, DType::Q8_0})
        for (int cols : {896, 4864})
            for (int T : {1, 7, STREAM_TOKENS, STREAM_TOKENS + 1}) {  // the stripes' last batch, the blocks' first
                std::string type = dtype_name(dt);
                CAPTURE(type);
                CAPTURE(cols);
                CAPTURE(T);
                TestMat W = random_mat(dt, 9, cols, rng);
                std::vector<float> x = random_vec((size_t)T * cols, rng), bias = random_vec(9, rng);
                check_sets_equal(x, W.m, bias.data(), T, run_matmul(KernelSet::Scalar, 1, x, W.m, bias.data(), T));
            }
}

// --kernels bf16dot: the vdpbf16ps tile against its scalar twin (which
// spells out the instruction's order and its flushing of subnormals) bit
// for bit, at every shape, thread count and batch size; and against plain
// fed the same activations rounded to bf16, within the float bound above
// (vdpbf16ps makes cols/16 rounded additions per lane, as the FMAs do).
// The "tiny" inputs make products and partial sums subnormal: the
// instruction flushes them to zero, and so must the twin.
// (used only by the x86-64 case below)
[[maybe_unused]] static std::vector<float> run_matmul_with(const SimdKernels& k, int threads, const std::vector<float>& x, const Mat& W,
                                          const float* bias, int T) {
    kernels_init(KernelSet::Fast, threads);
    std::vector<float> out((size_t)T * W.rows, NAN);
    MatmulOut one = {out.data(), &W, bias};
    KernelScratch scratch;
    matmul_fast(&one, 1, x.data(), T, k, scratch);
    kernels_init(KernelSet::Fast, 0);
    return out;
}

TEST_CASE("bf16dot: vdpbf16ps tiles bitwise equal to their scalar twin, and plain within the bound on bf16-rounded activations") {
#if !defined(__x86_64__)  // the bf16dot table exists only in x86-64 builds
    MESSAGE("skipped: not an x86-64 build, so there are no bf16dot tiles");
#else
    if (!cpu_has_avx512()) {
        MESSAGE("skipped: this CPU lacks AVX512_BF16, the bf16dot tiles are not run (their scalar twin is)");
        return;
    }
    std::mt19937 rng(23);
    for (int rows : {1, 4, 5, 9})
        for (int cols : {1, 15, 17, 31, 32, 33, 64, 100, 896})
            for (int T : {1, 2, 6, 7, 13})
                for (float tiny : {1.0f, 1e-19f}) {
                    CAPTURE(rows);
                    CAPTURE(cols);
                    CAPTURE(T);
                    CAPTURE(tiny);
                    std::vector<float> w = random_vec((size_t)rows * cols, rng), x = random_vec((size_t)T * cols, rng);
                    for (float& v : w) v *= tiny;
                    for (float& v : x) v *= tiny;
                    TestMat W = mat_from_f32(DType::BF16, rows, cols, w);
                    std::vector<float> bias = random_vec(rows, rng);
                    const float* b = rows % 2 ? bias.data() : nullptr;
                    std::vector<float> twin = run_matmul_with(BF16DOT_SCALAR_KERNELS, 1, x, W.m, b, T);
                    for (int threads : {1, 2}) {
                        CAPTURE(threads);
                        CHECK(bitwise_equal(run_matmul_with(AVX512_BF16DOT_KERNELS, threads, x, W.m, b, T), twin));
                    }
                    for (int t = 0; t < T; t++) {  // a token alone gives the bits it gave in the batch
                        std::vector<float> xt(x.begin() + (size_t)t * cols, x.begin() + (size_t)(t + 1) * cols);
                        std::vector<float> one = run_matmul_with(AVX512_BF16DOT_KERNELS, 2, xt, W.m, b, 1);
                        CHECK(std::memcmp(one.data(), &twin[(size_t)t * rows], rows * sizeof(float)) == 0);
                    }
                    if (tiny != 1.0f) continue;
                    std::vector<float> xb(x.size());
                    for (size_t i = 0; i < x.size(); i++) xb[i] = bf16_to_f32(f32_to_bf16_daz(x[i]));
                    std::vector<float> plain = run_matmul(KernelSet::Plain, 1, xb, W.m, b, T);
                    int worst = 0;
                    for (int t = 0; t < T; t++)
                        for (int r = 0; r < rows; r++) {
                            size_t i = (size_t)t * rows + r;
                            double bound = (cols / 16 + 5) * U * abs_dot(W.m, r, &xb[(size_t)t * cols]) +
                                           2 * U * std::fabs(plain[i]) + 1e-30;
                            worst += std::fabs((double)twin[i] - plain[i]) > bound;
                        }
                    CHECK(worst == 0);
                }
#endif
}

// A prefill (more than kernels.h:STREAM_TOKENS tokens) goes in panels of
// tiles and blocks of tokens (kernels_fast.cpp:run_panel): 70 and 131
// tokens make one and two blocks of 128 and groups that are not whole tiles;
// 77 rows make several panels at 4864 columns and a last tile of one row;
// rows of 4864 and 4867 columns go in chunks where the set has tile_chunk,
// and 4867 ends in a partial step inside the last chunk. Every set must
// still give the scalar twin's bits, each token those it gets alone, at 1
// to 3 threads; bf16dot its own twin's.
TEST_CASE("matmul over several token blocks (prefill's cache blocking): every SIMD set bitwise equal to the scalar twin") {
    std::mt19937 rng(31);
    struct Case { DType dt; int cols; };
    for (Case cs : {Case{DType::BF16, 4864}, Case{DType::BF16, 4867}, Case{DType::F32, 4867}, Case{DType::Q8_0, 4864}})
        for (int T : {29, 70, 131}) {
            std::string type = dtype_name(cs.dt);
            CAPTURE(type);
            CAPTURE(cs.cols);
            CAPTURE(T);
            int rows = T == 29 ? 13 : 77;
            CAPTURE(rows);
            TestMat W = random_mat(cs.dt, rows, cs.cols, rng);
            std::vector<float> x = random_vec((size_t)T * cs.cols, rng), bias = random_vec(rows, rng);
            std::vector<float> want = run_matmul(KernelSet::Scalar, 1, x, W.m, bias.data(), T);
            check_sets_equal(x, W.m, bias.data(), T, want);
            for (KernelSet set : simd_sets()) {
                std::string name = kernel_set_name(set);
                CAPTURE(name);
                CHECK(bitwise_equal(run_matmul(set, 3, x, W.m, bias.data(), T), want));
            }
#if defined(__x86_64__)  // bf16dot against its own twin (x86-64 builds only)
            if (cs.dt != DType::BF16 || !cpu_has_avx512()) continue;
            std::vector<float> twin = run_matmul_with(BF16DOT_SCALAR_KERNELS, 1, x, W.m, bias.data(), T);
            for (int threads : {1, 2, 3}) {
                CAPTURE(threads);
                CHECK(bitwise_equal(run_matmul_with(AVX512_BF16DOT_KERNELS, threads, x, W.m, bias.data(), T), twin));
            }
#endif
        }
}

TEST_CASE("f32_to_bf16_daz: nearest-even like f32_to_bf16, subnormals to a zero of their sign") {
    CHECK(f32_to_bf16_daz(1.0f) == 0x3f80);
    CHECK(f32_to_bf16_daz(1.00390625f) == 0x3f80);  // 1 + 2^-8: halfway, to even
    CHECK(f32_to_bf16_daz(1.01171875f) == 0x3f82);  // 1 + 3*2^-8: halfway, to even (up)
    CHECK(f32_to_bf16_daz(1e-39f) == 0x0000);
    CHECK(f32_to_bf16_daz(-1e-39f) == 0x8000);
    CHECK(f32_to_bf16(1e-39f) != 0x0000);  // the plain rounding keeps a subnormal
}

// The kernels keep no buffer of their own (kernels.h:KernelScratch): two
// threads, each with its scratch, multiply at once (Q8_0 and Q4_0 quantize
// their activations; a bf16 matrix and prefill attention use the others)
// and each gets the bits it gets alone, for every set.
TEST_CASE("KernelScratch: two threads run matmul_many and attention_heads at once, each with its own buffers, and get the bits of one alone") {
    std::mt19937 rng(31);
    const int cols = 96, T = 5;
    TestMat A = random_mat(DType::Q8_0, 19, cols, rng), B = random_mat(DType::Q4_0, 16, cols, rng),
            C = random_mat(DType::BF16, 7, cols, rng);
    std::vector<float> xs[2] = {random_vec((size_t)T * cols, rng), random_vec((size_t)T * cols, rng)};
    TestMat K = random_mat(DType::F32, 9, 2 * 16, rng), V = random_mat(DType::F32, 9, 2 * 16, rng);
    std::vector<float> q = random_vec((size_t)T * 4 * 16, rng);
    auto run = [&](const std::vector<float>& x, KernelScratch& s, std::vector<float>* out) {
        for (int rep = 0; rep < 20; rep++) {
            const Mat* mats[3] = {&A.m, &B.m, &C.m};
            for (int i = 0; i < 3; i++) {
                out[i].assign((size_t)T * mats[i]->rows, NAN);
                MatmulOut one = {out[i].data(), mats[i], nullptr};
                matmul_many(&one, 1, x.data(), T, &s);
            }
            out[3].assign((size_t)T * 4 * 16, NAN);
            KVRows KR, VR;
            KR.base = (const uint8_t*)K.m.data, VR.base = (const uint8_t*)V.m.data, KR.stride = VR.stride = 2 * 16 * 4;
            attention_heads(out[3].data(), nullptr, q.data(), KR, VR, DType::F32, 4, 2, T, 9 - T + 1, 16, &s);
        }
    };
    for (KernelSet set : simd_sets()) {
        std::string name = kernel_set_name(set);
        CAPTURE(name);
        kernels_init(set, 2);
        std::vector<float> alone[2][4], together[2][4];
        KernelScratch s0, s1;
        run(xs[0], s0, alone[0]);
        run(xs[1], s0, alone[1]);
        KernelScratch t0, t1;
        std::thread a([&] { run(xs[0], t0, together[0]); }), b([&] { run(xs[1], t1, together[1]); });
        a.join();
        b.join();
        for (int w = 0; w < 2; w++)
            for (int i = 0; i < 4; i++) CHECK(bitwise_equal(alone[w][i], together[w][i]));
    }
    kernels_init(KernelSet::Fast, 0);
}

// matmul_many runs several matrices as one list of tiles. Each output must
// still be its own matmul's bits, whatever the mix: q/k/v shapes (896 and
// 128 rows at the 0.5B widths, scaled down here), row counts that are not a
// multiple of the tile, a Q8_0 matrix beside float ones (the activations are
// quantized once for all), GGUF's low-bit formats beside Q8_0 (the list
// quants_fast.cpp runs under avx512) and beside floats (one matrix after
// another), every set, 1 to 3 threads, decode and batches.
TEST_CASE("matmul_many: each output bitwise equal to its own matmul (every set, mixed types, 1-3 threads, T 1-7)") {
    std::mt19937 rng(23);
    std::vector<KernelSet> sets = simd_sets();
    sets.push_back(KernelSet::Plain);
    struct Mix { DType a, b, c; int rows_a, rows_b, rows_c, cols; };
    const Mix mixes[] = {{DType::BF16, DType::BF16, DType::BF16, 56, 9, 9, 64},
                         {DType::Q8_0, DType::Q8_0, DType::Q8_0, 14, 3, 5, 96},
                         {DType::Q8_0, DType::BF16, DType::F32, 7, 13, 1, 32},
                         {DType::F16, DType::Q8_0, DType::BF16, 1, 6, 17, 896},
                         {DType::Q4_0, DType::Q5_0, DType::Q8_0, 17, 3, 9, 64},
                         {DType::Q4_1, DType::Q5_1, DType::Q4_0, 8, 11, 1, 96},
                         {DType::Q4_0, DType::BF16, DType::Q8_0, 9, 5, 3, 32}};
    for (const Mix& mx : mixes)
        for (int T : {1, 2, 7}) {
            CAPTURE(T);
            CAPTURE(mx.cols);
            TestMat A = random_mat(mx.a, mx.rows_a, mx.cols, rng), B = random_mat(mx.b, mx.rows_b, mx.cols, rng),
                    C = random_mat(mx.c, mx.rows_c, mx.cols, rng);
            std::vector<float> x = random_vec((size_t)T * mx.cols, rng), bias = random_vec(mx.rows_a, rng);
            const TestMat* mats[3] = {&A, &B, &C};
            const float* biases[3] = {bias.data(), nullptr, nullptr};
            for (KernelSet set : sets)
                for (int threads : {1, 2, 3}) {
                    std::string name = kernel_set_name(set);
                    CAPTURE(name);
                    CAPTURE(threads);
                    std::vector<float> outs[3];
                    MatmulOut list[3];
                    for (int i = 0; i < 3; i++) {
                        outs[i].assign((size_t)T * mats[i]->m.rows, NAN);
                        list[i] = {outs[i].data(), &mats[i]->m, biases[i]};
                    }
                    kernels_init(set, threads);
                    matmul_many(list, 3, x.data(), T);
                    for (int i = 0; i < 3; i++) {
                        CAPTURE(i);
                        CHECK(bitwise_equal(outs[i], run_matmul(set, threads, x, mats[i]->m, biases[i], T)));
                    }
                }
            kernels_init(KernelSet::Fast, 0);
        }
}

// Q8_0. The fast kernel also quantizes the activations (per block of 32,
// d_x = max|x|/127 rounded to f16), so it differs from the plain kernel,
// which multiplies the Q8_0 weights by the float activations, by
//     |sum_c w_c (x_c - xq_c)| <= sum_blocks (sum_c |w_c|) * e_b,
// e_b = d_x/2 (rounding to the integer grid) + 127 * |d_x - f16(d_x)|
//     <= d_x * (1/2 + 127 * 2^-11) < 0.57 * d_x.
// And against the exact integer arithmetic on the same quantized values it
// is within float rounding of the per-block terms.
TEST_CASE("Q8_0 matmul: scalar, avx2, avx512 bitwise equal, the exact int8 arithmetic, and plain within the quantization bound") {
    std::mt19937 rng(7);
    for (int rows : {1, 4, 6, 17})
        for (int cols : {32, 64, 96, 320})
            for (int T : {1, 2, 3, 5}) {
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(T);
                TestMat W = random_mat(DType::Q8_0, rows, cols, rng);
                std::vector<float> x = random_vec((size_t)T * cols, rng);
                std::vector<float> plain = run_matmul(KernelSet::Plain, 1, x, W.m, nullptr, T);
                std::vector<float> fast1 = run_matmul(KernelSet::Scalar, 1, x, W.m, nullptr, T);
                check_sets_equal(x, W.m, nullptr, T, fast1);

                int nb = cols / Q8_BLOCK, bad_exact = 0, bad_plain = 0;
                std::vector<uint8_t> xq((size_t)nb * Q8_BLOCK_BYTES);
                const uint8_t* wq = (const uint8_t*)W.m.data;
                for (int t = 0; t < T; t++) {
                    quantize_row_q8_0(&x[(size_t)t * cols], cols, xq.data());
                    for (int r = 0; r < rows; r++) {
                        double exact = 0, scale = 0, quant_bound = 0;
                        for (int b = 0; b < nb; b++) {
                            const uint8_t* wb = wq + ((size_t)r * nb + b) * Q8_BLOCK_BYTES;
                            const uint8_t* xb = xq.data() + (size_t)b * Q8_BLOCK_BYTES;
                            uint16_t hw, hx;
                            std::memcpy(&hw, wb, 2);
                            std::memcpy(&hx, xb, 2);
                            float d = f16_to_f32(hw) * f16_to_f32(hx);  // the kernel's float product
                            long isum = 0, iabs = 0;
                            double wabs = 0, amax = 0;
                            for (int j = 0; j < Q8_BLOCK; j++) {
                                int p = (int8_t)wb[2 + j] * (int8_t)xb[2 + j];
                                isum += p;
                                iabs += std::abs(p);
                                wabs += std::fabs(f16_to_f32(hw) * (int8_t)wb[2 + j]);
                                amax = std::fmax(amax, std::fabs(x[(size_t)t * cols + b * Q8_BLOCK + j]));
                            }
                            exact += (double)d * isum;
                            scale += std::fabs((double)d) * iabs;
                            quant_bound += wabs * 0.57 * amax / 127;
                        }
                        size_t i = (size_t)t * rows + r;
                        if (std::fabs(fast1[i] - exact) > (nb + 5) * U * scale + 1e-30) bad_exact++;
                        if (std::fabs((double)fast1[i] - plain[i]) > quant_bound + (nb + 5) * U * scale) bad_plain++;
                    }
                }
                CHECK(bad_exact == 0);
                CHECK(bad_plain == 0);
            }
}

TEST_CASE("quantize_row_q8_0: each value within 0.57 d of the original; a zero block stays zero") {
    std::mt19937 rng(3);
    std::vector<float> x = random_vec(96, rng);
    for (int j = 32; j < 64; j++) x[j] = 0.0f;
    std::vector<uint8_t> q(3 * Q8_BLOCK_BYTES);
    quantize_row_q8_0(x.data(), 96, q.data());
    for (int b = 0; b < 3; b++) {
        uint16_t h;
        std::memcpy(&h, &q[b * Q8_BLOCK_BYTES], 2);
        float d = f16_to_f32(h);
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
        CHECK(std::fabs(d - amax / 127) <= amax / 127 * 1e-3);
        for (int j = 0; j < 32; j++) {
            int8_t v = (int8_t)q[b * Q8_BLOCK_BYTES + 2 + j];
            CHECK(v >= -127);
            CHECK(std::fabs(x[b * 32 + j] - d * v) <= 0.57 * amax / 127 + 1e-30);
        }
    }
}

TEST_CASE("apply_rope: the angles kept from the last call give the bits computed afresh, whatever the order of calls") {
    // (pos, head_dim, theta) in an order that hits and misses the kept angles
    struct Call { int pos, hd; float theta; } calls[] = {{5, 64, 1e6f}, {5, 64, 1e6f}, {6, 64, 1e6f}, {5, 64, 1e6f},
                                                        {5, 64, 1e4f}, {5, 8, 1e4f}, {5, 64, 1e4f}, {0, 64, 1e4f}, {32000, 64, 1e6f},
                                                        {32000, 64, 1e6f}, {7, 128, 1e6f}};
    std::mt19937 rng(9);
    for (const Call& k : calls) {
        int heads = 3, half = k.hd / 2;
        std::vector<float> got = random_vec(heads * k.hd, rng), want = got;
        apply_rope(got.data(), heads, k.hd, k.pos, k.theta);
        for (int i = 0; i < half; i++) {  // the formula, computed here every time
            double angle = k.pos * std::pow((double)k.theta, -2.0 * i / k.hd);
            float c = (float)std::cos(angle), s = (float)std::sin(angle);
            for (int h = 0; h < heads; h++) {
                float* v = &want[(size_t)h * k.hd];
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
        CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("quantize_row_q8_0_fast: bitwise equal to quantize_row_q8_0, halves, zeros, tiny and huge blocks included") {
    std::mt19937 rng(5);
    std::vector<float> x;
    for (int b = 0; b < 64; b++) {  // random blocks over many magnitudes
        float scale = std::ldexp(1.0f, (int)(rng() % 60) - 30);
        for (float v : random_vec(32, rng)) x.push_back(v * scale);
    }
    // amax 127 makes d = 1: each value is its own v, here every half k + 0.5 and its neighbours
    for (int k = -127; k < 127; k += 1) {
        float block[32];
        for (int j = 0; j < 32; j++) block[j] = 0.0f;
        block[0] = 127.0f;
        block[1] = k + 0.5f, block[2] = std::nextafter(k + 0.5f, 1e9f), block[3] = std::nextafter(k + 0.5f, -1e9f);
        block[4] = -(k + 0.5f), block[5] = -0.0f, block[6] = (float)k, block[7] = -127.0f;
        x.insert(x.end(), block, block + 32);
    }
    float odd[][2] = {{0.0f, 0.0f}, {1e-40f, -3e-41f}, {1e-38f, 2e-45f}, {3e38f, -1e38f}, {INFINITY, 1.0f}, {NAN, 2.0f}};
    for (auto& o : odd) {  // zero, subnormal (its scale underflows), huge, inf and NaN blocks
        for (int j = 0; j < 32; j++) x.push_back(j % 2 ? o[1] * (j / 32.0f) : o[0]);
    }
    int nb = (int)x.size() / 32;
    std::vector<uint8_t> want(nb * Q8_BLOCK_BYTES), got(nb * Q8_BLOCK_BYTES);
    quantize_row_q8_0(x.data(), (int)x.size(), want.data());
    quantize_row_q8_0_fast(x.data(), (int)x.size(), got.data());
    int differ = 0;
    for (int b = 0; b < nb; b++)
        if (std::memcmp(&want[b * Q8_BLOCK_BYTES], &got[b * Q8_BLOCK_BYTES], Q8_BLOCK_BYTES) != 0) {
            if (differ++ < 3) MESSAGE("block " << b << " differs");
        }
    CHECK(differ == 0);
}

TEST_CASE("att_widen: every set's key and value rows widened, transposed and not, equal widen value for value (f32/f16/bf16/q8_0)") {
    std::mt19937 rng(23);
    std::vector<KernelSet> sets = simd_sets();
    for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
        for (int hd : {8, 17, 32, 64, 128})
            for (int nb : {1, 15, 16, 17, 63, 64}) {
                if (dt == DType::Q8_0 && hd % Q8_BLOCK) continue;
                CAPTURE(hd);
                CAPTURE(nb);
                TestMat R = random_mat(dt, nb, 2 * hd, rng);  // two heads a row: the second one is read
                size_t stride = kv_row_bytes(dt, 2 * hd), off = kv_row_bytes(dt, hd);
                const uint8_t* rows[ATT_BLOCK];
                for (int j = 0; j < nb; j++) rows[j] = (const uint8_t*)R.m.data + j * stride + off;
                std::vector<float> want_t((size_t)hd * ATT_BLOCK, 0.0f), want_r((size_t)nb * hd);
                for (int j = 0; j < nb; j++)
                    for (int d = 0; d < hd; d++) want_t[(size_t)d * ATT_BLOCK + j] = want_r[(size_t)j * hd + d] = widen(dt, rows[j], d);
                for (KernelSet set : sets) {
                    const SimdKernels& k = simd_table(set);
                    if (!k.att_widen) continue;  // the driver's own loop over widen runs instead
                    std::string name = k.name;
                    CAPTURE(name);
                    std::vector<float> got_t((size_t)hd * ATT_BLOCK, NAN), got_r((size_t)nb * hd, NAN);
                    k.att_widen(got_t.data(), rows, nb, dt, hd, true);
                    k.att_widen(got_r.data(), rows, nb, dt, hd, false);
                    CHECK(bitwise_equal(got_t, want_t));
                    CHECK(bitwise_equal(got_r, want_r));
                }
                kernels_init(KernelSet::Fast, 0);
            }
}

TEST_CASE("attention's axpy (KV value rows in f32, f16, bf16): every SIMD set bitwise equal to the scalar twin, and plain within the bound") {
    std::mt19937 rng(11);
    std::vector<KernelSet> sets = simd_sets();
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
        for (int n : {1, 5, 8, 9, 15, 16, 17, 33, 63, 64, 65, 128, 129, 200, 257}) {
            std::string type = dtype_name(dt);
            CAPTURE(type);
            CAPTURE(n);
            TestMat B = random_mat(dt, 1, n, rng);  // one row in the cache's type
            std::vector<float> b(n);
            mat_row_to_f32(B.m, 0, b.data());
            const uint8_t* row = (const uint8_t*)B.m.data;
            std::vector<float> y0 = random_vec(n, rng), yp = y0, ys = y0;
            float alpha = 0.37f;
            vec_axpy_plain(yp.data(), alpha, row, dt, n);
            SCALAR_KERNELS.axpy(ys.data(), &alpha, row, 0, dt, 1, n);
            for (int i = 0; i < n; i++)  // plain rounds twice (multiply, add), fma once
                CHECK(std::fabs(ys[i] - yp[i]) <= 2 * U * (std::fabs(0.37 * b[i]) + std::fabs(y0[i])));
            // several rows at once (attention's block of values): the rows one after another
            int n_rows = 5;
            TestMat R = random_mat(dt, n_rows, n + 3, rng);  // rows n + 3 long: the stride skips the rest
            std::vector<float> alphas = random_vec(n_rows, rng), ym = y0, yr = y0;
            size_t rstride = (n + 3) * (dt == DType::F32 ? 4 : 2);
            SCALAR_KERNELS.axpy(ym.data(), alphas.data(), (const uint8_t*)R.m.data, rstride, dt, n_rows, n);
            for (int j = 0; j < n_rows; j++)
                SCALAR_KERNELS.axpy(yr.data(), &alphas[j], (const uint8_t*)R.m.data + j * rstride, 0, dt, 1, n);
            CHECK(bitwise_equal(ym, yr));
            for (KernelSet set : sets) {
                const SimdKernels& k = simd_table(set);
                std::string name = k.name;
                CAPTURE(name);
                std::vector<float> yf = y0;
                k.axpy(yf.data(), &alpha, row, 0, dt, 1, n);
                CHECK(bitwise_equal(yf, ys));
                std::vector<float> yk = y0;
                k.axpy(yk.data(), alphas.data(), (const uint8_t*)R.m.data, rstride, dt, n_rows, n);
                CHECK(bitwise_equal(yk, ym));
            }
            kernels_init(KernelSet::Fast, 0);
        }
}

// Attention for one head and one query, plain (all scores, then softmax)
// against fast (chunks of ATT_CHUNK keys, each in blocks of ATT_BLOCK with
// the online softmax, the chunks' partial results combined). The bound,
// with |v| <= 1 so |out| <= 1, in units of u = 2^-24:
//   - a score's dot product: fast sums in one chain of hd fmas (att_scores),
//     plain in double, so they differ by at most (hd + 6) u S, S = max_j of
//     sum_i |q_i k_ji| / sqrt(hd); a weight exp(s_j - M) moves by that
//     relative amount twice (s_j and M);
//   - exp_poly: 2 ulp, and a rounding or two per rescale (at most
//     n/ATT_BLOCK in the blocks, n/ATT_CHUNK in the combination);
//   - the weighted sum of n value rows in float: n u (recursive summation);
//     the sum l of the weights in 16 lanes and across chunks:
//     (n/16 + n/ATT_CHUNK + 4) u relative; then the division by l.
// So |fast - plain| <= (n + 2 n/ATT_BLOCK + 2 n/ATT_CHUNK + n/16 + 12) u
// + 2 (hd + 6) u S per output value, and a weight within
// p_j ((n/16 + n/ATT_CHUNK + 12) u + 2 (hd + 6) u S). A missed
// rescale, a lost block tail or a key off by one moves the output by a whole
// weight, far above this. Keys are drawn so that the scores spread wide and
// the maximum keeps rising from block to block (the rescale path runs), and
// q is scaled up so exp sees a wide range.
struct AttnCase {
    TestMat K, V;
    std::vector<float> q;
    const uint8_t *keys, *values;
    size_t stride;
    double S = 0;  // max_j sum_i |q_i k_ji| / sqrt(hd)
};
static AttnCase attn_case(DType dt, int n, int hd, float q_scale, std::mt19937& rng) {
    AttnCase a;
    int kv_heads = 2;  // rows of the cache hold two heads: the stride skips the other one
    a.q = random_vec(hd, rng);
    for (float& v : a.q) v *= q_scale;
    std::vector<float> k = random_vec((size_t)n * kv_heads * hd, rng);
    for (int j = 0; j < n; j++)  // later keys lean towards q: the running maximum rises
        for (int i = 0; i < hd; i++) k[(size_t)j * kv_heads * hd + hd + i] += 0.5f * j / n * (a.q[i] / q_scale);
    a.K = mat_from_f32(dt, n, kv_heads * hd, std::move(k));
    a.V = random_mat(dt, n, kv_heads * hd, rng);
    a.stride = kv_row_bytes(dt, kv_heads * hd);
    a.keys = (const uint8_t*)a.K.m.data + kv_row_bytes(dt, hd);  // head 1
    a.values = (const uint8_t*)a.V.m.data + kv_row_bytes(dt, hd);
    std::vector<float> row(kv_heads * hd);
    for (int j = 0; j < n; j++) {
        mat_row_to_f32(a.K.m, j, row.data());  // the keys as stored (rounded to dt)
        double s = 0;
        for (int i = 0; i < hd; i++) s += std::fabs((double)a.q[i] * row[hd + i]);
        a.S = std::max(a.S, s / std::sqrt((double)hd));
    }
    return a;
}

// One query over the first n keys of `a` through the fast kernel's decode
// (attention_heads_fast for one head and one token: chunks of ATT_CHUNK
// keys, each in blocks of ATT_BLOCK with the online softmax, combined).
static void decode_one(float* out, float* scores, const AttnCase& a, DType dt, int n, int hd, const SimdKernels& k) {
    KVRows K, V;
    K.base = a.keys, V.base = a.values, K.stride = V.stride = a.stride;
    KernelScratch s;
    attention_heads_fast(out, scores, a.q.data(), K, V, dt, 1, 1, 1, n, hd, k, s);
}

// Plain against the scalar twin within the bound, then every SIMD set
// bitwise equal to the scalar twin, weights and output.
static void check_attention(const AttnCase& a, DType dt, int n, int hd, const std::vector<KernelSet>& sets) {
    std::vector<float> out_p(hd), out_s(hd), s_p(n), s_s(n);
    attention_head_plain(out_p.data(), s_p.data(), a.q.data(), a.keys, a.values, a.stride, dt, n, hd);
    decode_one(out_s.data(), s_s.data(), a, dt, n, hd, SCALAR_KERNELS);
    double score_err = 2 * (hd + 6) * U * a.S;
    double tol = (n + 2 * (n / ATT_BLOCK) + 2 * (n / ATT_CHUNK) + n / 16 + 12) * U + score_err;
    double wtol = (n / 16 + n / ATT_CHUNK + 12) * U + score_err;
    int bad = 0;
    for (int i = 0; i < hd; i++) bad += !(std::fabs(out_s[i] - out_p[i]) <= tol);
    for (int j = 0; j < n; j++) bad += !(std::fabs(s_s[j] - s_p[j]) <= s_p[j] * wtol + 1e-37);
    CHECK(bad == 0);
    std::vector<float> out_n(hd);  // without the weights (no trace): the same output
    decode_one(out_n.data(), nullptr, a, dt, n, hd, SCALAR_KERNELS);
    CHECK(bitwise_equal(out_n, out_s));
    for (KernelSet set : sets) {
        const SimdKernels& k = simd_table(set);
        std::string name = k.name;
        CAPTURE(name);
        std::vector<float> out_f(hd), s_f(n);
        decode_one(out_f.data(), s_f.data(), a, dt, n, hd, k);
        CHECK(bitwise_equal(out_f, out_s));
        CHECK(bitwise_equal(s_f, s_s));
    }
    kernels_init(KernelSet::Fast, 0);
}

TEST_CASE("decode attention: chunks of keys, online softmax in each, combined, equal plain within the bound; every SIMD set bitwise equal to the scalar twin (f32/f16/bf16/q8_0 cache)") {
    std::mt19937 rng(13);
    std::vector<KernelSet> sets = simd_sets();
    for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
        std::string type = dtype_name(dt);
        CAPTURE(type);
        // decode: one query over n keys, n within, at and past block and chunk edges
        for (int hd : {8, 17, 64})
            for (int n : {1, 3, 63, 64, 65, 128, 129, 200, 255, 256, 257, 1000, 2100}) {
                if (hd != 64 && n > 200) continue;
                if (dt == DType::Q8_0 && hd % Q8_BLOCK) continue;  // a Q8_0 head is whole blocks
                CAPTURE(hd);
                CAPTURE(n);
                for (float q_scale : {1.0f, 8.0f}) {
                    AttnCase a = attn_case(dt, n, hd, q_scale, rng);
                    check_attention(a, dt, n, hd, sets);
                }
            }
        // causal prefill: query t of a 150-token prompt sees keys 0..t
        int hd = 64, T = 150;
        AttnCase a = attn_case(dt, T, hd, 4.0f, rng);
        for (int t = 0; t < T; t++) {
            CAPTURE(t);
            check_attention(a, dt, t + 1, hd, sets);
        }
    }
}

// Every head and token of a prefill at once (attention_heads): the fast
// kernel's tiles of queries against blocks of keys, against the plain one
// (attention_head_plain per head and token). The bound is check_attention's
// (the weights' sum in 16 lanes stays under the n u of the weighted sum). Then the bits: every SIMD set equal to
// the scalar twin, 1-3 threads, with or without the weights, and the tokens
// split into two batches equal to the one batch (a token's result does not
// depend on the tile it came in); for one token, each head's bits alone
// (a KV head's chunk task runs its whole group of query heads at once).
struct HeadsCase {
    int n_heads = 4, n_kv_heads = 2, hd, T, n_first, kv_len;
    std::vector<float> q;  // [T, n_heads * hd]
    TestMat K, V;          // [kv_len, n_kv_heads * hd]
    size_t stride;
};
static HeadsCase heads_case(DType dt, int hd, int T, int n_first, std::mt19937& rng, int n_heads = 4,
                            int n_kv_heads = 2) {
    HeadsCase a;
    a.n_heads = n_heads, a.n_kv_heads = n_kv_heads;
    a.hd = hd;
    a.T = T;
    a.n_first = n_first;
    a.kv_len = n_first - 1 + T;
    int kv_dim = a.n_kv_heads * hd, q_dim = a.n_heads * hd;
    std::vector<float> u = random_vec(hd, rng);  // queries and later keys lean towards u: the maximum rises
    a.q = random_vec((size_t)T * q_dim, rng);
    for (size_t i = 0; i < a.q.size(); i++) a.q[i] = 2.0f * a.q[i] + 2.0f * u[i % hd];
    std::vector<float> k = random_vec((size_t)a.kv_len * kv_dim, rng);
    for (int j = 0; j < a.kv_len; j++)
        for (int i = 0; i < kv_dim; i++) k[(size_t)j * kv_dim + i] += 1.5f * j / a.kv_len * u[i % hd];
    a.K = mat_from_f32(dt, a.kv_len, kv_dim, std::move(k));
    a.V = random_mat(dt, a.kv_len, kv_dim, rng);
    a.stride = kv_row_bytes(dt, kv_dim);
    return a;
}
static void run_heads(const HeadsCase& a, DType dt, const SimdKernels* k, int t_begin, int t_end, float* out,
                      float* scores) {
    int q_dim = a.n_heads * a.hd, T = t_end - t_begin;
    const float* q = a.q.data() + (size_t)t_begin * q_dim;
    const uint8_t *keys = (const uint8_t*)a.K.m.data, *values = (const uint8_t*)a.V.m.data;
    KernelScratch scratch;
    KVRows K, V;
    K.base = keys, V.base = values, K.stride = V.stride = a.stride;
    if (k)
        attention_heads_fast(out + (size_t)t_begin * q_dim, scores, q, K, V, dt, a.n_heads, a.n_kv_heads, T,
                             a.n_first + t_begin, a.hd, *k, scratch);
    else
        attention_heads_plain(out + (size_t)t_begin * q_dim, scores, q, keys, values, a.stride, dt, a.n_heads,
                              a.n_kv_heads, T, a.n_first + t_begin, a.hd);
}

// The same keys and values in pages, as the server's cache holds them
// (KVRows with a row per position): pages of 5 positions, the last page
// first in the pool, so a block of ATT_BLOCK keys spans pages that are
// not in order and runs end inside blocks.
static void run_heads_paged(const HeadsCase& a, DType dt, const SimdKernels& k, float* out, float* scores) {
    const int page = 5;
    int n_pages = (a.kv_len + page - 1) / page;
    std::vector<uint8_t> kp((size_t)n_pages * page * a.stride), vp(kp.size());
    std::vector<const uint8_t*> kr(a.kv_len), vr(a.kv_len);
    for (int j = 0; j < a.kv_len; j++) {
        size_t at = ((size_t)(n_pages - 1 - j / page) * page + j % page) * a.stride;
        std::memcpy(&kp[at], (const uint8_t*)a.K.m.data + (size_t)j * a.stride, a.stride);
        std::memcpy(&vp[at], (const uint8_t*)a.V.m.data + (size_t)j * a.stride, a.stride);
        kr[j] = &kp[at];
        vr[j] = &vp[at];
    }
    KVRows K, V;
    K.rows = kr.data(), V.rows = vr.data(), K.stride = V.stride = a.stride;
    KernelScratch scratch;
    attention_heads_fast(out, scores, a.q.data(), K, V, dt, a.n_heads, a.n_kv_heads, a.T, a.n_first, a.hd, k, scratch);
}

TEST_CASE("attention_heads: prefill tiles equal plain within the bound; every SIMD set, 1-3 threads, with or without the weights, any batch split and the cache in pages give the same bits (f32/f16/bf16 cache)") {
    std::mt19937 rng(17);
    std::vector<KernelSet> sets = simd_sets();
    // The last shapes have Qwen2.5-0.5B's heads (14 sharing 2 KV heads): a
    // group of 7 takes the value kernels' wide path.
    struct Shape { int hd, T, n_first, n_heads = 4, n_kv_heads = 2; };
    std::vector<Shape> shapes = {{64, 1, 1},   {64, 1, 70},  {64, 1, 700}, {64, 7, 1},  {64, 7, 60},
                                 {64, 64, 1},  {64, 64, 130}, {64, 300, 1}, {17, 7, 3},  {17, 64, 65},
                                 {128, 40, 30}, {128, 1, 300}, {64, 1, 600, 14, 2}, {32, 1, 70, 14, 2},
                                 {64, 9, 100, 14, 2}};
    for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
        for (const Shape& sh : shapes) {
            if (dt == DType::Q8_0 && sh.hd % Q8_BLOCK) continue;  // a Q8_0 head is whole blocks
            std::string type = dtype_name(dt);
            CAPTURE(type);
            CAPTURE(sh.hd);
            CAPTURE(sh.T);
            CAPTURE(sh.n_first);
            CAPTURE(sh.n_heads);
            HeadsCase a = heads_case(dt, sh.hd, sh.T, sh.n_first, rng, sh.n_heads, sh.n_kv_heads);
            int hd = a.hd, T = a.T, q_dim = a.n_heads * hd, kv_len = a.kv_len, kv_dim = a.n_kv_heads * hd;
            size_t n_out = (size_t)T * q_dim, n_scores = (size_t)a.n_heads * T * kv_len;
            std::vector<float> out_p(n_out), s_p(n_scores), out_s(n_out), s_s(n_scores);
            run_heads(a, dt, nullptr, 0, T, out_p.data(), s_p.data());
            run_heads(a, dt, &SCALAR_KERNELS, 0, T, out_s.data(), s_s.data());
            // the bound, per head and token
            std::vector<float> krow(kv_dim);
            int bad = 0;
            for (int h = 0; h < a.n_heads; h++)
                for (int t = 0; t < T; t++) {
                    int n = a.n_first + t, g = h / (a.n_heads / a.n_kv_heads);
                    const float* q = &a.q[(size_t)t * q_dim + h * hd];
                    double S = 0;
                    for (int j = 0; j < n; j++) {
                        mat_row_to_f32(a.K.m, j, krow.data());
                        double sum = 0;
                        for (int i = 0; i < hd; i++) sum += std::fabs((double)q[i] * krow[g * hd + i]);
                        S = std::max(S, sum / std::sqrt((double)hd));
                    }
                    // check_attention's bound, with the tile's score order
                    double score_err = 2 * (hd + 6) * U * S;
                    double tol = (n + 2 * (n / ATT_BLOCK) + 2 * (n / ATT_CHUNK) + n / 16 + 12) * U + score_err;
                    double wtol = (n / 16 + n / ATT_CHUNK + 12) * U + score_err;
                    for (int i = 0; i < hd; i++) {
                        size_t o = (size_t)t * q_dim + h * hd + i;
                        bad += !(std::fabs(out_s[o] - out_p[o]) <= tol);
                    }
                    const float *sp = &s_p[((size_t)h * T + t) * kv_len], *ss = &s_s[((size_t)h * T + t) * kv_len];
                    for (int j = 0; j < kv_len; j++)
                        bad += !(std::fabs(ss[j] - sp[j]) <= sp[j] * wtol + 1e-37);
                    for (int j = n; j < kv_len; j++) bad += ss[j] != 0.0f;  // the future
                }
            CHECK(bad == 0);
            std::vector<float> out_n(n_out);  // no weights asked (no trace): the same output
            run_heads(a, dt, &SCALAR_KERNELS, 0, T, out_n.data(), nullptr);
            CHECK(bitwise_equal(out_n, out_s));
            if (T == 1) {  // decode: each head alone gives the bits it got in its group
                for (int h = 0; h < a.n_heads; h++) {
                    std::vector<float> one(hd);
                    size_t off = (h / (a.n_heads / a.n_kv_heads)) * kv_row_bytes(dt, hd);
                    KVRows K1, V1;
                    K1.base = (const uint8_t*)a.K.m.data + off, V1.base = (const uint8_t*)a.V.m.data + off;
                    K1.stride = V1.stride = a.stride;
                    KernelScratch scratch;
                    attention_heads_fast(one.data(), nullptr, &a.q[h * hd], K1, V1, dt, 1, 1, 1, a.n_first, hd,
                                         SCALAR_KERNELS, scratch);
                    CHECK(std::memcmp(one.data(), &out_s[h * hd], hd * sizeof(float)) == 0);
                }
            } else {  // the first third of the tokens as one batch, the rest as the next
                std::vector<float> out_2(n_out);
                int cut = std::max(2, T / 3);
                run_heads(a, dt, &SCALAR_KERNELS, 0, cut, out_2.data(), nullptr);
                run_heads(a, dt, &SCALAR_KERNELS, cut, T, out_2.data(), nullptr);
                CHECK(bitwise_equal(out_2, out_s));
            }
            for (KernelSet set : sets)
                for (int threads : {1, 2, 3}) {
                    kernels_init(set, threads);
                    std::string name = g_kernels.simd->name;
                    CAPTURE(name);
                    CAPTURE(threads);
                    std::vector<float> out_f(n_out), s_f(n_scores);
                    run_heads(a, dt, g_kernels.simd, 0, T, out_f.data(), s_f.data());
                    CHECK(bitwise_equal(out_f, out_s));
                    CHECK(bitwise_equal(s_f, s_s));
                    std::vector<float> out_pg(n_out), s_pg(n_scores);
                    run_heads_paged(a, dt, *g_kernels.simd, out_pg.data(), s_pg.data());
                    CHECK(bitwise_equal(out_pg, out_s));
                    CHECK(bitwise_equal(s_pg, s_s));
                }
            kernels_init(KernelSet::Fast, 0);
        }
}

TEST_CASE("exp_poly: within 2 ulp of exp over [-87.33, 0], 0 below; every SIMD set's exp_shift bitwise equal") {
    // every float in [-87.33, 0] would be 2^31 values; a dense sweep with a
    // step that is not a power of two, plus the edges
    std::vector<float> xs = {0.0f, -0.0f, -1e-30f, -1e-7f, -0.5f, -0.34657359f, -0.6931472f, -1.0f, -87.0f, -87.33654f};
    for (double x = 0; x > -87.33; x -= 0.000377) xs.push_back((float)x);
    double worst = 0;
    for (float x : xs) {
        double exact = std::exp((double)x);
        float e = exp_poly(x);
        // one ulp of the exact result: the spacing of floats at its magnitude
        double ulp = std::nextafter((float)exact, INFINITY) - (float)exact;
        worst = std::max(worst, std::fabs(e - exact) / ulp);
    }
    MESSAGE("exp_poly: worst error " << worst << " ulp over " << xs.size() << " points");
    CHECK(worst <= 2.0);
    for (float x : {-87.34f, -100.0f, -1e30f, -INFINITY}) CHECK(exp_poly(x) == 0.0f);
    std::vector<float> scalar = xs;
    SCALAR_KERNELS.exp_shift(scalar.data(), 0.0f, (int)scalar.size());
    for (size_t i = 0; i < xs.size(); i++) CHECK(scalar[i] == exp_poly(xs[i]));
    for (KernelSet set : simd_sets()) {
        const SimdKernels& k = simd_table(set);
        std::string name = k.name;
        CAPTURE(name);
        for (float m : {0.0f, 3.5f}) {  // x - m, as the softmax calls it
            std::vector<float> a = xs, b = xs;
            for (float& v : a) v += m;
            for (float& v : b) v += m;
            SCALAR_KERNELS.exp_shift(a.data(), m, (int)a.size());
            k.exp_shift(b.data(), m, (int)b.size());
            CHECK(bitwise_equal(a, b));
        }
    }
    kernels_init(KernelSet::Fast, 0);
}

TEST_CASE("swiglu: every SIMD set's swiglu_fast bitwise equal to the scalar twin's and within 4 ulp of the exact value as plain is, the tails included") {
    // a sweep across exp_poly's range and past it both ways, odd lengths (the chunks of 256)
    std::vector<float> g = {0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.0f, 87.4f, -87.4f, 100.0f, -100.0f, 1e30f, -1e30f};
    for (double v = -95; v < 95; v += 0.0137) g.push_back((float)v);
    std::mt19937 rng(7);
    std::vector<float> up = random_vec(g.size(), rng);
    kernels_init(KernelSet::Plain, 1);
    std::vector<float> plain = g;
    swiglu(plain.data(), up.data(), (int)plain.size());
    std::vector<float> scalar = g;
    swiglu_fast(scalar.data(), up.data(), (int)scalar.size(), SCALAR_KERNELS);
    for (size_t i = 0; i < g.size(); i++) {
        CAPTURE(g[i]);
        double exact = g[i] / (1.0 + std::exp(-(double)g[i])) * up[i];
        double ulp = std::nextafter(std::fabs((float)exact), INFINITY) - std::fabs((float)exact);
        // where sigmoid(g) is below 2^-126 its subnormal (or exp_poly's 0) loses
        // bits: at most 2^-126 |g up| more, in both
        double tail = std::ldexp(2.0, -126) * std::fabs(g[i] * (double)up[i]);
        CHECK(std::fabs(scalar[i] - exact) <= 4 * ulp + tail);
        CHECK(std::fabs(plain[i] - exact) <= 4 * ulp + tail);
    }
    // g = -100: a zero of the sign of g * up, as g / (1 + inf) * up is in plain
    CHECK(scalar[9] == 0.0f);
    CHECK(std::signbit(scalar[9]) == std::signbit(plain[9]));
    for (KernelSet set : simd_sets()) {
        const SimdKernels& k = simd_table(set);
        std::string name = k.name;
        CAPTURE(name);
        for (int n : {(int)g.size(), 255, 257, 7}) {
            std::vector<float> a(g.begin(), g.begin() + n), b = a;
            swiglu_fast(a.data(), up.data(), n, SCALAR_KERNELS);
            swiglu_fast(b.data(), up.data(), n, k);
            CHECK(bitwise_equal(a, b));
        }
        kernels_init(set, 1);  // and through swiglu(), as net.cpp calls it
        std::vector<float> c = g;
        swiglu(c.data(), up.data(), (int)c.size());
        CHECK(bitwise_equal(c, scalar));
    }
    kernels_init(KernelSet::Fast, 0);
}
