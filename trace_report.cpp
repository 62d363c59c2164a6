// trace_report.cpp — recording one run: the listener behind the probes, the
// Chrome trace, the computation graph and the prefill/decode cost model.
//
// The HTML page is written by trace_report_html.cpp (what the page says)
// with trace_report_draw.cpp (its charts and heatmaps). They are separate
// files because they change for different reasons: this one follows the
// engine (what a forward call is, what it costs), those follow the reader
// (what a page should show and how it should look).
#include "trace_report.h"
#include "kernels.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

Recorder g_rec;

// ---------------------------------------------------------------------------
// Listening. logging.cpp measures; these functions only keep the numbers.

static void on_forward_begin(const int* tokens, int T, int pos, double t_us) {
    KernelScratch& ks = kernel_scratch();  // the forward's own (it runs on this thread)
    ks.timed = true;
    ks.matmul_s = ks.attention_s = 0;
    ForwardRecord f;
    f.T = T;
    f.pos = pos;
    f.prefill = g_rec.next_is_prefill;
    f.t0_us = t_us;
    g_rec.forwards.push_back(f);
    if ((int)g_rec.pos_token.size() < pos + T) {
        g_rec.pos_token.resize(pos + T, -1);
        g_rec.pos_generated.resize(pos + T, 0);
    }
    for (int t = 0; t < T; t++) g_rec.pos_token[pos + t] = tokens[t];
}

static void on_forward_end(double t_us) {
    if (g_rec.forwards.empty()) return;
    ForwardRecord& f = g_rec.forwards.back();
    f.t1_us = t_us;
    KernelScratch& ks = kernel_scratch();
    f.matmul_us = ks.matmul_s * 1e6;
    f.attention_us = ks.attention_s * 1e6;
}

static void on_layer_end(const LayerProbe& p) {
    if (!g_rec.forwards.empty()) g_rec.forwards.back().layers.push_back(p);
}

// attn.scores is [n_heads * T, kv_len]: row h*T + t holds what token t (at
// position pos0 + t) gives each visible key, keys starting at position
// pos0 + T - kv_len. Only the causal part (key <= query) is kept.
static void keep_attention(int layer, int pos0, const float* p, int rows, int cols) {
    AttentionMaps& a = g_rec.attention;
    if (a.cells.empty() || g_rec.forwards.empty() || layer < 0 || layer >= a.n_layers) return;
    int T = g_rec.forwards.back().T, first = pos0 + T - cols;
    for (int r = 0; r < rows && r / T < a.n_heads; r++) {
        int h = r / T, q = pos0 + r % T;
        if (q < 0 || q >= a.cap) continue;
        for (int j = 0; j < cols; j++) {
            int k = first + j;
            if (k > q) break;
            if (k < 0) continue;
            float v = std::fmax(0.0f, std::fmin(1.0f, p[(size_t)r * cols + j]));
            a.at(layer, h, q, k) = (uint8_t)(1 + std::lround(254 * std::sqrt(v)));
        }
    }
}

static void on_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols) {
    lens_capture_tensor(g_rec.lens, name, layer, pos0, data, rows, cols);  // keeps the stream's own tensors only
    if (!strcmp(name, "attn.scores")) {
        keep_attention(layer, pos0, data, rows, cols);
        return;  // its rms says little; the layer's entropy says more
    }
    std::string key = (layer >= 0 ? "L" + std::to_string(layer) + "." : std::string()) + name;
    auto it = g_rec.series_index.find(key);
    if (it == g_rec.series_index.end()) {
        it = g_rec.series_index.emplace(key, (int)g_rec.series.size()).first;
        g_rec.series.push_back(TensorSeries());
        g_rec.series.back().name = name;
        g_rec.series.back().layer = layer;
    }
    TensorSeries& s = g_rec.series[it->second];
    TensorStats st;
    stats_add(st, data, (size_t)rows * cols);
    s.forward.push_back((int)g_rec.forwards.size() - 1);
    s.rms.push_back((float)stats_rms(st));
    s.min.push_back((float)st.min);
    s.max.push_back((float)st.max);
}

static const ProbeListener listener = {on_forward_begin, on_forward_end, on_layer_end, on_tensor};

// ---------------------------------------------------------------------------
// The run's side.

bool trace_start(const TraceOptions& opt, const std::string& command, bool serving) {
    if (opt.report_path.empty() && opt.json_path.empty()) return false;
    g_rec = Recorder();
    g_rec.on = true;
    g_rec.opt = opt;
    g_rec.command = command;
    g_rec.t_start_us = log_now_us();
    g_rec.serving = serving;
    if (!serving) {
        g_watch_tensors = g_probe_forward = true;
        g_probe_listener = &listener;
    }
    return true;
}

bool trace_recording() { return g_rec.on; }

int positions_run(const Recorder& r) {
    int n = 0;
    for (const ForwardRecord& f : r.forwards) n = std::max(n, f.pos + f.T);
    return n;
}
double trace_now_us() { return log_now_us(); }

void trace_span(const char* name, double t0_us) {
    if (g_rec.on) g_rec.spans.push_back({name, t0_us, log_now_us()});
}

void trace_set_model(const Model& m, const Tokenizer& tok) {
    if (!g_rec.on) return;
    g_rec.model = &m;
    g_rec.tok = &tok;
    g_rec.cfg = m.cfg;
    if (g_rec.serving) return;  // no probes, no attention maps
    AttentionMaps& a = g_rec.attention;
    a.n_layers = m.cfg.n_layers;
    a.n_heads = m.cfg.n_heads;
    a.cap = ATTENTION_CAP;
    a.cells.assign((size_t)a.n_layers * a.n_heads * a.cap * a.cap, 0);
    lens_capture_init(g_rec.lens, m.cfg, std::min(LENS_CAP, m.cfg.max_pos));
}

void trace_set_prompt(const std::string& prompt, const SamplerParams& s) {
    if (!g_rec.on) return;
    g_rec.prompt += (g_rec.prompt.empty() ? "" : "\n") + prompt;
    g_rec.sampling = s;
}

void trace_turn_begin() { g_rec.next_is_prefill = true; }

void trace_token(int token, const SampleInfo& info) {
    if (!g_rec.on) return;
    TokenRecord t;
    t.pos = g_rec.forwards.empty() ? 0 : g_rec.forwards.back().pos + g_rec.forwards.back().T;
    t.t_us = log_now_us();
    t.info = info;
    t.info.token = token;
    g_rec.tokens.push_back(t);
    if ((int)g_rec.pos_generated.size() <= t.pos) {
        g_rec.pos_token.resize(t.pos + 1, -1);
        g_rec.pos_generated.resize(t.pos + 1, 0);
    }
    g_rec.pos_generated[t.pos] = 1;
    g_rec.next_is_prefill = false;
}

void trace_step(StepRecord&& step) {
    if (g_rec.on && g_rec.serving) g_rec.steps.push_back(std::move(step));
}

// Recording ends: the probes go back to what the log level needs. What was
// recorded stays in g_rec until the next trace_start (tests read it).
static void detach() {
    g_rec.on = false;
    g_probe_listener = nullptr;
    g_watch_tensors = g_probe_forward = g_log_level >= LOG_DEBUG;
}

void trace_finish(const std::string& output, const std::string& finish) {
    if (!g_rec.on) return;
    detach();
    g_rec.output += output;
    g_rec.finish = finish;
    if (!g_rec.opt.json_path.empty()) {
        write_file_whole(g_rec.opt.json_path, trace_json(g_rec));
        LOGI(CAT_KEY, "trace written to %s (open it in https://ui.perfetto.dev or chrome://tracing)",
             g_rec.opt.json_path.c_str());
    }
    if (!g_rec.opt.report_path.empty()) {
        write_file_whole(g_rec.opt.report_path, report_html(g_rec));
        LOGI(CAT_KEY, "report written to %s (open it in a browser; it needs no network)", g_rec.opt.report_path.c_str());
    }
    g_rec.model = nullptr;  // the caller's, about to go
    g_rec.tok = nullptr;
}

void write_graph_dot(const std::string& path, const Config& c) {
    write_file_whole(path, model_graph_dot(c));
    LOGI(CAT_KEY, "graph written to %s (draw it: dot -Tsvg %s -o graph.svg)", path.c_str(), path.c_str());
}

// Words with anything but letters, digits and -_./,=: are single-quoted.
std::string command_line(const char* program, int argc, char** argv) {
    std::string s = program;
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        bool plain = !a.empty();
        for (char ch : a)
            if (!isalnum((unsigned char)ch) && !strchr("-_./,=:", ch)) plain = false;
        if (plain) {
            s += " " + a;
            continue;
        }
        s += " '";
        for (char ch : a) s += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        s += "'";
    }
    return s;
}

void trace_reset() {
    if (g_rec.on) detach();
    g_rec = Recorder();
}

// ---------------------------------------------------------------------------
// Chrome Trace Event format: {"traceEvents": [...]} where each "X" event is
// a span with a start "ts" and a duration "dur" in microseconds. Viewers
// nest spans of one thread by time alone, so a child must lie inside its
// parent. The tree written here:
//
//   load, tokenize, generate
//     prefill                       first prompt forward .. first token sampled
//       forward (T=n, pos=p)          one per chunk
//         layer 0 .. layer N-1
//       sample                        end of the last forward .. token out
//     decode step k                 one forward of one token, then its sample
//       forward / layer i / sample
//
// A serving trace (./run serve) has the scheduler's steps on track 1 and
// one track per slot under it (track 2 + slot): in each step, a slice for
// the sequence in that slot, named by its request and phase ("#3 prefill",
// "#3 decode"), so a request is seen joining a slot, reading its prompt in
// chunks, decoding beside the others, and leaving.
namespace {
struct TraceWriter {
    const Recorder& r;
    nlohmann::json events = nlohmann::json::array();
    void span(const std::string& name, const char* cat, double t0, double t1, nlohmann::json args = nullptr, int tid = 1) {
        nlohmann::json e = {{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", 1}, {"tid", tid},
                            {"ts", std::round((t0 - r.t_start_us) * 1000) / 1000},
                            {"dur", std::round((t1 - t0) * 1000) / 1000}};
        if (!args.is_null()) e["args"] = args;
        events.push_back(e);
    }
    void forward(const ForwardRecord& f) {
        span("forward", "forward", f.t0_us, f.t1_us,
             {{"T", f.T}, {"pos", f.pos}, {"weights_ms", f.matmul_us / 1000}, {"attention_ms", f.attention_us / 1000}});
        for (const LayerProbe& l : f.layers)
            span("layer " + std::to_string(l.layer), "layer", l.t0_us, l.t1_us,
                 {{"rms_in", l.rms_in}, {"rms_out", l.rms_out}, {"attn_entropy_bits", l.entropy_bits}});
    }
    std::string text(int id) const {
        return r.tok && id >= 0 && id < tokenizer_vocab_size(*r.tok) ? utf8_sanitize(token_bytes(*r.tok, id)) : "";
    }
    void sample(const TokenRecord& t, double t0) {
        span("sample", "sample", t0, t.t_us, {{"token", t.info.token}, {"text", text(t.info.token)}, {"p", t.info.prob}});
    }
    void track(int tid, const std::string& name) {
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}});
        events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
    void steps() {
        int n_slots = 0;
        for (const StepRecord& st : r.steps)
            for (const StepSeq& q : st.seqs) n_slots = std::max(n_slots, q.slot + 1);
        for (int i = 0; i < n_slots; i++) track(2 + i, "slot " + std::to_string(i));
        for (size_t k = 0; k < r.steps.size(); k++) {
            const StepRecord& st = r.steps[k];
            int rows = 0, prefill = 0;
            for (const StepSeq& q : st.seqs) {
                rows += q.T;
                if (q.prefill) prefill += q.T;
            }
            double ms = 1e-3;  // the split of the step's time (trace_report.h:StepRecord), in ms
            span("step " + std::to_string(k + 1), "step", st.t0_us, st.t1_us,
                 {{"step", k + 1}, {"sequences", st.seqs.size()}, {"rows", rows}, {"prefill_rows", prefill}, {"decode_rows", rows - prefill},
                  {"weights_ms", st.matmul_us * ms}, {"attention_ms", st.attention_us * ms},
                  {"other_forward_ms", (st.forward_us - st.matmul_us - st.attention_us) * ms}, {"sampling_ms", st.sample_us * ms},
                  {"since_last_step_ms", k ? (st.t0_us - r.steps[k - 1].t1_us) * ms : 0.0}});
            for (const StepSeq& q : st.seqs) {
                const char* phase = q.prefill ? "prefill" : "decode";
                nlohmann::json a = {{"request", q.request}, {"slot", q.slot}, {"phase", phase}, {"step", k + 1},
                                    {"pos", q.pos}, {"tokens", q.T}, {"kv_blocks", q.blocks}};
                if (q.token >= 0) {
                    a["token"] = q.token;
                    a["text"] = text(q.token);
                }
                if (q.left) a["finish"] = q.left;
                span("#" + std::to_string(q.request) + " " + phase, phase, st.t0_us, st.t1_us, a, 2 + q.slot);
            }
        }
    }
};
}  // namespace

std::string trace_json(const Recorder& r) {
    TraceWriter w{r};
    w.events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "lantern " + r.command}}}});
    w.track(1, r.serving ? "scheduler" : "main");
    for (const SpanRecord& s : r.spans) w.span(s.name, "run", s.t0_us, s.t1_us);
    w.steps();
    // Walk forwards and tokens in time order: a token closes the group
    // (prefill or decode step) that the forwards before it opened.
    size_t f = 0, t = 0;
    int step = 0;
    while (f < r.forwards.size()) {
        size_t g = f + 1;  // the group: forwards f..g-1
        if (r.forwards[f].prefill)
            while (g < r.forwards.size() && r.forwards[g].prefill && (t >= r.tokens.size() || r.forwards[g].t0_us < r.tokens[t].t_us)) g++;
        while (t < r.tokens.size() && r.tokens[t].t_us < r.forwards[f].t0_us) t++;  // tokens with no forward before them
        const TokenRecord* tok = t < r.tokens.size() && (g == r.forwards.size() || r.tokens[t].t_us < r.forwards[g].t0_us)
                                     ? &r.tokens[t] : nullptr;
        double end = tok ? tok->t_us : r.forwards[g - 1].t1_us;
        bool prefill = r.forwards[f].prefill;
        int n = 0;
        for (size_t i = f; i < g; i++) n += r.forwards[i].T;
        w.span(prefill ? "prefill" : "decode step " + std::to_string(++step), prefill ? "prefill" : "decode",
               r.forwards[f].t0_us, end, {{"tokens", n}});
        for (size_t i = f; i < g; i++) w.forward(r.forwards[i]);
        if (tok) {
            w.sample(*tok, r.forwards[g - 1].t1_us);
            t++;
        }
        f = g;
    }
    nlohmann::json doc = {{"traceEvents", w.events}, {"displayTimeUnit", "ms"}};
    return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// ---------------------------------------------------------------------------
// The computation graph, for Graphviz. Two clusters side by side: the whole
// model (embedding, the stack of layers, final norm, LM head, sampler, and
// the decode loop back to the input) and one decoder layer in full, with the
// shapes of this model's config.
std::string model_graph_dot(const Config& c) {
    int H = c.hidden, hd = c.head_dim, q = c.n_heads * hd, kv = c.n_kv_heads * hd, I = c.intermediate;
    char b[4096];
    std::string s =
        "digraph lantern {\n"
        "  rankdir=TB; newrank=true; nodesep=0.25; ranksep=0.32;\n"
        "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f1ea\", color=\"#8a7f6a\", fontname=\"Helvetica\", fontsize=11];\n"
        "  edge [color=\"#6b6256\", fontname=\"Helvetica\", fontsize=9];\n";
    snprintf(b, sizeof b,
             "  subgraph cluster_model {\n"
             "    label=\"the whole model\"; fontname=\"Helvetica-Bold\"; color=\"#b9ae98\";\n"
             "    tokens [label=\"token ids [T]\", shape=plaintext, style=\"\"];\n"
             "    embed [label=\"embed_tokens: row lookup\\n[%d, %d] -> x [T, %d]\"];\n",
             c.vocab, H, H);
    s += b;
    // Long stacks are drawn as first two, a gap, last two.
    std::vector<std::string> names;
    for (int l = 0; l < c.n_layers; l++) {
        bool shown = c.n_layers <= 6 || l < 2 || l >= c.n_layers - 2;
        if (shown) {
            names.push_back("L" + std::to_string(l));
            snprintf(b, sizeof b, "    L%d [label=\"decoder layer %d\", fillcolor=\"#e6eef7\", color=\"#5a7fa8\"];\n", l, l);
            s += b;
        } else if (l == 2) {
            names.push_back("Lgap");
            snprintf(b, sizeof b, "    Lgap [label=\"layers 2 .. %d\\n(the same, %d more)\", shape=plaintext, style=\"\"];\n",
                     c.n_layers - 3, c.n_layers - 4);
            s += b;
        }
    }
    snprintf(b, sizeof b,
             "    final_norm [label=\"final RMSNorm\"];\n"
             "    lm_head [label=\"lm_head%s\\n[T, %d] -> logits [T, %d]\"];\n"
             "    sampler [label=\"sampler: penalties, top-k,\\ntop-p, temperature, draw\", fillcolor=\"#f7ead9\", color=\"#b07a3a\"];\n",
             c.tie_embeddings ? " (tied: the embedding matrix)" : "", H, c.vocab);
    s += b;
    s += "    tokens -> embed";
    for (auto& n : names) s += " -> " + n;
    s += " -> final_norm -> lm_head -> sampler [weight=8];\n"
         "    sampler -> tokens [style=dashed, constraint=false, label=\" decode: the new\\n token goes back in\"];\n"
         "  }\n";
    snprintf(b, sizeof b,
             "  subgraph cluster_layer {\n"
             "    label=\"one decoder layer (all %d alike)\"; fontname=\"Helvetica-Bold\"; color=\"#5a7fa8\";\n"
             "    x_in [label=\"x (residual stream) [T, %d]\", shape=plaintext, style=\"\"];\n"
             "    attn_norm [label=\"RMSNorm (attn_norm)\"];\n"
             "    q_proj [label=\"q_proj + bias\\n%d -> %d\"]; k_proj [label=\"k_proj + bias\\n%d -> %d\"]; v_proj [label=\"v_proj + bias\\n%d -> %d\"];\n"
             "    rope [label=\"RoPE: rotate q and k\\nby position\"];\n"
             "    cache [label=\"KV cache\\nkeys, values of\\nevery past position\", shape=cylinder, fillcolor=\"#eef3e6\", color=\"#6f8a4a\"];\n"
             "    attn [label=\"attention: %d query heads share %d KV heads\\nsoftmax(q k^T / sqrt(%d)), causal -> weighted sum of v\", fillcolor=\"#e6eef7\", color=\"#5a7fa8\"];\n"
             "    o_proj [label=\"o_proj\\n%d -> %d\"];\n"
             "    add1 [label=\"+\", shape=circle, fixedsize=true, width=0.3];\n"
             "    ffn_norm [label=\"RMSNorm (ffn_norm)\"];\n"
             "    gate [label=\"gate_proj\\n%d -> %d\"]; up [label=\"up_proj\\n%d -> %d\"];\n"
             "    act [label=\"SiLU(gate) * up\"];\n"
             "    down [label=\"down_proj\\n%d -> %d\"];\n"
             "    add2 [label=\"+\", shape=circle, fixedsize=true, width=0.3];\n"
             "    x_out [label=\"x [T, %d] to the next layer\", shape=plaintext, style=\"\"];\n"
             "    x_in -> attn_norm; attn_norm -> q_proj; attn_norm -> k_proj; attn_norm -> v_proj;\n"
             "    q_proj -> rope; k_proj -> rope; rope -> cache [label=\" k\"]; v_proj -> cache [label=\" v\"];\n"
             "    rope -> attn [label=\" q\"]; cache -> attn [label=\" all past k, v\"];\n"
             "    attn -> o_proj -> add1; x_in -> add1 [style=dashed, label=\" residual\"];\n"
             "    add1 -> ffn_norm; ffn_norm -> gate; ffn_norm -> up; gate -> act; up -> act; act -> down -> add2;\n"
             "    add1 -> add2 [style=dashed, label=\" residual\"]; add2 -> x_out;\n"
             "  }\n"
             "}\n",
             c.n_layers, H, H, q, H, kv, H, kv, c.n_heads, c.n_kv_heads, hd, q, H, H, I, H, I, I, H, H);
    s += b;
    return s;
}

// ---------------------------------------------------------------------------
// The cost model.

static const Mat* layer_mats(const LayerWeights& L, int i) {
    const Mat* m[] = {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    return i < 7 ? m[i] : nullptr;
}

double layer_weight_bytes(const Model& m) {
    double b = 0;
    for (const LayerWeights& L : m.layers)
        for (int i = 0; i < 7; i++) b += layer_mats(L, i)->bytes();
    return b;
}

double layer_params(const Model& m) {
    double n = 0;
    for (const LayerWeights& L : m.layers)
        for (int i = 0; i < 7; i++) n += (double)layer_mats(L, i)->rows * layer_mats(L, i)->cols;
    return n;
}

ForwardCost forward_cost(const Model& m, int T, int pos) {
    const Config& c = m.cfg;
    ForwardCost k;
    double embed_row = m.embed.rows ? (double)m.embed.bytes() / m.embed.rows : 0;
    k.weight_bytes = layer_weight_bytes(m) + m.lm_head.bytes() + T * embed_row;
    // Query t (position pos+t) sees pos+t+1 keys: summed over the T queries.
    double keys = (double)T * pos + (double)T * (T + 1) / 2;
    k.flops = 2.0 * T * layer_params(m) + 4.0 * c.head_dim * c.n_heads * keys * c.n_layers +
              2.0 * (double)m.lm_head.rows * m.lm_head.cols;
    k.kv_bytes = 2.0 * c.n_layers * (pos + T) * c.n_kv_heads * c.head_dim * sizeof(float);
    return k;
}

PhaseTotals phase_totals(const Recorder& r, bool prefill) {
    PhaseTotals p;
    for (const ForwardRecord& f : r.forwards) {
        if (f.prefill != prefill) continue;
        p.forwards++;
        p.tokens += f.T;
        p.ms += (f.t1_us - f.t0_us) / 1000;
        if (r.model) {
            ForwardCost c = forward_cost(*r.model, f.T, f.pos);
            p.cost.weight_bytes += c.weight_bytes;
            p.cost.kv_bytes += c.kv_bytes;
            p.cost.flops += c.flops;
        }
    }
    return p;
}
