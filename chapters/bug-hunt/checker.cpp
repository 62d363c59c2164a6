// chapters/bug-hunt/checker.cpp — is the planted bug gone?
//
// The checker compares the whole engine with the student's four kernels
// against the engine with kernels.cpp's, on models/tiny under --kernels
// plain (where these four do attention's and the MLP's arithmetic). It does
// not compare the four functions one by one: that would name the wrong one
// and spoil the hunt. Run with ./run's arguments instead of none (or
// --json), it is ./run with the student's kernels, for tools/trace_diff.py.
#include "../checker_common.h"
#include "cli.h"

float vec_dot_plain_reference(const float* a, const void* b, DType bt, int n);
float vec_dot_plain_student(const float* a, const void* b, DType bt, int n);
void vec_axpy_plain_reference(float* y, float alpha, const void* x, DType xt, int n);
void vec_axpy_plain_student(float* y, float alpha, const void* x, DType xt, int n);
void softmax_reference(float* x, int n);
void softmax_student(float* x, int n);
void swiglu_reference(float* gate, const float* up, int n);
void swiglu_student(float* gate, const float* up, int n);

// The engine's calls land here.
float vec_dot_plain(const float* a, const void* b, DType bt, int n) {
    return g_side == Side::Reference ? vec_dot_plain_reference(a, b, bt, n) : vec_dot_plain_student(a, b, bt, n);
}
void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n) {
    if (g_side == Side::Reference) vec_axpy_plain_reference(y, alpha, x, xt, n);
    else vec_axpy_plain_student(y, alpha, x, xt, n);
}
void softmax(float* x, int n) {
    if (g_side == Side::Reference) softmax_reference(x, n);
    else softmax_student(x, n);
}
void swiglu(float* gate, const float* up, int n) {
    if (g_side == Side::Reference) swiglu_reference(gate, up, n);
    else swiglu_student(gate, up, n);
}

int main(int argc, char** argv) {
    // ./run's command line (a subcommand, a model, a prompt): the engine
    // itself, with the student's kernels.
    if (argc > 1 && argv[1][0] != '-') {
        g_side = Side::Student;
        try {
            return run_command_line(argc, argv);
        } catch (const LanternError& e) {
            fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
    }
    checker_begin(argc, argv, "bug-hunt",
                  "the engine with your softmax, swiglu, vec_dot_plain and vec_axpy_plain",
                  "用你的 softmax、swiglu、vec_dot_plain 和 vec_axpy_plain 运行引擎");
    const std::string hunt =
        tr("which of the four functions? Do not guess: run\n"
           "  /usr/bin/python3 tools/trace_diff.py models/tiny --tokens 1,2,3 --binary build/exercise/bug-hunt/check\n"
           "(this checker with ./run's arguments is ./run with your functions). The first tensor it marks was\n"
           "computed by one of them; chapter 10 says which tensor comes from which step of the layer.",
           "是四个函数中的哪一个？别猜，运行\n"
           "  /usr/bin/python3 tools/trace_diff.py models/tiny --tokens 1,2,3 --binary build/exercise/bug-hunt/check\n"
           "（给这个检查程序 ./run 的参数，它就是换上了你的函数的 ./run）。它标出的第一个张量\n"
           "就是其中某个函数算出来的；第 10 章说明了哪个张量来自层里的哪一步。");
    Model m;
    Tokenizer tok;
    kernels_init(KernelSet::Plain, 1);

    Group one(tr("a one-token prompt at position 0 (a bug can hide here)", "位置 0 上只有一个词元的提示词（bug 可能藏在这里）"));
    if (load_tiny(one, m, tok)) check_forward(one, m, {tokenizer_encode(tok, "In")[0]}, 0, 1e-4);
    one.end();

    Group f32(tr("end to end: models/tiny, a 9-token prompt and 8 decode steps, f32 cache",
                 "端到端：models/tiny，9 个词元的提示词加 8 步解码，f32 缓存"), 2);
    if (!m.layers.empty()) {
        std::vector<int> prompt = tokenizer_encode(tok, "The first tensor that differs is the clue.");
        check_forward(f32, m, prompt, 8, 1e-4);
        if (f32.failed) f32.say_indented(tr("hint: ", "提示：") + hunt);
    }
    f32.end();

    Group bf16(tr("end to end: the same with a bf16 cache (--kv-type bf16)", "端到端：同上，换成 bf16 缓存（--kv-type bf16）"), 2);
    if (!m.layers.empty())
        check_forward(bf16, m, tokenizer_encode(tok, "A cache of half the bytes."), 6, 1e-4, 0, DType::BF16);
    bf16.end();
    return finish("bug-hunt");
}
