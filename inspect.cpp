// inspect.cpp — the subcommands that let a reader look inside without
// generating: info (what is in the model folder), fwd (one forward pass, the
// top logits), encode and decode (the tokenizer both ways).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <utf8proc.h>
#include "cli.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "logging.h"

// The text of one token, for display next to its id: its bytes as decoded
// by the model folder's tokenizer (loaded once), or "#id" when the folder
// has no tokenizer.json or the id is past the tokenizer's vocabulary (models
// pad their embedding rows past the last real token).
static std::string display_token(const std::string& model_path, int id) {
    static Tokenizer tok;
    static int state = 0;  // 0 not tried, 1 loaded, -1 unavailable
    if (state == 0) {
        try {
            open_tokenizer(tok, model_dir(model_path));
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
    Options o = parse_command("info", argc, argv);
    if (o.engine.model.empty()) fail("info: which model? (usage: ./run info MODEL)");
    if (is_gguf_path(o.engine.model)) return gguf_print_info(o.engine.model);  // metadata and tensor table (gguf_load.cpp)
    Model m;
    load_model(m, o.engine.model);
    const Config& c = m.cfg;
    printf("model      %s\n", m.weights_path.c_str());
    printf("config     hidden %d, intermediate %d, layers %d, heads %d, kv heads %d, head_dim %d\n", c.hidden,
           c.intermediate, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
    printf("           vocab %d, max positions %d, rms_norm_eps %g, rope_theta %g, tied embeddings %s, dtype %s\n",
           c.vocab, c.max_pos, c.eps, c.rope_theta, c.tie_embeddings ? "yes" : "no", c.torch_dtype.c_str());
    printf("family     %s; %s head\n", model_family(c).c_str(), m.lm_head.data == m.embed.data ? "tied" : "untied");
    if (m.files.size() == 1) printf("file       %zu bytes, header %zu bytes\n\n", m.file_size, m.header_len);
    else {
        for (size_t i = 0; i < m.files.size(); i++) printf("shard %-4zu %s, %zu bytes\n", i + 1, m.files[i].path.c_str(), m.files[i].size);
        printf("\n");
    }
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
int cmd_fwd(int argc, char** argv) {
    Options o = parse_command("fwd", argc, argv);
    if (o.engine.model.empty()) fail("fwd: which model? (usage: ./run fwd MODEL TOKEN POS)");
    std::vector<int> ids = o.tokens;
    int pos = o.pos, top = o.top;
    bool all = o.all, as_json = o.json;
    const std::string& path = o.engine.model;
    const std::string& dump = o.dump;
    // Every argument is checked here, before the model is loaded.
    if (!o.positional.empty() && !ids.empty())
        fail("fwd: give TOKEN POS or --tokens ID,ID,..., not both (\"%s\" and --tokens)", o.positional[0].c_str());
    if (o.positional.size() == 1)
        fail("fwd: TOKEN %s needs its POS too (usage: ./run fwd MODEL TOKEN POS, or --tokens ID,ID,...)", o.positional[0].c_str());
    if (o.positional.size() == 2) {  // the book's form: TOKEN POS
        ids = {parse_int_arg("TOKEN", o.positional[0].c_str(), 0, 0x7fffffff)};
        pos = parse_int_arg("POS", o.positional[1].c_str(), 0, 1 << 30);
    }
    if (ids.empty()) fail("fwd: give TOKEN POS or --tokens ID,ID,... (usage: ./run fwd MODEL TOKEN POS)");
    int T = (int)ids.size();
    Engine e;
    engine_load(e, o.engine, ENGINE_MODEL | ENGINE_NET, pos + T);
    const Model& m = e.model;
    const float* logits = forward(e.net, ids.data(), T, pos, all || !dump.empty());
    int V = m.cfg.vocab, rows = (all || !dump.empty()) ? T : 1;
    if (!dump.empty()) {
        write_file_whole(dump, std::string((const char*)logits, sizeof(float) * (size_t)T * V));
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
// `s` padded with spaces to `width` columns of a terminal: a CJK character
// takes two columns, a combining mark none (utf8proc's charwidth), so
// printf's byte count would misalign the column after it.
static std::string pad(const std::string& s, int width) {
    int cols = 0;
    const utf8proc_uint8_t* p = (const utf8proc_uint8_t*)s.data();
    utf8proc_ssize_t left = (utf8proc_ssize_t)s.size();
    while (left > 0) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
        if (n <= 0) { n = 1; cols++; }
        else cols += utf8proc_charwidth(cp);
        p += n;
        left -= n;
    }
    return s + std::string(cols < width ? width - cols : 0, ' ');
}

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
    Options o = parse_command("encode", argc, argv);
    const std::string& file = o.file;
    bool pieces = o.pieces, timing = o.timing;
    if (o.engine.model.empty() || o.positional.size() != (file.empty() ? 1u : 0u))
        fail("usage: ./run encode MODEL_OR_TOKENIZER_JSON \"text\" | --file PATH  [--pieces] [--time]");
    std::string text = file.empty() ? o.positional[0] : "";
    if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) fail("encode: cannot read %s", file.c_str());
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto t0 = std::chrono::steady_clock::now();
    clock_t load_cpu0 = clock();  // CPU time too: on a busy machine it is the fairer measure
    Tokenizer tok;
    open_tokenizer(tok, o.engine.model);
    auto t1 = std::chrono::steady_clock::now();
    clock_t cpu0 = clock();
    std::vector<int> ids = tokenizer_encode(tok, text);
    clock_t cpu1 = clock();
    auto t2 = std::chrono::steady_clock::now();
    std::string line;
    for (size_t i = 0; i < ids.size(); i++) line += (i ? " " : "") + std::to_string(ids[i]);
    printf("%s\n", line.c_str());
    if (pieces)
        for (int id : ids)
            printf("%-7d %s %s\n", id, pad(shown(tok.id_to_piece[id]), 24).c_str(), shown(token_bytes(tok, id)).c_str());
    if (timing) {
        double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        double enc_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
        double cpu_ms = (cpu1 - cpu0) * 1e3 / CLOCKS_PER_SEC;
        double load_cpu_ms = (cpu0 - load_cpu0) * 1e3 / CLOCKS_PER_SEC;
        fprintf(stderr, "encode: %zu bytes -> %zu tokens in %.1f ms = %.2f MB/s, cpu %.1f ms = %.2f MB/s (tokenizer load %.1f ms, cpu %.1f ms)\n",
                text.size(), ids.size(), enc_ms, text.size() / (enc_ms * 1e3), cpu_ms, text.size() / (cpu_ms * 1e3), load_ms, load_cpu_ms);
        if (!busy_note().empty()) fprintf(stderr, "note: %s\n", busy_note().c_str());
    }
    return 0;
}

// ./run decode MODEL id id ...
int cmd_decode(int argc, char** argv) {
    // Ids as separate arguments, or in one argument separated by spaces or
    // commas (so the output of encode can be pasted in as it is).
    Options o = parse_command("decode", argc, argv);
    if (o.engine.model.empty()) fail("usage: ./run decode MODEL_OR_TOKENIZER_JSON id id ...  [--raw: no newline after the text]");
    const std::vector<std::string>& pos = o.positional;
    std::vector<int> ids;
    for (size_t a = 0; a < pos.size(); a++) {
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
    if (ids.empty()) fail("decode: no token ids given (usage: ./run decode MODEL ID ID ...)");
    Tokenizer tok;
    open_tokenizer(tok, o.engine.model);
    std::string text = tokenizer_decode(tok, ids);
    fwrite(text.data(), 1, text.size(), stdout);
    if (!o.no_newline) fputc('\n', stdout);
    return 0;
}

