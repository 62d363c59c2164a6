// logging.h — levels, categories, phase banners, tensor summaries and the
// probes that time the forward pass.
//
// Everything goes to stderr, so stdout stays the generated text. A log line
// whose level is off costs one comparison: the macros test the level before
// any formatting happens.
//
// What each verbosity shows (set_log_verbosity):
//   (none)  INFO: phase banners, the speed summary
//   -v      DEBUG: one line per sampled token (top-5) and one line per layer
//           per forward call: its time, the residual stream's rms going in
//           and out, and how spread out the attention was (entropy in bits)
//   -vv     TRACE: also one line per named intermediate tensor, every layer
//           (shape, min/max/mean/rms, first values), narrowed by
//           --trace-layers / --trace-pos / --trace-match
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

enum LogLevel { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3, LOG_TRACE = 4 };
enum LogCat { CAT_LOAD, CAT_TOKENIZER, CAT_FORWARD, CAT_ATTN, CAT_SAMPLER, CAT_KEY, CAT_SERVER, CAT_COUNT };

extern int g_log_level;    // INFO by default; -v: DEBUG, -vv: TRACE
extern FILE* g_log_file;   // where log lines go; nullptr means stderr (tests point it at a file)

void log_line(LogLevel level, LogCat cat, int indent, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

// The generated text, streamed to stdout piece by piece. On a terminal the
// text and the log share the screen: when the text stops mid-line, the next
// log line first ends that line, so every log line starts at the left edge.
// (Piped, stdout stays exactly the text and the log is left alone.)
void write_text(const std::string& piece);

#define LOG_AT(level, cat, indent, ...) \
    do { if (g_log_level >= (level)) log_line((level), (cat), (indent), __VA_ARGS__); } while (0)
#define LOGE(cat, ...) LOG_AT(LOG_ERROR, cat, 0, __VA_ARGS__)
#define LOGW(cat, ...) LOG_AT(LOG_WARN, cat, 0, __VA_ARGS__)
#define LOGI(cat, ...) LOG_AT(LOG_INFO, cat, 0, __VA_ARGS__)
#define LOGD(cat, ...) LOG_AT(LOG_DEBUG, cat, 0, __VA_ARGS__)
#define LOGT(cat, ...) LOG_AT(LOG_TRACE, cat, 0, __VA_ARGS__)
#define LOGI_L(cat, indent, ...) LOG_AT(LOG_INFO, cat, indent, __VA_ARGS__)

// 0: INFO, 1: DEBUG (-v), 2: TRACE (-vv). Turns on exactly the watching and
// probing that the level prints; the report turns on its own (trace_start).
void set_log_verbosity(int v);

// Microseconds on a steady clock since the first call: the one time base of
// the probes, the -v lines and the trace.
double log_now_us();

// ---------------------------------------------------------------------------
// Tensor statistics: what one -vv line says about a tensor, and what the
// report plots per layer. Non-finite values (NaN, inf) are counted apart and
// left out of min/max/mean/rms, so one NaN shows up as "nan 1" instead of
// turning every number into nan.
struct TensorStats {
    size_t n = 0;        // finite values seen
    size_t bad = 0;      // NaN or inf
    double min = 0, max = 0, sum = 0, sumsq = 0;
};
void stats_add(TensorStats& s, const float* x, size_t n);
double stats_mean(const TensorStats& s);
double stats_rms(const TensorStats& s);

// Mean entropy in bits of the rows of a probability matrix [rows, cols]:
// 0 when every row puts all its weight on one key, log2(n) when a row
// spreads evenly over n keys. Masked (zero) entries add nothing.
double mean_row_entropy_bits(const float* p, int rows, int cols);

// ---------------------------------------------------------------------------
// Tensor watching. net.cpp calls WATCH_TENSOR at every named intermediate
// ("L3.attn.q" is layer 3, name "attn.q"; layer -1 for tensors outside the
// layers). When nobody watches (no -v, no --report) it is one branch.
// data is [rows, cols] row-major; pos0 is the position of row 0 when rows
// are tokens. attn.scores is the exception: its rows are (head, token) pairs,
// head-major, so row r is token r % T of the current forward call.
extern bool g_watch_tensors;
void watch_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols);
#define WATCH_TENSOR(name, layer, pos0, data, rows, cols) \
    do { if (g_watch_tensors) watch_tensor((name), (layer), (pos0), (data), (rows), (cols)); } while (0)

// Which tensors -vv prints (the report always records all of them). Empty
// lists select everything.
//   --trace-layers 0,3,5-7   only these layers (embed, final_norm and logits
//                            belong to no layer and are left out)
//   --trace-pos 4            only rows of these positions; stats cover those rows
//   --trace-match attn.q,mlp only names containing one of these substrings
struct WatchFilter {
    std::vector<int> layers, positions;
    std::vector<std::string> names;
};
extern WatchFilter g_watch_filter;
// "0,3,5-7" -> {0, 3, 5, 6, 7}. Throws LanternError naming `flag` when malformed.
std::vector<int> parse_index_list(const char* flag, const std::string& text);
std::vector<std::string> split_commas(const std::string& text);

// A timing read while other programs take the cores reads low (a 1.3M-
// parameter model decoding at 6 tok/s instead of 1000): every timing line
// comes with this note when the 1-minute load average is above half the
// cores, and with nothing on a quiet machine. LANTERN_LOADAVG names a file
// in /proc/loadavg's format to read instead (the tests set a load with it).
std::string busy_note();

// ---------------------------------------------------------------------------
// Forward probes. net.cpp marks the start and end of each forward call and of
// each layer; logging.cpp measures (time, residual rms, attention entropy),
// prints the -v lines, and hands each measurement to the listener the
// recorder installs (trace_report.cpp). Off, each is one branch per layer.
extern bool g_probe_forward;
void probe_forward_begin(const int* tokens, int T, int pos);
void probe_forward_end();
void probe_layer_begin(int layer, const float* x, int T, int hidden);
void probe_layer_end(int layer, const float* x, int T, int hidden);
#define PROBE_FORWARD_BEGIN(tokens, T, pos) \
    do { if (g_probe_forward) probe_forward_begin((tokens), (T), (pos)); } while (0)
#define PROBE_FORWARD_END() \
    do { if (g_probe_forward) probe_forward_end(); } while (0)
#define PROBE_LAYER_BEGIN(layer, x, T, hidden) \
    do { if (g_probe_forward) probe_layer_begin((layer), (x), (T), (hidden)); } while (0)
#define PROBE_LAYER_END(layer, x, T, hidden) \
    do { if (g_probe_forward) probe_layer_end((layer), (x), (T), (hidden)); } while (0)

// What the probes measured for one layer of one forward call.
struct LayerProbe {
    int layer = 0;
    double t0_us = 0, t1_us = 0;
    float rms_in = 0, rms_out = 0;  // of the residual stream, over the T tokens
    float entropy_bits = -1;        // mean attention entropy; -1 when unseen
};

// The recorder's side of the probes: plain function pointers, so this file
// does not depend on the recorder. Any of them may be null.
struct ProbeListener {
    void (*forward_begin)(const int* tokens, int T, int pos, double t_us);
    void (*forward_end)(double t_us);
    void (*layer_end)(const LayerProbe& p);
    void (*tensor)(const char* name, int layer, int pos0, const float* data, int rows, int cols);
};
extern const ProbeListener* g_probe_listener;
