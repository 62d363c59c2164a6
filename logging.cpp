// logging.cpp — where log lines and tensor summaries are formatted.
#include "logging.h"
#include <unistd.h>
#include <cmath>
#include <cstdarg>
#include <cstdlib>

int g_log_level = LOG_INFO;
bool g_watch_tensors = false;

static const char* cat_tag[CAT_COUNT] = {"load", "tok", "fwd", "attn", "samp", "key", "http"};
static const char* level_tag[] = {"E", "W", "I", "D", "T"};

// Colour only when stderr is a terminal and NO_COLOR is unset
// (https://no-color.org): a log piped into a file stays plain text.
static bool use_colour() {
    static int c = -1;
    if (c < 0) c = isatty(2) && !getenv("NO_COLOR");
    return c;
}

void log_line(LogLevel level, LogCat cat, int indent, const char* fmt, ...) {
    static const char* colour[] = {"\033[31m", "\033[33m", "", "\033[36m", "\033[90m"};
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool col = use_colour() && colour[level][0];
    fprintf(stderr, "%s[%s %-4s] %*s%s%s\n", col ? colour[level] : "", level_tag[level], cat_tag[cat], indent * 2, "",
            msg, col ? "\033[0m" : "");
}

void watch_tensor(const char* name, int layer, int pos0, const float* data, int rows, int cols) {
    if (g_log_level < LOG_TRACE) return;
    size_t n = (size_t)rows * cols;
    double mn = data[0], mx = data[0], sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        mn = std::fmin(mn, data[i]);
        mx = std::fmax(mx, data[i]);
        sum += data[i];
        sq += (double)data[i] * data[i];
    }
    char full[64];
    if (layer >= 0) snprintf(full, sizeof full, "L%d.%s", layer, name);
    else snprintf(full, sizeof full, "%s", name);
    log_line(LOG_TRACE, CAT_FORWARD, 0, "%-16s [%d, %d] pos %d  min %.4g max %.4g mean %.4g rms %.4g  [%.4g %.4g %.4g %.4g]",
             full, rows, cols, pos0, mn, mx, sum / n, std::sqrt(sq / n), data[0], n > 1 ? data[1] : 0.0,
             n > 2 ? data[2] : 0.0, n > 3 ? data[3] : 0.0);
}
