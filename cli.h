// cli.h — the command line: one flag table and one command table for every
// subcommand (cli.cpp), and the options they fill in.
//
// A subcommand is a function `int cmd_x(int argc, char** argv)` that starts
// with `Options o = parse_command("x", argc, argv);`. The flags it accepts
// are the groups its row in the command table names; --help for it is
// printed from the same rows, with their defaults.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>
#include "generate.h"
#include "trace_report.h"

struct Options {
    // engine: what engine_load() loads (generate.h)
    EngineOptions engine;
    // sampling and generation
    GenerateParams gen;
    bool gen_config = true;  // start from the model's generation_config.json (--no-gen-config: don't)
    bool seed_given = false; // -s/--seed was on the command line (serve: else a fresh seed per request)
    bool seed_drawn = false; // -s -1: the seed was drawn from the clock
    // Where each sampling setting came from: "flag" or "generation_config.json"
    // (a setting not in the map is the default). Keys: temperature, top-k,
    // top-p, repeat-penalty, frequency-penalty, presence-penalty, repeat-last-n, seed.
    std::map<std::string, std::string> sampling_source;
    std::string prompt;      // -p, -f FILE, standard input, or the last positional word
    std::string prompt_file; // -f FILE
    bool prompt_stdin = false;  // -p -, or no prompt and standard input is not a terminal
    std::string system;      // --system
    bool raw = false;        // --raw: no chat template
    bool json = false;       // --json
    bool no_think = false;   // --no-think: Qwen3's template with its empty think block
    // tracing and output
    TraceOptions trace;
    bool quiet = false;      // -q: only the generated text
    // fwd
    std::vector<int> tokens;
    int pos = 0, top = 5;
    bool all = false;
    std::string dump;
    // lens
    int lens_pos = -1;        // --pos N; -1: the last position
    bool lens_all = false;    // --pos all
    std::string target;       // --target TEXT
    bool rank_heads = false;  // --rank-heads
    // encode, decode
    std::string file;
    bool pieces = false, timing = false, no_newline = false;
    // serve
    std::string host = "127.0.0.1";
    int port = 8080, queue_limit = 16;
    int parallel = 4;       // --parallel: requests generated together (scheduler slots)
    int batch_tokens = 256; // --batch-tokens: rows per batched step
    int kv_tokens = 0;      // --kv-tokens: positions in the paged KV cache; 0 = parallel x ctx
    // bench
    std::vector<std::string> bench_kernels /* empty: fast, and bf16dot where it runs */, bench_quants = {"bf16", "q8_0"};
    std::string convert_type = "bf16";  // convert --type
    std::string llama_bench;  // bench --llama: llama-bench's path (empty: the default build path)
    std::vector<int> bench_prompts = {16, 128};
    std::vector<int> bench_depths;  // bench --depth: decode after these contexts (cpu/bench_depth.cpp)
    std::string bench_save;         // bench --save: the records file to append to ("": none)
    int reps = 3, n_decode = 64;

    std::vector<std::string> positional;  // the words that are not flags
    std::string report_word;              // the word --report took as its file (for a clearer "no prompt")
};

// Parses the flags of subcommand `name` ("generate" for `./run "prompt"`):
// prints its help and exits on -h/--help; throws LanternError on a bad flag.
// For commands that sample, the model's generation_config.json is applied
// first and the flags parsed again on top of it, so flags win.
Options parse_command(const char* name, int argc, char** argv);
// ./run --help, ./run help [SUB], ./run --version; then the subcommand.
int run_command_line(int argc, char** argv);

// Flag values shared with other files' own parsers.
KernelSet parse_kernel_set(const char* flag, const std::string& name);  // fast | plain | scalar | avx2 | avx512
DType parse_kv_type(const char* flag, const std::string& name);         // f32 | f16 | bf16 | q8_0
int parse_int_arg(const char* flag, const char* s, int lo, int hi);
// One line: the sampling settings in effect and where each came from; the
// penalties that are off at their defaults are left out unless `every`.
std::string sampling_summary(const Options& o, bool every = false);
// The chat's /set NAME VALUE: sampling flag --NAME applied to `o` as on the
// command line (throws LanternError on a bad name or value); returns "--temp" etc.
std::string set_sampling_flag(const char* command, Options& o, std::string name, const std::string& value);

// The subcommands (inspect.cpp, run.cpp, server.cpp, bench.cpp).
int cmd_info(int argc, char** argv);
int cmd_fwd(int argc, char** argv);
int cmd_encode(int argc, char** argv);
int cmd_decode(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_convert(int argc, char** argv);  // gguf_convert.cpp
int cmd_lens(int argc, char** argv);     // lens/lens_cmd.cpp

// Helpers the subcommands share.
std::string json_string(const std::string& s);  // a JSON string literal for any bytes

// ---------------------------------------------------------------------------
// The tables behind the command line, shared by cli.cpp (the subcommands)
// and cli_flags.cpp (the flags).
// One row of the flag table (cli_flags.cpp:flag_table):
//   group   which subcommands see it (COMMANDS lists the groups each accepts)
//   names   "-t, --temp": every spelling
//   value   "T" (required), "[FILE]" (optional), nullptr (a switch)
//   def     the default --help shows
//   set     what it does with the value
struct Flag {
    const char* group;
    const char* names;
    const char* value;
    std::string def;
    std::string help;
    std::function<void(const char* value)> set;
};

// One row of the subcommand table (cli.cpp:COMMANDS).
struct Command {
    const char* name;
    const char* usage;
    const char* summary;
    const char* groups;  // flag groups, in --help order
    int max_args;        // positional words after the model (-1: any number)
    int (*run)(int argc, char** argv);
    const char* more = nullptr;  // lines its --help prints after the usage
};

const Command* find_command(const std::string& name);  // nullptr if there is none
// Every flag, each row's `set` writing into `o` (-h/--help into `help`).
std::vector<Flag> flag_table(Options& o, bool& help);
// The row for `name` among the groups of `c`, in their order (so bench's
// --kernels wins over the engine's); nullptr if `c` has no such flag.
const Flag* find_flag(const std::vector<Flag>& rows, const Command& c, const std::string& name);
std::vector<std::string> split_words(const char* list);  // "a b c" -> {a, b, c}
bool has_word(const char* list, const std::string& word);
// Applies the flags among the words and collects the rest in o.positional.
void parse_words(const Command& c, int argc, char** argv, Options& o, bool& help);
// The model's generation_config.json in `dir` (or a GGUF's keys, as that
// file's `text`) into o's sampling settings.
void apply_generation_config(Options& o, const std::string& dir, std::string text = "");

std::string one_of(const std::vector<std::string>& names);  // "a, b or c"
std::vector<std::string> kernel_set_names();
std::vector<std::string> quant_names();  // "none" and the weight types --quant takes
// The name among `names` that `word` was most likely a slip for, or "": within
// 2 edits (a transposed pair counts one), within 1 for names of 4 letters or
// fewer, whose 2-edit neighbours are mostly ordinary words ("hello", "help").
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);
