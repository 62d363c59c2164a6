// trace_report_draw.cpp — the drawing under the --report page: PNG heatmaps
// (stb_image_write, embedded as base64 data URIs) and SVG charts written as
// text. trace_report_html.cpp decides what the page says; this file only
// turns numbers into pixels and coordinates.
#include "trace_report_draw.h"
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <fstream>
#include <sstream>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------
// Small text helpers.

std::string esc(const std::string& s) {
    std::string r;
    for (char c : s) {
        if (c == '&') r += "&amp;";
        else if (c == '<') r += "&lt;";
        else if (c == '>') r += "&gt;";
        else if (c == '"') r += "&quot;";
        else r += c;
    }
    return r;
}

// A token's text as a person should see it: valid UTF-8, a newline as ↵,
// a tab as ⇥, other control bytes as \xNN. Spaces stay spaces.
std::string token_text(const Recorder& r, int id) {
    // Ids past the tokenizer's are the model's padding rows: no text.
    if (!r.tok || id < 0 || id >= tokenizer_vocab_size(*r.tok)) return "#" + std::to_string(id);
    std::string s = utf8_sanitize(token_bytes(*r.tok, id)), out;
    for (unsigned char c : s) {
        if (c == '\n') out += "\u21b5";
        else if (c == '\t') out += "\u21e5";
        else if (c < 0x20) out += strprintf("\\x%02x", c);
        else out += (char)c;
    }
    return out;
}

std::string bytes_str(double b) {
    if (b >= 1e9) return strprintf("%.2f GB", b / 1e9);
    if (b >= 1e6) return strprintf("%.1f MB", b / 1e6);
    return strprintf("%.1f kB", b / 1e3);
}
std::string flops_str(double f) {
    if (f >= 1e9) return strprintf("%.2f GFLOP", f / 1e9);
    return strprintf("%.1f MFLOP", f / 1e6);
}

// Round axis steps: 1, 2 or 5 times a power of ten.
double nice_step(double range, int ticks) {
    double raw = range / std::max(1, ticks), p = std::pow(10, std::floor(std::log10(raw > 0 ? raw : 1)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= raw) return m * p;
    return 10 * p;
}

std::string base64(const std::string& in) {
    static const char* A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        uint32_t v = (uint8_t)in[i] << 16 | (uint8_t)in[i + 1] << 8 | (uint8_t)in[i + 2];
        out += {A[v >> 18], A[(v >> 12) & 63], A[(v >> 6) & 63], A[v & 63]};
    }
    if (i + 1 == in.size()) {
        uint32_t v = (uint8_t)in[i] << 16;
        out += {A[v >> 18], A[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        uint32_t v = (uint8_t)in[i] << 16 | (uint8_t)in[i + 1] << 8;
        out += {A[v >> 18], A[(v >> 12) & 63], A[(v >> 6) & 63], '='};
    }
    return out;
}

// ---------------------------------------------------------------------------
// Heatmap colours: dark for weights near 0, through purple and rose to pale
// yellow for 1, on the square-root scale the cells are stored in; cells the
// query never saw (the masked future) are light grey, so the causal
// triangle shows at a glance.
static const float ANCHORS[5][3] = {{22, 26, 52}, {92, 42, 122}, {198, 64, 96}, {244, 150, 64}, {255, 241, 172}};

static void colour(double s, uint8_t* rgb) {
    s = std::fmax(0.0, std::fmin(1.0, s)) * 4;
    int i = std::min(3, (int)s);
    double f = s - i;
    for (int c = 0; c < 3; c++) rgb[c] = (uint8_t)std::lround(ANCHORS[i][c] * (1 - f) + ANCHORS[i + 1][c] * f);
}

static void png_sink(void* ctx, void* data, int size) { ((std::string*)ctx)->append((const char*)data, size); }

// One n x n heatmap as a PNG data URI. head -1: the mean over the heads.
std::string heatmap_png(const AttentionMaps& a, int layer, int head, int n) {
    std::vector<uint8_t> rgb((size_t)n * n * 3);
    for (int q = 0; q < n; q++)
        for (int k = 0; k < n; k++) {
            uint8_t* px = &rgb[((size_t)q * n + k) * 3];
            double p = 0;
            int seen = 0;
            for (int h = head < 0 ? 0 : head; h < (head < 0 ? a.n_heads : head + 1); h++) {
                uint8_t v = a.at(layer, h, q, k);
                if (!v) continue;
                double s = (v - 1) / 254.0;
                p += s * s;
                seen++;
            }
            if (!seen) px[0] = px[1] = px[2] = 236;
            else colour(std::sqrt(p / seen), px);
        }
    std::string png;
    stbi_write_png_to_func(png_sink, &png, n, n, 3, rgb.data(), n * 3);
    return "data:image/png;base64," + base64(png);
}

// ---------------------------------------------------------------------------
// Charts.

// A horizontal time axis from t0 to t1 (ms) over [x0, x0+w].
static std::string time_axis(double t0, double t1, double x0, double w, double y, double h) {
    std::string s;
    double step = nice_step(t1 - t0, 8);
    for (double t = std::ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
        double x = x0 + (t - t0) / (t1 - t0) * w;
        s += strprintf("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>", x, y - h, x, y);
        s += strprintf("<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%g ms</text>", x, y + 13, t);
    }
    return s;
}

// The Gantt chart of the run between t0 and t1 (microseconds): lanes for the
// run's spans, prefill forward calls, decode forward calls and sampling.
std::string timeline_svg(const Recorder& r, double t0, double t1, const char* title) {
    const double W = 1100, L = 118, lane = 26, w = W - L - 16;
    const char* lanes[] = {"load / tokenize", "prefill", "decode", "sample"};
    double H = 4 * lane + 40;
    auto X = [&](double t) { return L + (t - t0) / std::max(1.0, t1 - t0) * w; };
    std::string s = strprintf("<svg class='chart' viewBox='0 0 %.0f %.0f' width='%.0f' role='img'><title>%s</title>", W, H, W, title);
    for (int i = 0; i < 4; i++)
        s += strprintf("<text x='%.0f' y='%.1f' class='lane' text-anchor='end'>%s</text>", L - 8, 8 + i * lane + 16, lanes[i]);
    s += time_axis((t0 - r.t_start_us) / 1000, (t1 - r.t_start_us) / 1000, L, w, 4 * lane + 12, 4 * lane + 6);
    auto bar = [&](double a, double b, int row, const char* cls, const std::string& tip) {
        if (b < t0 || a > t1) return;
        double x = X(std::max(a, t0)), xe = X(std::min(b, t1));
        s += strprintf("<rect x='%.2f' y='%.1f' width='%.2f' height='%.0f' class='%s'><title>", x, 8 + row * lane + 3,
                 std::max(0.8, xe - x), lane - 8, cls) + esc(tip) + "</title></rect>";
    };
    for (const SpanRecord& sp : r.spans)
        if (sp.name != "generate") bar(sp.t0_us, sp.t1_us, 0, "b-run", strprintf("%s: %.2f ms", sp.name.c_str(), (sp.t1_us - sp.t0_us) / 1000));
    size_t f = 0;
    for (size_t i = 0; i < r.forwards.size(); i++) {
        const ForwardRecord& fw = r.forwards[i];
        bar(fw.t0_us, fw.t1_us, fw.prefill ? 1 : 2, fw.prefill ? "b-prefill" : "b-decode",
            strprintf("forward %zu: %d token%s at pos %d, %.3f ms", i, fw.T, fw.T == 1 ? "" : "s", fw.pos, (fw.t1_us - fw.t0_us) / 1000));
    }
    for (const TokenRecord& t : r.tokens) {
        while (f + 1 < r.forwards.size() && r.forwards[f + 1].t1_us <= t.t_us) f++;
        double a = r.forwards.empty() ? t.t_us : r.forwards[f].t1_us;
        bar(a, t.t_us, 3, "b-sample", strprintf("sample -> token %d (%s), %.3f ms", t.info.token, token_text(r, t.info.token).c_str(), (t.t_us - a) / 1000));
    }
    return s + "</svg>";
}

// One bar per forward call, its height the call's time.
std::string forward_bars_svg(const Recorder& r) {
    const double W = 1100, L = 60, H = 190, top = 18, h = H - top - 28, w = W - L - 16;
    double mx = 0;
    for (auto& f : r.forwards) mx = std::max(mx, (f.t1_us - f.t0_us) / 1000);
    if (mx <= 0) mx = 1;
    double step = nice_step(mx, 4), ymax = std::ceil(mx / step) * step;
    std::string s = strprintf("<svg class='chart' viewBox='0 0 %.0f %.0f' width='%.0f'>", W, H, W);
    for (double v = 0; v <= ymax + 1e-9; v += step) {
        double y = top + h - v / ymax * h;
        s += strprintf("<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' class='grid'/><text x='%.0f' y='%.1f' class='tick' text-anchor='end'>%g ms</text>",
                 L, y, L + w, y, L - 6, y + 4, v);
    }
    size_t n = std::max<size_t>(1, r.forwards.size());
    double bw = w / n;
    for (size_t i = 0; i < r.forwards.size(); i++) {
        const ForwardRecord& f = r.forwards[i];
        double ms = (f.t1_us - f.t0_us) / 1000, bh = std::max(0.5, ms / ymax * h);
        s += strprintf("<rect x='%.2f' y='%.2f' width='%.2f' height='%.2f' class='%s'><title>forward %zu (%s): %d token%s, %.3f ms</title></rect>",
                 L + i * bw + bw * 0.1, top + h - bh, std::max(0.6, bw * 0.8), bh, f.prefill ? "b-prefill" : "b-decode", i,
                 f.prefill ? "prefill" : "decode", f.T, f.T == 1 ? "" : "s", ms);
        if (f.prefill && bw > 14)
            s += strprintf("<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>T=%d</text>", L + (i + 0.5) * bw, top + h - bh - 4, f.T);
    }
    s += strprintf("<text x='%.0f' y='%.0f' class='tick'>forward calls in order: prefill (T tokens each) then one per decoded token</text>", L, H - 6);
    return s + "</svg>";
}

std::string layer_chart_svg(const std::string& title, const std::vector<Line>& lines, int n_layers) {
    const double W = 360, H = 200, L = 46, top = 26, h = H - top - 34, w = W - L - 12;
    double lo = 0, hi = 0;
    for (auto& l : lines)
        for (double v : l.y)
            if (std::isfinite(v)) hi = std::max(hi, v);
    if (hi <= lo) hi = lo + 1;
    double step = nice_step(hi - lo, 4);
    hi = std::ceil(hi / step) * step;
    auto X = [&](int i) { return L + (n_layers > 1 ? i * w / (n_layers - 1) : w / 2); };
    auto Y = [&](double v) { return top + h - (v - lo) / (hi - lo) * h; };
    std::string s = strprintf("<svg class='chart small' viewBox='0 0 %.0f %.0f' width='%.0f'><text x='%.0f' y='15' class='ctitle'>", W, H, W, L) + esc(title) + "</text>";
    for (double v = lo; v <= hi + 1e-9; v += step)
        s += strprintf("<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' class='grid'/><text x='%.0f' y='%.1f' class='tick' text-anchor='end'>%g</text>",
                 L, Y(v), L + w, Y(v), L - 5, Y(v) + 4, v);
    int every = std::max(1, n_layers / 12);
    for (int i = 0; i < n_layers; i += every)
        s += strprintf("<text x='%.1f' y='%.0f' class='tick' text-anchor='middle'>%d</text>", X(i), top + h + 14, i);
    s += strprintf("<text x='%.0f' y='%.0f' class='tick' text-anchor='middle'>layer</text>", L + w / 2, H - 4);
    double lx = L + 6;
    for (auto& l : lines) {
        std::string pts;
        for (int i = 0; i < (int)l.y.size(); i++)
            if (std::isfinite(l.y[i])) {
                pts += strprintf("%.1f,%.1f ", X(i), Y(l.y[i]));
                s += strprintf("<circle cx='%.1f' cy='%.1f' r='2.4' class='%s'><title>layer %d: %.4g</title></circle>", X(i), Y(l.y[i]), l.cls.c_str(), i, l.y[i]);
            }
        s += "<polyline points='" + pts + "' class='" + l.cls + "'/>";
        s += strprintf("<text x='%.0f' y='%.0f' class='legend %s'>", lx, top + 10, l.cls.c_str()) + esc(l.label) + "</text>";
        lx += 8 + 6.5 * l.label.size();
    }
    return s + "</svg>";
}

// A sparkline of a tensor's rms over the forward calls; the prefill point
// is drawn as a dot.
std::string sparkline_svg(const TensorSeries& t, const Recorder& r) {
    const double W = 64, H = 20;
    double lo = 1e30, hi = -1e30;
    for (float v : t.rms) lo = std::min(lo, (double)v), hi = std::max(hi, (double)v);
    if (hi - lo < 1e-12) hi = lo + 1, lo -= 1;
    size_t n = std::max<size_t>(2, r.forwards.size());
    std::string pts, dots;
    for (size_t i = 0; i < t.rms.size(); i++) {
        double x = 2 + t.forward[i] * (W - 4) / (n - 1), y = H - 3 - (t.rms[i] - lo) / (hi - lo) * (H - 6);
        pts += strprintf("%.1f,%.1f ", x, y);
        if (r.forwards[t.forward[i]].prefill) dots += strprintf("<circle cx='%.1f' cy='%.1f' r='1.8' class='sp-dot'/>", x, y);
    }
    return strprintf("<svg class='spark' viewBox='0 0 %.0f %.0f' width='%.0f' height='%.0f'><polyline points='", W, H, W, H) + pts + "'/>" + dots + "</svg>";
}


// The colour ramp with ticks at the weights they stand for (tick x is
// sqrt(p), the scale the cells are stored in).
std::string heat_legend_svg() {
    const double W = 300, w = 280, x0 = 10;
    std::string s = strprintf("<svg class='ramp' viewBox='0 0 %.0f 34' width='%.0f' height='34'><defs><linearGradient id='ramp'>", W, W);
    for (int i = 0; i < 5; i++)
        s += strprintf("<stop offset='%d%%' stop-color='rgb(%.0f,%.0f,%.0f)'/>", i * 25, ANCHORS[i][0], ANCHORS[i][1], ANCHORS[i][2]);
    s += strprintf("</linearGradient></defs><rect x='%.0f' y='2' width='%.0f' height='12' fill='url(#ramp)'/>", x0, w);
    for (double p : {0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0}) {
        double x = x0 + std::sqrt(p) * w;
        s += strprintf("<line x1='%.1f' y1='14' x2='%.1f' y2='18' stroke='#666'/><text x='%.1f' y='30' class='tick' text-anchor='middle'>%g</text>", x, x, x, p);
    }
    return s + "</svg>";
}

// The batch of a serving run (./run serve --report): one column per
// scheduler step, one row per slot. A cell is the sequence that ran in that
// slot in that step, orange while it reads its prompt, blue while it
// decodes; an empty cell is a free slot. Each run of cells of one request is
// labelled with its id, every cell says on hover what it did. The bars on
// top are each step's rows (tokens through the model), split the same way,
// on a square-root scale: a 256-row prompt chunk and a 1-row decode step
// both stay visible.
// At most MAX_BATCH_STEPS columns are drawn; a long run's page says so.
std::string batch_svg(const Recorder& r) {
    int n = std::min((int)r.steps.size(), MAX_BATCH_STEPS), slots = 0, most_rows = 1;
    for (int k = 0; k < n; k++) {
        int rows = 0;
        for (const StepSeq& q : r.steps[k].seqs) {
            slots = std::max(slots, q.slot + 1);
            rows += q.T;
        }
        most_rows = std::max(most_rows, rows);
    }
    const double L = 64, top = 18, bars = 56, gap = 10, lane = 22;
    double cw = std::max(3.0, std::min(24.0, std::floor(1000.0 / std::max(1, n))));
    double W = L + n * cw + 16, y0 = top + bars + gap, H = y0 + slots * lane + 30;
    std::string s = strprintf("<svg class='chart batch' viewBox='0 0 %.0f %.0f' width='%.0f' role='img'><title>the batch, step by step</title>", W, H, W);
    s += strprintf("<text x='%.0f' y='%.1f' class='lane' text-anchor='end'>rows</text>", L - 8, top + bars / 2 + 4);
    s += strprintf("<text x='%.0f' y='%.1f' class='tick' text-anchor='end'>1</text>", L - 8, top + bars - bars / std::sqrt((double)most_rows) + 4);
    s += strprintf("<text x='%.0f' y='%.1f' class='tick' text-anchor='end'>%d</text>", L - 8, top + 4, most_rows);
    for (int i = 0; i < slots; i++) {
        double y = y0 + i * lane;
        s += strprintf("<text x='%.0f' y='%.1f' class='lane' text-anchor='end'>slot %d</text>", L - 8, y + lane / 2 + 4, i);
        s += strprintf("<rect x='%.0f' y='%.1f' width='%.1f' height='%.0f' class='free'/>", L, y + 1, n * cw, lane - 4);
    }
    std::vector<int> run_req(slots, -1), run_start(slots, 0);  // the request each slot holds, since which step
    auto label = [&](int slot, int end) {  // the run of run_req[slot] over steps run_start..end-1
        if (run_req[slot] < 0 || (end - run_start[slot]) * cw < 22) return;
        s += strprintf("<text x='%.1f' y='%.1f' class='cell-label'>#%d</text>", L + run_start[slot] * cw + 3,
                       y0 + slot * lane + lane / 2 + 3, run_req[slot]);
    };
    for (int k = 0; k < n; k++) {
        const StepRecord& st = r.steps[k];
        double x = L + k * cw, ms = (st.t1_us - st.t0_us) / 1000;
        int prefill = 0, decode = 0;
        for (const StepSeq& q : st.seqs) (q.prefill ? prefill : decode) += q.T;
        std::string tip = strprintf("step %d: %zu sequence%s, %d rows (%d of prompts, %d decoding), %.2f ms", k + 1, st.seqs.size(),
                                    st.seqs.size() == 1 ? "" : "s", prefill + decode, prefill, decode, ms);
        double h = bars * std::sqrt((double)(prefill + decode) / most_rows), hd = h * decode / std::max(1, prefill + decode), hp = h - hd;
        s += strprintf("<rect x='%.1f' y='%.2f' width='%.1f' height='%.2f' class='b-decode'><title>", x, top + bars - hd, std::max(1.0, cw - 1), hd) + esc(tip) + "</title></rect>";
        s += strprintf("<rect x='%.1f' y='%.2f' width='%.1f' height='%.2f' class='b-prefill'><title>", x, top + bars - hd - hp, std::max(1.0, cw - 1), hp) + esc(tip) + "</title></rect>";
        std::vector<int> here(slots, -1);
        for (const StepSeq& q : st.seqs) {
            here[q.slot] = q.request;
            std::string what = q.prefill ? strprintf("reads prompt positions %d-%d (%d tokens)", q.pos, q.pos + q.T - 1, q.T)
                                         : strprintf("decodes position %d", q.pos);
            if (q.token >= 0) what += (q.prefill ? ", then samples '" : " -> '") + token_text(r, q.token) + "'";
            std::string cell = strprintf("step %d, slot %d: request #%d %s | %d KV blocks | step: %zu sequences, %.2f ms", k + 1, q.slot,
                                         q.request, what.c_str(), q.blocks, st.seqs.size(), ms);
            if (q.left) cell += strprintf(" | leaves (%s)", q.left);
            s += strprintf("<rect x='%.1f' y='%.1f' width='%.1f' height='%.0f' class='cell %s' data-request='%d' data-step='%d'><title>", x,
                           y0 + q.slot * lane + 1, std::max(1.0, cw - (cw >= 6 ? 1 : 0)), lane - 4, q.prefill ? "b-prefill" : "b-decode",
                           q.request, k + 1) + esc(cell) + "</title></rect>";
        }
        for (int i = 0; i < slots; i++)
            if (here[i] != run_req[i]) {
                label(i, k);
                run_req[i] = here[i];
                run_start[i] = k;
            }
    }
    for (int i = 0; i < slots; i++) label(i, n);
    double step = std::max(1.0, nice_step(n, 10)), ya = y0 + slots * lane + 14;
    for (double k = step; k <= n; k += step)
        s += strprintf("<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%g</text>", L + (k - 0.5) * cw, ya, k);
    s += strprintf("<text x='%.0f' y='%.1f' class='tick' text-anchor='end'>step</text>", L - 8, ya);
    return s + "</svg>";
}

// Graphviz lays the graph out at report time. Without `dot` (or with
// LANTERN_DOT pointing elsewhere) the page says so and shows the DOT source.
std::string section_graph(const Recorder& r) {
    if (!r.model) return "";
    std::string dot = model_graph_dot(r.model->cfg), svg, why;
    char dir[] = "/tmp/lantern-dot-XXXXXX";
    const char* prog = getenv("LANTERN_DOT") ? getenv("LANTERN_DOT") : "dot";
    if (mkdtemp(dir)) {
        std::string in = std::string(dir) + "/g.dot", out = std::string(dir) + "/g.svg";
        std::ofstream(in) << dot;
        std::string cmd = std::string(prog) + " -Tsvg '" + in + "' -o '" + out + "' 2>/dev/null";
        if (system(cmd.c_str()) == 0) {
            std::ifstream f(out);
            std::stringstream ss;
            ss << f.rdbuf();
            svg = ss.str();
        } else {
            why = strprintf("running <code>%s -Tsvg</code> failed (is Graphviz installed? <code>apt-get install graphviz</code>)", esc(prog).c_str());
        }
        unlink(in.c_str());
        unlink(out.c_str());
        rmdir(dir);
    }
    size_t at = svg.find("<svg");
    std::string s = "<section id='graph'><h2>7. The computation graph</h2>";
    if (at != std::string::npos) return s + "<div class='graph'>" + svg.substr(at) + "</div></section>";
    return s + "<p class='note'>No graph drawn: " + (why.empty() ? "no temporary folder" : why) +
           ". Here is its source; paste it into any Graphviz viewer, or write it with <code>--graph FILE.dot</code>.</p><pre class='dot'>" +
           esc(dot) + "</pre></section>";
}

// Where a decode step's time goes: the weight products, attention, and the
// rest (norms, RoPE, SwiGLU, the embedding), for the first and the last
// decode steps. The products read the same weights every step; attention
// reads the keys and values of every earlier position, so at a long
// context it is the part that grows (book/12-performance.md).
std::string decode_inside(const Recorder& r) {
    std::vector<const ForwardRecord*> dec;
    for (const ForwardRecord& f : r.forwards)
        if (!f.prefill && f.T == 1) dec.push_back(&f);
    if (dec.empty()) return "";
    auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    auto row = [&](const char* what, size_t a, size_t b) {  // decode steps a .. b-1
        std::vector<double> w, at, all;
        for (size_t i = a; i < b; i++) {
            w.push_back(dec[i]->matmul_us / 1000), at.push_back(dec[i]->attention_us / 1000);
            all.push_back((dec[i]->t1_us - dec[i]->t0_us) / 1000);
        }
        double mw = med(w), ma = med(at), mall = med(all);
        return strprintf("<tr><th>%s (positions %d&ndash;%d)</th><td>%.2f ms</td><td>%.2f ms</td><td>%.2f ms</td><td>%.2f ms</td>"
                         "<td>%.0f%%</td></tr>", what, dec[a]->pos, dec[b - 1]->pos, mall, mw, ma,
                         std::max(0.0, mall - mw - ma), mall > 0 ? 100 * ma / mall : 0);
    };
    size_t n = dec.size(), k = std::max<size_t>(1, std::min<size_t>(8, n / 2));
    std::string s = "<h3>Inside a decode step</h3><table class='grid-t'><tr><th>decode steps (medians)</th><th>step</th>"
                    "<th>weight products</th><th>attention</th><th>the rest</th><th>attention's share</th></tr>";
    s += row("the first", 0, k);
    if (n > k) s += row("the last", n - k, n);
    return s + "</table><p class='dim'>Every step reads every weight once, so the products take the same time at any "
               "position; attention reads the cached keys and values of every earlier position, so it grows with the "
               "context. <code>./run bench --depth 0,4096</code> measures decode after a long context.</p>";
}
