// logging.cpp — where log lines, tensor summaries and probe measurements are
// formatted.
#include "logging.h"
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "common.h"

int g_log_level = LOG_INFO;
FILE* g_log_file = nullptr;
bool g_watch_tensors = false;
bool g_probe_forward = false;
WatchFilter g_watch_filter;
const ProbeListener* g_probe_listener = nullptr;

static const char* cat_tag[CAT_COUNT] = {"load", "tok", "fwd", "attn", "samp", "key", "http"};
static const char* level_tag[] = {"E", "W", "I", "D", "T"};

// Colour only when the log goes to a terminal and NO_COLOR is unset
// (https://no-color.org): a log piped into a file stays plain text.
static bool use_colour() {
    static int c = -1;
    if (c < 0) c = isatty(2) && !getenv("NO_COLOR");
    return c && !g_log_file;
}

static bool g_text_mid_line = false;  // stdout's last byte was not a newline

void write_text(const std::string& piece) {
    fwrite(piece.data(), 1, piece.size(), stdout);
    fflush(stdout);
    if (!piece.empty()) g_text_mid_line = piece.back() != '\n';
}

void log_line(LogLevel level, LogCat cat, int indent, const char* fmt, ...) {
    static const char* colour[] = {"\033[31m", "\033[33m", "", "\033[36m", "\033[90m"};
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool col = use_colour() && colour[level][0];
    static const bool shared_terminal = isatty(1) && isatty(2);
    if (g_text_mid_line && shared_terminal && !g_log_file) {
        fputc('\n', stderr);
        g_text_mid_line = false;
    }
    fprintf(g_log_file ? g_log_file : stderr, "%s[%s %-4s] %*s%s%s\n", col ? colour[level] : "", level_tag[level],
            cat_tag[cat], indent * 2, "", msg, col ? "\033[0m" : "");
}

// Watching and probing are switched on together with the level that prints
// them, so a plain run pays for neither. (-vv needs the probes too: they tell
// watch_tensor how many tokens the current forward call holds.)
void set_log_verbosity(int v) {
    g_log_level = v >= 2 ? LOG_TRACE : v == 1 ? LOG_DEBUG : LOG_INFO;
    if (v >= 1) g_watch_tensors = g_probe_forward = true;
}

double log_now_us() {
    static const auto start = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------------------
// Statistics. Sums are in double: a [T, 4864] activation has tens of
// thousands of terms, enough for float sums to lose the small ones.
void stats_add(TensorStats& s, const float* x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (!std::isfinite(v)) {
            s.bad++;
            continue;
        }
        if (s.n == 0 || v < s.min) s.min = v;
        if (s.n == 0 || v > s.max) s.max = v;
        s.sum += v;
        s.sumsq += v * v;
        s.n++;
    }
}
double stats_mean(const TensorStats& s) { return s.n ? s.sum / s.n : 0.0; }
double stats_rms(const TensorStats& s) { return s.n ? std::sqrt(s.sumsq / s.n) : 0.0; }

double mean_row_entropy_bits(const float* p, int rows, int cols) {
    if (rows <= 0) return 0.0;
    double total = 0;
    for (int r = 0; r < rows; r++) {
        double h = 0;
        for (int c = 0; c < cols; c++) {
            double v = p[(size_t)r * cols + c];
            if (v > 0) h -= v * lantern_log(v);  // in nats; the engine's own log: the same bits everywhere
        }
        total += h / 0.69314718055994530942;  // nats to bits
    }
    return total / rows;
}

// ---------------------------------------------------------------------------
// Filters.
std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= text.size()) {
        size_t j = text.find(',', i);
        if (j == std::string::npos) j = text.size();
        if (j > i) out.push_back(text.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

std::string busy_note() {
    const char* path = getenv("LANTERN_LOADAVG");
    FILE* f = fopen(path && *path ? path : "/proc/loadavg", "r");
    if (!f) return "";
    double load1 = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool read = fscanf(f, "%lf", &load1) == 1;
    fclose(f);
    if (!read || cores < 1 || load1 <= 0.5 * cores) return "";
    return strprintf("load average %.1f on %ld cores: other programs are running, expect lower numbers", load1, cores);
}

std::vector<int> parse_index_list(const char* flag, const std::string& text) {
    std::vector<int> out;
    for (const std::string& item : split_commas(text)) {
        int a = -1, b = -1, used = 0;
        if (sscanf(item.c_str(), "%d-%d%n", &a, &b, &used) == 2 && used == (int)item.size()) {
        } else if (sscanf(item.c_str(), "%d%n", &a, &used) == 1 && used == (int)item.size()) {
            b = a;
        } else {
            a = -1;
        }
        if (a < 0 || b < a || b - a > 1000000)
            fail("%s: \"%s\" is not a list like 0,3,5-7 (indices from 0)", flag, item.c_str());
        for (int i = a; i <= b; i++) out.push_back(i);
    }
    if (out.empty()) fail("%s: no indices given", flag);
    return out;
}

static bool contains(const std::vector<int>& v, int x) {
    for (int y : v)
        if (y == x) return true;
    return false;
}

// ---------------------------------------------------------------------------
// The current forward call, as the probes saw it start.
static int s_fwd_T = 0, s_fwd_pos = 0;

// The -vv line. With --trace-pos only the selected token rows are summed up
// (and their first values shown); a tensor with none of them is skipped.
static void print_tensor(const char* full, int pos0, const float* data, int rows, int cols, bool scores) {
    const std::vector<int>& want = g_watch_filter.positions;
    TensorStats st;
    const float* first = data;
    int kept = 0;
    for (int r = 0; r < rows; r++) {
        int pos = scores && s_fwd_T > 0 ? pos0 + r % s_fwd_T : pos0 + r;
        if (!want.empty() && !contains(want, pos)) continue;
        if (kept++ == 0) first = data + (size_t)r * cols;
        stats_add(st, data + (size_t)r * cols, cols);
    }
    if (kept == 0) return;
    char where[48];
    int last = scores ? pos0 + (s_fwd_T > 0 ? s_fwd_T : 1) - 1 : pos0 + rows - 1;
    if (!want.empty()) snprintf(where, sizeof where, "%d/%d rows", kept, rows);
    else if (last > pos0) snprintf(where, sizeof where, "pos %d..%d", pos0, last);
    else snprintf(where, sizeof where, "pos %d", pos0);
    char head[64] = "", bad[48] = "";  // the row's first (up to) four numbers
    for (int i = 0, n = 0; i < cols && i < 4; i++) n += snprintf(head + n, sizeof head - n, "%s%.4g", i ? " " : "", first[i]);
    if (st.bad) snprintf(bad, sizeof bad, "  NON-FINITE %zu", st.bad);
    log_line(LOG_TRACE, CAT_FORWARD, 0, "%-16s [%d, %d] %-12s min %9.4g  max %9.4g  mean %9.4g  rms %9.4g  first [%s]%s",
             full, rows, cols, where, st.min, st.max, stats_mean(st), stats_rms(st), head, bad);
}

static bool selected(const char* full, int layer) {
    const WatchFilter& f = g_watch_filter;
    if (!f.layers.empty() && (layer < 0 || !contains(f.layers, layer))) return false;
    if (f.names.empty()) return true;
    for (const std::string& s : f.names)
        if (strstr(full, s.c_str())) return true;
    return false;
}

static float s_layer_entropy = -1;  // the current layer's, for probe_layer_end

void watch_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols) {
    bool scores = strcmp(name, "attn.scores") == 0;
    if (scores && g_probe_forward) s_layer_entropy = (float)mean_row_entropy_bits(data, rows, cols);
    if (g_probe_listener && g_probe_listener->tensor) g_probe_listener->tensor(name, layer, pos0, data, rows, cols);
    if (g_log_level < LOG_TRACE || rows <= 0 || cols <= 0) return;
    char full[64];
    if (layer >= 0) snprintf(full, sizeof full, "L%d.%s", layer, name);
    else snprintf(full, sizeof full, "%s", name);
    if (selected(full, layer)) print_tensor(full, pos0, data, rows, cols, scores);
}

// ---------------------------------------------------------------------------
// Probes.
static double s_fwd_t0 = 0;
static LayerProbe s_layer;

static float rms_of(const float* x, size_t n) {
    TensorStats st;
    stats_add(st, x, n);
    return (float)stats_rms(st);
}

void probe_forward_begin(const int* tokens, int T, int pos) {
    s_fwd_T = T;
    s_fwd_pos = pos;
    s_fwd_t0 = log_now_us();
    if (g_probe_listener && g_probe_listener->forward_begin) g_probe_listener->forward_begin(tokens, T, pos, s_fwd_t0);
}

void probe_forward_end() {
    double t1 = log_now_us();
    LOGD(CAT_FORWARD, "forward of %d token%s at pos %d: %.3f ms", s_fwd_T, s_fwd_T == 1 ? "" : "s", s_fwd_pos,
         (t1 - s_fwd_t0) / 1000);
    if (g_probe_listener && g_probe_listener->forward_end) g_probe_listener->forward_end(t1);
}

// The residual stream's rms going into a layer and coming out says how much
// the layer wrote into it; a layer whose output rms jumps by 10x, or a NaN,
// is where to look first.
void probe_layer_begin(int layer, const float* x, int T, int hidden) {
    s_layer = LayerProbe();
    s_layer.layer = layer;
    s_layer.rms_in = rms_of(x, (size_t)T * hidden);
    s_layer_entropy = -1;
    s_layer.t0_us = log_now_us();
}

void probe_layer_end(int layer, const float* x, int T, int hidden) {
    s_layer.t1_us = log_now_us();
    s_layer.rms_out = rms_of(x, (size_t)T * hidden);
    s_layer.entropy_bits = s_layer_entropy;
    LOGD(CAT_FORWARD, "  L%-3d %8.3f ms   resid rms %8.4f -> %8.4f   attn entropy %5.2f bits", layer,
         (s_layer.t1_us - s_layer.t0_us) / 1000, s_layer.rms_in, s_layer.rms_out, s_layer.entropy_bits);
    if (g_probe_listener && g_probe_listener->layer_end) g_probe_listener->layer_end(s_layer);
}
