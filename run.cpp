// run.cpp — generation on the command line: `./run [MODEL] "prompt"` and
// `./run chat`. The flags are parsed in cli.cpp, the model is loaded by
// engine_load() and the loop itself is generate() (generate.cpp); this file
// turns options into a prompt and prints what comes back.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <utf8proc.h>
#include "cli.h"
#include "logging.h"

static void print_summary(const GenerateResult& r) {
    double prefill_tps = r.prefill_ms > 0 ? r.prompt_ids.size() / (r.prefill_ms / 1000) : 0;
    // -n 1 (or a first token that ends the reply) runs no decode step: a
    // speed of "0.0" would read as a measurement, "-" says there is none.
    std::string decode = r.decode_forwards > 0 && r.decode_ms > 0
                             ? strprintf("%.1f tok/s", r.decode_forwards / (r.decode_ms / 1000))
                             : std::string("- (no decode step ran)");
    LOGI(CAT_KEY, "prompt %zu tokens, generated %zu tokens (%s) | first token after %.1f ms | prefill %.1f tok/s | decode %s",
         r.prompt_ids.size(), r.ids.size(), finish_name(r.finish), r.ttft_ms, prefill_tps, decode.c_str());
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

// Where a line stops being valid UTF-8 (npos: it is valid). Checked here,
// on the user's own text, so the offset is theirs, not the chat template's.
static size_t utf8_first_invalid(const std::string& s) {
    const utf8proc_uint8_t* p = (const utf8proc_uint8_t*)s.data();
    for (size_t i = 0; i < s.size();) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(s.size() - i), &cp);
        if (n <= 0) return i;
        i += (size_t)n;
    }
    return std::string::npos;
}

// The prompt from -f FILE or standard input (-p -, or piped with no prompt
// given), read once after the flags are parsed. One final newline is
// dropped (the one `echo` and an editor's last line add); the rest is kept.
// Then the prompt and --system are checked as UTF-8 here, before the chat
// template wraps them, so an offset counts in the user's own text.
static void read_prompt(Options& o) {
    std::string from;
    if (!o.prompt_file.empty()) {
        std::ifstream in(o.prompt_file, std::ios::binary);
        if (!in) fail("-f %s: cannot read the prompt file (%s)", o.prompt_file.c_str(), strerror(errno));
        o.prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (in.bad()) fail("-f %s: cannot read the prompt file", o.prompt_file.c_str());
        from = o.prompt_file;
    } else if (o.prompt_stdin) {
        if (isatty(0)) fprintf(stderr, "(reading the prompt from standard input; end it with Ctrl-D)\n");
        o.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        from = "standard input";
    } else {
        from = "the prompt";
    }
    if (!o.prompt_file.empty() || o.prompt_stdin) {
        if (!o.prompt.empty() && o.prompt.back() == '\n') o.prompt.pop_back();
        if (!o.prompt.empty() && o.prompt.back() == '\r') o.prompt.pop_back();
        if (o.prompt.empty())
            fail("no prompt given for the model %s (%s is empty; usage: ./run [MODEL] \"prompt\" [flags])",
                 o.engine.model.empty() ? default_model_path().c_str() : o.engine.model.c_str(), from.c_str());
    }
    size_t bad = utf8_first_invalid(o.prompt);
    if (bad != std::string::npos)
        fail("%s is not valid UTF-8 (byte 0x%02x at offset %zu of the prompt)", from == "the prompt" ? "the prompt" : ("the prompt from " + from).c_str(),
             (unsigned char)o.prompt[bad], bad);
    bad = utf8_first_invalid(o.system);
    if (bad != std::string::npos)
        fail("--system is not valid UTF-8 (byte 0x%02x at offset %zu of it)", (unsigned char)o.system[bad], bad);
}

// ---------------------------------------------------------------------------
// ./run [MODEL] "prompt" [flags]: generation (prefill + decode)
int cmd_generate(int argc, char** argv) {
    Options o = parse_command("generate", argc, argv);
    read_prompt(o);
    std::string path = o.engine.model.empty() ? default_model_path() : o.engine.model;
    if (!o.trace.graph_path.empty()) {
        // --graph needs only config.json; without a prompt it is all this run does.
        write_graph_dot(o.trace.graph_path, parse_config(model_dir(path) + "/config.json"));
        if (o.prompt.empty()) return 0;
    }
    if (o.prompt.empty()) fail("no prompt given (usage: ./run [MODEL] \"prompt\" [flags]; ./run --help)");
    trace_start(o.trace, command_line("./run", argc, argv));  // does nothing unless --report / --trace-json
    const std::string& prompt = o.prompt;

    Engine s;
    double t0 = trace_now_us();
    engine_load(s, o.engine);
    trace_span("load", t0);
    trace_set_model(s.model, s.tok);
    std::string text = prompt;
    if (!o.raw) {
        std::vector<ChatMessage> msgs;
        if (!o.system.empty()) msgs.push_back({"system", o.system});
        msgs.push_back({"user", prompt});
        text = apply_chat_template(msgs, true, ChatFormat{s.model.cfg.qwen3, !o.no_think});
    }
    t0 = trace_now_us();
    std::vector<int> ids = tokenizer_encode(s.tok, text);
    trace_span("tokenize", t0);
    trace_set_prompt(text, o.gen.sampling);

    Sampler sampler;
    sampler_init(sampler, o.gen.sampling);
    GenerateHooks hooks;
    if (!o.json) hooks.on_text = [](const std::string& piece) {
        write_text(piece);
        return true;
    };
    if (trace_recording()) hooks.on_token = trace_token;  // top-5 of every token, only when recorded
    t0 = trace_now_us();
    GenerateResult r = generate(s.net, s.tok, sampler, ids, 0, o.gen, hooks);
    trace_span("generate", t0);
    if (o.json) print_json(r);
    else if (isatty(1) || o.quiet) write_text("\n");  // -q: the text as a line (a script's $(...) drops it)  // a terminal's prompt should not start mid-line
    else if (g_log_level >= LOG_INFO && !r.text.empty() && r.text.back() != '\n')
        fputc('\n', stderr);  // stdout stays the exact text; the log starts on a line of its own
    print_summary(r);
    trace_finish(r.text, finish_name(r.finish));
    return 0;
}

// ---------------------------------------------------------------------------
// Ctrl-C in the chat: the handler only sets a flag. The reply in progress
// sees it at its next piece of text and stops; at the prompt, the read is
// interrupted (no SA_RESTART) and the loop sees the flag.
static volatile sig_atomic_t g_interrupted = 0;
static void on_sigint(int) { g_interrupted = 1; }
static void catch_ctrl_c() {
    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, nullptr);
}

// /save FILE: the conversation as "role: text" paragraphs.
static void save_transcript(const ChatSession& chat, const std::string& path) {
    if (path.empty()) {
        fprintf(stderr, "/save needs a file name: /save FILE\n");
        return;
    }
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) {
        fprintf(stderr, "%s: cannot write (%s)\n", path.c_str(), strerror(errno));
        return;
    }
    for (const ChatMessage& m : chat.messages) fprintf(f, "%s: %s\n\n", m.role.c_str(), m.content.c_str());
    fclose(f);
    fprintf(stderr, "(%zu messages saved to %s)\n", chat.messages.size(), path.c_str());
}

// ---------------------------------------------------------------------------
// ./run chat [MODEL] [flags]: a multi-turn REPL that keeps the KV cache.
// Lines come from stdin (a terminal or a pipe); replies go to stdout, one
// per turn followed by a newline; everything else goes to stderr.
int cmd_chat(int argc, char** argv) {
    Options o = parse_command("chat", argc, argv);
    std::string path = o.engine.model.empty() ? default_model_path() : o.engine.model;
    if (!o.trace.graph_path.empty()) write_graph_dot(o.trace.graph_path, parse_config(model_dir(path) + "/config.json"));
    trace_start(o.trace, command_line("./run chat", argc, argv));
    Engine s;
    double t0 = trace_now_us();
    engine_load(s, o.engine);
    trace_span("load", t0);
    trace_set_model(s.model, s.tok);
    std::string transcript;  // for the report
    Sampler sampler;
    sampler_init(sampler, o.gen.sampling);
    ChatSession chat;
    chat.format = ChatFormat{s.model.cfg.qwen3, !o.no_think};
    chat_reset(chat, s.net, o.system);

    bool tty = isatty(0);
    fprintf(stderr, "chat with %s (%d positions of context). /help lists the commands.\n", s.model.dir.c_str(),
            s.net.kv.n_ctx);
    // Between turns only the reply is shown; -v brings back the phase
    // banners and the per-turn summary.
    bool verbose = g_log_level >= LOG_DEBUG;
    if (!verbose && g_log_level > LOG_WARN) g_log_level = LOG_WARN;
    GenerateHooks hooks;
    hooks.on_text = [](const std::string& piece) {
        write_text(piece);
        return !g_interrupted;  // Ctrl-C: stop this reply, keep the conversation
    };
    catch_ctrl_c();
    std::string line;
    bool interrupted_at_prompt = false;
    for (;;) {
        if (tty) fprintf(stderr, "> ");
        // A Ctrl-C that lands between the prompt and the read counts too
        // (otherwise the read would wait with the flag already set).
        if (g_interrupted || !std::getline(std::cin, line)) {
            if (!g_interrupted) break;  // end of input
            // Ctrl-C at the prompt: once says how to leave, twice leaves.
            std::cin.clear();
            clearerr(stdin);
            g_interrupted = false;
            if (interrupted_at_prompt) break;
            interrupted_at_prompt = true;
            fprintf(stderr, "\n(Ctrl-C again or /quit to leave)\n");
            continue;
        }
        interrupted_at_prompt = false;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line[0] == '/') {  // a command for the REPL, never for the model
            std::string cmd = line.substr(0, line.find(' '));
            std::string arg = line.size() > cmd.size() ? line.substr(cmd.size() + 1) : "";
            if (cmd == "/quit" || cmd == "/exit") break;
            if (cmd == "/help") {
                fprintf(stderr, "/reset        forget the conversation (the system message stays)\n"
                                "/save FILE    write the conversation to FILE\n"
                                "/quit         leave (also /exit, Ctrl-D, or Ctrl-C twice at the prompt)\n"
                                "Ctrl-C        stop the reply being written\n");
            } else if (cmd == "/reset") {
                chat_reset(chat, s.net, o.system);
                sampler_init(sampler, o.gen.sampling);
                fprintf(stderr, "(conversation reset)\n");
            } else if (cmd == "/save") {
                save_transcript(chat, arg);
            } else {
                fprintf(stderr, "unknown command %s; /help lists the commands\n", cmd.c_str());
            }
            continue;
        }
        size_t bad = utf8_first_invalid(line);
        if (bad != std::string::npos) {
            fprintf(stderr, "that line is not valid UTF-8 (byte %zu of the line); nothing was sent\n", bad + 1);
            continue;
        }
        if (trace_recording()) {
            hooks.on_token = trace_token;
            trace_turn_begin();
            trace_set_prompt(line, o.gen.sampling);
        }
        t0 = trace_now_us();
        GenerateResult r;
        try {
            r = chat_turn(chat, s.net, s.tok, sampler, line, o.gen, hooks);
        } catch (const LanternError& e) {  // the conversation stays as it was
            fprintf(stderr, "error: %s\n", e.what());
            continue;
        }
        trace_span("generate", t0);
        transcript += (transcript.empty() ? "" : "\n") + r.text;
        if (r.prompt_ids.empty() && r.finish == Finish::Context) {
            bool fresh = true;  // nothing said yet: /reset would not help
            for (const ChatMessage& m : chat.messages) fresh = fresh && m.role == "system";
            if (fresh)
                fprintf(stderr, "that message is longer than the whole context of %d positions (%s)\n",
                        s.net.kv.n_ctx, ctx_hint(s.net).c_str());
            else
                fprintf(stderr, "that message does not fit: %d of %d positions are used. /reset starts over.\n",
                        s.net.n_past, s.net.kv.n_ctx);
            continue;
        }
        write_text("\n");
        if (g_interrupted) {
            g_interrupted = false;
            fprintf(stderr, "(stopped)\n");
        }
        if (verbose) print_summary(r);
        if (r.finish == Finish::Context)
            fprintf(stderr, "context full: the reply was cut at %d positions. /reset starts over.\n",
                    s.net.kv.n_ctx);
    }
    trace_finish(transcript, "chat");
    return 0;
}

