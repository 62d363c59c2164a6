// tests/test_book.cpp — the book's worked examples, computed by the real kernels.
//
// Chapters 4 and 6 work small examples by hand (a 2x3 matmul, RMSNorm of four
// numbers, RoPE of one 4-wide head, three-token causal attention). Each case
// here feeds exactly those numbers to the kernels of kernels.cpp and checks
// the results the chapter prints, so the book's arithmetic and the engine's
// can not drift apart. Run them alone with:
//
//     build/unit_tests -tc="book*"
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels.h"
#include "sampler.h"

static Mat f32_mat(const float* data, int rows, int cols) {
    Mat W;
    W.dtype = DType::F32;
    W.rows = rows;
    W.cols = cols;
    W.data = data;
    return W;
}

TEST_CASE("book ch4: matmul of a 2x3 matrix, one token and a batch of two, f32 and bf16") {
    const float w[6] = {1, 2, 3, 4, 5, 6};
    const float bias[2] = {0.5f, -0.5f};
    const float x[6] = {1, 0, -1,   // token 0
                        0, 1, 0};   // token 1
    float out[4];
    matmul_plain(out, x, f32_mat(w, 2, 3), bias, 2);
    CHECK(out[0] == -1.5f);  // 1*1 + 2*0 + 3*(-1) + 0.5
    CHECK(out[1] == -2.5f);  // 4*1 + 5*0 + 6*(-1) - 0.5
    CHECK(out[2] == 2.5f);   // 2 + 0.5
    CHECK(out[3] == 4.5f);   // 5 - 0.5

    // Small integers are exact in bfloat16: the same matrix stored as bf16.
    uint16_t wb[6];
    for (int i = 0; i < 6; i++) wb[i] = f32_to_bf16(w[i]);
    Mat B = f32_mat(nullptr, 2, 3);
    B.dtype = DType::BF16;
    B.data = wb;
    float outb[4];
    matmul_plain(outb, x, B, bias, 2);
    for (int i = 0; i < 4; i++) CHECK(outb[i] == out[i]);
}

TEST_CASE("book ch4: RMSNorm of (1, 3, -5, -1) has rms 3") {
    const float x[4] = {1, 3, -5, -1}, w[4] = {1.5f, 1, 0.6f, 3};
    float y[4];
    rmsnorm(y, x, w, 4, 1e-6f);  // mean of squares (1 + 9 + 25 + 1) / 4 = 9
    CHECK(y[0] == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(y[1] == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(y[2] == doctest::Approx(-1.0).epsilon(1e-6));
    CHECK(y[3] == doctest::Approx(-1.0).epsilon(1e-6));
}

TEST_CASE("book ch4: softmax of (1, 2, 3), and of (1001, 1002, 1003)") {
    float a[3] = {1, 2, 3}, b[3] = {1001, 1002, 1003};
    softmax(a, 3);
    softmax(b, 3);  // without subtracting the max, exp(1003) would be inf
    const double want[3] = {0.0900306, 0.2447285, 0.6652410};
    for (int i = 0; i < 3; i++) {
        CHECK(a[i] == doctest::Approx(want[i]).epsilon(1e-6));
        CHECK(b[i] == a[i]);
    }
}

TEST_CASE("book ch4: SwiGLU of gate (2, -2, 0) and up (1, 3, 5)") {
    float gate[3] = {2, -2, 0};
    const float up[3] = {1, 3, 5};
    swiglu(gate, up, 3);
    CHECK(gate[0] == doctest::Approx(1.761594).epsilon(1e-6));   // silu(2)  = 2 / (1 + e^-2)
    CHECK(gate[1] == doctest::Approx(-0.715218).epsilon(1e-6));  // silu(-2) = -0.238406, times 3
    CHECK(gate[2] == 0.0f);                                       // silu(0)  = 0
}

TEST_CASE("book ch4: RoPE of (1, 0, 0, 1) at position 1, theta 10000, head_dim 4") {
    float v[4] = {1, 0, 0, 1};
    apply_rope(v, 1, 4, 1, 10000.0f);
    // pairs (0, 2) and (1, 3); angles 1 and 0.01 radians
    CHECK(v[0] == doctest::Approx(std::cos(1.0)).epsilon(1e-6));    //  0.540302
    CHECK(v[1] == doctest::Approx(-std::sin(0.01)).epsilon(1e-6));  // -0.010000
    CHECK(v[2] == doctest::Approx(std::sin(1.0)).epsilon(1e-6));    //  0.841471
    CHECK(v[3] == doctest::Approx(std::cos(0.01)).epsilon(1e-6));   //  0.999950

    float same[4] = {1, 0, 0, 1};
    apply_rope(same, 1, 4, 0, 10000.0f);  // position 0: angle 0, nothing moves
    for (int i = 0; i < 4; i++) CHECK(same[i] == (i == 0 || i == 3 ? 1.0f : 0.0f));
}

TEST_CASE("book ch4: after RoPE, q.k depends only on the distance between positions") {
    const float q0[4] = {0.3f, -1.2f, 0.7f, 0.5f}, k0[4] = {-0.4f, 0.9f, 1.1f, -0.2f};
    auto dot_at = [&](int pq, int pk) {
        float q[4], k[4];
        for (int i = 0; i < 4; i++) q[i] = q0[i], k[i] = k0[i];
        apply_rope(q, 1, 4, pq, 10000.0f);
        apply_rope(k, 1, 4, pk, 10000.0f);
        return q[0] * k[0] + q[1] * k[1] + q[2] * k[2] + q[3] * k[3];
    };
    CHECK(dot_at(5, 3) == doctest::Approx(dot_at(2, 0)).epsilon(1e-5));
    CHECK(dot_at(1000, 990) == doctest::Approx(dot_at(10, 0)).epsilon(1e-4));
    CHECK(dot_at(5, 3) != doctest::Approx(dot_at(5, 4)).epsilon(1e-3));
}

TEST_CASE("book ch6: causal attention of three tokens, one head of width 4") {
    // every query is (2, 0, 0, 0); keys and values as in the chapter
    const float q[4] = {2, 0, 0, 0};
    const float k[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 1, 0}};
    const float v[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};
    const double want[3][3] = {{1, 0, 0}, {0.731059, 0.268941, 0}, {0.422319, 0.155362, 0.422319}};
    const float scale = 1.0f / std::sqrt(4.0f);  // 1/sqrt(head_dim) = 0.5
    for (int t = 0; t < 3; t++) {
        float s[3];
        int n = t + 1;  // token t sees positions 0..t
        for (int j = 0; j < n; j++) {
            float dot = 0;
            for (int i = 0; i < 4; i++) dot += q[i] * k[j][i];
            s[j] = dot * scale;
        }
        softmax(s, n);
        float out[4] = {0, 0, 0, 0};
        for (int j = 0; j < n; j++)
            for (int i = 0; i < 4; i++) out[i] += s[j] * v[j][i];
        for (int j = 0; j < 3; j++) {
            double w = j < n ? s[j] : 0.0;
            CHECK(w == doctest::Approx(want[t][j]).epsilon(1e-5));
            CHECK(out[j] == doctest::Approx(want[t][j]).epsilon(1e-5));  // unit values: out = weights
        }
    }
}

// Chapter 8, "The order of the chain": probabilities 0.40 0.30 0.15 0.10
// 0.05 and p = 0.8. Top-p first (Lantern, llama.cpp) keeps three tokens;
// temperature 0.5 first (Hugging Face generate()) squares and renormalizes
// the probabilities to 0.561 0.316 0.079 0.035 0.009 and keeps two.
TEST_CASE("book ch8: top-p before temperature keeps 3 of the five tokens, temperature 0.5 first keeps 2") {
    const float probs[5] = {0.40f, 0.30f, 0.15f, 0.10f, 0.05f};
    std::vector<float> lantern(5), hf(5);
    for (int i = 0; i < 5; i++) {
        lantern[i] = std::log(probs[i]);
        hf[i] = std::log(probs[i]) / 0.5f;
    }
    std::vector<int> order;
    CHECK(apply_top_p(lantern.data(), 5, 0.8f, order) == 3);
    CHECK(apply_top_p(hf.data(), 5, 0.8f, order) == 2);
    double sum = 0;
    for (float p : probs) sum += (double)p * p;
    CHECK(sum == doctest::Approx(0.285));
    CHECK(probs[0] * probs[0] / sum + probs[1] * probs[1] / sum == doctest::Approx(0.877).epsilon(1e-3));
}
