// main.cpp — ./run: hand the command line to its subcommand (cli.cpp) and
// turn an error into one line on stderr and exit status 1.
//
// Library code throws LanternError with a message that names the file or
// flag and the problem. Anything else that escapes (out of memory, a bug) is
// still one line and status 1, never an abort with a core dump.
#include <cstdio>
#include <exception>
#include "cli.h"

int main(int argc, char** argv) {
    try {
        return run_command_line(argc, argv);
    } catch (const LanternError& e) {
        fprintf(stderr, "error: %s\n", e.what());
    } catch (const std::exception& e) {
        fprintf(stderr, "error: internal: %s\n", e.what());
    }
    return 1;
}
