// run.cpp — generation on the command line: `./run [MODEL] "prompt"` and
// `./run chat`. The flags are parsed in cli_flags.cpp, the model is loaded by
// engine_load() and the loop itself is generate() (generate.cpp); this file
// turns options into a prompt and prints what comes back.
#include <algorithm>
#include <cerrno>
#include <clocale>
#include <csignal>
#include <poll.h>
#include <pthread.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <editline/readline.h>  // libedit: line editing and history on a terminal (-ledit)
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
    std::string busy = busy_note();
    if (!busy.empty()) LOGW(CAT_KEY, "%s", busy.c_str());
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
        text = apply_chat_template(msgs, true, ChatFormat{s.model.cfg.arch->chat, !o.no_think});
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
// The kernel may run the handler on any thread that does not block the
// signal, an OpenMP worker too; then the main thread's read goes on waiting.
// So a handler on another thread passes the signal on to the main one.
static volatile sig_atomic_t g_interrupted = 0;
static pthread_t g_main_thread;
static void on_sigint(int) {
    g_interrupted = 1;
    if (!pthread_equal(pthread_self(), g_main_thread)) pthread_kill(g_main_thread, SIGINT);
}
static void catch_ctrl_c() {
    g_main_thread = pthread_self();
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
    std::string text;
    for (const ChatMessage& m : chat.messages) text += m.role + ": " + m.content + "\n\n";
    try {
        write_file_whole(path, text);
    } catch (const LanternError& e) {
        fprintf(stderr, "%s\n", e.what());
        return;
    }
    fprintf(stderr, "(%zu messages saved to %s)\n", chat.messages.size(), path.c_str());
}

// /load FILE: what /save wrote, back into messages. A message starts at a
// line "system: ", "user: " or "assistant: " at the top of the file or after
// a blank line, and runs to the blank line before the next one; so a
// message may hold blank lines itself, unless one is followed by such a
// "role: " line (that would read as a new message).
static bool load_transcript(const std::string& path, std::vector<ChatMessage>& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        fprintf(stderr, "%s: cannot read (%s)\n", path.c_str(), strerror(errno));
        return false;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<ChatMessage> msgs;
    static const char* ROLES[] = {"system", "user", "assistant"};
    auto role_at = [&](size_t i) -> std::string {
        for (const char* r : ROLES) {
            std::string head = std::string(r) + ": ";
            if (text.compare(i, head.size(), head) == 0) return r;
        }
        return "";
    };
    size_t i = 0;
    while (i < text.size()) {
        std::string role = role_at(i);
        if (role.empty()) {
            size_t line = 1 + std::count(text.begin(), text.begin() + i, '\n');
            fprintf(stderr, "%s: line %zu does not start a message (\"system: \", \"user: \" or \"assistant: \", as /save writes)\n",
                    path.c_str(), line);
            return false;
        }
        size_t start = i + role.size() + 2, end = start;
        for (;;) {
            end = text.find("\n\n", end);
            if (end == std::string::npos) {
                end = text.size();
                break;
            }
            if (end + 2 >= text.size() || !role_at(end + 2).empty()) break;
            end += 1;
        }
        std::string content = text.substr(start, end - start);
        if (end == text.size() && !content.empty() && content.back() == '\n') content.pop_back();
        if (utf8_first_invalid(content) != std::string::npos) {
            fprintf(stderr, "%s: message %zu is not valid UTF-8\n", path.c_str(), msgs.size() + 1);
            return false;
        }
        msgs.push_back({role, content});
        i = std::min(text.size(), end + 2);
    }
    for (size_t k = 0; k < msgs.size(); k++)
        if (msgs[k].role == "system" && k > 0) {
            fprintf(stderr, "%s: a system message after the first message\n", path.c_str());
            return false;
        }
    out = msgs;
    return true;
}

// What libedit reads on a terminal: one character, as a Unicode code point
// (libedit takes what this returns as a wide character). Our own reader
// rather than libedit's, for two things: a Ctrl-C makes it return at once
// (-1, which ends readline(); the loop sees g_interrupted), where libedit
// retries an interrupted read; and a byte that is not UTF-8 is noted
// (g_bad_input) and shown as U+FFFD, so the line is refused as from a pipe.
static bool g_bad_input = false;
static int g_pushed_back = -1;  // a byte read past a broken sequence: the next character's
static int chat_getc(FILE*) {
    auto byte = []() -> int {
        if (g_pushed_back >= 0) {
            int b = g_pushed_back;
            g_pushed_back = -1;
            return b;
        }
        unsigned char c;
        for (;;) {
            // A Ctrl-C after the flag was tested but before the read began
            // would leave the read waiting for a key. So SIGINT is blocked
            // from the test until ppoll waits, which unblocks it for the
            // wait alone: a Ctrl-C in between is delivered then and ends it.
            sigset_t sigint, old;
            sigemptyset(&sigint);
            sigaddset(&sigint, SIGINT);
            pthread_sigmask(SIG_BLOCK, &sigint, &old);
            struct pollfd in = {0, POLLIN, 0};
            int ready = g_interrupted ? -1 : ppoll(&in, 1, nullptr, &old);
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            if (ready < 0 && errno == EINTR && !g_interrupted) continue;
            if (ready < 0) return -1;  // Ctrl-C, or an error
            ssize_t n = ::read(0, &c, 1);
            if (n == 1) return c;
            if (n < 0 && errno == EINTR && !g_interrupted) continue;
            return -1;  // end of input, an error, or Ctrl-C
        }
    };
    int c = byte();
    if (c < 0x80) return c;
    int len = c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
    if (!len) {
        g_bad_input = true;
        return 0xFFFD;
    }
    std::string seq(1, (char)c);
    for (int i = 1; i < len; i++) {
        int d = byte();
        if (d < 0) return -1;
        if ((d & 0xC0) != 0x80) {
            g_pushed_back = d;
            break;
        }
        seq += (char)d;
    }
    utf8proc_int32_t cp;
    if ((int)seq.size() != len || utf8proc_iterate((const utf8proc_uint8_t*)seq.data(), len, &cp) != len) {
        g_bad_input = true;
        return 0xFFFD;
    }
    return cp;
}

// The chat's input. On a terminal, libedit's readline(): the line can be
// edited (arrows, Ctrl-A/E, ...), Up and Down walk the history, and the
// history is kept in ~/.lantern_history between runs. From a pipe, plain
// std::getline, so a test that pipes lines in sees exactly those lines and
// nothing is written to the user's home.
struct ChatInput {
    bool tty = false;
    std::string history;  // the history file; "" = none

    void open(bool terminal) {
        tty = terminal;
        if (!tty) return;
        // libedit decodes what is typed by the locale's character set; in the
        // "C" locale a program starts in, it would drop every byte of "é".
        const char* loc = setlocale(LC_CTYPE, "");
        if (!loc || !strcmp(loc, "C") || !strcmp(loc, "POSIX")) setlocale(LC_CTYPE, "C.UTF-8");
        rl_getc_function = chat_getc;
        // Our SIGINT handler stays in place while a line is read. libedit's
        // own would re-send the signal from inside its handler, and then it
        // can land on an OpenMP thread while the read has already returned
        // EINTR, before the flag is set: the Ctrl-C would be lost.
        rl_catch_signals = 0;
        rl_outstream = stderr;  // the prompt and the editing go where the other non-reply text goes
        rl_initialize();
        using_history();
        stifle_history(1000);
        const char* home = getenv("HOME");
        if (home && *home) {
            history = std::string(home) + "/.lantern_history";
            read_history(history.c_str());  // missing the first time: nothing to read
        }
    }
    // One line without its newline; false at the end of input, or when
    // Ctrl-C interrupted the read (g_interrupted then says so).
    bool read(const char* prompt, std::string& line) {
        if (!tty) return (bool)std::getline(std::cin, line);
        g_bad_input = false;
        char* s = readline(prompt);
        if (!s) return false;
        line = s;
        free(s);
        if (g_interrupted) return false;  // Ctrl-C in the middle of a line: it is not sent
        if (g_bad_input) {  // refused below, as an invalid line from a pipe is, at the same offset
            size_t at = line.find("\xEF\xBF\xBD");
            if (at != std::string::npos) line.replace(at, 3, "\xff");
            else line += '\xff';
        }
        if (!line.empty()) {
            add_history(line.c_str());
            if (!history.empty()) write_history(history.c_str());  // after every line: a killed run keeps it too
        }
        return true;
    }
};

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
    chat.format = ChatFormat{s.model.cfg.arch->chat, !o.no_think};
    chat_reset(chat, s.net, o.system);

    ChatInput input;
    input.open(isatty(0));
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
    std::string line, part;
    bool interrupted_at_prompt = false;
    for (;;) {
        // A line that ends in a backslash continues on the next one ("... "
        // prompts for it); the message is the lines joined by newlines.
        bool continued = !line.empty();
        // A Ctrl-C that lands between the prompt and the read counts too
        // (otherwise the read would wait with the flag already set).
        if (g_interrupted || !input.read(continued ? "... " : "> ", part)) {
            if (!g_interrupted) {
                if (continued) fprintf(stderr, "(the input ended inside a continued line; it was not sent)\n");
                break;  // end of input
            }
            // Ctrl-C at the prompt: once says how to leave, twice leaves.
            std::cin.clear();
            clearerr(stdin);
            g_interrupted = false;
            line.clear();  // and drops a message begun with a backslash
            if (interrupted_at_prompt) break;
            interrupted_at_prompt = true;
            fprintf(stderr, "\n(Ctrl-C again or /quit to leave)\n");
            continue;
        }
        interrupted_at_prompt = false;
        if (!part.empty() && part.back() == '\r') part.pop_back();
        if (!part.empty() && part.back() == '\\') {
            part.pop_back();
            line += part + "\n";
            continue;
        }
        line += part;
        std::string entered = line;
        line.clear();
        if (entered.empty()) continue;
        if (entered[0] == '/') {  // a command for the REPL, never for the model
            std::string cmd = entered.substr(0, entered.find(' '));
            std::string arg = entered.size() > cmd.size() ? entered.substr(cmd.size() + 1) : "";
            if (cmd == "/quit" || cmd == "/exit") break;
            if (cmd == "/help") {
                fprintf(stderr, "/reset        forget the conversation (the system message stays)\n"
                                "/save FILE    write the conversation to FILE\n"
                                "/load FILE    continue a conversation /save wrote (this one is forgotten)\n"
                                "/set NAME V   a sampling setting: temp, top-k, top-p, seed, repeat-penalty, ...;\n"
                                "              /set alone shows them all\n"
                                "/quit         leave (also /exit, Ctrl-D, or Ctrl-C twice at the prompt)\n"
                                "\\             at the end of a line: the message goes on on the next line\n"
                                "Ctrl-C        stop the reply being written\n"
                                "%s", input.tty ? "Up, Down     earlier lines (kept in ~/.lantern_history)\n" : "");
            } else if (cmd == "/reset") {
                chat_reset(chat, s.net, o.system);
                sampler_init(sampler, o.gen.sampling);
                fprintf(stderr, "(conversation reset)\n");
            } else if (cmd == "/save") {
                save_transcript(chat, arg);
            } else if (cmd == "/load") {
                std::vector<ChatMessage> msgs;
                if (arg.empty()) fprintf(stderr, "/load needs a file name: /load FILE\n");
                else if (load_transcript(arg, msgs)) {
                    // The cache is dropped; the next turn prefills the whole
                    // loaded conversation (chat_turn: nothing rendered yet).
                    chat_reset(chat, s.net, "");
                    chat.messages = msgs;
                    sampler_init(sampler, o.gen.sampling);
                    fprintf(stderr, "(%zu messages loaded from %s; the next message continues that conversation)\n",
                            msgs.size(), arg.c_str());
                }
            } else if (cmd == "/set") {
                std::string name = arg.substr(0, arg.find(' '));
                std::string value = arg.size() > name.size() ? arg.substr(name.size() + 1) : "";
                if (name.empty()) {  // every setting /set can change
                    fprintf(stderr, "(%s)\n", sampling_summary(o, true).c_str());
                } else if (value.empty()) {
                    fprintf(stderr, "/set needs a value: /set %s VALUE\n", name.c_str());
                } else {
                    try {
                        auto before = o.sampling_source;
                        std::string flag = set_sampling_flag("chat", o, name, value);
                        std::string key = flag == "--temp" ? "temperature" : flag.substr(2);  // sampling_source's keys
                        o.sampling_source = before;
                        o.sampling_source[key] = "/set";
                        if (flag == "--seed") sampler_init(sampler, o.gen.sampling);  // the draws start over from it
                        else sampler.params = o.gen.sampling;  // the draws and the penalty window go on
                        fprintf(stderr, "(%s)\n", sampling_summary(o).c_str());
                    } catch (const LanternError& e) {
                        fprintf(stderr, "error: %s\n", e.what());
                    }
                }
            } else {
                fprintf(stderr, "unknown command %s; /help lists the commands\n", cmd.c_str());
            }
            continue;
        }
        size_t bad = utf8_first_invalid(entered);
        if (bad != std::string::npos) {
            fprintf(stderr, "that line is not valid UTF-8 (byte 0x%02x at offset %zu of the line); nothing was sent\n",
                    (unsigned char)entered[bad], bad);
            continue;
        }
        if (trace_recording()) {
            hooks.on_token = trace_token;
            trace_turn_begin();
            trace_set_prompt(entered, o.gen.sampling);
        }
        t0 = trace_now_us();
        GenerateResult r;
        try {
            r = chat_turn(chat, s.net, s.tok, sampler, entered, o.gen, hooks);
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
                        s.net.kv.n_ctx, ctx_hint(s.net.kv.n_ctx, s.net.model->cfg.max_pos).c_str());
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
            fprintf(stderr, "context full: the reply was cut at %d positions (%s); /reset starts over.\n",
                    s.net.kv.n_ctx, ctx_hint(s.net.kv.n_ctx, s.net.model->cfg.max_pos).c_str());
    }
    trace_finish(transcript, "chat");
    return 0;
}

