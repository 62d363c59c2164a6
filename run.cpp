// run.cpp — generation on the command line: `./run [MODEL] "prompt"` and
// `./run chat`. The flags are parsed in cli.cpp, the model is loaded by
// engine_load() and the loop itself is generate() (generate.cpp); this file
// turns options into a prompt and prints what comes back.
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>
#include "cli.h"
#include "logging.h"

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
    Options o = parse_command("generate", argc, argv);
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

