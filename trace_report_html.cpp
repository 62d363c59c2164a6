// trace_report_html.cpp — the --report page: one HTML file that holds its own
// CSS, JavaScript, SVG charts and PNG heatmaps, so it opens from disk with no
// network (a classroom projector, a laptop on a train).
//
// This file decides what the page says, section by section; the charts and
// heatmaps are drawn by trace_report_draw.cpp, the graph is laid out by
// Graphviz's `dot` when it is installed. The page's script only adds the
// click-to-enlarge view of a heatmap and writes "REPORT_OK" into the page
// when it ran without an error, which is what tests/check_report.sh checks.
#include <omp.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <ctime>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include "trace_report.h"
#include "kernels.h"
#include "trace_report_draw.h"

// ---------------------------------------------------------------------------
// The sections of the page, top to bottom.

static double span_ms(const Recorder& r, const char* name) {
    double ms = 0;
    for (auto& s : r.spans)
        if (s.name == name) ms += (s.t1_us - s.t0_us) / 1000;
    return ms;
}

static std::string sampler_settings(const SamplerParams& s) {
    std::string t = s.temperature <= 0 ? "greedy (temperature 0: always the most likely token)"
                                       : strprintf("temperature %g, top-k %d, top-p %g, seed %u", s.temperature, s.top_k, s.top_p, s.seed);
    if (s.repeat_penalty != 1 || s.frequency_penalty != 0 || s.presence_penalty != 0)
        t += strprintf("; repeat penalty %g, frequency %g, presence %g over the last %d tokens", s.repeat_penalty,
                 s.frequency_penalty, s.presence_penalty, s.repeat_last_n);
    return t;
}

static std::string section_run(const Recorder& r) {
    std::string s = "<section id='run'><h2>1. The run</h2><div class='two'><div><table class='kv'>";
    auto row = [&](const std::string& k, const std::string& v) { s += "<tr><th>" + k + "</th><td>" + v + "</td></tr>"; };
    row("command", "<code>" + esc(r.command) + "</code>");
    if (r.model) {
        const Config& c = r.model->cfg;
        row("model", esc(r.model->dir) + strprintf(" &middot; %.1f M parameters &middot; %s", parameter_count(*r.model) / 1e6,
                                              dtype_name(r.model->embed.dtype)));
        row("shape", strprintf("%d layers, hidden %d, %d query heads / %d KV heads of %d, MLP %d, vocabulary %d", c.n_layers,
                         c.hidden, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate, c.vocab));
    }
    row("sampler", esc(sampler_settings(r.sampling)));
    row("machine", strprintf("%d OpenMP threads, %s kernels", omp_get_max_threads(), kernel_path_name()));
    char when[64];
    time_t now = time(nullptr);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    row("written", when);
    s += "</table></div><div><div class='label'>prompt</div><pre class='text'>" + esc(utf8_sanitize(r.prompt)) +
         "</pre><div class='label'>output <span class='dim'>(finish: " + esc(r.finish) + ")</span></div><pre class='text out'>" +
         esc(utf8_sanitize(r.output)) + "</pre></div></div></section>";
    return s;
}

static std::string card(const std::string& title, const std::string& big, const std::string& small, const char* cls = "") {
    return std::string("<div class='card ") + cls + "'><div class='ct'>" + title + "</div><div class='big'>" + big +
           "</div><div class='dim'>" + small + "</div></div>";
}

static std::string section_time(const Recorder& r) {
    PhaseTotals pf = phase_totals(r, true), dc = phase_totals(r, false);
    double sample_ms = 0;
    size_t f = 0;
    for (const TokenRecord& t : r.tokens) {
        while (f + 1 < r.forwards.size() && r.forwards[f + 1].t1_us <= t.t_us) f++;
        if (!r.forwards.empty()) sample_ms += (t.t_us - r.forwards[f].t1_us) / 1000;
    }
    double ttft = r.tokens.empty() || r.forwards.empty() ? 0 : (r.tokens[0].t_us - r.forwards[0].t0_us) / 1000;
    std::string s = "<section id='time'><h2>2. Where the time went: prefill, then decode</h2>"
                    "<p>Prefill runs every prompt token through the model in one batch and leaves their keys and values "
                    "in the KV cache; decode then runs one token per forward call, each new token going back in as input.</p>"
                    "<div class='cards'>";
    s += card("load", strprintf("%.1f ms", span_ms(r, "load")), "weights mapped, tokenizer read, KV cache made");
    s += card("tokenize", strprintf("%.2f ms", span_ms(r, "tokenize")), strprintf("%d prompt tokens", pf.tokens));
    s += card("prefill", strprintf("%.1f ms", pf.ms),
              strprintf("%d tokens in %d forward call%s &middot; <b>%.0f tok/s</b>", pf.tokens, pf.forwards, pf.forwards == 1 ? "" : "s",
                  pf.ms > 0 ? pf.tokens / (pf.ms / 1000) : 0), "c-prefill");
    s += card("time to first token", strprintf("%.1f ms", ttft), "prefill + the first draw");
    // The median step next to the mean: one step that lost the CPU to another
    // program moves the mean, not the median.
    std::vector<double> steps;
    for (auto& fw : r.forwards)
        if (!fw.prefill) steps.push_back((fw.t1_us - fw.t0_us) / 1000);
    std::sort(steps.begin(), steps.end());
    double median = steps.empty() ? 0 : steps[steps.size() / 2];
    s += card("decode", strprintf("%.1f ms", dc.ms),
              strprintf("%d forward calls &middot; %.2f ms each, median %.2f &middot; <b>%.1f tok/s</b>", dc.forwards,
                  dc.forwards ? dc.ms / dc.forwards : 0, median, dc.ms > 0 ? dc.forwards / (dc.ms / 1000) : 0), "c-decode");
    s += card("sampling", strprintf("%.2f ms", sample_ms), strprintf("%zu draws, top-5 recorded", r.tokens.size()));
    s += "</div>" + decode_inside(r);
    std::string busy = busy_note();  // the rule of every timing the program prints
    if (!busy.empty()) s += "<p class='busy'>Note: " + esc(busy) + ".</p>";
    double end = r.t_start_us;
    for (auto& sp : r.spans) end = std::max(end, sp.t1_us);
    for (auto& fw : r.forwards) end = std::max(end, fw.t1_us);
    for (auto& t : r.tokens) end = std::max(end, t.t_us);
    s += "<h3>The whole run</h3>" + timeline_svg(r, r.t_start_us, end, "the whole run");
    if (!r.forwards.empty()) {
        double g0 = r.forwards[0].t0_us;
        s += "<h3>Generation only (from the first forward call)</h3>" + timeline_svg(r, g0, end, "generation");
    }
    s += "<h3>Each forward call</h3>" + forward_bars_svg(r) + "<p class='dim'>Hover any bar for its numbers.</p></section>";
    return s;
}

static std::string section_bound(const Recorder& r) {
    if (!r.model) return "";
    PhaseTotals p[2] = {phase_totals(r, true), phase_totals(r, false)};
    std::string s = "<section id='bound'><h2>3. Why prefill is compute-bound and decode is memory-bound</h2>"
                    "<table class='grid-t'><tr><th></th><th class='c-prefill'>prefill</th><th class='c-decode'>decode</th></tr>";
    auto row = [&](const std::string& k, auto cell) {
        s += "<tr><th>" + k + "</th>";
        for (int i = 0; i < 2; i++) s += "<td>" + (p[i].forwards ? cell(p[i]) : std::string("&ndash;")) + "</td>";
        s += "</tr>";
    };
    row("forward calls &middot; tokens", [](const PhaseTotals& t) { return strprintf("%d &middot; %d", t.forwards, t.tokens); });
    row("tokens per forward call (T)", [](const PhaseTotals& t) { return strprintf("%.1f", (double)t.tokens / t.forwards); });
    row("weights read per forward call", [](const PhaseTotals& t) { return bytes_str(t.cost.weight_bytes / t.forwards); });
    row("weights read per token", [](const PhaseTotals& t) { return bytes_str(t.cost.weight_bytes / t.tokens); });
    row("FLOPs per token", [](const PhaseTotals& t) { return flops_str(t.cost.flops / t.tokens); });
    row("FLOPs per byte of weights read", [](const PhaseTotals& t) { return strprintf("<b>%.1f</b>", t.cost.flops / t.cost.weight_bytes); });
    row("KV cache read (fp32)", [](const PhaseTotals& t) { return bytes_str(t.cost.kv_bytes); });
    row("time in forward calls", [](const PhaseTotals& t) { return strprintf("%.2f ms", t.ms); });
    row("achieved GFLOP/s", [](const PhaseTotals& t) { return strprintf("<b>%.1f</b>", t.cost.flops / (t.ms / 1000) / 1e9); });
    row("achieved GB/s of weights", [](const PhaseTotals& t) { return strprintf("<b>%.2f</b>", t.cost.weight_bytes / (t.ms / 1000) / 1e9); });
    s += "</table>";
    double head = r.model->lm_head.bytes(), wb = layer_weight_bytes(*r.model) + head;
    double per_weight = wb / (layer_params(*r.model) + (double)r.model->lm_head.rows * r.model->lm_head.cols);
    s += strprintf("<p>Every forward call reads every weight matrix once: %s (%.2g bytes per weight). Each weight then does "
             "one multiply-add, 2 FLOPs, <i>per token in the batch</i>; only the LM head (%s of it) runs for the last "
             "token alone, since only that token's prediction is sampled. ",
             bytes_str(wb).c_str(), per_weight, bytes_str(head).c_str());
    if (p[0].forwards && p[1].forwards) {
        double ip = p[0].cost.flops / p[0].cost.weight_bytes, id = p[1].cost.flops / p[1].cost.weight_bytes;
        double gp = p[0].cost.flops / (p[0].ms / 1000) / 1e9, gd = p[1].cost.flops / (p[1].ms / 1000) / 1e9;
        s += strprintf("Decode has one token per call, so it does about %.1f FLOPs for each byte it fetches; prefill had %.1f "
                 "tokens per call and did %.1f. A CPU core does tens of FLOPs in the time it takes to fetch one byte "
                 "from RAM, so decode spends its time waiting for weights (<b>memory-bound</b>: at best, memory bandwidth "
                 "divided by %s per token), while prefill keeps the arithmetic busy (<b>compute-bound</b>). ",
                 id, (double)p[0].tokens / p[0].forwards, ip, bytes_str(wb).c_str());
        if (gp > gd)
            s += strprintf("In this run prefill reached %.2f GFLOP/s, %.1f times decode's %.2f, while decode streamed %.2f GB/s of weights.</p>",
                     gp, gp / gd, gd, p[1].cost.weight_bytes / (p[1].ms / 1000) / 1e9);
        else
            s += strprintf("In this run prefill did <i>not</i> beat decode (%.2f against %.2f GFLOP/s): the first forward call of "
                     "a process also pays one-time costs (weights paged in from the file on first touch, buffers allocated, "
                     "threads started), and with %d prompt tokens on a model this small they outweigh the arithmetic. "
                     "A longer prompt, or the 0.5B model, shows the effect.</p>", gp, gd, p[0].tokens);
    } else {
        s += "</p>";
    }
    if (wb < 64e6)
        s += strprintf("<p class='note'>This model is small: its weights (%s) may sit in the CPU cache, so decode is not held back "
                 "by RAM here%s. The 0.5B model (about 1 GB in bf16, 358 M of its 494 M weights in the layers) shows "
                 "the difference clearly.</p>", bytes_str(wb).c_str(),
                 head > wb / 2 ? strprintf(", and the LM head is %.0f%% of them, which keeps prefill's FLOPs per byte low too", 100 * head / wb).c_str() : "");
    return s + "<p class='dim'>Counted: the seven matrices of every layer, the LM head and the embedding rows looked up; "
               "attention adds 4&middot;head_dim FLOPs per (head, query, visible key). Norms, RoPE and SiLU are left out "
               "(well under 1%).</p></section>";
}

static std::string section_tokens(const Recorder& r) {
    std::string s = "<section id='tokens'><h2>4. The token stream</h2><p>Sampler: " + esc(sampler_settings(r.sampling)) +
                    ". Each generated token is shaded by the probability the model gave it (darker: less sure); hover for its top-5.</p><div class='stream'>";
    for (size_t i = 0; i < r.tokens.size(); i++) {
        const SampleInfo& in = r.tokens[i].info;
        std::string tip = strprintf("step %zu, pos %d: p=%.3f", i + 1, r.tokens[i].pos, in.prob);
        for (int k = 0; k < in.n_top; k++) tip += strprintf("\n%d. %s  %.3f", k + 1, token_text(r, in.top[k].id).c_str(), in.top[k].prob);
        s += strprintf("<span class='tok' style='--p:%.3f' title='", in.prob) + esc(tip) + "'>" + esc(token_text(r, in.token)) + "</span>";
    }
    s += std::string("</div><details ") + (r.tokens.size() <= 48 ? "open" : "") + "><summary>every step with its top-5 candidates</summary>"
         "<table class='toks'><tr><th>step</th><th>pos</th><th>chosen</th><th>p</th><th>top-5 (the chosen one marked)</th></tr>";
    for (size_t i = 0; i < r.tokens.size(); i++) {
        const SampleInfo& in = r.tokens[i].info;
        s += strprintf("<tr><td>%zu</td><td>%d</td><td><span class='tok plain'>", i + 1, r.tokens[i].pos) + esc(token_text(r, in.token)) +
             strprintf("</span> <span class='dim'>#%d</span></td><td>%.3f</td><td class='cands'>", in.token, in.prob);
        for (int k = 0; k < in.n_top; k++) {
            bool chosen = in.top[k].id == in.token;
            s += std::string("<span class='cand") + (chosen ? " chosen" : "") + "'><span class='bar' style='width:" +
                 strprintf("%.0f", 4 + 60 * in.top[k].prob) + "px'></span>" + (chosen ? "&#10003; " : "") + "<span class='tok plain'>" +
                 esc(token_text(r, in.top[k].id)) + strprintf("</span> %.3f</span>", in.top[k].prob);
        }
        s += "</td></tr>";
    }
    return s + "</table></details></section>";
}

static std::string section_layers(const Recorder& r) {
    if (!r.model) return "";
    int n = r.model->cfg.n_layers;
    const double nan = NAN;
    // Per layer: time, residual rms in/out and entropy, the prefill call's
    // values (the first) and the mean over the decode steps.
    std::vector<double> t_pf(n, 0), t_dc(n, 0), in_pf(n, nan), out_pf(n, nan), in_dc(n, 0), out_dc(n, 0), e_pf(n, nan), e_dc(n, 0);
    std::vector<int> n_dc(n, 0);
    bool first_pf = true;
    for (const ForwardRecord& f : r.forwards) {
        for (const LayerProbe& l : f.layers) {
            if (l.layer < 0 || l.layer >= n) continue;
            double ms = (l.t1_us - l.t0_us) / 1000;
            if (f.prefill) {
                t_pf[l.layer] += ms;
                if (first_pf) in_pf[l.layer] = l.rms_in, out_pf[l.layer] = l.rms_out, e_pf[l.layer] = l.entropy_bits;
            } else {
                t_dc[l.layer] += ms, in_dc[l.layer] += l.rms_in, out_dc[l.layer] += l.rms_out, e_dc[l.layer] += l.entropy_bits;
                n_dc[l.layer]++;
            }
        }
        if (f.prefill) first_pf = false;
    }
    for (int i = 0; i < n; i++) {
        if (n_dc[i]) t_dc[i] /= n_dc[i], in_dc[i] /= n_dc[i], out_dc[i] /= n_dc[i], e_dc[i] /= n_dc[i];
        else t_dc[i] = in_dc[i] = out_dc[i] = e_dc[i] = nan;
    }
    bool any = false;
    for (const ForwardRecord& f : r.forwards) any = any || !f.layers.empty();
    if (!any)
        return "<section id='layers'><h2>5. Inside the layers</h2><p class='note'>No per-layer numbers were recorded: "
               "the GPU path (<code>--device cuda</code>) runs the layers without probes, so only whole forward calls "
               "are timed.</p></section>";
    std::string s = "<section id='layers'><h2>5. Inside the layers</h2>"
                    "<p>Every layer adds its attention and MLP output to the residual stream. Its rms going in and coming "
                    "out shows how much each layer writes; attention entropy shows how spread out the attention is "
                    "(0 bits: all weight on one token; log<sub>2</sub> n bits: spread evenly over n).</p><div class='row'>";
    s += layer_chart_svg("time per layer (ms)", {{"prefill (sum)", "l-prefill", t_pf}, {"decode (per step)", "l-decode", t_dc}}, n);
    s += layer_chart_svg("residual rms, prefill", {{"in", "l-in", in_pf}, {"out", "l-out", out_pf}}, n);
    s += layer_chart_svg("attention entropy (bits)", {{"prefill", "l-prefill", e_pf}, {"decode (mean)", "l-decode", e_dc}}, n);
    s += "</div><h3>Every named tensor, every forward call</h3>"
         "<p>Each cell is one tensor of one layer: the line is its rms over the forward calls of the run (the dot is "
         "prefill), scaled per cell; the number is its rms in the last call, and the shading its size relative to the "
         "others. Hover for min and max.</p><div class='scroll'><table class='sm'><tr><th></th>";
    std::vector<std::string> names;
    for (const TensorSeries& t : r.series)
        if (t.layer >= 0 && std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
    for (auto& nm : names) s += "<th>" + esc(nm) + "</th>";
    s += "</tr>";
    double lo = 1e30, hi = -1e30;
    for (const TensorSeries& t : r.series)
        if (!t.rms.empty() && t.rms.back() > 0) lo = std::min(lo, (double)std::log10(t.rms.back())), hi = std::max(hi, (double)std::log10(t.rms.back()));
    for (int l = 0; l < n; l++) {
        s += strprintf("<tr><th>L%d</th>", l);
        for (auto& nm : names) {
            auto it = r.series_index.find(strprintf("L%d.", l) + nm);
            if (it == r.series_index.end()) {
                s += "<td></td>";
                continue;
            }
            const TensorSeries& t = r.series[it->second];
            float mn = *std::min_element(t.min.begin(), t.min.end()), mx = *std::max_element(t.max.begin(), t.max.end());
            double shade = t.rms.back() > 0 && hi > lo ? (std::log10(t.rms.back()) - lo) / (hi - lo) : 0;
            s += strprintf("<td style='--s:%.2f' title='L%d.%s: rms %.4g in the last call; min %.4g, max %.4g over the run'>", shade, l,
                     nm.c_str(), t.rms.back(), mn, mx) +
                 sparkline_svg(t, r) + strprintf("<div>%.3g</div></td>", t.rms.back());
        }
        s += "</tr>";
    }
    return s + "</table></div></section>";
}

static std::string section_attention(const Recorder& r) {
    const AttentionMaps& a = r.attention;
    int n = std::min(a.cap, positions_run(r));
    if (a.cells.empty() || n == 0) return "";
    int first_gen = n;
    for (int p = 0; p < n; p++)
        if (r.pos_generated[p]) { first_gen = p; break; }
    std::string s = strprintf("<section id='attention'><h2>6. Attention, layer by layer and head by head</h2>"
                        "<p>Row <i>i</i> of a map is what the token at position <i>i</i> looked at: column <i>j</i> is the weight "
                        "it gave position <i>j</i> (each row sums to 1). Grey is the future it may not see. Positions 0&ndash;%d "
                        "are shown%s; the prompt is positions 0&ndash;%d. <b>Click a map</b> to enlarge it with its tokens.</p>",
                        n - 1, n < positions_run(r) ? strprintf(" (of %d)", positions_run(r)).c_str() : "", first_gen - 1);
    s += "<div class='legend-bar'><span>attention weight</span>" + heat_legend_svg() + "<span class='dim'>(square-root scale: the small "
         "weights, most of them, get more of the colours)</span></div><div id='focus' hidden><div class='fhead'><b id='ftitle'></b> <button id='fclose'>close</button></div>"
         "<div class='fgrid'><div></div><div id='fcols'></div><div id='frows'></div><img id='fimg' alt='enlarged heatmap'></div></div>"
         "<div class='scroll'><table class='heat'><tr><th></th><th>mean</th>";
    for (int h = 0; h < a.n_heads; h++) s += strprintf("<th>head %d</th>", h);
    s += "</tr>";
    int px = std::max(60, std::min(150, 1080 / (a.n_heads + 2) - 6));  // one row fits the page
    for (int l = 0; l < a.n_layers; l++) {
        s += strprintf("<tr><th>L%d</th>", l);
        for (int h = -1; h < a.n_heads; h++)
            s += strprintf("<td><img class='hm' style='width:%dpx;height:%dpx' data-layer='%d' data-head='%d' alt='layer %d %s' src='", px, px, l, h, l,
                     h < 0 ? "mean of heads" : strprintf("head %d", h).c_str()) + heatmap_png(a, l, h, n) + "'></td>";
        s += "</tr>";
    }
    return s + "</table></div></section>";
}

// ---------------------------------------------------------------------------
// The sections of a serving run's page (./run serve --report): the batch,
// step by step, and each request as the steps saw it.

static std::string model_rows(const Recorder& r) {
    if (!r.model) return "";
    const Config& c = r.model->cfg;
    return "<tr><th>model</th><td>" + esc(r.model->dir) +
           strprintf(" &middot; %.1f M parameters &middot; %s</td></tr>", parameter_count(*r.model) / 1e6, dtype_name(r.model->embed.dtype)) +
           strprintf("<tr><th>shape</th><td>%d layers, hidden %d, %d query heads / %d KV heads of %d, MLP %d, vocabulary %d</td></tr>",
                     c.n_layers, c.hidden, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate, c.vocab);
}

// One request as the steps saw it.
struct RequestSteps {
    int id = 0, slot = 0, first = 0, last = 0;  // steps, counted from 1
    int reused = 0, prompt = 0, sampled = 0;    // positions shared from the cache, prompt tokens read, tokens sampled
    double t0_us = 0, first_token_us = 0;
    std::string text, finish = "&ndash;";
};

const int ANSWER_TOKENS = 40;  // the answer's first tokens are shown

static std::vector<RequestSteps> request_steps(const Recorder& r) {
    std::vector<RequestSteps> out;
    std::map<int, size_t> at;
    for (size_t k = 0; k < r.steps.size(); k++) {
        const StepRecord& st = r.steps[k];
        for (const StepSeq& q : st.seqs) {
            auto it = at.find(q.request);
            if (it == at.end()) {
                it = at.emplace(q.request, out.size()).first;
                RequestSteps n;
                n.id = q.request, n.slot = q.slot, n.first = (int)k + 1, n.t0_us = st.t0_us;
                n.reused = q.prefill ? q.pos : 0;
                out.push_back(n);
            }
            RequestSteps& a = out[it->second];
            a.last = (int)k + 1;
            if (q.prefill) a.prompt += q.T;
            if (q.token >= 0) {
                if (!a.sampled++) a.first_token_us = st.t1_us;
                bool stop = q.left && !strcmp(q.left, "stop");  // a stop token is not part of the answer
                if (!stop && a.sampled <= ANSWER_TOKENS) a.text += token_text(r, q.token);
                if (!stop && a.sampled == ANSWER_TOKENS + 1) a.text += " \u2026";
            }
            if (q.left) a.finish = q.left;
        }
    }
    return out;
}

static std::string section_serve_run(const Recorder& r, const std::vector<RequestSteps>& reqs) {
    int most = 0;
    long long seqs = 0, rows = 0;
    for (const StepRecord& st : r.steps) {
        most = std::max(most, (int)st.seqs.size());
        seqs += st.seqs.size();
        for (const StepSeq& q : st.seqs) rows += q.T;
    }
    std::string s = "<section id='run'><h2>1. The run</h2><table class='kv'><tr><th>command</th><td><code>" + esc(r.command) +
                    "</code></td></tr>" + model_rows(r);
    s += strprintf("<tr><th>machine</th><td>%d OpenMP threads, %s kernels</td></tr>", omp_get_max_threads(), kernel_path_name());
    s += strprintf("<tr><th>served</th><td>%zu requests in %zu scheduler steps; %lld rows through the model; "
                   "%.2f sequences per step on average, at most %d</td></tr></table></section>",
                   reqs.size(), r.steps.size(), rows, r.steps.empty() ? 0.0 : (double)seqs / r.steps.size(), most);
    // Where the steps' time went (trace_report.h:StepRecord): the weight
    // products, attention, the rest of the forward, the samplers, and the
    // time between steps (HTTP, tokenizing, the queue).
    double w = 0, a = 0, f = 0, smp = 0, gap = 0;
    for (size_t k = 0; k < r.steps.size(); k++) {
        const StepRecord& st = r.steps[k];
        w += st.matmul_us, a += st.attention_us, f += st.forward_us, smp += st.sample_us;
        if (k) gap += st.t0_us - r.steps[k - 1].t1_us;
    }
    double all = f + smp + gap;
    if (all > 0) {
        auto part = [&](const char* what, double us) {
            return strprintf("%s %.1f ms (%.0f%%)", what, us / 1000, 100 * us / all);
        };
        s.insert(s.size() - strlen("</table></section>"),
                 "<tr><th>time</th><td>" + part("weight products", w) + ", " + part("attention", a) + ", " +
                     part("rest of the forward", f - w - a) + ", " + part("sampling", smp) + ", " +
                     part("between steps", gap) + "</td></tr>");
    }
    return s;
}

static std::string section_batch(const Recorder& r) {
    std::string s = "<section id='batch'><h2>2. The batch, step by step</h2>"
                    "<p>Each column is one scheduler step: one <code>forward_batch</code> over every sequence in it, then each "
                    "sequence's own sampler. Each row is a slot. A request joins a free slot, reads its prompt in chunks "
                    "(<span class='c-prefill'>prefill</span>) beside the others' decode rows, then adds one token per step "
                    "(<span class='c-decode'>decode</span>) until it leaves; the next waiting request takes the slot. "
                    "The bars on top are each step's rows. Hover a cell for what that sequence did in that step.</p>";
    if (r.steps.empty()) return s + "<p class='note'>No step ran: the server answered no request.</p></section>";
    if ((int)r.steps.size() > MAX_BATCH_STEPS)
        s += strprintf("<p class='note'>The first %d of %zu steps are drawn.</p>", MAX_BATCH_STEPS, r.steps.size());
    return s + "<div class='scroll'>" + batch_svg(r) + "</div></section>";
}

static std::string section_requests(const Recorder& r, const std::vector<RequestSteps>& reqs) {
    std::string s = "<section id='requests'><h2>3. The requests</h2><p>In the order they joined. <i>Shared</i>: prompt positions "
                    "whose KV blocks another sequence had written (prefix reuse); <i>first token</i>: from the request's first "
                    "step to the end of the step that sampled its first token (the time it waited in the queue is not in it).</p>"
                    "<div class='scroll'><table class='grid-t'><tr><th>request</th><th>slot</th><th>steps</th><th>shared</th>"
                    "<th>prompt read</th><th>tokens</th><th>first token</th><th>finish</th>" +
                    strprintf("<th>answer (its first %d tokens)</th></tr>", ANSWER_TOKENS);
    for (const RequestSteps& q : reqs)
        s += strprintf("<tr><th>#%d</th><td>%d</td><td>%d&ndash;%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td>"
                       "<td class='answer'><span class='tok plain'>", q.id, q.slot, q.first, q.last, q.reused, q.prompt, q.sampled,
                       q.sampled ? strprintf("%.1f ms", (q.first_token_us - q.t0_us) / 1000).c_str() : "&ndash;", q.finish.c_str()) +
             esc(q.text) + "</span></td></tr>";
    return s + "</table></div></section>";
}

// ---------------------------------------------------------------------------
// The page.

static const char* CSS = R"CSS(
:root { --prefill: #d9822b; --decode: #3d72b4; --sample: #8a5cb0; --run: #9b978f; --ink: #1f2328; --dim: #6a6f76; --line: #e4e1da; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink); background: #fbfaf7; }
main { max-width: 1180px; margin: 0 auto; padding: 18px 24px 40px; }
header { background: #23262d; color: #f3efe6; padding: 16px 24px; }
header h1 { margin: 0; font-size: 24px; font-weight: 650; } header .sub { color: #c9c2b3; font-family: ui-monospace, monospace; font-size: 13px; }
nav { margin-top: 6px; font-size: 13px; } nav a { color: #f2c48d; margin-right: 14px; text-decoration: none; }
h2 { font-size: 21px; margin: 30px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 4px; color: #3a3e44; }
p { max-width: 980px; margin: 6px 0 10px; } .dim { color: var(--dim); font-size: 13px; }
.note { background: #fff5e0; border-left: 4px solid var(--prefill); padding: 6px 10px; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: 22px; }
table.kv th { text-align: left; vertical-align: top; padding: 3px 12px 3px 0; color: var(--dim); font-weight: 500; white-space: nowrap; }
table.kv td { padding: 3px 0; }
.label { font-size: 12px; text-transform: uppercase; letter-spacing: .06em; color: var(--dim); margin-top: 4px; }
pre.text { white-space: pre-wrap; word-break: break-word; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin: 3px 0 10px; max-height: 180px; overflow: auto; }
pre.out { border-left: 4px solid var(--decode); }
.cards { display: grid; grid-template-columns: repeat(6, 1fr); gap: 10px; margin: 12px 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
.card .ct { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--dim); }
.card .big { font-size: 22px; font-weight: 650; } .card.c-prefill { border-top: 4px solid var(--prefill); } .card.c-decode { border-top: 4px solid var(--decode); }
svg.chart { display: block; max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 4px 0; }
svg.small { display: inline-block; margin-right: 10px; }
.grid { stroke: #ece9e2; } .tick { font-size: 11px; fill: var(--dim); } .lane { font-size: 12px; fill: #3a3e44; } .ctitle { font-size: 13px; font-weight: 600; fill: var(--ink); }
.b-prefill { fill: var(--prefill); } .b-decode { fill: var(--decode); } .free { fill: #f3f1ec; }
.cell-label { font-size: 10px; fill: #fff; pointer-events: none; } span.c-prefill { color: var(--prefill); font-weight: 600; }
span.c-decode { color: var(--decode); font-weight: 600; } table.grid-t td.answer { text-align: left; max-width: 520px; } .b-sample { fill: var(--sample); } .b-run { fill: var(--run); }
rect:hover { opacity: .7; }
polyline { fill: none; stroke-width: 2; } .legend { font-size: 11px; }
polyline.l-prefill, polyline.l-out { stroke: var(--prefill); } polyline.l-decode, polyline.l-in { stroke: var(--decode); }
circle.l-prefill, circle.l-out, text.l-prefill, text.l-out { fill: var(--prefill); } circle.l-decode, circle.l-in, text.l-decode, text.l-in { fill: var(--decode); }
table.grid-t { border-collapse: collapse; background: #fff; margin: 8px 0; }
table.grid-t th, table.grid-t td { border: 1px solid var(--line); padding: 4px 12px; text-align: right; }
table.grid-t th:first-child { text-align: left; font-weight: 500; color: #3a3e44; }
th.c-prefill { color: var(--prefill); } th.c-decode { color: var(--decode); }
.stream { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px; line-height: 2; word-break: break-all; }
.tok { white-space: pre-wrap; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; padding: 2px 1px; border-radius: 3px;
       background: rgba(61, 114, 180, calc(0.08 + 0.5 * (1 - var(--p)))); border: 1px solid rgba(61, 114, 180, .25); margin-right: 1px; }
.tok.plain { background: #f1efe9; border-color: #e1ded6; }
details summary { cursor: pointer; margin: 10px 0 4px; color: #3a3e44; }
table.toks { border-collapse: collapse; font-size: 13px; background: #fff; }
table.toks th, table.toks td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: middle; }
.cands { white-space: nowrap; } .cand { display: inline-block; margin-right: 10px; color: #444; }
.cand .bar { display: inline-block; height: 8px; background: #b9c7da; margin-right: 4px; vertical-align: middle; }
.cand.chosen { font-weight: 650; color: #18467d; } .cand.chosen .bar { background: var(--decode); }
.row { display: flex; flex-wrap: wrap; }
.scroll { overflow-x: auto; }
table.sm { border-collapse: collapse; font-size: 11px; background: #fff; }
table.sm th { font-weight: 500; color: var(--dim); padding: 2px 4px; white-space: nowrap; }
table.sm td { border: 1px solid #f0ede6; padding: 1px 3px; text-align: center; background: rgba(217, 130, 43, calc(0.04 + 0.30 * var(--s))); }
svg.spark polyline { stroke: #2f5f99; stroke-width: 1.2; } .sp-dot { fill: var(--prefill); }
table.heat th { font-size: 12px; font-weight: 500; color: var(--dim); padding: 2px 4px; }
table.heat td { padding: 2px; }
img.hm { image-rendering: pixelated; border: 1px solid #d6d2c8; cursor: zoom-in; display: block; }
img.hm:hover { outline: 2px solid var(--prefill); }
.legend-bar { display: flex; gap: 10px; align-items: center; font-size: 13px; margin: 6px 0; }
#focus { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px; margin: 10px 0; }
.fgrid { display: grid; grid-template-columns: 130px auto; grid-template-rows: 96px auto; }
#fcols { display: grid; align-items: end; } #fcols span { writing-mode: vertical-rl; transform: rotate(180deg); overflow: hidden; font: 11px ui-monospace, monospace; white-space: pre; }
#frows { display: grid; } #frows span { text-align: right; padding-right: 4px; overflow: hidden; font: 11px ui-monospace, monospace; white-space: pre; }
#focus .gen { color: var(--decode); font-weight: 700; }
#fimg { image-rendering: pixelated; border: 1px solid #d6d2c8; }
.graph svg { max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
pre.dot { background: #fff; border: 1px solid var(--line); padding: 8px; max-height: 400px; overflow: auto; }
table.lens th { font-size: 11px; font-weight: 500; color: var(--dim); padding: 1px 3px; white-space: nowrap; }
table.lens td.lc { font-size: 11px; padding: 1px 3px; border: 1px solid #f0ede6; white-space: nowrap; cursor: pointer; background: rgba(47, 95, 153, calc(0.04 + 0.6 * var(--s))); }
table.lens td.hit { font-weight: 700; } table.lens td.sel { outline: 2px solid var(--decode); }
table.dla-t th { text-align: right; font-weight: 500; padding: 1px 8px; white-space: nowrap; } table.dla-t td { padding: 1px 0; }
table.dla-t td.neg { text-align: right; width: 170px; } table.dla-t td.pos { width: 170px; }
.lbar { display: inline-block; height: 11px; background: var(--prefill); } td.neg .lbar { background: var(--decode); }
footer { margin-top: 30px; font-size: 12px; color: var(--dim); } #report-status.ok { color: #2f7a3a; } #report-status.bad { color: #b3261e; font-weight: 700; }
)CSS";

// Everything the page does with script: enlarge a heatmap with its tokens
// along the axes, and say that it ran. onerror comes first, in its own
// script, so that even a syntax error in the second one is reported.
static const char* JS_ONERROR = R"JS(
window.onerror = function (msg, src, line) {
  var s = document.getElementById('report-status');
  if (s) { s.textContent = 'REPORT_ERROR: ' + msg + ' (line ' + line + ')'; s.className = 'bad'; }
  else { window.lanternError = msg; }
};
)JS";

static const char* JS_MAIN = R"JS(
(function () {
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var focus = document.getElementById('focus');
  function show(img) {
    var head = Number(img.dataset.head), n = data.tokens.length;
    document.getElementById('ftitle').textContent = 'layer ' + img.dataset.layer + (head < 0 ? ', mean over the heads' : ', head ' + head);
    var cell = Math.max(6, Math.min(18, Math.floor(720 / n)));
    var big = document.getElementById('fimg');
    big.src = img.src;
    big.style.width = big.style.height = (n * cell) + 'px';
    var rows = document.getElementById('frows'), cols = document.getElementById('fcols');
    rows.innerHTML = cols.innerHTML = '';
    rows.style.gridTemplateRows = 'repeat(' + n + ', ' + cell + 'px)';
    cols.style.gridTemplateColumns = 'repeat(' + n + ', ' + cell + 'px)';
    data.tokens.forEach(function (t, i) {
      var a = document.createElement('span');
      a.textContent = t;
      a.title = 'position ' + i + (data.generated[i] ? ' (generated)' : ' (prompt)');
      if (data.generated[i]) a.className = 'gen';
      a.style.fontSize = Math.min(11, cell - 1) + 'px';
      a.style.lineHeight = cell + 'px';
      rows.appendChild(a);
      cols.appendChild(a.cloneNode(true));
    });
    focus.hidden = false;
    focus.scrollIntoView({block: 'nearest'});
  }
  document.querySelectorAll('img.hm').forEach(function (img) {
    img.addEventListener('click', function () { show(img); });
  });
  if (focus) document.getElementById('fclose').addEventListener('click', function () { focus.hidden = true; });
  var s = document.getElementById('report-status');
  if (s.className !== 'bad' && !window.lanternError) {
    var cells = document.querySelectorAll('svg.batch rect.cell').length, lens = document.querySelectorAll('#lens td.lc').length;
    s.textContent = 'REPORT_OK: ' + document.querySelectorAll('img.hm').length + ' heatmaps, ' +
                    document.querySelectorAll('.stream .tok').length + ' tokens' + (cells ? ', ' + cells + ' batch cells' : '') +
                    (lens ? ', ' + lens + ' lens cells, ' + document.querySelectorAll('#lens .dla').length + ' attributions' : '');
    s.className = 'ok';
  }
})();
)JS";

std::string report_html(const Recorder& r) {
    // The tokens at each drawn position, for the enlarged heatmap's axes.
    // "</" is escaped so that no token can close the <script> element.
    nlohmann::json data = {{"tokens", nlohmann::json::array()}, {"generated", nlohmann::json::array()}};
    int n = std::min(r.attention.cap, positions_run(r));
    for (int p = 0; p < n; p++) {
        data["tokens"].push_back(token_text(r, r.pos_token[p]));
        data["generated"].push_back((bool)r.pos_generated[p]);
    }
    std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), safe;
    for (size_t i = 0; i < json.size(); i++) safe += json.compare(i, 2, "</") == 0 ? "<\\" : std::string(1, json[i]);

    std::string s = "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
                    "<title>Lantern trace report</title><style>";
    s += CSS;
    s += "</style><script>" + std::string(JS_ONERROR) + "</script></head><body><header><h1>Lantern trace report</h1><div class='sub'>" +
         esc(r.command) + "</div><nav>";
    if (r.serving) {  // ./run serve: many requests, one batch per step
        std::vector<RequestSteps> reqs = request_steps(r);
        s += "<a href='#run'>run</a><a href='#batch'>batch</a><a href='#requests'>requests</a><a href='#graph'>graph</a></nav></header><main>";
        s += section_serve_run(r, reqs) + section_batch(r) + section_requests(r, reqs) + section_graph(r);
    } else {
        s += "<a href='#run'>run</a><a href='#time'>time</a><a href='#bound'>prefill vs decode</a><a href='#tokens'>tokens</a>"
             "<a href='#layers'>layers</a><a href='#attention'>attention</a><a href='#graph'>graph</a><a href='#lens'>lens</a></nav></header><main>";
        s += section_run(r) + section_time(r) + section_bound(r) + section_tokens(r) + section_layers(r) + section_attention(r) + section_graph(r) +
             report_lens_section(r);
    }
    s += "<footer>Written by Lantern's <code>--report</code>; self-contained, no network needed. Status: "
         "<span id='report-status'>REPORT_PENDING (the page's script did not run)</span></footer></main>"
         "<script type='application/json' id='report-data'>" + safe + "</script><script>" + JS_MAIN + "</script></body></html>\n";
    return s;
}
