// lens/report_lens.cpp — the report's logit-lens panel (lens.h): what the
// residual stream would predict at every depth and position of the run, and
// the direct logit attribution of the token that came next, for the
// position a click selects.
//
// The recorder keeps the stream of the first LENS_CAP positions as the
// forward calls write it (trace_report.cpp: on_tensor); this file reads it
// through the model's final norm and LM head while the model is still
// loaded (trace_finish writes the page before the model goes).
#include <algorithm>
#include <cmath>
#include "lens/lens.h"
#include "trace_report_draw.h"

// What the panel's cells and bars are drawn from, per position.
struct LensColumn {
    int next = -1;                  // the token that came after this position (run next, or sampled last)
    float logit = 0;                // its logit in the model's output
    std::vector<int> top;           // per depth: the most likely token
    std::vector<float> top_prob;    // and its probability
    std::vector<float> next_prob;   // per depth: the next token's probability
    std::vector<int> next_rank;     // and its rank
};

// One bar of the attribution: the label, the value, a tooltip.
static std::string bar_row(const std::string& label, double v, double scale, const std::string& tip) {
    int w = (int)std::lround(std::fabs(v) / scale * 160);
    std::string cell = strprintf("<span class='lbar' style='width:%dpx'></span>", w);
    return "<tr title='" + esc(tip) + "'><th>" + esc(label) + "</th><td class='neg'>" + (v < 0 ? cell : "") +
           "</td><td class='pos'>" + (v >= 0 ? cell : "") + strprintf("</td><td>%+.3f</td></tr>", v);
}

// The attribution of one position's next token, as bars (hidden unless selected).
static std::string attribution_bars(const Recorder& r, const Attribution& a, const LensColumn& col, bool shown) {
    const Config& c = r.model->cfg;
    double scale = std::fabs(a.embed);
    for (int l = 0; l < c.n_layers; l++) scale = std::max({scale, std::fabs(a.attn[l]), std::fabs(a.mlp[l])});
    if (scale == 0) scale = 1;
    std::string s = strprintf("<div class='dla' data-pos='%d'%s><p>Direct logit attribution of <b>", a.pos, shown ? "" : " hidden") +
                    esc(token_text(r, a.token)) +
                    strprintf("</b> after position %d: its logit %.3f, split into one term per summand of the residual "
                              "stream (the final norm's scale frozen at %.4g); the terms add up to %.3f.</p><table class='dla-t'>",
                              a.pos, col.logit, a.scale, a.total);
    s += bar_row("embedding", a.embed, scale, "the token's own embedding row");
    for (int l = 0; l < c.n_layers; l++) {
        std::string heads;
        for (int h = 0; h < c.n_heads; h++) heads += strprintf("%shead %d: %+.3f", h ? ", " : "", h, a.heads[l][h]);
        s += bar_row(strprintf("layer %d attention", l), a.attn[l], scale, heads);
        s += bar_row(strprintf("layer %d MLP", l), a.mlp[l], scale, strprintf("layer %d's MLP output", l));
    }
    return s + "</table></div>";
}

std::string report_lens_section(const Recorder& r) {
    const LensCapture& cap = r.lens;
    if (!r.model || cap.n_pos == 0) return "";
    const Model& m = *r.model;
    const Config& c = m.cfg;
    int n = cap.n_pos, V = c.vocab, D = c.n_layers + 1;
    std::vector<LensColumn> cols(n);
    for (int p = 0; p + 1 < (int)r.pos_token.size() && p < n; p++) cols[p].next = r.pos_token[p + 1];
    for (const TokenRecord& t : r.tokens)
        if (t.pos >= 1 && t.pos <= n) cols[t.pos - 1].next = t.info.token;
    std::vector<float> logits((size_t)n * V);
    for (int d = 0; d < D; d++) {
        lens_layer(m, cap, d, logits.data());
        for (int p = 0; p < n; p++) {
            LensColumn& col = cols[p];
            const float* row = &logits[(size_t)p * V];
            LensReading rd = lens_read(row, V, 1, col.next >= 0 ? col.next : 0);
            col.top.push_back(rd.top[0]);
            col.top_prob.push_back(rd.top_prob[0]);
            col.next_prob.push_back(rd.target_prob);
            col.next_rank.push_back(rd.target_rank);
            if (d == D - 1 && col.next >= 0) col.logit = row[col.next];
        }
    }
    std::string s = strprintf("<section id='lens'><h2>8. Inside the prediction: the logit lens</h2>"
                              "<p>Each cell reads the residual stream at one position after one layer through the final norm "
                              "and the LM head, as if the model ended there: the token it would predict, shaded by its "
                              "probability (bold: it is the token that came next; a sampled one may differ from the top, by the "
                              "temperature and the penalties). The last row is the model's own output. "
                              "Hover a cell for the next token's rank at that depth; <b>click</b> one to see which layers "
                              "wrote that token's logit. Positions 0&ndash;%d are shown%s.</p>",
                              n - 1, n < positions_run(r) ? strprintf(" (of %d)", positions_run(r)).c_str() : "");
    s += "<div class='scroll'><table class='lens'><tr><th></th>";
    for (int p = 0; p < n; p++)
        s += strprintf("<th data-pos='%d' title='position %d'>", p, p) + esc(token_text(r, r.pos_token[p])) + "</th>";
    s += "</tr>";
    for (int d = 0; d < D; d++) {
        s += "<tr><th>" + std::string(d == 0 ? "embed" : strprintf("layer %d", d - 1)) + "</th>";
        for (int p = 0; p < n; p++) {
            const LensColumn& col = cols[p];
            std::string top = token_text(r, col.top[d]), tip = strprintf("position %d, %s: ", p, d == 0 ? "the embedding" : strprintf("after layer %d", d - 1).c_str()) +
                                                          "top " + top + strprintf(" (p %.3f)", col.top_prob[d]);
            if (col.next >= 0)
                tip += "; next token " + token_text(r, col.next) + strprintf(": rank %d, p %.3g", col.next_rank[d], col.next_prob[d]);
            size_t cut = 8;  // a long token is cut, at a character's first byte
            while (cut < top.size() && ((unsigned char)top[cut] & 0xC0) == 0x80) cut++;
            if (cut < top.size()) top = top.substr(0, cut) + "…";
            s += strprintf("<td class='lc%s' data-pos='%d' style='--s:%.3f' title='", col.next == col.top[d] ? " hit" : "", p,
                           col.top_prob[d]) + esc(tip) + "'>" + esc(top) + "</td>";
        }
        s += "</tr>";
    }
    s += "</table></div><div id='lens-dla'>";
    int shown = n - 1;  // the last position until a click picks another
    for (int p = 0; p < n; p++)
        if (cols[p].next >= 0) s += attribution_bars(r, attribute(m, cap, p, cols[p].next), cols[p], p == shown);
    // The panel's own script: a click selects a position's bars.
    s += "</div><script>(function () {\n"
         "  var panel = document.getElementById('lens');\n"
         "  function select(p) {\n"
         "    panel.querySelectorAll('.dla').forEach(function (d) { d.hidden = d.dataset.pos !== p; });\n"
         "    panel.querySelectorAll('td.lc').forEach(function (td) { td.classList.toggle('sel', td.dataset.pos === p); });\n"
         "  }\n"
         "  panel.querySelectorAll('[data-pos]').forEach(function (el) {\n"
         "    if (!el.classList.contains('dla')) el.addEventListener('click', function () { select(el.dataset.pos); });\n"
         "  });\n"
         "})();</script></section>";
    return s;
}
