// cli.cpp — the subcommands: their table, the help and usage printed from
// it, the positional words, and the dispatch of ./run's first word.
//
//   ./run [MODEL] "prompt" [flags]     generate (the default subcommand)
//   ./run SUB [args] [flags]           chat, serve, info, fwd, encode, decode, bench
//   ./run help [SUB], ./run SUB --help, ./run --version
//
// Every subcommand is one row of COMMANDS: its name, usage, one-line summary
// and the flag groups it accepts; every flag is one row of cli_flags.cpp's
// flag_table(). Adding a flag or a subcommand is adding a row; --help can
// not forget it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "device.h"
#include "gguf/gguf.h"
#include "gguf/gguf_load.h"
#include "logging.h"
#include "gguf/quants.h"

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
        else if (ch < 0x20) r += strprintf("\\u%04x", ch);
        else r += (char)ch;
    }
    return r + "\"";
}

// ---------------------------------------------------------------------------
// The subcommand table. To add a subcommand: write `int cmd_x(int, char**)`
// starting with parse_command("x", ...), and add its row here.
static const Command COMMANDS[] = {
    {"generate", "./run [MODEL] \"prompt\" [flags]", "generate text from a prompt (the default)",
     "prompt generation sampling engine ablate prefill trace report graph log-sampling output", 1, cmd_generate},
    {"chat", "./run chat [MODEL] [flags]", "a conversation in the terminal; the KV cache is kept between turns",
     "generation sampling engine ablate prefill trace report graph log-sampling output", 0, cmd_chat},
    {"serve", "./run serve [MODEL] [flags]", "an OpenAI-compatible HTTP server; requests batched together",
     "serve sampling engine ablate report log-sampling output", 0, cmd_serve,
     "endpoints:\n"
     "  POST /v1/chat/completions  a chat answer (OpenAI's format; \"stream\": true for server-sent events)\n"
     "  POST /v1/completions       a continuation of a plain prompt\n"
     "  GET  /v1/models            the model it serves\n"
     "  GET  /health               status, slots, queue and KV cache blocks as JSON\n"
     "  GET  /props                the model and its default sampling settings\n"
     "  GET  /metrics              the same numbers for Prometheus\n"
     "  GET  /                     a page to chat with it and watch the scheduler\n"},
    {"info", "./run info MODEL", "config, tensor table, and the checks made at load", "output", 0, cmd_info},
    {"fwd", "./run fwd MODEL TOKEN POS | ./run fwd MODEL --tokens ID,ID,... [flags]",
     "one forward pass, no sampling: the top logits (to compare with PyTorch)", "fwd engine ablate trace log-forward output", 2, cmd_fwd},
    {"encode", "./run encode MODEL_OR_TOKENIZER_JSON \"text\" | --file PATH [flags]", "text to token ids",
     "encode output", 1, cmd_encode},
    {"decode", "./run decode MODEL_OR_TOKENIZER_JSON ID ID ... (or \"ID,ID\")", "token ids to text", "decode output", -1, cmd_decode},
    {"convert", "./run convert MODEL OUT.gguf --type TYPE", "write the model as one GGUF file (any weight type; gguf_convert.cpp)",
     "convert output", 1, cmd_convert},
    {"lens", "./run lens MODEL \"prompt\" [flags]",
     "inside the prediction: the logit lens at every layer, direct logit attribution, head and MLP ablation",
     "lens ablate engine log-forward output", 1, cmd_lens},
    {"bench", "./run bench [MODEL] [flags]", "speed: memory bandwidth, prefill and decode per weight type",
     "bench engine prefill log-forward output", 0, cmd_bench},
};

const Command* find_command(const std::string& name) {
    for (const Command& c : COMMANDS)
        if (name == c.name) return &c;
    return nullptr;
}

static const char* GROUP_TITLE[][2] = {
    {"engine", "engine"}, {"sampling", "sampling (generation_config.json of the model first; flags win)"},
    {"generation", "generation"}, {"prefill", "prefill"}, {"prompt", "prompt and answer"}, {"trace", "tracing (with -vv)"},
    {"report", "report files"}, {"graph", "graph"}, {"fwd", "fwd"}, {"ablate", "ablation"}, {"lens", "lens"}, {"encode", "encode"}, {"decode", "decode"},
    {"serve", "server"}, {"bench", "bench"}, {"log-sampling", "output"}, {"log-forward", "output"}, {"output", "output"},
};

static void print_commands() {
    printf("subcommands (./run SUB --help for each one's flags):\n");
    for (const Command& c : COMMANDS)
        if (strcmp(c.name, "generate")) printf("  %-9s %s\n", c.name, c.summary);
}

static void print_help(const Command& c) {
    Options o;
    bool help = false;
    std::vector<Flag> rows = flag_table(o, help);
    printf("usage: %s\n       %s\n\n", c.usage, c.summary);
    if (c.more) printf("%s\n", c.more);
    if (!strcmp(c.name, "generate")) {
        print_commands();
        printf("  %-9s this list; ./run help SUB: one subcommand's\n\n", "help");
    }
    std::vector<std::string> groups = split_words(c.groups);
    std::string shown;  // the title printed last: groups with one title share its section
    for (size_t g = 0; g < groups.size(); g++) {
        const std::string& group = groups[g];
        auto title_of = [](const std::string& gr) {
            for (auto& t : GROUP_TITLE)
                if (gr == t[0]) return std::string(t[1]);
            return gr;
        };
        std::string title = title_of(group);
        bool any = false;
        for (const Flag& f : rows) {
            if (group != f.group || find_flag(rows, c, std::string(f.names, strcspn(f.names, ","))) != &f)
                continue;  // hidden by an earlier group's flag of the same name
            if (!any && title != shown) printf("%s:\n", title.c_str());
            any = true;
            shown = title;
            std::string left = std::string(f.names) + (f.value ? std::string(" ") + f.value : "");
            printf("  %-24s %s%s%s%s\n", left.c_str(), f.help.c_str(), f.def.empty() ? "" : " (default: ", f.def.c_str(),
                   f.def.empty() ? "" : ")");
        }
        bool next_same = g + 1 < groups.size() && title_of(groups[g + 1]) == title;
        if (any && !next_same) printf("\n");
        if (!any && !next_same && shown == title) printf("\n");
    }
}

static bool is_model_path(const std::string& p) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) return stat((p + "/config.json").c_str(), &st) == 0;
    return (p.size() > 12 && p.compare(p.size() - 12, 12, ".safetensors") == 0) || is_gguf_path(p);
}

// "foo" "bar": the words a "too many" error names.
static std::string quoted_words(const std::vector<std::string>& w, size_t from = 0) {
    std::string r;
    for (size_t i = from; i < w.size(); i++) r += (i > from ? " \"" : "\"") + w[i] + "\"";
    return r;
}

// The positional words: generate's are [MODEL] PROMPT, every other
// command's first is the model (unless -m gave it). A word that has no
// place is an error that names it: dropping it silently would generate
// from half of what the user meant (`./run -m M foo bar` from "bar").
static void take_positionals(const Command& c, Options& o) {
    std::vector<std::string>& p = o.positional;
    if (!strcmp(c.name, "generate")) {
        if (!o.prompt.empty() + o.prompt_stdin + !o.prompt_file.empty() > 1)
            fail("give the prompt once: -p TEXT, -p - (standard input) or -f FILE");
        bool prompt_flag = !o.prompt.empty() || o.prompt_stdin || !o.prompt_file.empty();
        bool model_flag = !o.engine.model.empty();
        // The words each source leaves for the others: at most [MODEL] PROMPT.
        size_t room = (model_flag ? 0 : 1) + (prompt_flag ? 0 : 1);
        if (p.size() > room) {
            std::string what = model_flag && prompt_flag ? "the model is -m " + o.engine.model + " and the prompt is a flag"
                               : model_flag              ? "one prompt after -m " + o.engine.model
                               : prompt_flag             ? "one model before the prompt flag"
                                                         : "[MODEL] \"prompt\"";
            std::string joined;
            for (size_t i = 0; i < p.size(); i++) joined += (i ? " " : "") + p[i];
            fail("too many words: %s (%s; quote a prompt of several words: \"%s\")", quoted_words(p).c_str(),
                 what.c_str(), joined.c_str());
        }
        if (!prompt_flag && p.size() == 1 && !model_flag && is_model_path(p[0])) {  // MODEL alone
            o.engine.model = p[0];
            p.clear();
        }
        if (!prompt_flag && !p.empty()) {
            o.prompt = p.back();
            p.pop_back();
        }
        if (!model_flag && !p.empty()) {
            o.engine.model = p.front();
            p.clear();
        }
        // No prompt at all: piped standard input is the prompt (echo hi | ./run M);
        // on a terminal, or for --graph alone, there is none.
        if (o.prompt.empty() && !o.prompt_stdin && o.prompt_file.empty() && o.trace.graph_path.empty() && !isatty(0))
            o.prompt_stdin = true;
        if (o.prompt.empty() && !o.prompt_stdin && o.prompt_file.empty() && !o.engine.model.empty() &&
            o.trace.graph_path.empty())
            fail("no prompt given for the model %s%s (usage: %s; -p TEXT for a prompt that looks like a path)",
                 o.engine.model.c_str(),
                 o.report_word.empty() ? "" : strprintf(" (--report took \"%s\" as its file; put the prompt first or write --report=FILE)", o.report_word.c_str()).c_str(),
                 c.usage);
        if (o.raw && !o.system.empty()) fail("--system needs the chat template; it does nothing with --raw");
        return;
    }
    if (o.engine.model.empty() && !p.empty()) {
        o.engine.model = p.front();
        p.erase(p.begin());
    }
    if (c.max_args >= 0 && (int)p.size() > c.max_args)
        fail("too many words: %s (usage: %s)", quoted_words(p, c.max_args).c_str(), c.usage);
}

Options parse_command(const char* name, int argc, char** argv) {
    const Command* c = find_command(name);
    if (!c) fail("no subcommand \"%s\"", name);
    Options o;
    bool help = false;
    parse_words(*c, argc, argv, o, help);
    if (help) {
        print_help(*c);
        exit(0);
    }
    take_positionals(*c, o);
    // The model's sampling defaults, then the flags again on top.
    std::string model = o.engine.model.empty() ? default_model_path() : o.engine.model;
    struct stat st;
    if (has_word(c->groups, "sampling") && o.gen_config) {
        std::string dir = model_dir(model);
        std::string from_gguf = is_gguf_path(dir) ? gguf_generation_config(dir) : "";
        if (!from_gguf.empty() || stat((dir + "/generation_config.json").c_str(), &st) == 0) {
            Options again;
            apply_generation_config(again, dir, from_gguf);
            parse_words(*c, argc, argv, again, help);
            take_positionals(*c, again);
            o = again;
        }
    }
    // An output over an input would destroy what the run reads (a model's
    // weights stay mapped while the output is written).
    std::vector<std::pair<const char*, std::string>> outputs = {
        {"--dump", o.dump}, {"--report", o.trace.report_path}, {"--trace-json", o.trace.json_path}, {"--graph", o.trace.graph_path}};
    if (!strcmp(name, "convert") && !o.positional.empty()) outputs.push_back({"convert: the output", o.positional[0]});
    for (auto& out : outputs)
        if (!out.second.empty()) refuse_output_over_input(out.second, model, out.first);
    // A model that is not there: the loader's error comes alone, not after
    // the settings that model would have sampled with.
    if (has_word(c->groups, "sampling") && stat(model.c_str(), &st) == 0) {
        const SamplerParams& s = o.gen.sampling;
        // llama.cpp's -t is the thread count: `-t 8` from habit would sample
        // at temperature 8, which no one means.
        auto t = o.sampling_source.find("temperature");
        if (t != o.sampling_source.end() && t->second == "flag" && s.temperature > 2)
            LOGW(CAT_KEY, "temperature %g; threads are --threads", s.temperature);
        if (!strcmp(name, "serve") && !o.seed_given)
            LOGI(CAT_SAMPLER, "%s", (sampling_summary(o).substr(0, sampling_summary(o).rfind(", seed")) +
                                    ", seed: a fresh one per request unless it gives one").c_str());
        else
            LOGI(CAT_SAMPLER, "%s", sampling_summary(o).c_str());
    }
    const WatchFilter& w = g_watch_filter;
    if ((!w.layers.empty() || !w.positions.empty() || !w.names.empty()) && g_log_level < LOG_TRACE)
        LOGW(CAT_KEY, "--trace-layers, --trace-pos and --trace-match choose what -vv shows; without -vv they do nothing");
    return o;
}

// ---------------------------------------------------------------------------
// ./run --version: what this build reads and runs, from the same tables the
// loaders and the flags use.
static void print_version() {
    printf("lantern 0.1\n");
    printf("families   Qwen2 / Qwen2.5 and Qwen3 (model_type in config.json, or general.architecture in a GGUF)\n");
    printf("files      safetensors (f32, f16, bf16; one file or shards), GGUF (%s)\n", weight_type_list());
    std::vector<std::string> q = quant_names();
    q.erase(q.begin());  // "none"
    printf("--quant    at load: %s\n", one_of(q).c_str());
    std::string sets;  // the kernel sets' table, and whether each runs on this CPU
    for (int i = 0; i < N_KERNEL_SETS; i++) {
        const KernelSetInfo& k = KERNEL_SETS[i];
        sets += (sets.empty() ? "" : ", ") + std::string(k.name) + (!k.cpu_has || k.cpu_has() ? "" : " (not on this CPU)");
    }
    const char* fast = kernel_set_name(fast_kernel_set());
    printf("kernels    %s; fast is %s here\n", sets.c_str(), fast);
#ifdef LANTERN_CUDA
    printf("cuda       yes: --device cuda (built by make cuda)\n");
#else
    printf("cuda       no: a CPU-only build (make cuda builds the GPU backend)\n");
#endif
}

// The subcommand a first word was probably meant to be, or "". The
// first word is also where a prompt goes (`./run "Who was David?"`), so a
// guess must not take a real prompt away. It is made only for
//   - a single lowercase word (letters a-z only): a prompt of several words,
//     or with a capital, a digit or punctuation, is never a subcommand;
//   - that is not a file or folder here (`./run chat2` may be a model);
//   - within cli_flags.cpp:nearest_name's reach of a subcommand (one edit
//     for chat, info, fwd, help: "chta", "ifno", "fdw").
// A one-word prompt that still looks like a slip ("what", one from "chat")
// gets an error that says how to write it: -p what.
static std::string likely_subcommand(const std::string& w) {
    if (w.empty() || w.size() > 12 || w.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) return "";
    struct stat st;
    if (stat(w.c_str(), &st) == 0) return "";
    std::vector<std::string> names;
    for (const Command& c : COMMANDS) names.push_back(c.name);
    names.push_back("help");
    return nearest_name(w, names);
}

// ./run alone: the first commands and where the model comes from, short
// enough to read at once; ./run --help has every flag.
static void print_usage() {
    printf("Lantern runs Qwen2.5 and Qwen3 language models.\n\n"
           "usage: ./run [MODEL] \"prompt\" [flags]   generate text from a prompt\n"
           "       ./run SUB [MODEL] [flags]        a subcommand:");
    for (const Command& c : COMMANDS)
        if (strcmp(c.name, "generate")) printf(" %s", c.name);
    printf("\n\n"
           "first commands:\n"
           "  ./run \"Tell me about the flood\"       the default model answers\n"
           "  ./run chat                            a conversation (/help inside lists its commands)\n"
           "  ./run info trained/kjv                what a model holds: config, tensors, checks\n"
           "  ./run models/tiny \"Hello\" -n 16       another model (make models writes the test ones)\n\n"
           "the model: MODEL is a folder with config.json, tokenizer.json and .safetensors\n"
           "(a Hugging Face download: tools/download_qwen.sh) or one .gguf file;\n"
           "without MODEL, trained/kjv (else models/tiny).\n\n"
           "./run --help        every flag, and every subcommand in a line\n"
           "./run SUB --help    one subcommand's flags\n");
}

// ./run ...: the subcommand named by the first word, else generate.
int run_command_line(int argc, char** argv) {
    std::string first = argc >= 2 ? argv[1] : "";
    struct stat in;
    bool piped = fstat(0, &in) == 0 && (S_ISFIFO(in.st_mode) || S_ISREG(in.st_mode));
    if (argc < 2 && !piped) {  // ./run alone: the usage (echo hi | ./run: the default model and that prompt)
        print_usage();
        return 0;
    }
    if (first == "--version") {
        print_version();
        return 0;
    }
    if (first == "help" || first == "-h" || first == "--help") {
        const Command* c = find_command(argc >= 3 && first == "help" ? argv[2] : "generate");
        if (!c) fail("help: no subcommand \"%s\"", argv[2]);
        print_help(*c);
        return 0;
    }
    const Command* c = find_command(first);
    if (c && first != "generate") return c->run(argc - 2, argv + 2);
    std::string guess = likely_subcommand(first);
    if (!guess.empty())
        fail("unknown command \"%s\"; did you mean \"%s\"? (a one-word prompt: ./run -p %s)", first.c_str(), guess.c_str(),
             first.c_str());
    return cmd_generate(argc - 1, argv + 1);
}
