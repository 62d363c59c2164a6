// run.cpp — the command line: generation (prefill + decode) and the
// subcommands that let a reader look inside (info, fwd, encode, decode, ...).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <fstream>
#include <chrono>
#include "common.h"
#include "logging.h"
#include "model.h"
#include "net.h"
#include "kernels_cuda.h"
#include "tokenizer.h"
#include <algorithm>

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

// The text of one token, for display next to its id. Filled in once the
// tokenizer is in; until then the id alone.
static std::string display_token(const std::string& model_path, int id) { (void)model_path; return "#" + std::to_string(id); }

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
        else if (a == "--kernels") {
            std::string k = val();
            if (k == "plain") kset = KernelSet::Plain;
            else if (k == "fast") kset = KernelSet::Fast;
            else fail("--kernels: \"%s\" is not plain or fast", k.c_str());
        } else if (a == "--quant") {
            quant = val();
            if (quant != "q8_0" && quant != "none") fail("--quant: \"%s\" is not q8_0 or none", quant.c_str());
        } else if (a == "-v") g_log_level = LOG_DEBUG;
        else if (a == "-vv") { g_log_level = LOG_TRACE; g_watch_tensors = true; }
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
    net_init(net, m, ctx);
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
    Tokenizer tok;
    tokenizer_load(tok, pos[0]);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<int> ids = tokenizer_encode(tok, text);
    auto t2 = std::chrono::steady_clock::now();
    std::string line;
    for (size_t i = 0; i < ids.size(); i++) line += (i ? " " : "") + std::to_string(ids[i]);
    printf("%s\n", line.c_str());
    if (pieces)
        for (int id : ids) printf("%-7d %-24s %s\n", id, shown(tok.id_to_piece[id]).c_str(), shown(token_bytes(tok, id)).c_str());
    if (timing) {
        double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        double enc_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
        fprintf(stderr, "encode: %zu bytes -> %zu tokens in %.1f ms = %.2f MB/s (tokenizer load %.1f ms)\n", text.size(),
                ids.size(), enc_ms, text.size() / (enc_ms * 1e3), load_ms);
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

// ---------------------------------------------------------------------------
// ./run [MODEL] "prompt" [flags]: generation (prefill + decode)
int cmd_generate(int argc, char** argv) {
    fail("generation: not implemented yet");
}

// ./run chat [MODEL]: a multi-turn REPL that keeps the KV cache
int cmd_chat(int argc, char** argv) {
    fail("chat: not implemented yet");
}

#ifndef LANTERN_NO_MAIN
int main(int argc, char** argv) {
    try {
        if (argc >= 2 && !strcmp(argv[1], "encode")) return cmd_encode(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "decode")) return cmd_decode(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "fwd")) return cmd_fwd(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "chat")) return cmd_chat(argc - 2, argv + 2);
        return cmd_generate(argc - 1, argv + 1);
    } catch (const LanternError& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
#endif
