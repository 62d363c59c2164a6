// run.cpp — the command line: generation (prefill + decode) and the
// subcommands that let a reader look inside (info, fwd, encode, decode, ...).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "common.h"
#include "logging.h"
#include "model.h"
#include "net.h"
#include "kernels_cuda.h"
#include <algorithm>
#include <cmath>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include "json_read.h"
#include "run.h"
#include "sampler.h"
#include "tokenizer.h"
#include "trace_report.h"

// JSON string literal for any bytes: escapes quotes, backslashes and
// control characters; other bytes pass through (invalid UTF-8 is the
// caller's concern).
std::string json_string(const std::string& s) {
    std::string r = "\"";
    for (unsigned char ch : s) {
        if (ch == '"') r += "\\\"";
        else if (ch == '\\') r += "\\\\";
        else if (ch == '\n') r += "\\n";
        else if (ch == '\t') r += "\\t";
        else if (ch == '\r') r += "\\r";
        else if (ch < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", ch); r += b; }
        else r += (char)ch;
    }
    return r + "\"";
}

// The text of one token, for display next to its id: its bytes as decoded
// by the model folder's tokenizer (loaded once), or "#id" when the folder
// has no tokenizer.json or the id is past the tokenizer's vocabulary (models
// pad their embedding rows past the last real token).
static std::string display_token(const std::string& model_path, int id) {
    static Tokenizer tok;
    static int state = 0;  // 0 not tried, 1 loaded, -1 unavailable
    if (state == 0) {
        try {
            tokenizer_load(tok, model_dir(model_path));
            state = 1;
        } catch (const LanternError&) {
            state = -1;
        }
    }
    if (state < 0 || id >= tokenizer_vocab_size(tok)) return "#" + std::to_string(id);
    std::string b = tokenizer_decode(tok, {id});  // a partial UTF-8 character shows as U+FFFD
    return b.empty() ? "#" + std::to_string(id) : b;
}

// ---------------------------------------------------------------------------
// ./run info MODEL: what is in the folder, and what load_model checked.
int cmd_info(int argc, char** argv) {
    if (argc < 1) fail("usage: ./run info MODEL");
    Model m;
    load_model(m, argv[0]);
    const Config& c = m.cfg;
    printf("model      %s\n", m.weights_path.c_str());
    printf("config     hidden %d, intermediate %d, layers %d, heads %d, kv heads %d, head_dim %d\n", c.hidden,
           c.intermediate, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
    printf("           vocab %d, max positions %d, rms_norm_eps %g, rope_theta %g, tied embeddings %s, dtype %s\n",
           c.vocab, c.max_pos, c.eps, c.rope_theta, c.tie_embeddings ? "yes" : "no", c.torch_dtype.c_str());
    printf("file       %zu bytes, header %zu bytes\n\n", m.file_size, m.header_len);
    printf("%-52s %-5s %-14s %12s %12s\n", "tensor", "dtype", "shape", "bytes", "offset");
    for (const TensorInfo& t : m.tensors) {
        std::string shape = "[";
        for (size_t i = 0; i < t.shape.size(); i++) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
        shape += "]";
        printf("%-52s %-5s %-14s %12zu %12zu\n", t.name.c_str(), dtype_name(t.dtype), shape.c_str(), t.nbytes, t.offset);
    }
    printf("\n%zu tensors, %zu parameters\n", m.tensors.size(), parameter_count(m));
    for (auto& chk : m.checks) printf("check ok   %s\n", chk.c_str());
    return 0;
}

// ---------------------------------------------------------------------------
// ./run fwd MODEL TOKEN POS                      (the book's single-token form)
// ./run fwd MODEL --tokens ID,ID,... [--pos P] [--all] [--top N] [--dump FILE] [--json]
//
// One forward pass, no sampling: the tool for comparing against PyTorch.
// --dump writes the logits of every position as raw little-endian float32,
// T x vocab, row-major.
static std::vector<int> parse_id_list(const std::string& s) {
    std::vector<int> ids;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        std::string item = s.substr(i, j - i);
        char* end = nullptr;
        long v = strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || v < 0 || v > 0x7fffffff) fail("--tokens: \"%s\" is not a token id", item.c_str());
        ids.push_back((int)v);
        i = j + 1;
    }
    if (ids.empty()) fail("--tokens: no token ids given");
    return ids;
}

static int parse_int_arg(const char* flag, const char* s, int lo, int hi) {
    char* end = nullptr;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) fail("%s: \"%s\" must be an integer in [%d, %d]", flag, s, lo, hi);
    return (int)v;
}

int cmd_fwd(int argc, char** argv) {
    if (argc < 1) fail("usage: ./run fwd MODEL TOKEN POS | ./run fwd MODEL --tokens ID,ID,... [--all] [--top N] [--dump FILE] [--json]");
    std::string path = argv[0], dump;
    std::vector<int> ids;
    int pos = 0, top = 5, ctx = 0, threads = 0;
    bool all = false, as_json = false, positional = false;
    KernelSet kset = KernelSet::Fast;
    DType kv_type = DType::F32;
    std::string quant;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> const char* {
            if (i + 1 >= argc) fail("%s needs a value", a.c_str());
            return argv[++i];
        };
        if (a == "--tokens") ids = parse_id_list(val());
        else if (a == "--pos") pos = parse_int_arg("--pos", val(), 0, 1 << 30);
        else if (a == "--all") all = true;
        else if (a == "--top") top = parse_int_arg("--top", val(), 1, 1000);
        else if (a == "--dump") dump = val();
        else if (a == "--json") as_json = true;
        else if (a == "--ctx") ctx = parse_int_arg("--ctx", val(), 1, 1 << 30);
        else if (a == "--threads") threads = parse_int_arg("--threads", val(), 1, 1024);
        else if (a == "--device") device_select(val());  // cpu | cuda (kernels_cuda.h)
        else if (a == "--kernels") kset = parse_kernel_set("--kernels", val());
        else if (a == "--kv-type") kv_type = parse_float_type("--kv-type", val());
        else if (a == "--quant") {
            quant = val();
            if (quant != "q8_0" && quant != "none") fail("--quant: \"%s\" is not q8_0 or none", quant.c_str());
        } else if (a == "-v") set_log_verbosity(1);
        else if (a == "-vv") set_log_verbosity(2);
        else if (a == "--trace-layers") g_watch_filter.layers = parse_index_list("--trace-layers", val());
        else if (a == "--trace-pos") g_watch_filter.positions = parse_index_list("--trace-pos", val());
        else if (a == "--trace-match") g_watch_filter.names = split_commas(val());
        else if (!a.empty() && a[0] != '-' && ids.empty() && i + 1 < argc && argv[i + 1][0] != '-') {
            ids = {parse_int_arg("TOKEN", argv[i], 0, 0x7fffffff)};  // the book's form: TOKEN POS
            pos = parse_int_arg("POS", argv[++i], 0, 1 << 30);
            positional = true;
        } else fail("fwd: unknown argument \"%s\"", a.c_str());
    }
    if (ids.empty()) fail("fwd: give TOKEN POS or --tokens ID,ID,...");
    (void)positional;
    kernels_init(kset, threads);
    Model m;
    load_model(m, path);
    if (quant == "q8_0") quantize_model(m);
    int T = (int)ids.size();
    if (ctx == 0) ctx = std::min(m.cfg.max_pos, std::max(4096, pos + T));
    Net net;
    net_init(net, m, ctx, kv_type);
    const float* logits = forward(net, ids.data(), T, pos, all || !dump.empty());
    int V = m.cfg.vocab, rows = (all || !dump.empty()) ? T : 1;
    if (!dump.empty()) {
        FILE* f = fopen(dump.c_str(), "wb");
        if (!f) fail("%s: cannot write", dump.c_str());
        fwrite(logits, sizeof(float), (size_t)T * V, f);
        fclose(f);
    }
    // Top-N by partial sort of indices, per printed row.
    int first_row = all ? 0 : rows - 1;
    if (as_json) printf("{\"tokens\": [");
    for (int r = first_row; r < rows; r++) {
        const float* row = logits + (size_t)r * V;
        std::vector<int> idx(V);
        for (int i = 0; i < V; i++) idx[i] = i;
        int n = std::min(top, V);
        std::partial_sort(idx.begin(), idx.begin() + n, idx.end(),
                          [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
        int t = all ? r : T - 1;
        if (as_json) {
            printf("%s{\"pos\": %d, \"token\": %d, \"top\": [", r > first_row ? ", " : "", pos + t, ids[t]);
            for (int k = 0; k < n; k++)
                printf("%s{\"id\": %d, \"logit\": %.6f, \"text\": %s}", k ? ", " : "", idx[k], row[idx[k]],
                       json_string(display_token(path, idx[k])).c_str());
            printf("]}");
        } else {
            printf("pos %d  token %d  top-%d:\n", pos + t, ids[t], n);
            for (int k = 0; k < n; k++)
                printf("  %2d. id %-7d logit %9.4f  %s\n", k + 1, idx[k], row[idx[k]],
                       json_string(display_token(path, idx[k])).c_str());
        }
    }
    if (as_json) printf("]}\n");
    return 0;
}

// ---------------------------------------------------------------------------
// ./run encode MODEL_OR_TOKENIZER_JSON "text" [--file PATH] [--pieces]
int cmd_encode(int argc, char** argv) {
    // --pieces shows each token's file string and its bytes, escaped so that
    // spaces, control characters and partial UTF-8 are visible.
    auto shown = [](const std::string& bytes) {
        std::string r = "\"";
        const unsigned char* s = (const unsigned char*)bytes.data();
        for (size_t i = 0; i < bytes.size(); i++) {
            unsigned char c = s[i];
            int len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
            bool whole = len > 1 && i + len <= bytes.size() && utf8_sanitize(bytes.substr(i, len)) == bytes.substr(i, len);
            char buf[8];
            if (whole) { r.append(bytes, i, len); i += len - 1; }
            else if (c == '\n') r += "\\n";
            else if (c == '\t') r += "\\t";
            else if (c == '\r') r += "\\r";
            else if (c == '"' || c == '\\') { r += '\\'; r += (char)c; }
            else if (c >= 0x20 && c < 0x7f) r += (char)c;
            else { snprintf(buf, sizeof buf, "\\x%02x", c); r += buf; }
        }
        return r + "\"";
    };
    std::vector<std::string> pos;
    std::string file;
    bool pieces = false, timing = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--pieces")) pieces = true;
        else if (!strcmp(argv[i], "--time")) timing = true;
        else if (!strncmp(argv[i], "--", 2)) fail("encode: unknown flag %s", argv[i]);
        else pos.push_back(argv[i]);
    }
    if (pos.size() != (file.empty() ? 2u : 1u))
        fail("usage: ./run encode MODEL_OR_TOKENIZER_JSON \"text\" | --file PATH  [--pieces] [--time]");
    std::string text = pos.size() == 2 ? pos[1] : "";
    if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) fail("encode: cannot read %s", file.c_str());
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto t0 = std::chrono::steady_clock::now();
    clock_t load_cpu0 = clock();  // CPU time too: on a busy machine it is the fairer measure
    Tokenizer tok;
    tokenizer_load(tok, pos[0]);
    auto t1 = std::chrono::steady_clock::now();
    clock_t cpu0 = clock();
    std::vector<int> ids = tokenizer_encode(tok, text);
    clock_t cpu1 = clock();
    auto t2 = std::chrono::steady_clock::now();
    std::string line;
    for (size_t i = 0; i < ids.size(); i++) line += (i ? " " : "") + std::to_string(ids[i]);
    printf("%s\n", line.c_str());
    if (pieces)
        for (int id : ids) printf("%-7d %-24s %s\n", id, shown(tok.id_to_piece[id]).c_str(), shown(token_bytes(tok, id)).c_str());
    if (timing) {
        double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        double enc_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
        double cpu_ms = (cpu1 - cpu0) * 1e3 / CLOCKS_PER_SEC;
        double load_cpu_ms = (cpu0 - load_cpu0) * 1e3 / CLOCKS_PER_SEC;
        fprintf(stderr, "encode: %zu bytes -> %zu tokens in %.1f ms = %.2f MB/s, cpu %.1f ms = %.2f MB/s (tokenizer load %.1f ms, cpu %.1f ms)\n",
                text.size(), ids.size(), enc_ms, text.size() / (enc_ms * 1e3), cpu_ms, text.size() / (cpu_ms * 1e3), load_ms, load_cpu_ms);
    }
    return 0;
}

// ./run decode MODEL id id ...
int cmd_decode(int argc, char** argv) {
    // Ids as separate arguments, or in one argument separated by spaces or
    // commas (so the output of encode can be pasted in as it is).
    std::vector<std::string> pos;
    bool raw = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--raw")) raw = true;
        else if (!strncmp(argv[i], "--", 2)) fail("decode: unknown flag %s", argv[i]);
        else pos.push_back(argv[i]);
    }
    if (pos.empty()) fail("usage: ./run decode MODEL_OR_TOKENIZER_JSON id id ...  [--raw: no newline after the text]");
    std::vector<int> ids;
    for (size_t a = 1; a < pos.size(); a++) {
        std::string item;
        for (size_t i = 0; i <= pos[a].size(); i++) {
            char c = i < pos[a].size() ? pos[a][i] : ' ';
            if (c != ' ' && c != ',' && c != '\n' && c != '\t') { item += c; continue; }
            if (item.empty()) continue;
            char* end = nullptr;
            long v = strtol(item.c_str(), &end, 10);
            if (*end || v < 0 || v > 0x7fffffff) fail("decode: \"%s\" is not a token id", item.c_str());
            ids.push_back((int)v);
            item.clear();
        }
    }
    Tokenizer tok;
    tokenizer_load(tok, pos[0]);
    std::string text = tokenizer_decode(tok, ids);
    fwrite(text.data(), 1, text.size(), stdout);
    if (!raw) fputc('\n', stdout);
    return 0;
}

// ===========================================================================
// Generation and chat on the command line. The loop itself is generate()
// in generate.cpp; this part turns flags into GenerateParams and prints.

// trained/kjv once a trained model is there, else the random-weight test
// model that `make models` writes (real Qwen tokenizer, nonsense output).
std::string default_model_path() {
    FILE* f = fopen("trained/kjv/model.safetensors", "rb");
    if (f) {
        fclose(f);
        return "trained/kjv";
    }
    return "models/tiny";
}

struct GenOptions {
    GenerateParams gen;
    std::string system;
    bool raw = false, json = false, gen_config = false, help = false;
    TraceOptions trace;  // --report, --trace-json, --graph
    int ctx = 0;  // 0: the model's max positions, at most 4096
    int threads = 0;                      // 0: all cores
    KernelSet kernels = KernelSet::Fast;  // kernels.h
    bool quant_q8_0 = false;              // --quant q8_0
    DType kv_type = DType::F32;           // --kv-type
    std::vector<std::string> positional;  // [MODEL] PROMPT
};

static float parse_float_arg(const char* flag, const char* s, float lo, float hi) {
    char* end = nullptr;
    float v = strtof(s, &end);
    if (!*s || *end || !std::isfinite(v) || v < lo || v > hi)
        fail("%s: \"%s\" must be a number in [%g, %g]", flag, s, lo, hi);
    return v;
}

// The flag table: every flag is one row (names, value name, default, help,
// what it sets), and --help is printed from the same rows, so a new flag is
// one line and can not be forgotten in the help.
struct Flag {
    const char* names;  // "-t, --temp"
    const char* value;  // "T"; nullptr for a switch
    std::string def;    // shown by --help
    const char* help;
    std::function<void(const char* value)> set;
};

static std::string num(double v) {
    char b[32];
    snprintf(b, sizeof b, "%g", v);
    return b;
}

static std::vector<Flag> generation_flags(GenOptions& o) {
    static const GenOptions d;  // the defaults, for --help
    SamplerParams& s = o.gen.sampling;
    const SamplerParams& ds = d.gen.sampling;
    return {
        {"-t, --temp", "T", num(ds.temperature), "temperature; 0 = greedy", [&](const char* v) {
             s.temperature = parse_float_arg("--temp", v, 0, 1e6f); }},
        {"-k, --top-k", "K", num(ds.top_k), "keep the K most likely tokens; <= 0 = off", [&](const char* v) {
             s.top_k = parse_int_arg("--top-k", v, -(1 << 30), 1 << 30); }},
        {"--top-p", "P", num(ds.top_p), "nucleus: the fewest tokens whose probability reaches P, in (0, 1]", [&](const char* v) {
             char* end = nullptr;
             s.top_p = strtof(v, &end);
             if (!*v || *end || !(s.top_p > 0 && s.top_p <= 1)) fail("--top-p: \"%s\" must be a number in (0, 1]", v); }},
        {"-s, --seed", "N", num(ds.seed), "random seed (0 to 4294967295)", [&](const char* v) {
             char* end = nullptr;
             unsigned long long x = strtoull(v, &end, 10);
             if (!*v || *end || v[0] == '-' || x > 0xffffffffull) fail("--seed: \"%s\" must be an integer in [0, 4294967295]", v);
             s.seed = (uint32_t)x; }},
        {"-n, --n-predict", "N", num(d.gen.n_predict), "most tokens to generate; -1 = until the context is full", [&](const char* v) {
             int n = parse_int_arg("--n-predict", v, -1, 1 << 30);
             o.gen.n_predict = n < 0 ? (1 << 30) : n; }},
        {"--repeat-penalty", "F", num(ds.repeat_penalty), "divide (x if negative) logits of recent tokens; 1 = off", [&](const char* v) {
             s.repeat_penalty = parse_float_arg("--repeat-penalty", v, 0, 100);
             if (s.repeat_penalty <= 0) fail("--repeat-penalty: \"%s\" must be greater than 0", v); }},
        {"--frequency-penalty", "F", num(ds.frequency_penalty), "subtract F per occurrence in the window", [&](const char* v) {
             s.frequency_penalty = parse_float_arg("--frequency-penalty", v, -100, 100); }},
        {"--presence-penalty", "F", num(ds.presence_penalty), "subtract F once if in the window", [&](const char* v) {
             s.presence_penalty = parse_float_arg("--presence-penalty", v, -100, 100); }},
        {"--repeat-last-n", "N", num(ds.repeat_last_n), "penalty window; 0 = off, -1 = everything", [&](const char* v) {
             s.repeat_last_n = parse_int_arg("--repeat-last-n", v, -1, 1 << 30); }},
        {"--stop", "TEXT", "none", "stop when the output reaches TEXT (repeatable)", [&](const char* v) {
             if (!*v) fail("--stop: the stop string is empty");
             o.gen.stop_strings.push_back(v); }},
        {"--system", "TEXT", "the template's", "system message for the chat template", [&](const char* v) { o.system = v; }},
        {"--raw", nullptr, "off", "no chat template: the prompt goes to the model as written", [&](const char*) { o.raw = true; }},
        {"--ctx", "N", "min(4096, max positions)", "KV cache length in tokens", [&](const char* v) {
             o.ctx = parse_int_arg("--ctx", v, 1, 1 << 30); }},
        {"--threads", "N", "all cores", "CPU threads for the matrix products", [&](const char* v) {
             o.threads = parse_int_arg("--threads", v, 1, 1024); }},
        {"--kernels", "SET", "fast", "fast (SIMD + threads), scalar (no SIMD) or plain (the reference loops)", [&](const char* v) {
             o.kernels = parse_kernel_set("--kernels", v); }},
        {"--quant", "TYPE", "none", "q8_0: quantize the weights to 8 bits at load (half the memory traffic)", [&](const char* v) {
             if (strcmp(v, "q8_0") && strcmp(v, "none")) fail("--quant: \"%s\" is not q8_0 or none", v);
             o.quant_q8_0 = !strcmp(v, "q8_0"); }},
        {"--kv-type", "TYPE", "f32", "KV cache storage: f32, f16 or bf16 (half the memory)", [&](const char* v) {
             o.kv_type = parse_float_type("--kv-type", v); }},
        {"--device", "NAME", "cpu", "cpu, or cuda (a GPU; needs `make cuda`)", [&](const char* v) { device_select(v); }},
        {"--prefill", "MODE", "batched", "batched (chunks of 256) or stepwise (one token per forward)", [&](const char* v) {
             if (!strcmp(v, "stepwise")) o.gen.prefill_stepwise = true;
             else if (!strcmp(v, "batched")) o.gen.prefill_stepwise = false;
             else fail("--prefill: \"%s\" is not batched or stepwise", v); }},
        {"--gen-config", nullptr, "off", "start from the model's generation_config.json (flags still win)", [&](const char*) { o.gen_config = true; }},
        {"--json", nullptr, "off", "print one JSON object (text, ids, finish reason, timings) instead of the text", [&](const char*) { o.json = true; }},
        {"-v", nullptr, "off", "debug log: one line per sampled token with its top-5, one per layer per forward", [&](const char*) {
             set_log_verbosity(1); }},
        {"-vv", nullptr, "off", "trace log: also every intermediate tensor", [&](const char*) { set_log_verbosity(2); }},
        {"--trace-layers", "LIST", "all", "-vv shows only these layers, e.g. 0,3,5-7", [&](const char* v) {
             g_watch_filter.layers = parse_index_list("--trace-layers", v); }},
        {"--trace-pos", "LIST", "all", "-vv shows only these positions, e.g. 0,4", [&](const char* v) {
             g_watch_filter.positions = parse_index_list("--trace-pos", v); }},
        {"--trace-match", "TEXT", "all", "-vv shows only tensors whose name contains TEXT (a,b: either)", [&](const char* v) {
             g_watch_filter.names = split_commas(v); }},
        {"--report", "[FILE.html]", "trace_report.html", "write an HTML report of the run: timeline, tokens, layers, attention, graph", [&](const char* v) {
             o.trace.report_path = v ? v : "trace_report.html"; }},
        {"--trace-json", "FILE", "off", "write a Chrome trace (Perfetto): load, tokenize, prefill, decode steps, layers", [&](const char* v) {
             o.trace.json_path = v; }},
        {"--graph", "FILE.dot", "off", "write the computation graph as Graphviz DOT (needs no prompt)", [&](const char* v) {
             o.trace.graph_path = v; }},
        {"-h, --help", nullptr, "", "this list", [&](const char*) { o.help = true; }},
    };
}

static const Flag* find_flag(const std::vector<Flag>& flags, const std::string& arg) {
    for (const Flag& f : flags) {
        std::string names = f.names;
        size_t i = 0;
        while (i < names.size()) {
            size_t j = names.find(", ", i);
            if (j == std::string::npos) j = names.size();
            if (names.compare(i, j - i, arg) == 0 && j - i == arg.size()) return &f;
            i = j + 2;
        }
    }
    return nullptr;
}

static void print_help(const char* usage) {
    GenOptions o;
    printf("%s\n\n", usage);
    for (const Flag& f : generation_flags(o)) {
        std::string left = std::string(f.names) + (f.value ? std::string(" ") + f.value : "");
        printf("  %-26s %s%s%s%s\n", left.c_str(), f.help, f.def.empty() ? "" : " (default: ", f.def.c_str(),
               f.def.empty() ? "" : ")");
    }
}

// Words that start with '-' are flags (a lone "-" and everything after "--"
// are not); the rest are positional.
static void parse_flags(int argc, char** argv, GenOptions& o) {
    std::vector<Flag> flags = generation_flags(o);
    bool only_positional = false;
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        if (only_positional || a.size() < 2 || a[0] != '-') {
            o.positional.push_back(a);
            continue;
        }
        if (a == "--") {
            only_positional = true;
            continue;
        }
        const Flag* f = find_flag(flags, a);
        if (!f) fail("unknown flag \"%s\" (./run --help lists them)", a.c_str());
        // An optional value ("[FILE.html]") is taken only when the next word
        // ends in ".html": otherwise `./run --report "prompt"` would eat the prompt.
        if (f->value && f->value[0] == '[') {
            bool take = i + 1 < argc && strlen(argv[i + 1]) > 5 && !strcmp(argv[i + 1] + strlen(argv[i + 1]) - 5, ".html");
            f->set(take ? argv[++i] : nullptr);
            continue;
        }
        if (f->value && i + 1 >= argc) fail("%s needs a value (%s)", a.c_str(), f->value);
        f->set(f->value ? argv[++i] : nullptr);
    }
}

// Hugging Face's generate() starts from the model's generation_config.json;
// --gen-config does the same. do_sample false means greedy whatever the
// temperature says.
static void apply_generation_config(SamplerParams& s, const std::string& dir) {
    std::string path = dir + "/generation_config.json";
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("--gen-config: %s not found", path.c_str());
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // The same ranges as the flags that set these values (json_read.h).
    nlohmann::json j = json_parse(text, path);
    if (!j.is_object()) fail("%s: expected a JSON object", path.c_str());
    s.temperature = (float)json_number(j, "temperature", s.temperature, 0, 1e6, path);
    s.top_p = (float)json_number(j, "top_p", s.top_p, 0, 1, path);
    if (s.top_p <= 0) fail("%s: \"top_p\" must be in (0, 1], not 0", path.c_str());
    s.top_k = (int)json_int(j, "top_k", s.top_k, -(1 << 30), 1 << 30, path);
    s.repeat_penalty = (float)json_number(j, "repetition_penalty", s.repeat_penalty, 0, 100, path);
    if (s.repeat_penalty <= 0) fail("%s: \"repetition_penalty\" must be greater than 0", path.c_str());
    if (!json_bool(j, "do_sample", true, path)) s.temperature = 0;
    LOGI(CAT_SAMPLER, "%s: temperature %g, top-k %d, top-p %g, repeat penalty %g", path.c_str(), s.temperature,
         s.top_k, s.top_p, s.repeat_penalty);
}

// Parses the flags; with --gen-config, parses them a second time on top of
// the file's values so that flags given on the command line win.
static GenOptions parse_generation_args(int argc, char** argv, int max_positional, const char* usage) {
    GenOptions o;
    parse_flags(argc, argv, o);
    if (o.help) {
        print_help(usage);
        exit(0);
    }
    if ((int)o.positional.size() > max_positional)
        fail("too many arguments (\"%s\"); quote the prompt, or see ./run --help", o.positional.back().c_str());
    if (o.gen_config) {
        std::string model = (int)o.positional.size() == max_positional ? o.positional[0] : default_model_path();
        GenOptions again;
        apply_generation_config(again.gen.sampling, model_dir(model));
        parse_flags(argc, argv, again);
        o = again;
    }
    return o;
}

struct Session {
    Model model;
    Tokenizer tok;
    Net net;
};

static void load_session(Session& s, const std::string& path, const GenOptions& o) {
    if (access(path.c_str(), F_OK) != 0)
        fail("%s: no such model folder or file%s", path.c_str(),
             path == "models/tiny" ? " (make models creates it)" : "");
    kernels_init(o.kernels, o.threads);
    load_model(s.model, path);
    if (o.quant_q8_0) quantize_model(s.model);
    tokenizer_load(s.tok, s.model.dir);
    net_init(s.net, s.model, o.ctx ? o.ctx : std::min(4096, s.model.cfg.max_pos), o.kv_type);
}

static void print_summary(const GenerateResult& r) {
    double prefill_tps = r.prefill_ms > 0 ? r.prompt_ids.size() / (r.prefill_ms / 1000) : 0;
    double decode_tps = r.decode_ms > 0 ? r.decode_forwards / (r.decode_ms / 1000) : 0;
    LOGI(CAT_KEY, "prompt %zu tokens, generated %zu tokens (%s) | first token after %.1f ms | prefill %.1f tok/s | decode %.1f tok/s",
         r.prompt_ids.size(), r.ids.size(), finish_name(r.finish), r.ttft_ms, prefill_tps, decode_tps);
}

static std::string json_ids(const std::vector<int>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); i++) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

static void print_json(const GenerateResult& r) {
    double prefill_tps = r.prefill_ms > 0 ? r.prompt_ids.size() / (r.prefill_ms / 1000) : 0;
    double decode_tps = r.decode_ms > 0 ? r.decode_forwards / (r.decode_ms / 1000) : 0;
    printf("{\"text\": %s, \"prompt_ids\": %s, \"ids\": %s, \"finish_reason\": \"%s\", "
           "\"prompt_tokens\": %zu, \"generated_tokens\": %zu, \"timings\": {\"ttft_ms\": %.3f, "
           "\"prefill_ms\": %.3f, \"prefill_tok_s\": %.2f, \"decode_ms\": %.3f, \"decode_tok_s\": %.2f}}\n",
           json_string(r.text).c_str(), json_ids(r.prompt_ids).c_str(), json_ids(r.ids).c_str(),
           finish_name(r.finish), r.prompt_ids.size(), r.ids.size(), r.ttft_ms, r.prefill_ms, prefill_tps,
           r.decode_ms, decode_tps);
}

// ---------------------------------------------------------------------------
// ./run [MODEL] "prompt" [flags]: generation (prefill + decode)
int cmd_generate(int argc, char** argv) {
    GenOptions o = parse_generation_args(argc, argv, 2, "usage: ./run [MODEL] \"prompt\" [flags]");
    if (!o.trace.graph_path.empty()) {
        // --graph needs only config.json; without a prompt it is all this run does.
        bool no_prompt = o.positional.empty() ||
                         (o.positional.size() == 1 && access((o.positional[0] + "/config.json").c_str(), F_OK) == 0);
        std::string model = o.positional.size() == 2 || (no_prompt && o.positional.size() == 1) ? o.positional[0] : default_model_path();
        write_graph_dot(o.trace.graph_path, parse_config(model_dir(model) + "/config.json"));
        if (no_prompt) return 0;
    }
    trace_start(o.trace, command_line("./run", argc, argv));  // does nothing unless --report / --trace-json
    if (o.positional.empty()) fail("no prompt given (usage: ./run [MODEL] \"prompt\" [flags]; ./run --help)");
    if (o.raw && !o.system.empty()) fail("--system needs the chat template; it does nothing with --raw");
    std::string path = o.positional.size() == 2 ? o.positional[0] : default_model_path();
    const std::string& prompt = o.positional.back();

    Session s;
    double t0 = trace_now_us();
    load_session(s, path, o);
    trace_span("load", t0);
    trace_set_model(s.model, s.tok);
    std::string text = prompt;
    if (!o.raw) {
        std::vector<ChatMessage> msgs;
        if (!o.system.empty()) msgs.push_back({"system", o.system});
        msgs.push_back({"user", prompt});
        text = apply_chat_template(msgs, true);
    }
    t0 = trace_now_us();
    std::vector<int> ids = tokenizer_encode(s.tok, text);
    trace_span("tokenize", t0);
    trace_set_prompt(text, o.gen.sampling);

    Sampler sampler;
    sampler_init(sampler, o.gen.sampling);
    GenerateHooks hooks;
    if (!o.json) hooks.on_text = [](const std::string& piece) {
        fwrite(piece.data(), 1, piece.size(), stdout);
        fflush(stdout);
        return true;
    };
    if (trace_recording()) hooks.on_token = trace_token;  // top-5 of every token, only when recorded
    t0 = trace_now_us();
    GenerateResult r = generate(s.net, s.tok, sampler, ids, 0, o.gen, hooks);
    trace_span("generate", t0);
    if (o.json) print_json(r);
    else if (isatty(1)) printf("\n");  // a terminal's prompt should not start mid-line
    else if (g_log_level >= LOG_INFO && !r.text.empty() && r.text.back() != '\n')
        fputc('\n', stderr);  // stdout stays the exact text; the log starts on a line of its own
    print_summary(r);
    trace_finish(r.text, finish_name(r.finish));
    return 0;
}

// ---------------------------------------------------------------------------
// ./run chat [MODEL] [flags]: a multi-turn REPL that keeps the KV cache.
// Lines come from stdin (a terminal or a pipe); replies go to stdout, one
// per turn followed by a newline; everything else goes to stderr.
int cmd_chat(int argc, char** argv) {
    GenOptions o = parse_generation_args(argc, argv, 1, "usage: ./run chat [MODEL] [flags]   (then type; /reset, /quit)");
    if (o.raw) fail("chat always uses the chat template; --raw does not apply");
    if (!o.gen.stop_strings.empty()) fail("chat stops at the end of each reply; --stop does not apply");
    std::string path = o.positional.empty() ? default_model_path() : o.positional[0];
    if (!o.trace.graph_path.empty()) write_graph_dot(o.trace.graph_path, parse_config(model_dir(path) + "/config.json"));
    trace_start(o.trace, command_line("./run chat", argc, argv));
    Session s;
    double t0 = trace_now_us();
    load_session(s, path, o);
    trace_span("load", t0);
    trace_set_model(s.model, s.tok);
    std::string transcript;  // for the report
    Sampler sampler;
    sampler_init(sampler, o.gen.sampling);
    ChatSession chat;
    chat_reset(chat, s.net, o.system);

    bool tty = isatty(0);
    fprintf(stderr, "chat with %s (%d positions of context). /reset starts over, /quit leaves.\n",
            s.model.dir.c_str(), s.net.kv.n_ctx);
    GenerateHooks hooks;
    hooks.on_text = [](const std::string& piece) {
        fwrite(piece.data(), 1, piece.size(), stdout);
        fflush(stdout);
        return true;
    };
    std::string line;
    for (;;) {
        if (tty) fprintf(stderr, "> ");
        if (!std::getline(std::cin, line)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line == "/quit" || line == "/exit") break;
        if (line == "/reset") {
            chat_reset(chat, s.net, o.system);
            sampler_init(sampler, o.gen.sampling);
            fprintf(stderr, "(conversation reset)\n");
            continue;
        }
        if (trace_recording()) {
            hooks.on_token = trace_token;
            trace_turn_begin();
            trace_set_prompt(line, o.gen.sampling);
        }
        t0 = trace_now_us();
        GenerateResult r = chat_turn(chat, s.net, s.tok, sampler, line, o.gen, hooks);
        trace_span("generate", t0);
        transcript += (transcript.empty() ? "" : "\n") + r.text;
        if (r.prompt_ids.empty() && r.finish == Finish::Context) {
            fprintf(stderr, "context full: %d of %d positions used. Type /reset to start a new conversation.\n",
                    s.net.n_past, s.net.kv.n_ctx);
            continue;
        }
        printf("\n");
        fflush(stdout);
        print_summary(r);
        if (r.finish == Finish::Context)
            fprintf(stderr, "context full: the reply was cut at %d positions. Type /reset to start over.\n",
                    s.net.kv.n_ctx);
    }
    trace_finish(transcript, "chat");
    return 0;
}

#ifndef LANTERN_NO_MAIN
int cmd_bench(int, char**);  // bench.cpp
int cmd_serve(int, char**);  // server.cpp
int main(int argc, char** argv) {
    try {
        if (argc >= 2 && !strcmp(argv[1], "bench")) return cmd_bench(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "encode")) return cmd_encode(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "decode")) return cmd_decode(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "fwd")) return cmd_fwd(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "chat")) return cmd_chat(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "serve")) return cmd_serve(argc - 2, argv + 2);
        return cmd_generate(argc - 1, argv + 1);
    } catch (const LanternError& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
#endif
