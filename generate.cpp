// generate.cpp — the generation loop: prefill the prompt, then sample,
// print and feed back one token at a time until a stop rule fires.
//
//   prompt ids ──prefill──▶ KV cache filled, logits of the last prompt token
//                 │
//                 ▼
//        ┌──▶ sample ──▶ stop token? ──▶ append bytes ──▶ stop string? ──▶ print
//        │                                                                  │
//        └──────────── forward(the new token, at position n_past) ◀─────────┘
#include <algorithm>
#include <chrono>
#include <unistd.h>
#include "generate.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "gguf/quants.h"
#include "cuda/net_cuda.h"
#include "lens/lens.h"
#include "logging.h"

// ---------------------------------------------------------------------------
// Loading. Every command that runs the model loads it here, in this order:
// the kernels first (the thread count is fixed before any parallel loop),
// the weights, their Q8_0 copy, the tokenizer, then the KV cache, whose
// default length depends on the model's max positions.
std::string default_model_path() {
    if (access("trained/kjv/model.safetensors", F_OK) == 0) return "trained/kjv";
    return "models/tiny";
}

void open_model(Model& m, const std::string& path) {
    if (is_gguf_path(path)) gguf_load_model(m, path);
    else load_model(m, path);
}

void open_tokenizer(Tokenizer& tok, const std::string& path) {
    if (is_gguf_path(path)) gguf_load_tokenizer(tok, path);
    else tokenizer_load(tok, path);
}

void engine_load(Engine& e, const EngineOptions& o, int parts, int min_ctx) {
    std::string path = o.model.empty() ? default_model_path() : o.model;
    if (access(path.c_str(), F_OK) != 0)
        fail("%s: no such model folder or file%s", path.c_str(),
             path == "models/tiny" ? " (make models creates it)" : "");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (o.threads > cores)
        LOGW(CAT_KEY, "--threads %d is more than the %ld cores of this machine: threads will wait for each other",
             o.threads, cores);
    kernels_init(o.kernels, o.threads);
    open_model(e.model, path);
    if (o.quant != "none") quantize_model(e.model, check_quantize_model(e.model, parse_weight_type("--quant", o.quant), o.force));
    // The fast sets' layout of block formats (cpu/quants_packed.cpp); the
    // plain kernels and the GPU read the file's.
    if (g_kernels.simd && o.device == Device::CPU) pack_model(e.model, *g_kernels.simd);
    if (parts & ENGINE_TOKENIZER) open_tokenizer(e.tok, e.model.dir);
    if (parts & ENGINE_NET)
        net_init(e.net, e.model, o.ctx ? o.ctx : std::min(e.model.cfg.max_pos, std::max(4096, min_ctx)), o.kv_type);
    // Switched-off heads and MLPs: zeros the layer's taps write (net.cpp:tap).
    if (!o.ablate.empty()) e.net.ablate = ablation_from_specs(o.ablate, e.model.cfg);
    // --device: the build and the machine must have it; chosen here, once
    // (bench and the server, which make their own Nets, check it themselves).
    if (parts & ENGINE_NET) device_use(e.net, o.device);
    // A -vv filter that names no layer of this model would silently show nothing.
    for (int l : g_watch_filter.layers)
        if (l >= e.model.cfg.n_layers)
            LOGW(CAT_KEY, "--trace-layers %d: the model has layers 0 to %d; that one never shows", l, e.model.cfg.n_layers - 1);
}

const char* finish_name(Finish f) {
    switch (f) {
        case Finish::Stop: return "stop";
        case Finish::StopString: return "stop_string";
        case Finish::Length: return "length";
        case Finish::Context: return "context";
        case Finish::Aborted: return "abort";
    }
    return "?";
}

// The stop tokens are found by their text, never by number: Qwen's
// <|im_end|> is 151645, but a model trained here with its own 4,096-token
// vocabulary puts the same ChatML specials somewhere else.
std::vector<int> stop_token_ids(const Tokenizer& tok, const Config& cfg) {
    std::vector<int> ids;
    auto add = [&](int id) {
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    };
    add(token_id(tok, "<|im_end|>"));
    add(token_id(tok, "<|endoftext|>"));
    for (int id : cfg.eos_ids) add(id);
    return ids;
}

// ---------------------------------------------------------------------------
// Prefill.
//
// Every prompt token is known in advance, so nothing needs sampling until
// the last one: the point of prefill is to leave each token's keys and values
// in the cache. Batched, T tokens go through each weight matrix together
// (one read of the weights for T tokens), in chunks that bound the T x
// positions attention scratch. Stepwise is the book's teacher-forcing loop:
// one forward per token, its logits thrown away, the next prompt token used
// instead of a sample. Both leave the same cache and the same last logits
// (up to float rounding: batched matmuls add in a different order).
float* prefill(Net& net, const int* tokens, int n, int pos, bool stepwise) {
    const float* logits = nullptr;
    int step = stepwise ? 1 : PREFILL_CHUNK;
    for (int i = 0; i < n; i += step) {
        int T = std::min(step, n - i);
        logits = forward(net, tokens + i, T, pos + i, false);
    }
    // The sampler edits logits in place. The buffer is the Net's own and is
    // rewritten by the next forward, so nobody else reads it afterwards.
    return const_cast<float*>(logits);
}

// ---------------------------------------------------------------------------
// Stop strings and streaming.
//
// Matching runs on bytes, not on characters or tokens: "world" may arrive as
// "wo" + "rld", and one Chinese character may be split across two tokens.
// A match can only complete inside the bytes the newest token added, but it
// may start earlier and need not end at the last byte (the token "abc"
// completes the stop string "ab"), so the search starts |s| - 1 bytes before
// the new bytes. Among several matches the earliest start wins: it cuts the
// most text.
size_t find_stop_string(const std::string& text, size_t from, const std::vector<std::string>& stops) {
    size_t best = std::string::npos;
    for (const std::string& s : stops) {
        if (s.empty()) continue;
        size_t start = from >= s.size() - 1 ? from - (s.size() - 1) : 0;
        size_t at = text.find(s, start);
        if (at < best) best = at;
    }
    return best;
}

// Printing the tail "wor" while the stop string is "world" would show text
// that may have to be taken back. So the longest tail that is a beginning of
// some stop string waits until the next token settles it. Because of that,
// nothing of a stop string ever reaches the output, and bytes once printed
// never need un-printing.
size_t stop_string_holdback(const std::string& text, const std::vector<std::string>& stops) {
    size_t hold = 0;
    for (const std::string& s : stops) {
        for (size_t k = std::min(s.size() - (s.empty() ? 0 : 1), text.size()); k > hold; k--) {
            if (text.compare(text.size() - k, k, s, 0, k) == 0) {
                hold = k;
                break;
            }
        }
    }
    return hold;
}

// A UTF-8 character is 1-4 bytes; its first byte says how many. A tail
// that starts a character but lacks some of its bytes waits for the next
// token. (Bytes that can never form a character are printed, as U+FFFD.)
size_t utf8_incomplete_tail(const std::string& text) {
    size_t n = text.size();
    for (size_t i = 1; i <= std::min<size_t>(3, n); i++) {
        unsigned char c = (unsigned char)text[n - i];
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking back
        if (c < 0xC0 || c >= 0xF8) return 0;  // ASCII or a byte no character starts with
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return need > i ? i : 0;
    }
    return 0;
}

// A token's bytes made printable for a log line: quotes, escapes for control
// characters, U+FFFD for a piece of a character.
static std::string printable(const std::string& bytes) {
    std::string s = utf8_sanitize(bytes), r = "\"";
    for (unsigned char c : s) {
        if (c == '\n') r += "\\n";
        else if (c == '\t') r += "\\t";
        else if (c == '"' || c == '\\') { r += '\\'; r += (char)c; }
        else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\x%02x", c); r += b; }
        else r += (char)c;
    }
    return r + "\"";
}

static void log_sampled(const Tokenizer& tok, int pos, const SampleInfo& info, bool greedy) {
    char top[512];
    int len = 0;
    for (int i = 0; i < info.n_top && len < (int)sizeof top; i++)
        len += snprintf(top + len, sizeof top - len, "%s%d %s %.3f", i ? ", " : "", info.top[i].id,
                        printable(token_bytes(tok, info.top[i].id)).c_str(), info.top[i].prob);
    std::string draw = greedy ? "" : strprintf(" (draw %.3f)", info.draw_prob);  // greedy draws nothing
    LOGD(CAT_SAMPLER, "pos %d: token %d %s p=%.3f%s | top-5: %s", pos, info.token,
         printable(token_bytes(tok, info.token)).c_str(), info.prob, draw.c_str(), top);
}

static double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// ---------------------------------------------------------------------------
// One token at a time: what happens between two forwards.
//
// generate() below runs one sequence; the server's scheduler (scheduler.cpp)
// runs many, each with its own Generation, and calls the same two functions
// with each sequence's logits. So a request gets the same text either way.

void generation_start(Generation& g, const Tokenizer& tok, const Config& cfg, Sampler& sampler,
                      const std::vector<int>& prompt, const GenerateParams& params, const GenerateHooks& hooks) {
    g.tok = &tok;
    g.sampler = &sampler;
    g.params = &params;
    g.hooks = hooks;
    g.res = GenerateResult();
    g.res.prompt_ids = prompt;
    g.res.finish = Finish::Length;
    g.stops = stop_token_ids(tok, cfg);
    g.bytes.clear();
    g.printed = 0;
    // The penalty window starts with the prompt's tail, so the first
    // generated token is already discouraged from repeating the prompt.
    for (int t : prompt) sampler_accept(sampler, t);
    // Top-5 and probabilities cost a pass over the vocabulary; only when
    // someone reads them.
    g.want_info = hooks.on_token || g_log_level >= LOG_DEBUG;
    // Sample only among ids the tokenizer can spell. Models pad their
    // embedding table past the last real token (Qwen2.5: 151,936 rows for
    // 151,665 tokens) for faster matmuls; those rows are never trained to
    // be picked, but random or quantized weights can still give them mass.
    g.n_sample = std::min(cfg.vocab, tokenizer_vocab_size(tok));
}

static bool emit_until(Generation& g, size_t end) {
    if (end <= g.printed) return true;
    std::string piece = utf8_sanitize(g.bytes.substr(g.printed, end - g.printed));
    g.printed = end;
    g.res.text += piece;
    return g.hooks.on_text ? g.hooks.on_text(piece) : true;
}

bool generation_step(Generation& g, float* logits, int pos, int* token) {
    SampleInfo info;
    int t = sample(*g.sampler, logits, g.n_sample, g.want_info ? &info : nullptr);
    *token = t;
    if (g.want_info) {
        log_sampled(*g.tok, pos, info, g.params->sampling.temperature == 0);
        if (g.hooks.on_token) g.hooks.on_token(t, info);
    }
    if (std::find(g.stops.begin(), g.stops.end(), t) != g.stops.end()) {
        g.res.finish = Finish::Stop;  // the stop token itself is neither kept nor printed
        return false;
    }
    g.res.ids.push_back(t);
    sampler_accept(*g.sampler, t);

    size_t before = g.bytes.size();
    g.bytes += token_bytes(*g.tok, t);
    size_t cut = find_stop_string(g.bytes, before, g.params->stop_strings);
    if (cut != std::string::npos) {
        g.bytes.resize(std::max(cut, g.printed));
        g.res.finish = Finish::StopString;
        return false;
    }
    size_t hold = std::max(stop_string_holdback(g.bytes, g.params->stop_strings), utf8_incomplete_tail(g.bytes));
    if (!emit_until(g, g.bytes.size() - hold)) {
        g.res.finish = Finish::Aborted;
        return false;
    }
    return (int)g.res.ids.size() < g.params->n_predict;  // no forward for a token nobody will read
}

void generation_end(Generation& g) { emit_until(g, g.bytes.size()); }  // what was held back, now final

// ---------------------------------------------------------------------------
// The loop.
GenerateResult generate(Net& net, const Tokenizer& tok, Sampler& sampler, const std::vector<int>& prompt, int pos,
                        const GenerateParams& params, const GenerateHooks& hooks) {
    int n = (int)prompt.size();
    if (n == 0) fail("the prompt has no tokens");
    if (pos + n > net.kv.n_ctx)
        fail("the prompt needs %d positions but the context holds %d (%s)", pos + n, net.kv.n_ctx, ctx_hint(net.kv.n_ctx, net.model->cfg.max_pos).c_str());
    Generation g;
    generation_start(g, tok, net.model->cfg, sampler, prompt, params, hooks);
    GenerateResult& res = g.res;

    auto start = std::chrono::steady_clock::now();
    LOGI_L(CAT_KEY, 0, "═══ Phase 1: Prefill (processing %d prompt tokens) ═══", n);
    float* logits = prefill(net, prompt.data(), n, pos, params.prefill_stepwise);
    res.prefill_ms = ms_since(start);
    LOGI_L(CAT_KEY, 0, "═══ Phase 2: Decode (autoregressive generation) ═══");

    auto first = start;
    for (int t, step = 0; params.n_predict > 0; step++) {
        bool more = generation_step(g, logits, net.n_past, &t);
        if (step == 0) {
            first = std::chrono::steady_clock::now();
            res.ttft_ms = ms_since(start);
        }
        if (!more) break;
        if (net.n_past >= net.kv.n_ctx) {
            res.finish = Finish::Context;
            LOGW(CAT_KEY, "context full: all %d positions of the KV cache are used (%s)", net.kv.n_ctx, ctx_hint(net.kv.n_ctx, net.model->cfg.max_pos).c_str());
            break;
        }
        // Decode: the new token goes in at the next position and its keys and
        // values join the cache; everything before it is read, not recomputed.
        logits = const_cast<float*>(forward(net, &t, 1, net.n_past, false));
        res.decode_forwards++;
    }
    generation_end(g);
    if (!res.ids.empty() || res.finish == Finish::Stop) res.decode_ms = ms_since(first);
    return res;
}

// ---------------------------------------------------------------------------
// Chat: the cache carries the conversation from turn to turn.

void chat_reset(ChatSession& chat, Net& net, const std::string& system) {
    chat.messages.clear();
    if (!system.empty()) chat.messages.push_back({"system", system});
    chat.rendered.clear();
    chat.pending.clear();
    net_reset(net);
}

// Why compare rendered text instead of re-encoding the whole conversation?
// The reply is in the cache as the tokens the model sampled; encoding its
// text again could split it differently (BPE has several ways to spell most
// strings) and every mismatch would force recomputing from that point. The
// template only appends when a message is added, so the new text is what
// follows the old rendering; if it ever does not (a template that rewrites
// earlier turns), the cache is dropped and the whole conversation prefilled.
GenerateResult chat_turn(ChatSession& chat, Net& net, const Tokenizer& tok, Sampler& sampler,
                         const std::string& user, const GenerateParams& params, const GenerateHooks& hooks) {
    chat.messages.push_back({"user", user});
    std::string full = apply_chat_template(chat.messages, true, chat.format);
    std::vector<int> prompt;
    bool extends = !chat.rendered.empty() && full.compare(0, chat.rendered.size(), chat.rendered) == 0;
    if (extends) {
        prompt = chat.pending;
        std::vector<int> fresh = tokenizer_encode(tok, full.substr(chat.rendered.size()));
        prompt.insert(prompt.end(), fresh.begin(), fresh.end());
    } else {
        if (!chat.rendered.empty()) LOGW(CAT_KEY, "chat: the template changed earlier turns; prefilling everything");
        net_reset(net);
        prompt = tokenizer_encode(tok, full);
    }
    // Room for the new tokens and at least one reply token.
    if (net.n_past + (int)prompt.size() >= net.kv.n_ctx) {
        chat.messages.pop_back();
        GenerateResult r;
        r.finish = Finish::Context;
        return r;
    }
    GenerateResult r = generate(net, tok, sampler, prompt, net.n_past, params, hooks);
    chat.messages.push_back({"assistant", r.text});
    chat.rendered = full + r.text;
    // The cache holds the prompt and every generated token that was fed back;
    // the last one usually was not (generation stopped right after sampling it).
    chat.pending.assign(r.ids.begin() + r.decode_forwards, r.ids.end());
    return r;
}
