// lens.cpp — the logit lens, direct logit attribution and ablation (lens.h);
// lens_cmd.cpp is `./run lens`, the command that prints them.
//
// Nothing here runs a layer of its own: forward() computes the residual
// stream as it always does, the probes hand each named tensor to the
// capture, and what follows is arithmetic on those numbers with the model's
// own final norm and LM head.
#include "lens/lens.h"
#include "common.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include "gguf/quants.h"
#include "logging.h"

// ---------------------------------------------------------------------------
// The capture.

void lens_capture_init(LensCapture& cap, const Config& c, int positions) {
    cap.n_layers = c.n_layers;
    cap.hidden = c.hidden;
    cap.q_dim = c.n_heads * c.head_dim;
    cap.cap = positions;
    cap.n_pos = 0;
    size_t n = (size_t)positions * c.hidden;
    cap.resid.assign((c.n_layers + 1) * n, 0.0f);
    cap.attn.assign(c.n_layers * n, 0.0f);
    cap.mlp.assign(c.n_layers * n, 0.0f);
    cap.heads.assign((size_t)c.n_layers * positions * cap.q_dim, 0.0f);
}

// Rows pos0.. of a [rows, cols] tensor into slot `slot` of `dst` ([slots, cap, cols]).
static void keep_rows(std::vector<float>& dst, int slot, int cap, int pos0, const float* data, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        int p = pos0 + r;
        if (p < 0 || p >= cap) continue;
        std::memcpy(&dst[((size_t)slot * cap + p) * cols], data + (size_t)r * cols, cols * sizeof(float));
    }
}

void lens_capture_tensor(LensCapture& cap, const char* name, int layer, int pos0, const float* data, int rows, int cols) {
    if (cap.cap == 0 || layer >= cap.n_layers) return;
    if (!strcmp(name, "embed")) {
        keep_rows(cap.resid, 0, cap.cap, pos0, data, rows, cols);
        cap.n_pos = std::max(cap.n_pos, std::min(cap.cap, pos0 + rows));
    } else if (layer < 0) {
        return;  // final_norm, logits: the lens computes its own
    } else if (!strcmp(name, "resid")) {
        keep_rows(cap.resid, layer + 1, cap.cap, pos0, data, rows, cols);
    } else if (!strcmp(name, "attn.o_proj")) {
        keep_rows(cap.attn, layer, cap.cap, pos0, data, rows, cols);
    } else if (!strcmp(name, "attn.out")) {
        keep_rows(cap.heads, layer, cap.cap, pos0, data, rows, cols);
    } else if (!strcmp(name, "mlp.down")) {
        keep_rows(cap.mlp, layer, cap.cap, pos0, data, rows, cols);
    }
}

// The listener lens_forward installs: one capture at a time.
static LensCapture* s_capture = nullptr;
static void on_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols) {
    if (s_capture) lens_capture_tensor(*s_capture, name, layer, pos0, data, rows, cols);
}
static const ProbeListener LISTENER = {nullptr, nullptr, nullptr, on_tensor};

// Watched, attention keeps its weights ([heads, T, positions]: logging.h),
// so a long prompt goes through in chunks, as a prefill does (generate.h:
// PREFILL_CHUNK); a row's logits are the same bits in any chunk.
static const int LENS_CHUNK = 256;

std::vector<float> lens_forward(Net& net, LensCapture& cap, const std::vector<int>& tokens) {
    if (tokens.empty()) fail("lens: no tokens to run");
    lens_capture_init(cap, net.model->cfg, (int)tokens.size());
    // Watching only copies what the layer computed; the logits are the same
    // bits as with nobody watching.
    bool watch = g_watch_tensors;
    const ProbeListener* listener = g_probe_listener;
    struct Restore {  // the probes as they were, also when forward() throws
        bool w;
        const ProbeListener* l;
        ~Restore() {
            g_watch_tensors = w;
            g_probe_listener = l;
            s_capture = nullptr;
        }
    } restore{watch, listener};
    s_capture = &cap;
    g_watch_tensors = true;
    g_probe_listener = &LISTENER;
    net_reset(net);
    int T = (int)tokens.size(), V = net.model->cfg.vocab;
    std::vector<float> logits((size_t)T * V);
    for (int t0 = 0; t0 < T; t0 += LENS_CHUNK) {
        int n = std::min(LENS_CHUNK, T - t0);
        const float* lg = forward(net, tokens.data() + t0, n, t0, true);
        std::copy(lg, lg + (size_t)n * V, logits.begin() + (size_t)t0 * V);
    }
    return logits;
}

// ---------------------------------------------------------------------------
// The logit lens. Exactly net.cpp:lm_head's two steps on another row of the
// stream: RMSNorm with the final norm's weights, then the LM head.
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits) {
    int H = m.cfg.hidden, n = cap.n_pos;
    if (depth < 0 || depth > cap.n_layers) fail("lens: depth %d is outside 0..%d", depth, cap.n_layers);
    LineVector<float> xn((size_t)n * H);
    for (int p = 0; p < n; p++) rmsnorm(&xn[(size_t)p * H], cap.resid_row(depth, p), m.final_norm.data(), H, m.cfg.eps);
    matmul(logits, xn.data(), m.lm_head, nullptr, n);  // [n, vocab]
}

// Softmax in double over the whole row (the probabilities the sampler would
// see at temperature 1), the top k by logit, ties to the lower id.
LensReading lens_read(const float* logits, int vocab, int k, int target) {
    LensReading r;
    float mx = *std::max_element(logits, logits + vocab);
    double sum = 0;
    for (int i = 0; i < vocab; i++) sum += lantern_exp((double)logits[i] - mx);
    k = std::min(k, vocab);
    std::vector<int> idx(vocab);
    for (int i = 0; i < vocab; i++) idx[i] = i;
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (int i = 0; i < k; i++) {
        r.top.push_back(idx[i]);
        r.top_prob.push_back((float)(lantern_exp((double)logits[idx[i]] - mx) / sum));
    }
    r.target_prob = (float)(lantern_exp((double)logits[target] - mx) / sum);
    r.target_rank = 1;
    for (int i = 0; i < vocab; i++)
        if (logits[i] > logits[target] || (logits[i] == logits[target] && i < target)) r.target_rank++;
    return r;
}

// ---------------------------------------------------------------------------
// Direct logit attribution. logit = lm_head[v] . (x_L * s * final_norm), and
// x_L is a sum: with s held at its value, the logit is linear in each
// summand. A head's share of attn = att Wo is its slice of att times its
// columns of Wo, so u . (Wo att) = (Wo^T u) . att, split by head.
Attribution attribute(const Model& m, const LensCapture& cap, int pos, int token) {
    const Config& c = m.cfg;
    int H = c.hidden, L = c.n_layers, hd = c.head_dim;
    if (pos < 0 || pos >= cap.n_pos) fail("attribute: position %d was not captured", pos);
    if (token < 0 || token >= c.vocab) fail("attribute: token %d is outside the vocabulary", token);
    Attribution a;
    a.pos = pos;
    a.token = token;
    // s as kernels.cpp:rmsnorm computes it for this row.
    const float* xL = cap.resid_row(L, pos);
    double ss = 0;
    for (int i = 0; i < H; i++) ss += (double)xL[i] * xL[i];
    a.scale = (float)(1.0 / std::sqrt(ss / H + c.eps));
    std::vector<float> row(H);
    mat_row_to_f32(m.lm_head, token, row.data());
    std::vector<double> u(H);
    for (int i = 0; i < H; i++) u[i] = (double)a.scale * row[i] * m.final_norm[i];
    auto dot_u = [&](const float* v) {
        double d = 0;
        for (int i = 0; i < H; i++) d += u[i] * v[i];
        return d;
    };
    auto at = [&](const std::vector<float>& buf, int layer, int width) { return &buf[((size_t)layer * cap.cap + pos) * width]; };
    a.embed = dot_u(cap.resid_row(0, pos));
    a.total = a.embed;
    std::vector<float> wo_row(cap.q_dim);
    std::vector<double> w(cap.q_dim);  // Wo^T u
    for (int l = 0; l < L; l++) {
        a.attn.push_back(dot_u(at(cap.attn, l, H)));
        a.mlp.push_back(dot_u(at(cap.mlp, l, H)));
        a.total += a.attn.back() + a.mlp.back();
        std::fill(w.begin(), w.end(), 0.0);
        for (int i = 0; i < H; i++) {
            mat_row_to_f32(m.layers[l].wo, i, wo_row.data());
            for (int j = 0; j < cap.q_dim; j++) w[j] += u[i] * wo_row[j];
        }
        const float* att = at(cap.heads, l, cap.q_dim);
        std::vector<double> heads(c.n_heads, 0.0);
        for (int h = 0; h < c.n_heads; h++)
            for (int j = h * hd; j < (h + 1) * hd; j++) heads[h] += w[j] * att[j];
        a.heads.push_back(heads);
    }
    return a;
}

// ---------------------------------------------------------------------------
// Ablation.

void parse_ablate_spec(const std::string& spec, int* layer, int* head) {
    size_t dot = spec.find('.');
    auto bad = [&]() { fail("--ablate \"%s\": expected LAYER.HEAD or LAYER.mlp (e.g. 2.1 or 0.mlp)", spec.c_str()); };
    if (dot == std::string::npos || dot == 0 || dot + 1 == spec.size()) bad();
    std::string l = spec.substr(0, dot), h = spec.substr(dot + 1);
    if (l.find_first_not_of("0123456789") != std::string::npos || l.size() > 6) bad();
    *layer = std::stoi(l);
    if (h == "mlp") *head = -1;
    else if (h.find_first_not_of("0123456789") == std::string::npos && h.size() <= 6) *head = std::stoi(h);
    else bad();
}

Ablation ablation_from_specs(const std::vector<std::string>& specs, const Config& c) {
    Ablation a;
    for (const std::string& s : specs) {
        int l, h;
        parse_ablate_spec(s, &l, &h);
        if (l >= c.n_layers) fail("--ablate %s: the model has layers 0 to %d", s.c_str(), c.n_layers - 1);
        if (h >= c.n_heads) fail("--ablate %s: layer %d has heads 0 to %d", s.c_str(), l, c.n_heads - 1);
        if (h < 0) a.mlps.push_back(l);
        else a.heads.push_back({l, h});
    }
    return a;
}

// log p(target) at the last of `tokens`, from a fresh cache.
static double target_logprob(Net& net, const std::vector<int>& tokens, int target) {
    net_reset(net);
    const float* lg = forward(net, tokens.data(), (int)tokens.size(), 0, false);
    int V = net.model->cfg.vocab;
    float mx = *std::max_element(lg, lg + V);
    double sum = 0;
    for (int i = 0; i < V; i++) sum += lantern_exp((double)lg[i] - mx);
    return (double)lg[target] - mx - lantern_log(sum);
}

std::vector<AblationEffect> ablation_effects(Net& net, const std::vector<int>& tokens, int pos, int target) {
    const Config& c = net.model->cfg;
    if (pos < 0 || pos >= (int)tokens.size()) fail("ablation_effects: position %d is not in the prompt", pos);
    std::vector<int> prefix(tokens.begin(), tokens.begin() + pos + 1);
    const Ablation base = net.ablate;
    double base_lp = target_logprob(net, prefix, target);
    std::vector<AblationEffect> out;
    for (int l = 0; l < c.n_layers; l++)
        for (int h = -1; h < c.n_heads; h++) {
            net.ablate = base;
            if (h < 0) net.ablate.mlps.push_back(l);
            else net.ablate.heads.push_back({l, h});
            AblationEffect e;
            e.layer = l;
            e.head = h;
            e.logprob = target_logprob(net, prefix, target);
            e.delta = e.logprob - base_lp;
            out.push_back(e);
        }
    net.ablate = base;
    std::stable_sort(out.begin(), out.end(), [](const AblationEffect& a, const AblationEffect& b) { return a.delta < b.delta; });
    return out;
}
