// chapters/layer/checker.cpp — the student's decoder_layer against the
// engine's own layer 0 of models/tiny.
//
// The engine runs forward() as usual; the probe listener that --report uses
// (logging.h: ProbeListener) hands this checker every tensor net.cpp names
// with WATCH_TENSOR, so the student's buffers are compared with the
// engine's, step by step: the first one that differs names the step. Then
// the student's layer, stacked over all layers, must give the engine's
// logits. Plain kernels on both sides: the same calls in the same order
// give the same bits, and a float tolerance leaves room for another order.
#include <map>
#include "../checker_common.h"
#include "layer.h"

void decoder_layer_student(float* x, int T, int pos, const Config& c, const LayerWeights& L, LayerCache& cache,
                           LayerBuffers& b);

// The engine's tensors of the last forward call: layer 0's, and the embedding.
static std::map<std::string, std::vector<float>> g_seen;
static void on_tensor(const char* name, int layer, int, const float* data, int rows, int cols) {
    if (layer == 0 || !strcmp(name, "embed")) g_seen[name].assign(data, data + (size_t)rows * cols);
}
static const ProbeListener LISTENER = {nullptr, nullptr, nullptr, on_tensor};

static LayerBuffers buffers(const Config& c, int T, int n_ctx) {
    LayerBuffers b;
    size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
    b.h.assign((size_t)T * c.hidden, 0);
    b.q.assign(T * q_dim, 0);
    b.k.assign(T * kv_dim, 0);
    b.v.assign(T * kv_dim, 0);
    b.att.assign(T * q_dim, 0);
    b.scores.assign(n_ctx, 0);
    b.gate.assign((size_t)T * c.intermediate, 0);
    b.up.assign((size_t)T * c.intermediate, 0);
    return b;
}
static LayerCache new_cache(const Config& c, int n_ctx) {
    LayerCache k;
    k.k.assign((size_t)n_ctx * c.n_kv_heads * c.head_dim, 0);
    k.v = k.k;
    return k;
}
static bool close(const std::vector<float>& got, const std::vector<float>& want) { return compare(want, got, 2e-5).empty(); }

// v minus its bias, row by row; then (when heads > 0) rotated at positions p0 + t.
static std::vector<float> unbias_rope(std::vector<float> v, const std::vector<float>& bias, int heads, const Config& c,
                                      int p0) {
    size_t n = bias.size();
    for (size_t i = 0; i < v.size(); i++) v[i] -= bias[i % n];
    for (size_t t = 0; heads && t < v.size() / n; t++) apply_rope(&v[t * n], heads, c.head_dim, p0 + (int)t, c.rope_theta);
    return v;
}
// up = rmsnorm(mid, w) W_up: what the MLP's up projection is for a given stream.
static std::vector<float> up_of(const std::vector<float>& mid, const std::vector<float>& w, const Model& m, int T) {
    const Config& c = m.cfg;
    std::vector<float> h(mid.size()), up((size_t)T * c.intermediate);
    for (int t = 0; t < T; t++) rmsnorm(&h[(size_t)t * c.hidden], &mid[(size_t)t * c.hidden], w.data(), c.hidden, c.eps);
    matmul(up.data(), h.data(), m.layers[0].w_up, nullptr, T);
    return up;
}
static std::vector<float> add(std::vector<float> a, const std::vector<float>& b) {
    for (size_t i = 0; i < a.size(); i++) a[i] += b[i];
    return a;
}

// Why a buffer differs, from the engine's intermediates and the usual slips.
static std::string diagnose(const std::string& buf, const std::vector<float>& got, const std::vector<float>& x_in,
                            const Model& m, int T, int pos) {
    const Config& c = m.cfg;
    const LayerWeights& L = m.layers[0];
    auto& s = g_seen;
    if (buf == "q" || buf == "k") {
        bool q = buf == "q";
        const std::vector<float>& raw = s[q ? "attn.q" : "attn.k"];
        const std::vector<float>& bias = q ? L.bq : L.bk;
        int heads = q ? c.n_heads : c.n_kv_heads;
        if (close(got, raw)) return buf + " is not rotated: apply_rope to each token's row, at position pos + t.";
        if (close(got, unbias_rope(raw, bias, heads, c, pos)))
            return "you forgot the bias: " + buf + " = h W" + buf + " + b" + buf + " (Qwen2 has biases on q, k and v: "
                   "matmul's bias argument, L.b" + buf + ".data()).";
        if (pos > 0 && close(got, unbias_rope(raw, std::vector<float>(bias.size(), 0.0f), heads, c, 0) ))
            return "rotated at position t; token t of this call sits at position pos + t.";
        return buf + " = rmsnorm(x) (weights L.attn_norm) times W" + buf + ", plus b" + buf + ", then RoPE at pos + t.";
    }
    if (buf == "v") {
        if (close(got, unbias_rope(s["attn.v"], L.bv, 0, c, 0)))
            return "you forgot the bias: v = h Wv + bv (Qwen2 has biases on q, k and v: matmul's bias argument).";
        return "v = rmsnorm(x) (weights L.attn_norm) times Wv, plus bv; v is not rotated.";
    }
    if (buf == "the cache")
        return "store token t's k (after RoPE) and v in cache row pos + t (kv_dim floats a row) before attention.";
    if (buf == "att")
        return "q, k, v and the cache are right, so: token t attends to positions 0..pos+t (pos + t + 1 keys, not "
               "t + 1); query head i reads KV head i / (n_heads / n_kv_heads), whose keys start at float "
               "kvh * head_dim of a row; rows are kv_dim floats apart (stride in bytes: kv_dim * 4).";
    std::vector<float> mid = add(x_in, s["attn.o_proj"]);
    if (buf == "up") {
        if (close(got, up_of(add(s["attn_norm"], s["attn.o_proj"]), L.ffn_norm, m, T)))
            return "the residual: x = x + att Wo adds to x itself, not to its normed copy h (did rmsnorm write over "
                   "x?). The stream x goes through the layer un-normed; only the branches see rmsnorm(x).";
        if (close(got, up_of(s["attn.o_proj"], L.ffn_norm, m, T)))
            return "you forgot the residual: x = x + att Wo, not x = att Wo.";
        if (close(got, up_of(mid, L.attn_norm, m, T)))
            return "the second norm has its own weights: L.ffn_norm, not L.attn_norm.";
        return "attention is right, so: x = x + att Wo (Wo has no bias), then h = rmsnorm(x) with L.ffn_norm, "
               "then up = h W_up.";
    }
    if (buf == "gate") {
        if (close(got, s["mlp.gate"])) return "gate is h W_gate: now apply swiglu(gate, up, intermediate) to it.";
        return "gate = silu(h W_gate) * up: matmul with L.w_gate, then swiglu(gate, up, intermediate) row by row.";
    }
    if (close(got, s["mlp.down"])) return "you forgot the second residual: x = x + gate W_down.";
    if (close(got, add(s["ffn_norm"], s["mlp.down"])))
        return "the residual adds to x itself, not to its normed copy h.";
    return "the MLP's inputs are right, so the end is wrong: x = x + gate W_down (W_down has no bias).";
}

// One call of the layer: the engine's forward and the student's layer on the same tokens.
static void run_case(Group& g, const Model& m, Net& net, LayerCache& cache, int n_ctx, const std::vector<int>& tokens,
                     int pos) {
    const Config& c = m.cfg;
    int T = (int)tokens.size(), kv_dim = c.n_kv_heads * c.head_dim;
    g.start(T == 1 ? fmt("1 token at position %d", pos) : fmt("%d tokens at positions %d..%d", T, pos, pos + T - 1));
    g_seen.clear();
    g_watch_tensors = true;
    g_probe_listener = &LISTENER;
    forward(net, tokens.data(), T, pos, false);
    g_watch_tensors = false;
    g_probe_listener = nullptr;
    std::vector<float> x_in = g_seen["embed"], x = x_in;
    LayerBuffers b = buffers(c, T, n_ctx);
    decoder_layer_student(x.data(), T, pos, c, m.layers[0], cache, b);
    std::vector<float> kv_got(cache.k.begin() + (size_t)pos * kv_dim, cache.k.begin() + (size_t)(pos + T) * kv_dim);
    kv_got.insert(kv_got.end(), cache.v.begin() + (size_t)pos * kv_dim, cache.v.begin() + (size_t)(pos + T) * kv_dim);
    std::vector<float> kv_want = g_seen["attn.k_rope"];
    kv_want.insert(kv_want.end(), g_seen["attn.v"].begin(), g_seen["attn.v"].end());
    struct Step { const char* buf; const std::vector<float>& got; const std::vector<float>& want; };
    Step steps[] = {{"q", b.q, g_seen["attn.q_rope"]}, {"k", b.k, g_seen["attn.k_rope"]}, {"v", b.v, g_seen["attn.v"]},
                    {"the cache", kv_got, kv_want}, {"att", b.att, g_seen["attn.out"]}, {"up", b.up, g_seen["mlp.up"]},
                    {"gate", b.gate, g_seen["mlp.act"]}, {"x", x, g_seen["resid"]}};
    for (const Step& st : steps) {
        std::string d = compare(st.want, st.got, 2e-5);
        if (d.empty()) continue;
        bool stub = x == x_in;
        return g.fail(std::string(st.buf) + " (the first buffer that differs from the engine's): " + d,
                      stub ? "x came back unchanged: is it still the stub?" : diagnose(st.buf, st.got, x_in, m, T, pos));
    }
}

int main() {
    checker_begin("layer", "one Qwen2 decoder layer from the engine's kernels, against net.cpp's own layer 0");
    kernels_init(KernelSet::Plain, 1);
    Model m;
    Tokenizer tok;
    Group setup("models/tiny");
    if (!load_tiny(setup, m, tok) || !setup.end()) return finish("layer");
    const int n_ctx = 64;

    Group one("one token at position 0: attention over itself");
    {
        Net net;
        net_init(net, m, n_ctx);
        LayerCache cache = new_cache(m.cfg, n_ctx);
        run_case(one, m, net, cache, n_ctx, {9707}, 0);
    }
    one.end();

    // One sequence through three groups: a prompt, a second chunk, decode.
    Net net;
    net_init(net, m, n_ctx);
    LayerCache cache = new_cache(m.cfg, n_ctx);
    Group prompt("a 5-token prompt at positions 0..4 (causal: each token sees the ones before it)");
    run_case(prompt, m, net, cache, n_ctx, {785, 1156, 315, 279, 1879}, 0);
    prompt.end();
    Group chunk("a second chunk of 3 tokens at positions 5..7 (the cache holds 0..4)");
    run_case(chunk, m, net, cache, n_ctx, {374, 264, 3460}, 5);
    chunk.end();
    Group decode("decode: one token a step at positions 8..11");
    for (int p = 8; p < 12; p++) run_case(decode, m, net, cache, n_ctx, {1000 + 37 * p}, p);
    decode.end();

    Group e2e("end to end: your layer for all 4 layers of models/tiny, then the final norm and the LM head");
    {
        const Config& c = m.cfg;
        Net ref;
        net_init(ref, m, n_ctx);
        std::vector<LayerCache> caches(c.n_layers, new_cache(c, n_ctx));
        std::vector<int> tokens = tokenizer_encode(tok, "One layer, run four times, is the model.");
        int at = 0;
        for (int step = 0; step <= 6; step++) {
            int T = step == 0 ? (int)tokens.size() : 1;
            e2e.start(step == 0 ? fmt("the %d-token prompt", T) : fmt("decode step %d at position %d", step, at));
            const float* r = forward(ref, &tokens[at], T, at, false);
            std::vector<float> want(r, r + c.vocab), x((size_t)T * c.hidden);
            for (int t = 0; t < T; t++) mat_row_to_f32(m.embed, tokens[at + t], &x[(size_t)t * c.hidden]);
            LayerBuffers b = buffers(c, T, n_ctx);
            for (int l = 0; l < c.n_layers; l++) decoder_layer_student(x.data(), T, at, c, m.layers[l], caches[l], b);
            std::vector<float> h(c.hidden), logits(c.vocab);
            rmsnorm(h.data(), &x[(size_t)(T - 1) * c.hidden], m.final_norm.data(), c.hidden, c.eps);
            matmul(logits.data(), h.data(), m.lm_head, nullptr, 1);
            std::string d = compare(want, logits, 1e-4);
            if (!d.empty()) {
                e2e.fail("the logits differ: " + d, g_groups_failed ? "fix the failures above first: they say which step."
                                                                    : "layer 0 is right but the stack is not? Use the "
                                                                      "weights L you are given, never m.layers[0].");
                break;
            }
            at += T;
            tokens.push_back(sample_argmax(want.data(), c.vocab));
        }
    }
    e2e.end();
    return finish("layer");
}
