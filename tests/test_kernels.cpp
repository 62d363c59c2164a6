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
#include <vector>

#include "kernels.h"

static const double U = 1.0 / (1 << 24);

// A random matrix in any type, owning its storage.
struct TestMat {
    std::vector<float> f32;       // the values as f32 (before rounding to dtype)
    std::vector<uint8_t> storage;
    Mat m;
};

static TestMat random_mat(DType dt, int rows, int cols, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    TestMat t;
    t.f32.resize((size_t)rows * cols);
    for (float& v : t.f32) v = dist(rng);
    Mat src;
    src.dtype = DType::F32;
    src.rows = rows;
    src.cols = cols;
    src.data = t.f32.data();
    t.m = src;
    if (dt == DType::Q8_0) t.m = quantize_q8_0(src, t.storage);
    else if (dt != DType::F32) {  // rounded to nearest-even, as the converters in common.h do
        t.storage.resize(t.f32.size() * 2);
        uint16_t* h = (uint16_t*)t.storage.data();
        for (size_t i = 0; i < t.f32.size(); i++) h[i] = dt == DType::BF16 ? f32_to_bf16(t.f32[i]) : f32_to_f16(t.f32[i]);
        t.m.dtype = dt;
        t.m.data = h;
    }
    return t;
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
static std::vector<KernelSet> simd_sets() {
    std::vector<KernelSet> sets = {KernelSet::Scalar};
    if (cpu_has_avx2()) sets.push_back(KernelSet::AVX2);
    else MESSAGE("skipped: this CPU lacks AVX2/FMA/F16C, the avx2 kernels are not compared");
    if (cpu_has_avx512()) sets.push_back(KernelSet::AVX512);
    else MESSAGE("skipped: this CPU lacks AVX-512 F/BW/VL/BF16/VNNI, the avx512 kernels are not compared");
    if (cpu_has_neon()) sets.push_back(KernelSet::NEON);
    else MESSAGE("skipped: not a 64-bit ARM build, the neon kernels are not compared (make test-arm64 runs them)");
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
    const int token_counts[] = {1, 2, 3, 5, 6, 7, 13};
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
            for (int T : {1, 7}) {
                std::string type = dtype_name(dt);
                CAPTURE(type);
                CAPTURE(cols);
                CAPTURE(T);
                TestMat W = random_mat(dt, 9, cols, rng);
                std::vector<float> x = random_vec((size_t)T * cols, rng), bias = random_vec(9, rng);
                check_sets_equal(x, W.m, bias.data(), T, run_matmul(KernelSet::Scalar, 1, x, W.m, bias.data(), T));
            }
}

// matmul_many runs several matrices as one list of tiles. Each output must
// still be its own matmul's bits, whatever the mix: q/k/v shapes (896 and
// 128 rows at the 0.5B widths, scaled down here), row counts that are not a
// multiple of the tile, a Q8_0 matrix beside float ones (the activations are
// quantized once for all), every set, 1 to 3 threads, decode and batches.
TEST_CASE("matmul_many: each output bitwise equal to its own matmul (every set, mixed types, 1-3 threads, T 1-7)") {
    std::mt19937 rng(23);
    std::vector<KernelSet> sets = simd_sets();
    sets.push_back(KernelSet::Plain);
    struct Mix { DType a, b, c; int rows_a, rows_b, rows_c, cols; };
    const Mix mixes[] = {{DType::BF16, DType::BF16, DType::BF16, 56, 9, 9, 64},
                         {DType::Q8_0, DType::Q8_0, DType::Q8_0, 14, 3, 5, 96},
                         {DType::Q8_0, DType::BF16, DType::F32, 7, 13, 1, 32},
                         {DType::F16, DType::Q8_0, DType::BF16, 1, 6, 17, 896}};
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

TEST_CASE("attention's dot and axpy (KV rows in f32, f16, bf16): every SIMD set bitwise equal to the scalar twin, and plain within the bound") {
    std::mt19937 rng(11);
    std::vector<KernelSet> sets = simd_sets();
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
        for (int n : {1, 5, 8, 9, 15, 16, 17, 33, 63, 64, 65, 128}) {
            std::string type = dtype_name(dt);
            CAPTURE(type);
            CAPTURE(n);
            std::vector<float> a = random_vec(n, rng);
            TestMat B = random_mat(dt, 1, n, rng);  // one row in the cache's type
            std::vector<float> b(n);
            mat_row_to_f32(B.m, 0, b.data());
            double abs_sum = 0;
            for (int i = 0; i < n; i++) abs_sum += std::fabs((double)a[i] * b[i]);
            const uint8_t* row = (const uint8_t*)B.m.data;
            float plain = vec_dot_plain(a.data(), row, dt, n);
            float scalar = SCALAR_KERNELS.dot(a.data(), row, dt, n);
            CHECK(std::fabs((double)scalar - plain) <= (n / 16 + 5) * U * abs_sum + U * std::fabs(plain));
            std::vector<float> y0 = random_vec(n, rng), yp = y0, ys = y0;
            vec_axpy_plain(yp.data(), 0.37f, row, dt, n);
            SCALAR_KERNELS.axpy(ys.data(), 0.37f, row, dt, n);
            for (int i = 0; i < n; i++)  // plain rounds twice (multiply, add), fma once
                CHECK(std::fabs(ys[i] - yp[i]) <= 2 * U * (std::fabs(0.37 * b[i]) + std::fabs(y0[i])));
            for (KernelSet set : sets) {
                const SimdKernels& k = simd_table(set);
                std::string name = k.name;
                CAPTURE(name);
                float fast = k.dot(a.data(), row, dt, n);
                CHECK(std::memcmp(&fast, &scalar, 4) == 0);
                std::vector<float> yf = y0;
                k.axpy(yf.data(), 0.37f, row, dt, n);
                CHECK(bitwise_equal(yf, ys));
            }
            kernels_init(KernelSet::Fast, 0);
        }
}

// Attention for one head and one query. The fast twin rounds differently
// (float sums in lanes, fused multiply-adds), each step by 2^-24 relative;
// over head_dim/8 + n steps at these sizes that is below 1e-6 of the values'
// scale, so 1e-5 x max|v| leaves 10x headroom while a wrong key, a missing
// scale or a lost tail moves the output by far more.
TEST_CASE("attention_head: every SIMD set bitwise equal to the scalar twin, and plain within 1e-5 (f32/f16/bf16 cache, 1..70 keys)") {
    std::mt19937 rng(13);
    std::vector<KernelSet> sets = simd_sets();
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
        for (int hd : {8, 12, 17, 64})
            for (int n : {1, 3, 4, 5, 9, 70}) {
                std::string type = dtype_name(dt);
                CAPTURE(type);
                CAPTURE(hd);
                CAPTURE(n);
                int kv_heads = 2;  // rows of the cache hold two heads: the stride skips the other one
                TestMat K = random_mat(dt, n, kv_heads * hd, rng), V = random_mat(dt, n, kv_heads * hd, rng);
                std::vector<float> q = random_vec(hd, rng);
                size_t elt = dt == DType::F32 ? 4 : 2, stride = kv_heads * hd * elt;
                const uint8_t* keys = (const uint8_t*)K.m.data + hd * elt;  // head 1
                const uint8_t* values = (const uint8_t*)V.m.data + hd * elt;
                std::vector<float> out_p(hd), out_s(hd), s_p(n), s_s(n);
                attention_head_plain(out_p.data(), s_p.data(), q.data(), keys, values, stride, dt, n, hd);
                attention_head_fast(out_s.data(), s_s.data(), q.data(), keys, values, stride, dt, n, hd, SCALAR_KERNELS);
                int bad = 0;
                for (int i = 0; i < hd; i++) bad += std::fabs(out_s[i] - out_p[i]) > 1e-5;  // |v| <= 1
                for (int j = 0; j < n; j++) bad += std::fabs(s_s[j] - s_p[j]) > 1e-5;
                CHECK(bad == 0);
                for (KernelSet set : sets) {
                    const SimdKernels& k = simd_table(set);
                    std::string name = k.name;
                    CAPTURE(name);
                    std::vector<float> out_f(hd), s_f(n);
                    attention_head_fast(out_f.data(), s_f.data(), q.data(), keys, values, stride, dt, n, hd, k);
                    CHECK(bitwise_equal(out_f, out_s));
                    CHECK(bitwise_equal(s_f, s_s));
                }
                kernels_init(KernelSet::Fast, 0);
            }
}
