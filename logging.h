// logging.h — levels, categories, phase banners and tensor summaries.
//
// Everything goes to stderr, so stdout stays the generated text. A log line
// whose level is off costs one comparison: the macros test the level before
// any formatting happens.
#pragma once
#include <cstdio>

enum LogLevel { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3, LOG_TRACE = 4 };
enum LogCat { CAT_LOAD, CAT_TOKENIZER, CAT_FORWARD, CAT_ATTN, CAT_SAMPLER, CAT_KEY, CAT_SERVER, CAT_COUNT };

extern int g_log_level;  // INFO by default; -v: DEBUG, -vv: TRACE

void log_line(LogLevel level, LogCat cat, int indent, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

#define LOG_AT(level, cat, indent, ...) \
    do { if (g_log_level >= (level)) log_line((level), (cat), (indent), __VA_ARGS__); } while (0)
#define LOGE(cat, ...) LOG_AT(LOG_ERROR, cat, 0, __VA_ARGS__)
#define LOGW(cat, ...) LOG_AT(LOG_WARN, cat, 0, __VA_ARGS__)
#define LOGI(cat, ...) LOG_AT(LOG_INFO, cat, 0, __VA_ARGS__)
#define LOGD(cat, ...) LOG_AT(LOG_DEBUG, cat, 0, __VA_ARGS__)
#define LOGT(cat, ...) LOG_AT(LOG_TRACE, cat, 0, __VA_ARGS__)
#define LOGI_L(cat, indent, ...) LOG_AT(LOG_INFO, cat, indent, __VA_ARGS__)

// Tensor watching. net.cpp calls WATCH_TENSOR at every named intermediate
// ("L3.attn.q" is layer 3, name "attn.q"; layer -1 for tensors outside the
// layers). When nobody watches (no -vv, no --report) it is one branch.
// data is [rows, cols] row-major; pos0 is the position of row 0 when rows
// are tokens.
extern bool g_watch_tensors;
void watch_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols);
#define WATCH_TENSOR(name, layer, pos0, data, rows, cols) \
    do { if (g_watch_tensors) watch_tensor((name), (layer), (pos0), (data), (rows), (cols)); } while (0)
