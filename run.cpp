// run.cpp — the command line: generation (prefill + decode) and the
// subcommands that let a reader look inside (info, fwd, encode, decode, ...).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "common.h"
#include "logging.h"
#include "model.h"
#include "net.h"

// ---------------------------------------------------------------------------
// ./run encode MODEL_OR_TOKENIZER_JSON "text" [--file PATH] [--pieces]
int cmd_encode(int argc, char** argv) {
    fail("encode: not implemented yet");
}

// ./run decode MODEL id id ...
int cmd_decode(int argc, char** argv) {
    fail("decode: not implemented yet");
}

#ifndef LANTERN_NO_MAIN
int main(int argc, char** argv) {
    try {
        if (argc >= 2 && !strcmp(argv[1], "encode")) return cmd_encode(argc - 2, argv + 2);
        if (argc >= 2 && !strcmp(argv[1], "decode")) return cmd_decode(argc - 2, argv + 2);
        fprintf(stderr, "usage: ./run [info|fwd|encode|decode] ...\n");
        return 2;
    } catch (const LanternError& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
#endif
