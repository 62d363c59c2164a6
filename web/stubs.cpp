// web/stubs.cpp — stand-ins for what a web page has no use for, so the
// engine's own files link unchanged into the WebAssembly module.
//
// The server (serve/) listens on a TCP port, which a page cannot; its
// command fails with one line, as any unavailable command does. libedit's
// line editor needs a terminal; in the page standard input is the input
// box, never a tty, so run.cpp never calls it, nor ppoll, which waits for
// a key there. pthread_kill is only reached from a SIGINT handler on a
// second thread, and the module has one thread and no signals.
#include <cerrno>
#include <cstdio>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include "cli.h"
#include "common.h"
#include "editline/readline.h"

int cmd_serve(int, char**) { fail("serve: not available in the browser (a page cannot listen on a port); use ./run serve"); }

extern "C" {
int ppoll(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*) {
    errno = ENOSYS;
    return -1;
}
int pthread_kill(pthread_t, int) { return ENOSYS; }

rl_getc_func_t* rl_getc_function = nullptr;
int rl_catch_signals = 0;
FILE* rl_outstream = nullptr;
char* readline(const char*) { return nullptr; }
int rl_initialize(void) { return 0; }
void using_history(void) {}
void stifle_history(int) {}
int read_history(const char*) { return 0; }
int write_history(const char*) { return 0; }
int add_history(const char*) { return 0; }
}
