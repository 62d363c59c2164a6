// cli_flags.h — what cli.cpp (the subcommands) and cli_flags.cpp (the flags)
// share: a flag's row, a subcommand's row, and the lookups between them.
// The rest of the program includes cli.h.
#pragma once
#include <functional>
#include <string>
#include <vector>
#include "cli.h"

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
