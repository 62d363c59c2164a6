// trace_report_draw.h — text, SVG and PNG helpers, the graph section and the
// decode-step table of the --report page (trace_report_draw.cpp); only
// trace_report_html.cpp uses them.
#pragma once
#include <string>
#include <vector>
#include "trace_report.h"

std::string esc(const std::string& s);                  // HTML-escape
std::string token_text(const Recorder& r, int id);      // a token as a person should see it
std::string bytes_str(double bytes);                    // "988.1 MB"
std::string flops_str(double flops);                    // "1.23 GFLOP"
double nice_step(double range, int ticks);              // 1, 2 or 5 times a power of ten
std::string base64(const std::string& bytes);

// One n x n attention heatmap of `layer` as a PNG data URI; head -1 is the
// mean over the heads.
std::string heatmap_png(const AttentionMaps& a, int layer, int head, int n);
// Its colour ramp, with ticks at the weights.
std::string heat_legend_svg();

// The Gantt chart of the run between t0 and t1 (microseconds).
std::string timeline_svg(const Recorder& r, double t0, double t1, const char* title);
// One bar per forward call.
std::string forward_bars_svg(const Recorder& r);
// A table: the first and last decode steps' time in the weight products,
// attention and the rest (ForwardRecord's clock).
std::string decode_inside(const Recorder& r);
// Serving: the batch of every scheduler step, steps along x, slots along y,
// each cell coloured by phase and labelled with its request.
const int MAX_BATCH_STEPS = 1500;
std::string batch_svg(const Recorder& r);
// A small line chart over the layers, one polyline per Line.
struct Line {
    std::string label, cls;  // cls picks the colour in the page's CSS
    std::vector<double> y;   // one value per layer; NaN: no point
};
std::string layer_chart_svg(const std::string& title, const std::vector<Line>& lines, int n_layers);
// A tensor's rms over the forward calls of the run.
std::string sparkline_svg(const TensorSeries& t, const Recorder& r);
// The report's section 7: the model's graph drawn by Graphviz's `dot`, or
// its DOT source where `dot` is missing.
std::string section_graph(const Recorder& r);
