// A slip in apply_top_p (chapters/top-p): sorting by logit alone, without
// the lower-id-first tie-break. std::sort keeps equal elements in order only
// for short lists, so tests/check_exercises.sh checks that the top-p checker
// fails this and names the tie-break.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "sampler.h"

int apply_top_p(float* logits, int n, float p, std::vector<int>& order) {
    const float NEG_INF = -std::numeric_limits<float>::infinity();
    order.clear();
    for (int i = 0; i < n; i++)
        if (logits[i] > NEG_INF) order.push_back(i);
    if (p >= 1.0f || order.size() <= 1) return (int)order.size();
    std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    float max = logits[order[0]];
    double sum = 0.0;
    for (int i : order) sum += std::exp((double)logits[i] - max);
    double cumulative = 0.0;
    size_t keep = order.size();
    for (size_t j = 0; j < order.size(); j++) {
        cumulative += std::exp((double)logits[order[j]] - max) / sum;
        if (cumulative >= p) {
            keep = j + 1;
            break;
        }
    }
    for (size_t j = keep; j < order.size(); j++) logits[order[j]] = NEG_INF;
    return (int)keep;
}
