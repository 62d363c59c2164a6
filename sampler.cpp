// sampler.cpp — the sampling chain: penalties, greedy, top-k, top-p,
// temperature, roulette; and the xorshift128 generator that feeds the draw.
#include "sampler.h"
#include "common.h"

#include <algorithm>
#include <cmath>
#include <limits>

static const float NEG_INF = -std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------
// xorshift128 (Marsaglia, 2003).
//
// Why not rand() or <random>? rand() differs between C libraries, and the
// <random> distributions are allowed to differ between standard libraries.
// A seed is only useful for reproducing a bug if it gives the same tokens on
// every machine, so the generator is written out here, in full, with fixed
// 32-bit arithmetic.
//
// Seeding spreads one 32-bit seed over the four words with the multiplier
// 1812433253 (the one Mersenne Twister uses to initialise its state), and
// maps seed 0 to 1 because an all-zero state would only ever produce zeros.
void rng_seed(Rng& r, uint32_t seed) {
    r.x = seed ? seed : 1u;
    r.y = r.x * 1812433253u + 1u;
    r.z = r.y * 1812433253u + 1u;
    r.w = r.z * 1812433253u + 1u;
}

uint32_t rng_next(Rng& r) {
    uint32_t t = r.x ^ (r.x << 11);
    r.x = r.y;
    r.y = r.z;
    r.z = r.w;
    r.w = r.w ^ (r.w >> 19) ^ (t ^ (t >> 8));
    return r.w;
}

// A float has a 24-bit significand, so the top 24 bits of the word are
// exactly the precision a number in [0, 1) can hold: every result is k/2^24.
// The value can be 0 but never 1.
float rng_uniform(Rng& r) {
    return (float)(rng_next(r) >> 8) * (1.0f / 16777216.0f);
}

// ---------------------------------------------------------------------------
// Penalties: make recently seen tokens less likely.
//
// For every distinct token t in the window, seen c times:
//     l -= c * frequency            (the more often, the harder)
//     l -= presence                 (once, however often)
//     l  = l > 0 ? l / repeat : l * repeat
// The subtraction comes first, then the ratio. The ratio needs two branches
// because "divide by 1.1" only moves a logit down when it is positive; a
// negative one has to be multiplied to move down.
void apply_penalties(float* logits, int n, const int* window, int n_window,
                     float repeat, float frequency, float presence) {
    if (n_window <= 0) return;
    if (repeat == 1.0f && frequency == 0.0f && presence == 0.0f) return;
    // Sorting a copy of the window groups equal ids, so one walk gives each
    // distinct token with its count. The window is small (64 by default).
    std::vector<int> ids(window, window + n_window);
    std::sort(ids.begin(), ids.end());
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j < ids.size() && ids[j] == ids[i]) j++;
        int t = ids[i];
        int count = (int)(j - i);
        i = j;
        if (t < 0 || t >= n) continue;  // a stray id must not write out of bounds
        float l = logits[t];
        l -= (float)count * frequency;
        l -= presence;
        if (repeat != 1.0f) l = l > 0.0f ? l / repeat : l * repeat;
        logits[t] = l;
    }
}

// Greedy: the index of the largest logit; the lowest index wins a tie.
// One walk with a single "largest so far" is a chain: each comparison waits
// for the one before, about a cycle per logit of 151,936, and a serving
// step samples one row per sequence. So 16 lanes each keep
// their own largest and where it stood (lane j sees logits j, j+16, ...);
// the compiler turns the inner loop into vector compares and blends. Each
// lane keeps the first place its largest value appears, so the lowest of
// those places among the lanes holding the overall largest is the first
// place in the whole row. A NaN is never larger, as in the one walk; a
// NaN first makes every lane NaN, and the answer is 0, as in the one walk.
int sample_argmax(const float* logits, int n) {
    const int LANES = 16;
    float top[LANES];
    int at[LANES];
    for (int j = 0; j < LANES; j++) top[j] = logits[0], at[j] = 0;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            bool larger = logits[i + j] > top[j];
            top[j] = larger ? logits[i + j] : top[j];
            at[j] = larger ? i + j : at[j];
        }
    float value = top[0];
    int best = at[0];
    for (int j = 1; j < LANES; j++)
        if (top[j] > value || (top[j] == value && at[j] < best)) value = top[j], best = at[j];
    for (; i < n; i++)  // the last n % 16, in order
        if (logits[i] > value) value = logits[i], best = i;
    return best;
}

// ---------------------------------------------------------------------------
// Top-k: keep the k largest logits.
//
// The k-th largest value is found with std::nth_element, which partially
// orders a copy in O(n) on average; a full sort of 151,936 logits would be
// ~17 times the work. The copy is needed because nth_element moves values
// around and the logits' positions are their token ids. Everything strictly
// below the threshold is masked, so tokens tied with the k-th survive and a
// tie can leave a few more than k.
int apply_top_k(float* logits, int n, int k, std::vector<float>& scratch) {
    if (k <= 0 || k >= n) return n;
    scratch.assign(logits, logits + n);
    std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(),
                     [](float a, float b) { return a > b; });
    float threshold = scratch[k - 1];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (logits[i] < threshold) logits[i] = NEG_INF;
        else kept++;
    }
    return kept;
}

// ---------------------------------------------------------------------------
// Top-p (nucleus): keep the most likely tokens until their probabilities
// add up to at least p; the token that crosses p is kept.
//
// Only tokens still alive (not -inf) take part, so after top-k this sorts
// about k entries. Probabilities are computed here only to decide who
// stays: the survivors keep their raw logits, because temperature comes
// next and has to scale logits, not probabilities.
int apply_top_p(float* logits, int n, float p, std::vector<int>& order) {
    order.clear();
    for (int i = 0; i < n; i++)
        if (logits[i] > NEG_INF) order.push_back(i);
    if (p >= 1.0f || order.size() <= 1) return (int)order.size();
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    float max = logits[order[0]];
    double sum = 0.0;
    for (int i : order) sum += lantern_exp((double)logits[i] - max);
    double cumulative = 0.0;
    size_t keep = order.size();
    for (size_t j = 0; j < order.size(); j++) {
        cumulative += lantern_exp((double)logits[order[j]] - max) / sum;
        if (cumulative >= p) {
            keep = j + 1;
            break;
        }
    }
    for (size_t j = keep; j < order.size(); j++) logits[order[j]] = NEG_INF;
    return (int)keep;
}

// ---------------------------------------------------------------------------
// Temperature and softmax in one pass.
//
// exp((l - max) / T): dividing by T < 1 stretches the gaps between logits
// (sharper), T > 1 squeezes them (flatter). Subtracting the max first makes
// the largest exponent exp(0) = 1, so nothing overflows; it cancels out in
// the normalisation. The sum is kept in double because adding 150k small
// floats in float loses the low bits. The values are left unnormalised: the
// roulette scales its random number by the sum instead of dividing every
// entry.
double softmax_with_temperature(float* logits, int n, float temperature) {
    float max = NEG_INF;
    for (int i = 0; i < n; i++) max = std::max(max, logits[i]);
    float inv_t = 1.0f / temperature;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        logits[i] = logits[i] > NEG_INF ? (float)lantern_exp((logits[i] - max) * inv_t) : 0.0f;
        sum += logits[i];
    }
    return sum;
}

// ---------------------------------------------------------------------------
// Roulette wheel: lay the weights end to end on [0, sum) and see where r
// lands. With exact arithmetic r < sum always lands somewhere; with floats
// the running total can end a hair below r, so the last candidate with any
// weight is the fallback.
int sample_roulette(const float* probs, int n, double r) {
    double cumulative = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++) {
        if (probs[i] <= 0.0f) continue;
        last = i;
        cumulative += probs[i];
        if (r < cumulative) return i;
    }
    return last >= 0 ? last : 0;
}

// ---------------------------------------------------------------------------
// The chain.

void sampler_init(Sampler& s, const SamplerParams& p) {
    s.params = p;
    rng_seed(s.rng, p.seed);
    s.recent.clear();
}

// The window keeps its last repeat_last_n entries (all of them for -1). It
// starts with the prompt's tail so the very first generated token is already
// discouraged from echoing the prompt.
void sampler_accept(Sampler& s, int token) {
    int cap = s.params.repeat_last_n;
    if (cap == 0) return;
    s.recent.push_back(token);
    if (cap > 0 && (int)s.recent.size() > cap)
        s.recent.erase(s.recent.begin(), s.recent.end() - cap);
}

// The model's view for -v and the trace: softmax at temperature 1 over the
// penalised logits, and the five best tokens by one pass with a tiny
// insertion list.
// Returns the softmax normaliser (relative to the max).
static double describe(const float* logits, int n, SampleInfo& info) {
    float max = logits[sample_argmax(logits, n)];
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += lantern_exp((double)logits[i] - max);
    info.n_top = 0;
    for (int i = 0; i < n; i++) {
        int at = info.n_top;
        while (at > 0 && logits[i] > info.top[at - 1].logit) at--;
        if (at >= SampleInfo::TOP) continue;
        int last = std::min(info.n_top, SampleInfo::TOP - 1);
        for (int j = last; j > at; j--) info.top[j] = info.top[j - 1];
        info.top[at] = {i, logits[i], (float)(lantern_exp((double)logits[i] - max) / sum)};
        if (info.n_top < SampleInfo::TOP) info.n_top++;
    }
    return sum;
}

int sample(Sampler& s, float* logits, int n, SampleInfo* info) {
    const SamplerParams& p = s.params;
    apply_penalties(logits, n, s.recent.data(), (int)s.recent.size(),
                    p.repeat_penalty, p.frequency_penalty, p.presence_penalty);

    // Only when asked: remember the penalised logits the chain is about to destroy.
    double norm = 0.0;
    if (info) {
        norm = describe(logits, n, *info);
        s.saved.assign(logits, logits + n);
    }

    // Temperature 0 is greedy. Top-k and top-p are skipped: masking can never
    // remove the largest logit, so they could not change the answer. The
    // penalties above still apply.
    int token;
    if (p.temperature <= 0.0f) {
        token = sample_argmax(logits, n);
        if (info) info->draw_prob = 1.0f;
    } else {
        apply_top_k(logits, n, p.top_k, s.select);
        apply_top_p(logits, n, p.top_p, s.order);
        double sum = softmax_with_temperature(logits, n, p.temperature);
        double r = (double)rng_uniform(s.rng) * sum;
        token = sample_roulette(logits, n, r);
        if (info) info->draw_prob = (float)(logits[token] / sum);
    }
    if (info) {
        info->token = token;
        info->prob = (float)(lantern_exp((double)s.saved[token] - info->top[0].logit) / norm);
    }
    return token;
}
