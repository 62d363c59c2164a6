// cli_flags.cpp — the flags: one table of every flag of every subcommand,
// the parser of a command's words, and where each sampling setting comes
// from (the model's generation_config.json first, the flags on top, the
// one-line summary of what the sampler will use, the chat's /set).
//
// Every flag is one row of flag_table(): its group, names, value, default,
// help and what it sets. Flags take their value as `--flag value` or
// `--flag=value`; one-letter flags also as `-n64`. `-t` is the temperature,
// as in llama2.c's run.c (llama-cli's -t is the thread count; here that is
// --threads). A word after `--` is never a flag.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include "cli.h"
#include "device.h"
#include "json_read.h"
#include "logging.h"
#include "gguf/quants.h"
#include "lens/lens.h"

// ---------------------------------------------------------------------------
// Values.
int parse_int_arg(const char* flag, const char* s, int lo, int hi) {
    char* end = nullptr;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) fail("%s: \"%s\" must be an integer in [%d, %d]", flag, s, lo, hi);
    return (int)v;
}

// A range of a number flag, written the same way in its --help line and in
// its error: "[0, 1e+06]", or "(0, 1]" when the low end is excluded.
struct Range {
    float lo, hi;
    bool lo_open = false;
    std::string str() const { return strprintf("%s%g, %g]", lo_open ? "(" : "[", lo, hi); }
};

static float parse_float_arg(const char* flag, const char* s, Range r) {
    char* end = nullptr;
    float v = strtof(s, &end);
    if (!*s || *end || !std::isfinite(v) || v < r.lo || v > r.hi || (r.lo_open && v == r.lo))
        fail("%s: \"%s\" must be a number in %s", flag, s, r.str().c_str());
    return v;
}

// "a, b or c": the values a flag takes, for its --help line and its error
// alike, so the two can not drift apart.
std::string one_of(const std::vector<std::string>& names) {
    std::string r;
    for (size_t i = 0; i < names.size(); i++) r += (i ? (i + 1 == names.size() ? " or " : ", ") : "") + names[i];
    return r;
}

std::vector<std::string> kernel_set_names() {
    std::vector<std::string> r;
    for (int i = 0; i < N_KERNEL_SETS; i++) r.push_back(KERNEL_SETS[i].name);
    return r;
}

KernelSet parse_kernel_set(const char* flag, const std::string& name) {
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (name == KERNEL_SETS[i].name) return KERNEL_SETS[i].set;
    fail("%s: \"%s\" is not %s", flag, name.c_str(), one_of(kernel_set_names()).c_str());
}

static const std::vector<std::string> KV_TYPES = {"f32", "f16", "bf16", "q8_0"};

DType parse_kv_type(const char* flag, const std::string& name) {
    if (name == "f32") return DType::F32;
    if (name == "f16") return DType::F16;
    if (name == "bf16") return DType::BF16;
    if (name == "q8_0") return DType::Q8_0;
    fail("%s: \"%s\" is not %s", flag, name.c_str(), one_of(KV_TYPES).c_str());
}

// --quant: "none" or one of quants.cpp's weight types (weight_type_list()).
std::vector<std::string> quant_names() {
    std::vector<std::string> r = {"none"};
    for (const std::string& t : split_commas(weight_type_list())) r.push_back(t.substr(t.find_first_not_of(' ')));
    return r;
}

// "1,2,3" (fwd --tokens; bench --prompts): integers in [lo, hi].
static std::vector<int> parse_int_list(const char* flag, const std::string& s, int lo, int hi) {
    std::vector<int> out;
    for (const std::string& item : split_commas(s)) out.push_back(parse_int_arg(flag, item.c_str(), lo, hi));
    if (out.empty()) fail("%s: no values given", flag);
    return out;
}

static std::string num(double v) { return strprintf("%g", v); }

// ---------------------------------------------------------------------------
// The flag table: one row per flag (cli.h: Flag says what each field is).
// To add a flag: add a row. A subcommand sees it when its row in COMMANDS
// names the group.
// The ranges of the sampling numbers: the flags' and generation_config.json's.
static const Range TEMP_RANGE = {0, 1e6f}, TOP_P_RANGE = {0, 1, true}, PENALTY_RANGE = {0, 100, true},
                   ADD_PENALTY_RANGE = {-100, 100};

static std::string kernel_set_help() {
    std::string r;
    for (int i = 0; i < N_KERNEL_SETS; i++)
        r += strprintf("%s%s: %s", i ? "; " : "", KERNEL_SETS[i].name, KERNEL_SETS[i].what);
    return r;
}

std::vector<Flag> flag_table(Options& o, bool& help) {
    static const Options d;  // the defaults, for --help
    SamplerParams& s = o.gen.sampling;
    const SamplerParams& ds = d.gen.sampling;
    std::map<std::string, std::string>& src = o.sampling_source;
    // A value generation_config.json may set: --help cannot know the model's.
    auto from_config = [](const std::string& d) { return "the model's generation_config.json, else " + d; };
    return {
        // engine: engine_load()
        {"engine", "-m, --model", "DIR", "trained/kjv (else models/tiny)", "model folder (or its .safetensors); the first word also works",
         [&](const char* v) { o.engine.model = v; }},
        {"engine", "-c, --ctx", "N", "min(4096, max positions)", "KV cache length in tokens", [&](const char* v) {
             o.engine.ctx = parse_int_arg("--ctx", v, 1, 1 << 30); }},
        {"engine", "--threads", "N", "all cores", "CPU threads for the matrix products", [&](const char* v) {
             o.engine.threads = parse_int_arg("--threads", v, 1, 1024); }},
        {"engine", "--kernels", "SET", "fast", "the matrix kernels: " + kernel_set_help(), [&](const char* v) {
             o.engine.kernels = parse_kernel_set("--kernels", v); }},
        {"engine", "--quant", "TYPE", "none", "quantize the weights at load (q8_0: half the memory traffic of bf16): " + one_of(quant_names()), [&](const char* v) {
             std::vector<std::string> names = quant_names();
             if (std::find(names.begin(), names.end(), v) == names.end())
                 fail("--quant: \"%s\" is not one of %s", v, one_of(names).c_str());
             o.engine.quant = v; }},
        {"engine", "--force", nullptr, "off", "let --quant re-quantize weights a file already holds in another block format (refused without it: the roundings add up)",
         [&](const char*) { o.engine.force = true; }},
        {"engine", "--kv-type", "TYPE", "f32", "KV cache storage: " + one_of(KV_TYPES) + " (f16 and bf16: half the memory; q8_0: 34 bytes for 32 values)", [&](const char* v) {
             o.engine.kv_type = parse_kv_type("--kv-type", v); }},
        {"engine", "--device", "NAME", "cpu", "cpu, or cuda (a GPU; needs `make cuda`)", [&](const char* v) {
             o.engine.device = parse_device(v); }},  // engine_load applies it

        // sampling: the model's generation_config.json first, then these
        {"sampling", "-t, --temp", "T", from_config(num(ds.temperature)), "temperature, in " + TEMP_RANGE.str() + "; 0 = greedy (-t as in llama2.c; threads are --threads)", [&](const char* v) {
             s.temperature = parse_float_arg("--temp", v, TEMP_RANGE);
             src["temperature"] = "flag"; }},
        {"sampling", "--greedy", nullptr, "off", "always the most likely token (the same as -t 0)", [&](const char*) {
             s.temperature = 0;
             src["temperature"] = "flag"; }},
        {"sampling", "-k, --top-k", "K", from_config(num(ds.top_k)), "keep the K most likely tokens; <= 0 = off", [&](const char* v) {
             s.top_k = parse_int_arg("--top-k", v, -(1 << 30), 1 << 30);
             src["top-k"] = "flag"; }},
        {"sampling", "--top-p", "P", from_config(num(ds.top_p)), "nucleus: the fewest tokens whose probability reaches P, in " + TOP_P_RANGE.str(), [&](const char* v) {
             s.top_p = parse_float_arg("--top-p", v, TOP_P_RANGE);
             src["top-p"] = "flag"; }},
        {"sampling", "-s, --seed", "N", num(ds.seed), "random seed, 0 to 4294967295; -1 = a fresh one from the clock (printed, to repeat the run)", [&](const char* v) {
             src["seed"] = "flag";
             if (!strcmp(v, "-1")) {  // llama.cpp's -1: a new seed each run, said in the sampling line
                 // Drawn once per process: the second parse (over generation_config.json) keeps it.
                 static const uint32_t drawn = (uint32_t)(std::chrono::system_clock::now().time_since_epoch().count() ^
                                                          ((uint64_t)getpid() << 16));
                 s.seed = drawn;
                 o.seed_drawn = true;
                 o.seed_given = false;  // serve: a fresh seed per request, as without -s
                 return;
             }
             char* end = nullptr;
             unsigned long long x = strtoull(v, &end, 10);
             if (!*v || *end || v[0] == '-' || x > 0xffffffffull) fail("--seed: \"%s\" must be an integer in [0, 4294967295], or -1", v);
             s.seed = (uint32_t)x;
             o.seed_drawn = false;
             o.seed_given = true; }},
        {"sampling", "--repeat-penalty", "F", from_config(num(ds.repeat_penalty)), "divide (x if negative) logits of recent tokens, in " + PENALTY_RANGE.str() + "; 1 = off", [&](const char* v) {
             s.repeat_penalty = parse_float_arg("--repeat-penalty", v, PENALTY_RANGE);
             src["repeat-penalty"] = "flag"; }},
        {"sampling", "--frequency-penalty", "F", num(ds.frequency_penalty), "subtract F per occurrence in the window, F in " + ADD_PENALTY_RANGE.str(), [&](const char* v) {
             s.frequency_penalty = parse_float_arg("--frequency-penalty", v, ADD_PENALTY_RANGE);
             src["frequency-penalty"] = "flag"; }},
        {"sampling", "--presence-penalty", "F", num(ds.presence_penalty), "subtract F once if in the window, F in " + ADD_PENALTY_RANGE.str(), [&](const char* v) {
             s.presence_penalty = parse_float_arg("--presence-penalty", v, ADD_PENALTY_RANGE);
             src["presence-penalty"] = "flag"; }},
        {"sampling", "--repeat-last-n", "N", num(ds.repeat_last_n), "penalty window; 0 = off, -1 = everything", [&](const char* v) {
             s.repeat_last_n = parse_int_arg("--repeat-last-n", v, -1, 1 << 30);
             src["repeat-last-n"] = "flag"; }},
        {"sampling", "--no-gen-config", nullptr, "off", "ignore the model's generation_config.json (it applies by default, as in Hugging Face generate())",
         [&](const char*) { o.gen_config = false; }},
        {"sampling", "--gen-config", nullptr, "on", "apply the model's generation_config.json, flags still win",
         [&](const char*) { o.gen_config = true; }},

        // generation: generate and chat
        {"generation", "-n, --n-predict", "N", num(d.gen.n_predict), "most tokens to generate; -1 = until the context is full", [&](const char* v) {
             int n = parse_int_arg("--n-predict", v, -1, 1 << 30);
             o.gen.n_predict = n < 0 ? (1 << 30) : n; }},
        {"generation", "--system", "TEXT", "the template's", "system message for the chat template", [&](const char* v) { o.system = v; }},
        {"generation", "--no-think", nullptr, "off", "Qwen3: answer without a thinking block (the template's enable_thinking=false)", [&](const char*) { o.no_think = true; }},
        {"prefill", "--prefill", "MODE", "batched", "batched (chunks of 256) or stepwise (one token per forward)", [&](const char* v) {
             if (!strcmp(v, "stepwise")) o.gen.prefill_stepwise = true;
             else if (!strcmp(v, "batched")) o.gen.prefill_stepwise = false;
             else fail("--prefill: \"%s\" is not batched or stepwise", v); }},
        // one prompt, one answer: generate only
        {"prompt", "-p, --prompt", "TEXT", "the last word", "the prompt (instead of the last word); - = read it from standard input", [&](const char* v) {
             o.prompt_stdin = !strcmp(v, "-");
             o.prompt = o.prompt_stdin ? "" : v; }},
        {"prompt", "-f, --file", "FILE", "none", "read the prompt from FILE (without a prompt, piped standard input is read)", [&](const char* v) {
             o.prompt_file = v; }},
        {"prompt", "--raw", nullptr, "off", "no chat template: the prompt goes to the model as written", [&](const char*) { o.raw = true; }},
        {"prompt", "--stop", "TEXT", "none", "stop when the output reaches TEXT (repeatable)", [&](const char* v) {
             if (!*v) fail("--stop: the stop string is empty");
             o.gen.stop_strings.push_back(v); }},
        {"prompt", "--json", nullptr, "off", "print one JSON object (text, ids, finish reason, timings) instead of the text", [&](const char*) { o.json = true; }},

        // tracing: what -vv shows, and the files a run can leave
        {"trace", "--trace-layers", "LIST", "all", "-vv shows only these layers, e.g. 0,3,5-7", [&](const char* v) {
             g_watch_filter.layers = parse_index_list("--trace-layers", v); }},
        {"trace", "--trace-pos", "LIST", "all", "-vv shows only these positions, e.g. 0,4", [&](const char* v) {
             g_watch_filter.positions = parse_index_list("--trace-pos", v); }},
        {"trace", "--trace-match", "TEXT", "all", "-vv shows only tensors whose name contains TEXT (a,b: either)", [&](const char* v) {
             g_watch_filter.names = split_commas(v); }},
        {"report", "--report", "[FILE]", "trace_report.html", "write an HTML report: timeline, tokens, layers, attention, graph; "
         "serve: the batch of every step, written when it stops (the next word is the file unless it starts with - or holds a space)", [&](const char* v) {
             o.trace.report_path = v ? v : "trace_report.html"; }},
        {"report", "--trace-json", "FILE", "off", "write a Chrome trace (Perfetto): load, tokenize, prefill, decode steps, layers; serve: a track per slot", [&](const char* v) {
             o.trace.json_path = v; }},
        {"graph", "--graph", "FILE.dot", "off", "write the computation graph as Graphviz DOT (needs no prompt)", [&](const char* v) {
             o.trace.graph_path = v; }},

        // fwd
        {"fwd", "--tokens", "ID,ID,...", "none", "the token ids to run (instead of TOKEN POS)", [&](const char* v) {
             o.tokens = parse_int_list("--tokens", v, 0, 0x7fffffff); }},
        {"fwd", "--pos", "P", "0", "position of the first token", [&](const char* v) { o.pos = parse_int_arg("--pos", v, 0, 1 << 30); }},
        {"fwd", "--all", nullptr, "off", "print every position, not only the last", [&](const char*) { o.all = true; }},
        {"fwd", "--top", "N", num(d.top), "how many of the top logits to print", [&](const char* v) { o.top = parse_int_arg("--top", v, 1, 1000); }},
        {"fwd", "--dump", "FILE", "off", "write every position's logits as raw float32, T x vocab", [&](const char* v) { o.dump = v; }},
        {"fwd", "--json", nullptr, "off", "print the top logits as JSON", [&](const char*) { o.json = true; }},

        // ablate: every command that runs the CPU layer on one sequence
        {"ablate", "--ablate", "L.H", "none", "switch off head H of layer L (its output zeroed before the output projection), or L.mlp a layer's MLP; repeatable",
         [&](const char* v) {
             int layer, head;
             parse_ablate_spec(v, &layer, &head);  // the syntax now; the ranges once the model is loaded
             o.engine.ablate.push_back(v); }},
        // lens
        {"lens", "--pos", "N|all", "the last", "the position to read (0 = the first prompt token), or all of them", [&](const char* v) {
             o.lens_all = !strcmp(v, "all");
             if (!o.lens_all && (!*v || strspn(v, "0123456789") != strlen(v)))
                 fail("--pos: \"%s\" is not a position (0, 1, ...) or all", v);
             if (!o.lens_all) o.lens_pos = parse_int_arg("--pos", v, 0, 1 << 30); }},
        {"lens", "--top", "K", num(d.top), "how many of each depth's most likely tokens to show", [&](const char* v) {
             o.top = parse_int_arg("--top", v, 1, 1000); }},
        {"lens", "--target", "TEXT", "the model's top token", "the token to follow and attribute (its text must be one token)", [&](const char* v) {
             if (!*v) fail("--target: the text is empty");
             o.target = v; }},
        {"lens", "--rank-heads", nullptr, "off", "switch off each head and each MLP alone and rank them by the change in log p(target)",
         [&](const char*) { o.rank_heads = true; }},
        {"lens", "--raw", nullptr, "off", "no chat template: the prompt goes to the model as written", [&](const char*) { o.raw = true; }},
        {"lens", "--json", nullptr, "off", "print one JSON object instead of the tables", [&](const char*) { o.json = true; }},

        // encode, decode
        {"encode", "--file", "PATH", "none", "encode the bytes of this file instead of TEXT", [&](const char* v) { o.file = v; }},
        {"encode", "--pieces", nullptr, "off", "one line per token: id, vocabulary string, bytes", [&](const char*) { o.pieces = true; }},
        {"encode", "--time", nullptr, "off", "tokenizer load and encode time on stderr", [&](const char*) { o.timing = true; }},
        {"decode", "--raw", nullptr, "off", "no newline after the text", [&](const char*) { o.no_newline = true; }},

        // serve
        {"serve", "--host", "ADDR", d.host, "address to listen on (127.0.0.1: this machine only)", [&](const char* v) { o.host = v; }},
        {"serve", "--port", "N", num(d.port), "TCP port; 0 picks a free one", [&](const char* v) { o.port = parse_int_arg("--port", v, 0, 65535); }},
        {"serve", "--parallel", "N", num(d.parallel), "requests generated together, one batch (scheduler slots)", [&](const char* v) {
             o.parallel = parse_int_arg("--parallel", v, 1, 256); }},
        {"serve", "--batch-tokens", "N", num(d.batch_tokens), "rows per batched step: decode tokens plus prompt chunks", [&](const char* v) {
             o.batch_tokens = parse_int_arg("--batch-tokens", v, 1, 1 << 16); }},
        {"serve", "--kv-tokens", "N", "parallel x ctx", "positions in the shared paged KV cache", [&](const char* v) {
             o.kv_tokens = parse_int_arg("--kv-tokens", v, 1, 1 << 30); }},
        {"serve", "--queue", "N", num(d.queue_limit), "requests that may wait for a slot; more get 503", [&](const char* v) {
             o.queue_limit = parse_int_arg("--queue", v, 1, 1000); }},

        // bench (its --kernels and --quant take lists; they hide the engine's)
        {"bench", "--kernels", "LIST", "fast (and bf16dot on a CPU with AVX512_BF16)", "kernel sets to measure: fast,bf16dot,scalar,plain,...", [&](const char* v) {
             o.bench_kernels = split_commas(v);
             for (const std::string& k : o.bench_kernels) parse_kernel_set("--kernels", k); }},
        {"bench", "--quant", "LIST", "bf16,q8_0", "weight types to measure (bf16,q8_0,q4_0,...), or file: the weights as the file holds them", [&](const char* v) {
             o.bench_quants = split_commas(v);
             for (const std::string& q : o.bench_quants)
                 if (q != "none" && q != "file") parse_weight_type("--quant", q); }},
        {"bench", "--prompts", "LIST", "16,128", "prompt lengths for prefill", [&](const char* v) {
             o.bench_prompts = parse_int_list("--prompts", v, 1, 4096); }},
        {"bench", "--depth", "LIST", "none", "decode after a context of each length (0,1024,4096), beside llama-bench -d", [&](const char* v) {
             o.bench_depths = parse_int_list("--depth", v, 0, 1 << 20); }},
        {"bench", "--save", "[FILE]", "off", "append the run as a measurement record (JSON line) to FILE, or book/records/bench.jsonl", [&](const char* v) {
             o.bench_save = v ? v : "book/records/bench.jsonl"; }},
        // convert
        {"convert", "--type", "TYPE", "bf16", "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m or q5_k_m", [&](const char* v) {
             o.convert_type = v; }},
        {"convert", "--force", nullptr, "off", "let --type re-quantize a GGUF file's block-format weights into another format (refused without it)",
         [&](const char*) { o.engine.force = true; }},
        {"bench", "--llama", "FILE", "build/llama.cpp/bin/llama-bench", "llama.cpp's llama-bench, measured in the same run (tools/build_llama_bench.sh builds it)", [&](const char* v) {
             o.llama_bench = v; }},
        {"bench", "--reps", "N", num(d.reps), "runs per measurement (the median is shown)", [&](const char* v) { o.reps = parse_int_arg("--reps", v, 1, 100); }},
        {"bench", "--decode", "N", num(d.n_decode), "tokens per decode run", [&](const char* v) { o.n_decode = parse_int_arg("--decode", v, 0, 4096); }},

        // output: every subcommand
        {"output", "-q, --quiet", nullptr, "off", "no log: only the output (errors still go to stderr)", [&](const char*) {
             o.quiet = true;
             g_log_level = LOG_ERROR; }},
        // -v and -vv say what they show: sampling and forward passes where a
        // command has them (an earlier group's row hides output's, as
        // bench's --kernels hides the engine's).
        {"log-sampling", "-v", nullptr, "off", "debug log: one line per sampled token with its top-5, one per layer per forward", [&](const char*) {
             set_log_verbosity(1); }},
        {"log-sampling", "-vv", nullptr, "off", "trace log: also every intermediate tensor", [&](const char*) { set_log_verbosity(2); }},
        {"log-forward", "-v", nullptr, "off", "debug log: one line per layer per forward, what loading chose", [&](const char*) {
             set_log_verbosity(1); }},
        {"log-forward", "-vv", nullptr, "off", "trace log: also every intermediate tensor", [&](const char*) { set_log_verbosity(2); }},
        {"output", "-v", nullptr, "off", "debug log: more detail on stderr about what is read and checked", [&](const char*) {
             set_log_verbosity(1); }},
        {"output", "-vv", nullptr, "off", "trace log: the most detail", [&](const char*) { set_log_verbosity(2); }},
        {"output", "-h, --help", nullptr, "", "this list", [&](const char*) { help = true; }},
    };
}

std::vector<std::string> split_words(const char* list) {
    std::vector<std::string> out;
    for (const char* p = list; *p;) {
        size_t n = strcspn(p, " ");
        if (n) out.push_back(std::string(p, n));
        p += n + (p[n] ? 1 : 0);
    }
    return out;
}

bool has_word(const char* list, const std::string& word) {
    for (const std::string& w : split_words(list))
        if (w == word) return true;
    return false;
}

// The row for `name` among the groups of `c`, in their order (so bench's
// --kernels wins over the engine's).
const Flag* find_flag(const std::vector<Flag>& rows, const Command& c, const std::string& name) {
    for (const std::string& group : split_words(c.groups))
        for (const Flag& f : rows) {
            if (group != f.group) continue;
            std::string names = f.names;
            for (size_t i = 0; i < names.size();) {
                size_t j = names.find(", ", i);
                if (j == std::string::npos) j = names.size();
                if (names.compare(i, j - i, name) == 0 && j - i == name.size()) return &f;
                i = j + 2;
            }
        }
    return nullptr;
}

// Other names of a flag's long name: the one generation_config.json and
// Hugging Face use, which /set and a mistyped flag are also met with.
static const char* FLAG_ALIASES[][2] = {{"temperature", "temp"}};

// The flag of `c` that an unknown flag was most likely a slip for ("--temp"
// for "--tmep" or "--temprature"), by the rule a mistyped subcommand meets
// (nearest_name), or "". One-letter spellings are left out: any unknown
// letter is one edit from each of them.
static std::string nearest_flag(const std::vector<Flag>& rows, const Command& c, const std::string& flag) {
    auto bare = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('-'), s.size())); };
    std::vector<std::string> names, spellings;  // "temp" and "--temp"
    for (const Flag& f : rows)
        for (const std::string& n : split_commas(f.names)) {
            std::string s = n.substr(n.find_first_not_of(' '));
            if (s.size() > 2 && find_flag(rows, c, s) == &f) names.push_back(bare(s)), spellings.push_back(s);
        }
    for (auto& a : FLAG_ALIASES)
        if (find_flag(rows, c, std::string("--") + a[1])) {
            if (bare(flag) == a[0]) return std::string("--") + a[1];
            names.push_back(a[0]), spellings.push_back(std::string("--") + a[1]);
        }
    std::string best = nearest_name(bare(flag), names);
    for (size_t i = 0; i < names.size(); i++)
        if (names[i] == best) return spellings[i];
    return "";
}

// ---------------------------------------------------------------------------
// Parsing. Words that start with '-' are flags (a lone "-" and everything
// after "--" are not); the rest are positional.
void parse_words(const Command& c, int argc, char** argv, Options& o, bool& help) {
    std::vector<Flag> rows = flag_table(o, help);
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
        std::string name = a, value;
        bool has_value = false;
        const Flag* f = find_flag(rows, c, a);
        if (!f && a.compare(0, 2, "--") == 0 && a.find('=') != std::string::npos) {  // --flag=value
            name = a.substr(0, a.find('='));
            value = a.substr(a.find('=') + 1);
            has_value = true;
            f = find_flag(rows, c, name);
        } else if (!f && a[1] != '-') {  // -n64
            name = a.substr(0, 2);
            value = a.substr(2);
            has_value = true;
            f = find_flag(rows, c, name);
            if (f && !f->value) f = nullptr;
        }
        if (!f) {
            const char* sub = strcmp(c.name, "generate") ? c.name : "";
            std::string guess = nearest_flag(rows, c, name);
            fail("unknown flag \"%s\" for ./run%s%s%s (./run %s%s--help lists them)", name.c_str(), *sub ? " " : "", sub,
                 guess.empty() ? "" : ("; did you mean " + guess + "?").c_str(), sub, *sub ? " " : "");
        }
        if (!f->value) {
            if (has_value) fail("%s takes no value (\"%s\")", name.c_str(), a.c_str());
            f->set(nullptr);
        } else if (f->value[0] == '[') {  // an optional value
            bool take = !has_value && i + 1 < argc && argv[i + 1][0] != '-' && !strpbrk(argv[i + 1], " \t\n");
            if (take) value = o.report_word = argv[++i];
            f->set(has_value || take ? value.c_str() : nullptr);
        } else {
            if (!has_value && i + 1 >= argc) fail("%s needs a value (%s)", name.c_str(), f->value);
            if (!has_value) value = argv[++i];
            f->set(value.c_str());
        }
    }
}

// Hugging Face's generate() starts from the model's generation_config.json;
// --gen-config does the same. do_sample false means greedy whatever the
// temperature says. A GGUF file carries the same settings as keys, which
// gguf_load.h:gguf_generation_config hands back as this file's text (`text`).
void apply_generation_config(Options& o, const std::string& dir, std::string text) {
    SamplerParams& s = o.gen.sampling;
    const bool text_given = !text.empty();
    std::string path = text.empty() ? dir + "/generation_config.json" : dir + " (general.sampling.*)";
    if (text.empty()) {
        std::ifstream f(path, std::ios::binary);
        if (!f) fail("--gen-config: %s not found", path.c_str());
        text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    // The same ranges as the flags that set these values (json_read.h).
    nlohmann::json j = json_parse(text, path);
    if (!j.is_object()) fail("%s: expected a JSON object", path.c_str());
    s.temperature = (float)json_number(j, "temperature", s.temperature, TEMP_RANGE.lo, TEMP_RANGE.hi, path);
    s.top_p = (float)json_number(j, "top_p", s.top_p, TOP_P_RANGE.lo, TOP_P_RANGE.hi, path);
    if (s.top_p <= 0) fail("%s: \"top_p\" must be in %s, not 0", path.c_str(), TOP_P_RANGE.str().c_str());
    s.top_k = (int)json_int(j, "top_k", s.top_k, -(1 << 30), 1 << 30, path);
    s.repeat_penalty = (float)json_number(j, "repetition_penalty", s.repeat_penalty, PENALTY_RANGE.lo, PENALTY_RANGE.hi, path);
    if (s.repeat_penalty <= 0) fail("%s: \"repetition_penalty\" must be greater than 0", path.c_str());
    // Each setting the file holds is said to come from it (sampling_summary).
    const std::string source = text_given ? "the GGUF's general.sampling keys" : "generation_config.json";
    const char* keys[][2] = {{"temperature", "temperature"}, {"top_p", "top-p"}, {"top_k", "top-k"},
                             {"repetition_penalty", "repeat-penalty"}};
    for (auto& k : keys)
        if (j.contains(k[0])) o.sampling_source[k[1]] = source;
    if (!json_bool(j, "do_sample", true, path)) {
        s.temperature = 0;
        o.sampling_source["temperature"] = source + " do_sample false";
    }
}

// sampling: temperature 0.8 (generation_config.json), top-k 20 (flag), ...:
// what the sampler will use and where each value came from, so that a run
// can be told apart from (and repeated like) another.
std::string sampling_summary(const Options& o, bool every) {
    const SamplerParams& s = o.gen.sampling;
    const SamplerParams d;
    auto from = [&](const char* key) {
        auto it = o.sampling_source.find(key);
        return it == o.sampling_source.end() ? std::string("default") : it->second;
    };
    std::string r = strprintf("temperature %g (%s%s), top-k %d (%s), top-p %g (%s), repeat-penalty %g (%s)", s.temperature,
                              from("temperature").c_str(), s.temperature == 0 ? "; greedy" : "", s.top_k,
                              from("top-k").c_str(), s.top_p, from("top-p").c_str(), s.repeat_penalty,
                              from("repeat-penalty").c_str());
    if (every || s.frequency_penalty != d.frequency_penalty) r += strprintf(", frequency-penalty %g (%s)", s.frequency_penalty, from("frequency-penalty").c_str());
    if (every || s.presence_penalty != d.presence_penalty) r += strprintf(", presence-penalty %g (%s)", s.presence_penalty, from("presence-penalty").c_str());
    if (every || s.repeat_last_n != d.repeat_last_n) r += strprintf(", repeat-last-n %d (%s)", s.repeat_last_n, from("repeat-last-n").c_str());
    if (o.seed_drawn) r += strprintf(", seed %u (-s -1: drawn from the clock; -s %u repeats this run)", s.seed, s.seed);
    else r += strprintf(", seed %u (%s)", s.seed, from("seed").c_str());
    return "sampling: " + r;
}

// The chat's /set NAME VALUE: the sampling flag --NAME of `command`, run on
// `o` exactly as on the command line (the same ranges, the same errors).
// Returns the flag's long name ("--temp").
std::string set_sampling_flag(const char* command, Options& o, std::string name, const std::string& value) {
    const Command* c = find_command(command);
    bool help = false;
    std::vector<Flag> rows = flag_table(o, help);
    std::replace(name.begin(), name.end(), '_', '-');
    for (auto& a : FLAG_ALIASES)
        if (name == a[0]) name = a[1];
    const Flag* f = find_flag(rows, *c, name.compare(0, 1, "-") == 0 ? name : "--" + name);
    if (!f || strcmp(f->group, "sampling") || !f->value) {
        std::vector<std::string> names;  // every sampling flag that takes a value, from the table
        for (const Flag& r : rows)
            if (!strcmp(r.group, "sampling") && r.value) {
                std::string n = r.names, last = n.substr(n.rfind(' ') + 1);
                names.push_back(last.substr(last.find_first_not_of('-')));
            }
        fail("/set: \"%s\" is not a sampling setting (%s)", name.c_str(), one_of(names).c_str());
    }
    f->set(value.c_str());
    std::string n = f->names;
    return n.substr(n.rfind(' ') + 1);
}

// Edit distance with transpositions (optimal string alignment): "chta" is one
// step from "chat", as a typing slip is.
static int edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= b.size(); j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= a.size(); i++)
        for (size_t j = 1; j <= b.size(); j++) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
    std::string best;
    int best_d = 3;
    for (const std::string& name : names) {
        int d = edit_distance(word, name);
        int most = name.size() <= 4 ? 1 : 2;
        if (d > 0 && d <= most && d < best_d) best = name, best_d = d;
    }
    return best;
}
