// sampler.h — from one row of logits to one token id.
//
// The chain runs in llama.cpp's order, each stage editing the logits in
// place:
//
//   penalties → (temperature 0: argmax, done) → top-k → top-p
//             → temperature + softmax → roulette draw
//
// The only randomness is one uniform number per token from a xorshift128
// generator, so a seed reproduces a whole generation on any machine.
#pragma once
#include <cstdint>
#include <vector>

// ---------------------------------------------------------------------------
// xorshift128: four 32-bit words of state, a few shifts and xors per number.
struct Rng {
    uint32_t x = 1, y = 0, z = 0, w = 0;
};
void rng_seed(Rng& r, uint32_t seed);
uint32_t rng_next(Rng& r);
float rng_uniform(Rng& r);  // in [0, 1), a multiple of 2^-24

// ---------------------------------------------------------------------------
// The knobs. Defaults follow the book: greedy, top-k 40, seed 12345, no
// top-p and no penalties unless asked.
struct SamplerParams {
    float temperature = 0.0f;      // 0: greedy (argmax)
    int top_k = 40;                // <= 0: off
    float top_p = 1.0f;            // 1: off
    float repeat_penalty = 1.0f;   // 1: off; divides positive logits, multiplies negative
    float frequency_penalty = 0.0f;// subtracted once per occurrence in the window
    float presence_penalty = 0.0f; // subtracted once if present in the window
    int repeat_last_n = 64;        // the penalty window; 0: off, -1: every token seen
    uint32_t seed = 12345;
};

// What the sampler saw when it picked a token, for `-v` and the trace report.
// Probabilities are the model's own: softmax at temperature 1 of the logits
// after the penalties, before top-k/top-p cut anything. `draw_prob` is the
// chosen token's chance in the distribution the draw actually used (1 when
// greedy).
struct Candidate {
    int id;
    float logit;
    float prob;
};
struct SampleInfo {
    static const int TOP = 5;
    int token = -1;
    float prob = 0.0f;       // model probability of the chosen token
    float draw_prob = 0.0f;  // probability in the final (filtered, tempered) distribution
    int n_top = 0;
    Candidate top[TOP];      // the most likely tokens, best first
};

struct Sampler {
    SamplerParams params;
    Rng rng;
    std::vector<int> recent;  // the penalty window, oldest first
    // Reused scratch, so a draw allocates nothing after the first token.
    std::vector<float> select;  // top-k's copy for nth_element
    std::vector<int> order;     // top-p's survivors
    std::vector<float> saved;   // the penalised logits, kept only when info is asked for
};

void sampler_init(Sampler& s, const SamplerParams& p);
// Remember a token (prompt or generated) in the penalty window.
void sampler_accept(Sampler& s, int token);
// Pick the next token. Destroys `logits` (it ends up holding probabilities
// or masked values). `info`, when given, is filled; when null, nothing extra
// is computed.
int sample(Sampler& s, float* logits, int n, SampleInfo* info = nullptr);

// ---------------------------------------------------------------------------
// The stages, one function each, usable on their own (tests, the book).
void apply_penalties(float* logits, int n, const int* window, int n_window,
                     float repeat, float frequency, float presence);
int sample_argmax(const float* logits, int n);
// Mask all but the k largest to -inf (ties at the k-th value survive).
// `scratch` is reused between calls. Returns how many survive.
int apply_top_k(float* logits, int n, int k, std::vector<float>& scratch);
// Mask everything outside the nucleus: the fewest most-likely tokens whose
// probabilities reach p. Raw logits of survivors are left untouched.
int apply_top_p(float* logits, int n, float p, std::vector<int>& scratch);
// logits -> unnormalised probabilities exp((l - max) / T) in place; masked
// (-inf) entries become 0. Returns their sum (in double).
double softmax_with_temperature(float* logits, int n, float temperature);
// Roulette: the first index whose running total exceeds r, where r is in
// [0, sum). Falls back to the last candidate with nonzero weight.
int sample_roulette(const float* probs, int n, double r);
