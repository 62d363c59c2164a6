// tests/test_sampler.cpp — every stage of the sampling chain with numbers
// small enough to check by hand, the PRNG against values computed outside
// this code, and the whole chain's distribution against softmax.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sampler.h"

static const float NEG_INF = -INFINITY;

// ---------------------------------------------------------------------------
// xorshift128. Reference values from this independent Python:
//
//   M = 0xffffffff
//   def seed(s):
//       x = s if s else 1
//       y = (x*1812433253+1) & M; z = (y*1812433253+1) & M; w = (z*1812433253+1) & M
//       return [x, y, z, w]
//   def nxt(st):
//       x, y, z, w = st
//       t = (x ^ (x << 11)) & M
//       w2 = (w ^ (w >> 19) ^ (t ^ (t >> 8))) & M
//       st[:] = [y, z, w, w2]; return w2
//
// and uniform = (nxt >> 8) / 2**24.

static std::vector<uint32_t> first_four(uint32_t seed) {
    Rng r;
    rng_seed(r, seed);
    std::vector<uint32_t> v;
    for (int i = 0; i < 4; i++) v.push_back(rng_next(r));
    return v;
}

TEST_CASE("xorshift128: first outputs for seeds 0, 1, 42, 12345") {
    std::vector<uint32_t> s1 = {3690984874u, 2346916618u, 2899782266u, 2285563962u};
    CHECK(first_four(1) == s1);
    CHECK(first_four(0) == s1);  // seed 0 is replaced by 1
    CHECK(first_four(42) == std::vector<uint32_t>{4076870683u, 2922739962u, 1700172395u, 2620808347u});
    CHECK(first_four(12345) == std::vector<uint32_t>{692788716u, 3673367756u, 558115199u, 1391799970u});
}

TEST_CASE("xorshift128: rng_uniform keeps the top 24 bits") {
    Rng r;
    rng_seed(r, 1);
    CHECK(rng_uniform(r) == 14417909.0f / 16777216.0f);  // 3690984874 >> 8
    CHECK(rng_uniform(r) == 9167643.0f / 16777216.0f);   // 2346916618 >> 8
    rng_seed(r, 12345);
    CHECK(rng_uniform(r) == doctest::Approx(0.161302387714386).epsilon(1e-9));
    CHECK(rng_uniform(r) == doctest::Approx(0.8552725315093994).epsilon(1e-9));
    rng_seed(r, 42);
    CHECK(rng_uniform(r) == doctest::Approx(0.9492204189300537).epsilon(1e-9));
    float lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        float u = rng_uniform(r);
        lo = std::min(lo, u);
        hi = std::max(hi, u);
    }
    CHECK(lo >= 0.0f);
    CHECK(lo < 0.001f);
    CHECK(hi < 1.0f);
    CHECK(hi > 0.999f);
}

// ---------------------------------------------------------------------------
// Penalties

TEST_CASE("penalties: repeat divides positive logits and multiplies negative ones") {
    float l[4] = {3.0f, -2.0f, 1.0f, -1.0f};
    int window[2] = {0, 1};
    apply_penalties(l, 4, window, 2, 1.5f, 0.0f, 0.0f);
    CHECK(l[0] == doctest::Approx(2.0f));   // 3 / 1.5
    CHECK(l[1] == doctest::Approx(-3.0f));  // -2 * 1.5: pushed down, not towards 0
    CHECK(l[2] == 1.0f);                    // not in the window: untouched
    CHECK(l[3] == -1.0f);
}

TEST_CASE("penalties: frequency scales with the count, presence applies once") {
    float l[3] = {5.0f, 5.0f, 5.0f};
    int window[4] = {0, 0, 0, 1};
    apply_penalties(l, 3, window, 4, 1.0f, 0.5f, 0.0f);
    CHECK(l[0] == doctest::Approx(3.5f));  // 5 - 3 * 0.5
    CHECK(l[1] == doctest::Approx(4.5f));  // 5 - 1 * 0.5
    CHECK(l[2] == 5.0f);
    float m[3] = {5.0f, 5.0f, 5.0f};
    apply_penalties(m, 3, window, 4, 1.0f, 0.0f, 0.25f);
    CHECK(m[0] == doctest::Approx(4.75f));  // once, although seen three times
    CHECK(m[1] == doctest::Approx(4.75f));
    CHECK(m[2] == 5.0f);
}

TEST_CASE("penalties: subtraction first, then the repeat ratio (4 - 1 - 1 = 2, / 2 = 1)") {
    float l[2] = {4.0f, 0.0f};
    int window[1] = {0};
    apply_penalties(l, 2, window, 1, 2.0f, 1.0f, 1.0f);
    CHECK(l[0] == doctest::Approx(1.0f));  // the other order would give 4/2 - 2 = 0
}

TEST_CASE("penalties: off by default, stray ids ignored") {
    float l[3] = {1.0f, -1.0f, 2.0f};
    int window[3] = {0, 1, 2};
    apply_penalties(l, 3, window, 3, 1.0f, 0.0f, 0.0f);
    CHECK(l[0] == 1.0f);
    CHECK(l[1] == -1.0f);
    CHECK(l[2] == 2.0f);
    int stray[2] = {-5, 99};
    apply_penalties(l, 3, stray, 2, 2.0f, 1.0f, 1.0f);
    CHECK(l[0] == 1.0f);
    CHECK(l[2] == 2.0f);
}

TEST_CASE("penalty window keeps the last repeat_last_n tokens") {
    Sampler s;
    SamplerParams p;
    p.repeat_last_n = 3;
    sampler_init(s, p);
    for (int t : {1, 2, 3, 4, 5}) sampler_accept(s, t);
    CHECK(s.recent == std::vector<int>{3, 4, 5});
    p.repeat_last_n = 0;
    sampler_init(s, p);
    sampler_accept(s, 7);
    CHECK(s.recent.empty());
    p.repeat_last_n = -1;
    sampler_init(s, p);
    for (int i = 0; i < 100; i++) sampler_accept(s, i);
    CHECK(s.recent.size() == 100);
}

// ---------------------------------------------------------------------------
// Greedy

TEST_CASE("greedy: argmax, first index wins a tie, penalties still apply") {
    float l[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
    CHECK(sample_argmax(l, 5) == 1);

    Sampler s;
    SamplerParams p;  // temperature 0 by default
    p.repeat_penalty = 1.1f;
    sampler_init(s, p);
    sampler_accept(s, 1);
    sampler_accept(s, 3);
    float m[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
    CHECK(sample(s, m, 5) == 4);  // 2.0 / 1.1 = 1.82 < 1.9
}

// The lanes of sample_argmax against the one walk it replaces, on rows of
// every length around the 16 lanes, with ties, both zeros and NaNs.
static int argmax_one_walk(const float* l, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[best]) best = i;
    return best;
}

TEST_CASE("greedy: the 16-lane argmax picks what one walk picks, ties, zeros and NaNs included") {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> pick(0, 9);
    for (int n = 1; n <= 70; n++)
        for (int k = 0; k < 200; k++) {
            std::vector<float> l(n);
            for (float& v : l) {
                int c = pick(rng);
                v = c == 0 ? NAN : c == 1 ? 0.0f : c == 2 ? -0.0f : (float)(pick(rng) - 5);
            }
            REQUIRE(sample_argmax(l.data(), n) == argmax_one_walk(l.data(), n));
        }
    std::vector<float> big(151936, -1.0f);
    big[151935] = 3.0f, big[100000] = 3.0f;
    CHECK(sample_argmax(big.data(), (int)big.size()) == 100000);
}

// ---------------------------------------------------------------------------
// Top-k

TEST_CASE("top-k: keeps the k largest, ties at the threshold survive") {
    std::vector<float> scratch;
    float l[5] = {1.0f, 5.0f, 3.0f, 4.0f, 2.0f};
    CHECK(apply_top_k(l, 5, 2, scratch) == 2);
    CHECK(l[0] == NEG_INF);
    CHECK(l[1] == 5.0f);
    CHECK(l[2] == NEG_INF);
    CHECK(l[3] == 4.0f);
    CHECK(l[4] == NEG_INF);

    float t[5] = {5.0f, 3.0f, 1.0f, 3.0f, 0.0f};
    CHECK(apply_top_k(t, 5, 2, scratch) == 3);  // 5 and both 3s
    CHECK(t[1] == 3.0f);
    CHECK(t[3] == 3.0f);
    CHECK(t[2] == NEG_INF);
}

TEST_CASE("top-k: k <= 0 or k >= n is off") {
    std::vector<float> scratch;
    float l[3] = {1.0f, 2.0f, 3.0f};
    CHECK(apply_top_k(l, 3, 0, scratch) == 3);
    CHECK(apply_top_k(l, 3, -1, scratch) == 3);
    CHECK(apply_top_k(l, 3, 3, scratch) == 3);
    CHECK(l[0] == 1.0f);
}

// ---------------------------------------------------------------------------
// Top-p

TEST_CASE("top-p: 0.40/0.30/0.15/0.10/0.05 at p = 0.8 keeps three, logits untouched") {
    std::vector<int> order;
    // Shuffled so the function has to sort: ids 0..4 hold 0.15 0.05 0.40 0.10 0.30.
    float l[5] = {std::log(0.15f), std::log(0.05f), std::log(0.40f), std::log(0.10f), std::log(0.30f)};
    float before[5];
    std::copy(l, l + 5, before);
    CHECK(apply_top_p(l, 5, 0.8f, order) == 3);  // 0.40 + 0.30 = 0.70 < 0.8; + 0.15 = 0.85
    CHECK(l[2] == before[2]);
    CHECK(l[4] == before[4]);
    CHECK(l[0] == before[0]);  // raw logit kept, not replaced by a probability
    CHECK(l[1] == NEG_INF);
    CHECK(l[3] == NEG_INF);
}

TEST_CASE("top-p: p = 1 is off, a small p keeps only the best, masked tokens stay out") {
    std::vector<int> order;
    float l[4] = {1.0f, 2.0f, 3.0f, NEG_INF};
    CHECK(apply_top_p(l, 4, 1.0f, order) == 3);
    CHECK(l[0] == 1.0f);
    CHECK(apply_top_p(l, 4, 0.01f, order) == 1);
    CHECK(l[2] == 3.0f);
    CHECK(l[1] == NEG_INF);
    CHECK(l[3] == NEG_INF);
}

// ---------------------------------------------------------------------------
// Temperature + softmax

TEST_CASE("temperature table for logits 4, 3, 2") {
    // Python: [math.exp(l/T) / sum(...) for l in (4, 3, 2)]
    struct Row { float t, p0, p1, p2; };
    Row rows[] = {{0.5f, 0.8668f, 0.1173f, 0.0159f},
                  {0.8f, 0.7307f, 0.2093f, 0.0600f},
                  {1.0f, 0.6652f, 0.2447f, 0.0900f},
                  {2.0f, 0.5065f, 0.3072f, 0.1863f}};
    for (const Row& r : rows) {
        float l[3] = {4.0f, 3.0f, 2.0f};
        double sum = softmax_with_temperature(l, 3, r.t);
        CHECK(l[0] / sum == doctest::Approx(r.p0).epsilon(1e-3));
        CHECK(l[1] / sum == doctest::Approx(r.p1).epsilon(1e-3));
        CHECK(l[2] / sum == doctest::Approx(r.p2).epsilon(1e-3));
    }
}

TEST_CASE("softmax: stable for huge logits, masked entries become 0") {
    float l[3] = {1000.0f, 999.0f, NEG_INF};
    double sum = softmax_with_temperature(l, 3, 1.0f);
    CHECK(std::isfinite(sum));
    CHECK(l[0] == 1.0f);  // exp(0)
    CHECK(l[1] / sum == doctest::Approx(1.0 / (1.0 + std::exp(1.0))));
    CHECK(l[2] == 0.0f);
}

// ---------------------------------------------------------------------------
// Roulette

TEST_CASE("roulette: where r lands, zero weights skipped, fallback to the last candidate") {
    float p[4] = {0.5f, 0.3f, 0.15f, 0.05f};
    CHECK(sample_roulette(p, 4, 0.0) == 0);
    CHECK(sample_roulette(p, 4, 0.49) == 0);
    CHECK(sample_roulette(p, 4, 0.5) == 1);  // the first running total *above* r
    CHECK(sample_roulette(p, 4, 0.62) == 1);
    CHECK(sample_roulette(p, 4, 0.9) == 2);
    CHECK(sample_roulette(p, 4, 0.999) == 3);
    // r at or past the total (float rounding): the last weighted entry.
    CHECK(sample_roulette(p, 4, 1.5) == 3);
    float q[5] = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
    CHECK(sample_roulette(q, 5, 0.0) == 1);
    CHECK(sample_roulette(q, 5, 2.0) == 3);
}

// ---------------------------------------------------------------------------
// The whole chain, statistically

// Pearson's chi-square of observed counts against expected probabilities.
static double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
    double chi = 0.0;
    for (size_t i = 0; i < counts.size(); i++) {
        double e = probs[i] * n;
        chi += (counts[i] - e) * (counts[i] - e) / e;
    }
    return chi;
}

static std::vector<int> draw_counts(const std::vector<float>& logits, SamplerParams p, int n) {
    Sampler s;
    sampler_init(s, p);
    std::vector<int> counts(logits.size(), 0);
    std::vector<float> work;
    for (int i = 0; i < n; i++) {
        work = logits;
        counts[sample(s, work.data(), (int)work.size())]++;
    }
    return counts;
}

TEST_CASE("100,000 draws follow softmax (chi-square, 4 degrees of freedom)") {
    std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f};
    // Python: softmax([1, 2, 0.5, -1, 3])
    std::vector<double> expect = {0.08439, 0.22941, 0.05119, 0.01142, 0.62359};
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    auto counts = draw_counts(logits, p, 100000);
    // 18.47 is the 99.9th percentile of chi-square with 4 dof.
    CHECK(chi_square(counts, expect, 100000) < 18.47);
}

TEST_CASE("top-k 3 then temperature 0.7: draws follow the renormalised top three") {
    std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f};
    // Python: softmax([1, 2, 3] / 0.7) over ids 0, 1, 4
    std::vector<double> expect = {0.04428, 0.18476, 0.77096};
    SamplerParams p;
    p.temperature = 0.7f;
    p.top_k = 3;
    p.seed = 7;
    auto counts = draw_counts(logits, p, 100000);
    CHECK(counts[2] == 0);
    CHECK(counts[3] == 0);
    std::vector<int> kept = {counts[0], counts[1], counts[4]};
    CHECK(chi_square(kept, expect, 100000) < 13.82);  // 99.9th percentile, 2 dof
}

TEST_CASE("temperature towards 0 approaches argmax") {
    std::vector<float> logits = {1.0f, 2.0f, 0.5f, 1.8f};
    SamplerParams p;
    p.top_k = 0;
    p.temperature = 1.0f;
    int at_one = draw_counts(logits, p, 10000)[1];
    p.temperature = 0.2f;
    int at_small = draw_counts(logits, p, 10000)[1];
    p.temperature = 0.01f;  // the gap 0.2 becomes 20: exp(-20) ~ 2e-9
    int at_tiny = draw_counts(logits, p, 10000)[1];
    CHECK(at_one < at_small);
    CHECK(at_small < at_tiny);
    CHECK(at_tiny == 10000);
}

TEST_CASE("same seed, same tokens; another seed, other tokens") {
    std::vector<float> logits(50);
    for (int i = 0; i < 50; i++) logits[i] = std::sin((float)i);
    auto run = [&](uint32_t seed) {
        SamplerParams p;
        p.temperature = 1.0f;
        p.seed = seed;
        Sampler s;
        sampler_init(s, p);
        std::vector<int> out;
        for (int i = 0; i < 30; i++) {
            std::vector<float> w = logits;
            out.push_back(sample(s, w.data(), 50));
        }
        return out;
    };
    CHECK(run(42) == run(42));
    CHECK(run(42) != run(43));
}

// ---------------------------------------------------------------------------
// What -v and the trace report see

TEST_CASE("sample info: top five, model probabilities, draw probability") {
    // Python: softmax([0, 3, 1, 2, -1, 2.5])
    //   = [0.02286 0.45917 0.06214 0.16892 0.00841 0.27850]
    float l[6] = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f, 2.5f};
    Sampler s;
    SamplerParams p;
    sampler_init(s, p);
    SampleInfo info;
    CHECK(sample(s, l, 6, &info) == 1);
    CHECK(info.token == 1);
    CHECK(info.n_top == 5);
    int ids[5] = {1, 5, 3, 2, 0};
    for (int i = 0; i < 5; i++) CHECK(info.top[i].id == ids[i]);
    CHECK(info.top[0].prob == doctest::Approx(0.45917).epsilon(1e-3));
    CHECK(info.top[1].prob == doctest::Approx(0.27850).epsilon(1e-3));
    CHECK(info.top[4].prob == doctest::Approx(0.02286).epsilon(1e-3));
    CHECK(info.prob == doctest::Approx(0.45917).epsilon(1e-3));
    CHECK(info.draw_prob == 1.0f);

    // Sampling at T = 1 with top-k 2: the draw is between ids 1 and 5 only,
    // with 0.45917 / (0.45917 + 0.27850) = 0.6225 for id 1.
    float m[6] = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f, 2.5f};
    p.temperature = 1.0f;
    p.top_k = 2;
    sampler_init(s, p);
    int t = sample(s, m, 6, &info);
    CHECK((t == 1 || t == 5));
    CHECK(info.prob == doctest::Approx(t == 1 ? 0.45917 : 0.27850).epsilon(1e-3));
    CHECK(info.draw_prob == doctest::Approx(t == 1 ? 0.6225 : 0.3775).epsilon(1e-3));
}

TEST_CASE("sample info with fewer tokens than five") {
    float l[3] = {0.0f, 1.0f, 0.5f};
    Sampler s;
    sampler_init(s, SamplerParams{});
    SampleInfo info;
    sample(s, l, 3, &info);
    CHECK(info.n_top == 3);
    CHECK(info.top[0].id == 1);
    CHECK(info.top[1].id == 2);
    CHECK(info.top[2].id == 0);
}
