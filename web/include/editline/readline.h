// web/include/editline/readline.h — the part of libedit's readline interface
// that run.cpp names, for the browser build, which has no terminal: the
// page's input box is the chat's standard input, never a tty, so run.cpp
// reads it with std::getline and none of these is called (web/stubs.cpp
// defines them so the engine links unchanged).
#pragma once
#include <cstdio>

extern "C" {
typedef int rl_getc_func_t(FILE*);
extern rl_getc_func_t* rl_getc_function;
extern int rl_catch_signals;
extern FILE* rl_outstream;
char* readline(const char* prompt);
int rl_initialize(void);
void using_history(void);
void stifle_history(int max);
int read_history(const char* file);
int write_history(const char* file);
int add_history(const char* line);
}
