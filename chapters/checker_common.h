// checker_common.h — what every exercise checker shares.
//
// A checker is linked with two versions of the exercise's functions: the
// engine's own, renamed f_reference, and the student's, renamed f_student
// (chapters/build_exercise.sh explains how). The checker defines f itself,
// forwarding to one of the two according to g_side. So it can
//   1. call both on the same inputs and compare the results, case by case;
//   2. run the whole engine once with each and compare what comes out.
//
// Feedback is the point of a checker: every failed case says what the input
// was, what was expected, what came back, and what the usual cause is.
//
// Two ways to print it. Text (the default) is for the student at the
// terminal. `check --json` (make exercise EX=NAME JSON=1) is for grading a
// class (tools/grade_class.sh): one JSON object on stdout with the groups
// passed, the points and, for each group, the same diagnosis the text
// would have shown.
//
// In Chinese when asked: `check --lang zh`, or a Chinese locale (LANG=zh_CN.UTF-8
// make exercise EX=NAME). Every message is written twice, tr(english, chinese).
#pragma once
#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>
#include <nlohmann/json.hpp>
#include "common.h"
#include "logging.h"
#include "kernels.h"
#include "model.h"
#include "net.h"
#include "generate.h"
#include "tokenizer.h"

// Which version the engine's calls reach.
enum class Side { Reference, Student };
inline Side g_side = Side::Student;

// The language of the feedback, set by checker_begin(). Both texts sit side
// by side at each message, so a diagnosis cannot say more in one language
// than in the other; a format string keeps its % conversions in the same
// order, so both take the same arguments.
inline bool g_zh = false;
inline const char* tr(const char* en, const char* zh) { return g_zh ? zh : en; }

// What the locale asks for, read as POSIX does: the first of LC_ALL,
// LC_MESSAGES and LANG that is set and not empty.
inline bool locale_is_zh() {
    for (const char* var : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
        const char* v = getenv(var);
        if (v && *v) return strncmp(v, "zh", 2) == 0;
    }
    return false;
}

// printf into a std::string.
inline std::string fmt(const char* f, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// ---------------------------------------------------------------------------
// Cases and groups.
//
// Cases come in groups ("random vectors", "edge cases", "end to end"). A
// passing group prints one line. A failing group prints its first failure
// in full (later ones just by name): one clear problem at a time is easier
// to act on than a wall of numbers.

inline std::string g_case;           // the case running now: named if the student's code crashes
inline int g_groups_failed = 0, g_groups = 0;
inline bool g_json = false;          // --json: one JSON object at the end instead of the text
inline std::string g_exercise;       // the name in the last line (chapters/build_exercise.sh's, for a variant)
inline nlohmann::ordered_json g_results = nlohmann::ordered_json::array();  // the groups ended so far, for --json
inline std::string g_crash_json;     // what a crash prints in --json mode, ready before each case runs

// Points: a group is worth 1, a whole-model group 2 (the constructor's
// second argument); the student earns a group's points when all its cases pass.
inline int g_points = 0, g_points_possible = 0;

// The object --json prints: totals first, then one entry per group.
inline nlohmann::ordered_json results_json() {
    int passed = 0;
    for (const auto& r : g_results) passed += r["passed"].get<bool>();
    return {{"exercise", g_exercise}, {"passed", g_groups_failed == 0 && g_groups > 0}, {"groups", (int)g_results.size()},
            {"groups_passed", passed}, {"points", g_points}, {"points_possible", g_points_possible},
            {"results", g_results}};
}

struct Group {
    std::string name;
    int cases = 0, failed = 0, points = 1;
    std::string diagnosis;  // what the text mode printed for a failure, kept for --json
    explicit Group(const std::string& n, int worth = 1) : name(n), points(worth) { g_groups++; }
    // Names the case about to run (for the crash message and for fail()).
    void start(const std::string& c) {
        g_case = name + tr(": ", "：") + c;
        cases++;
        if (g_json) {
            // A crash cannot safely build strings: the whole answer is made here.
            nlohmann::ordered_json j = results_json();
            j["passed"] = false;
            j["points_possible"] = nullptr;  // the groups after this one are unknown
            j["crash"] = g_case;
            g_crash_json = j.dump() + "\n";
        }
    }
    // The running case failed. `detail` says what happened, `hint` why it
    // usually happens; both may span lines.
    void fail(const std::string& detail, const std::string& hint) {
        failed++;
        if (failed == 1) {
            say(tr("FAIL  ", "失败  ") + g_case);
            say_indented(detail);
            if (!hint.empty()) say_indented(tr("hint: ", "提示：") + hint);
        } else if (failed <= 4) {
            say(tr("      also fails: ", "      同样失败：") + g_case);
        }
    }
    // Ends the group; returns true when every case passed.
    bool end() {
        if (failed == 0)
            say(fmt(tr("ok    %s (%d case%s)", "通过  %s（%d 个用例%s）"), name.c_str(), cases, cases == 1 ? "" : tr("s", "")));
        else {
            say(fmt(tr("      -> %s: %d of %d cases failed", "      -> %s：%d 个用例未通过（共 %d 个）"), name.c_str(), failed, cases));
            g_groups_failed++;
        }
        g_points_possible += points;
        if (failed == 0) g_points += points;
        g_results.push_back({{"group", name}, {"cases", cases}, {"failed", failed}, {"passed", failed == 0},
                             {"points", failed == 0 ? points : 0}, {"points_possible", points},
                             {"diagnosis", diagnosis}});
        g_case.clear();
        return failed == 0;
    }
    // One line of the report: on the terminal, or into this group's diagnosis.
    void say(const std::string& line) {
        if (g_json) diagnosis += line + "\n";
        else printf("%s\n", line.c_str()), fflush(stdout);
    }
    void say_indented(const std::string& text) {
        size_t at = 0;
        while (at <= text.size()) {
            size_t nl = text.find('\n', at);
            if (nl == std::string::npos) nl = text.size();
            say("      " + text.substr(at, nl - at));
            at = nl + 1;
        }
    }
};

// The last line, and the exit status: 0 only when every group passed.
inline int finish(const char* exercise) {
    const char* name = g_exercise.empty() ? exercise : g_exercise.c_str();
    if (g_json) printf("%s\n", results_json().dump().c_str());
    else if (g_groups_failed == 0)
        printf(tr("\nPASS  %s: all %d groups of checks pass. Well done.\n", "\n通过  %s：全部 %d 组检查都通过了，干得好。\n"),
               name, g_groups);
    else
        printf(tr("\nNOT YET  %s: %d of %d groups failed. Fix the first FAIL above and run again.\n",
                  "\n还没通过  %s：%d 组检查未通过（共 %d 组）。先改好上面第一个“失败”，再运行一次。\n"),
               name, g_groups_failed, g_groups);
    return g_groups_failed == 0 ? 0 : 1;
}

// A crash in the student's code should still name the case that caused it.
// Only write() here: the crash may have left the heap broken.
inline void on_crash(int sig) {
    if (g_json) {
        (void)!write(1, g_crash_json.data(), g_crash_json.size());
        _exit(3);
    }
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     tr("\nCRASH (%s) during: %s\n      hint: usually an index outside an array, or a read past the end of the input: check every "
                        "bound against the sizes in the stub's comment.\n",
                        "\n崩溃（%s），发生在：%s\n      提示：通常是数组下标越界，或读过了输入的末尾：对照桩函数注释里给出的大小，"
                        "检查每一个边界。\n"),
                     sig == SIGSEGV ? tr("segmentation fault", "段错误") : sig == SIGFPE ? tr("arithmetic error", "算术错误") : tr("abort", "程序中止"),
                     g_case.empty() ? tr("(setup)", "（准备阶段）") : g_case.c_str());
    if (n > 0) (void)!write(1, buf, (size_t)std::min(n, (int)sizeof buf - 1));
    _exit(3);
}

// Call first in main(): the command line (--json, --lang zh|en), the crash
// handler, unbuffered-enough output, the title: `what` in English, `what_zh`
// in Chinese (not tr(): the language is not known yet when the arguments are
// evaluated). chapters/build_exercise.sh
// compiles every checker with EXERCISE_NAME, the name it was asked for
// (rope-hard runs rope's checker under its own name).
inline void checker_begin(int argc, char** argv, const char* exercise, const char* what, const char* what_zh) {
#ifdef EXERCISE_NAME
    g_exercise = EXERCISE_NAME;
#else
    g_exercise = exercise;
#endif
    auto lang_at = [&](int i) {  // "zh" or "en" when argv[i] is --lang with one of them after it
        return strcmp(argv[i], "--lang") == 0 && i + 1 < argc && (!strcmp(argv[i + 1], "zh") || !strcmp(argv[i + 1], "en"))
                   ? argv[i + 1] : nullptr;
    };
    g_zh = locale_is_zh();
    for (int i = 1; i < argc; i++)  // --lang first: it also decides how a wrong argument is refused
        if (lang_at(i)) g_zh = strcmp(lang_at(i), "zh") == 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) g_json = true;
        else if (lang_at(i)) i++;
        else {
            fprintf(stderr, tr("%s: unknown argument '%s' (the checker takes --json and --lang zh|en, or nothing)\n",
                               "%s：不认识的参数“%s”（检查程序只接受 --json 和 --lang zh|en，或者不带参数）\n"),
                    argv[0], argv[i]);
            exit(2);
        }
    }
    signal(SIGSEGV, on_crash);
    signal(SIGFPE, on_crash);
    signal(SIGABRT, on_crash);
    setvbuf(stdout, nullptr, _IOLBF, 0);
    g_log_level = LOG_WARN;  // the engine's info lines would bury the feedback
    if (g_json) g_crash_json = nlohmann::ordered_json({{"exercise", g_exercise}, {"passed", false}, {"crash", tr("(setup)", "（准备阶段）")}}).dump() + "\n";
    else printf(tr("Checking %s: %s\n\n", "检查 %s：%s\n\n"), g_exercise.c_str(), tr(what, what_zh));
}

// ---------------------------------------------------------------------------
// Numbers.

// Random inputs: a fixed seed, so a failing case fails the same way every run.
inline std::mt19937& rng() {
    static std::mt19937 g(20240601);
    return g;
}
inline float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng()); }
inline float gaussian(float sd = 1.0f) { return std::normal_distribution<float>(0.0f, sd)(rng()); }
inline int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng()); }  // [lo, hi]
inline std::vector<float> gaussians(int n, float sd = 1.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = gaussian(sd);
    return v;
}

// A few elements of v, around index `at`: "[3]=0.25, [4]=-1.5, ...".
inline std::string show(const float* v, int n, int at = 0, int count = 6) {
    int from = std::max(0, std::min(at - 2, n - count));
    std::string s;
    if (from > 0) s += "..., ";
    for (int i = from; i < n && i < from + count; i++) s += fmt("[%d]=%.7g%s", i, v[i], i + 1 < n ? ", " : "");
    if (from + count < n) s += "...";
    return s;
}
inline std::string show(const std::vector<float>& v, int at = 0) { return show(v.data(), (int)v.size(), at); }

// Compares got with expected elementwise. Element i may be off by
//   rtol * (|expected[i]| + rms(expected))
// — relative to its own size and to the vector's typical size, so an
// element that happens to be near zero does not demand absurd precision.
// Returns "" when close, else a description of the first difference (and a
// diagnosis when the whole output has a recognisable shape: all zeros, NaN,
// the same wrong factor everywhere).
inline std::string compare(const float* expected, const float* got, int n, double rtol = 1e-5) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)expected[i] * expected[i];
    double rms = n ? std::sqrt(ss / n) : 0;
    int bad = -1, n_bad = 0;
    for (int i = 0; i < n; i++) {
        double e = expected[i], g = got[i];
        bool same = (std::isinf(e) && e == g) || (std::isnan(e) && std::isnan(g));
        double err = std::fabs(e - g);
        if (!same && !(err <= rtol * (std::fabs(e) + rms) + 1e-30)) {
            if (bad < 0) bad = i;
            n_bad++;
        }
    }
    if (bad < 0) return "";
    std::string s = fmt(tr("element %d: expected %.9g, got %.9g (%d of %d elements differ)\n",
                           "第 %d 个元素：应为 %.9g，实际是 %.9g（%d 个元素不同，共 %d 个）\n"),
                        bad, expected[bad], got[bad], n_bad, n);
    s += tr("expected: ", "应为：") + show(expected, n, bad) + "\n";
    s += tr("got:      ", "实际：") + show(got, n, bad);
    bool zeros = true, stub = true, nonfinite = false;
    for (int i = 0; i < n; i++) {
        if (got[i] != 0) zeros = false;
        if (got[i] != 0 || std::signbit(got[i])) stub = false;  // x * 0 can give -0; a stub's 0.0f cannot
        if (!std::isfinite(got[i]) && std::isfinite(expected[i])) nonfinite = true;
    }
    if (stub) s += tr("\n(your output is all zeros: is the function still the stub?)", "\n（你的输出全是 0：这个函数是不是还是桩函数？）");
    else if (zeros) s += tr("\n(your output is all zeros)", "\n（你的输出全是 0）");
    else if (nonfinite)
        s += tr("\n(your output has inf or NaN where the expected value is finite: an overflow, or 0/0?)",
                "\n（应为有限值的地方，你的输出是 inf 或 NaN：是溢出了，还是算了 0/0？）");
    else if (std::fabs(expected[bad]) > 1e-20) {
        double k = (double)got[bad] / expected[bad];
        bool same_factor = true;
        for (int i = 0; i < n; i++)
            if (std::fabs(expected[i]) > 1e-6 * rms && std::fabs((double)got[i] - k * expected[i]) > 1e-4 * std::fabs(k * expected[i]))
                same_factor = false;
        if (same_factor) s += fmt(tr("\n(every element is off by the same factor %.6g)", "\n（每个元素都差了同一个倍数 %.6g）"), k);
    }
    return s;
}
inline std::string compare(const std::vector<float>& e, const std::vector<float>& g, double rtol = 1e-5) {
    if (e.size() != g.size()) return fmt(tr("expected %zu values, got %zu", "应有 %zu 个值，实际有 %zu 个"), e.size(), g.size());
    return compare(e.data(), g.data(), (int)e.size(), rtol);
}

inline std::string show_ids(const std::vector<int>& ids, size_t at = 0, size_t count = 12) {
    size_t from = at > 3 ? at - 3 : 0;
    std::string s = "[";
    if (from > 0) s += "..., ";
    for (size_t i = from; i < ids.size() && i < from + count; i++) s += fmt("%d%s", ids[i], i + 1 < ids.size() ? ", " : "");
    if (from + count < ids.size()) s += "...";
    return s + "]";
}
// "" when equal, else where the two id lists first part.
inline std::string compare_ids(const std::vector<int>& expected, const std::vector<int>& got) {
    if (expected == got) return "";
    size_t i = 0;
    while (i < expected.size() && i < got.size() && expected[i] == got[i]) i++;
    std::string s = fmt(tr("they first differ at index %zu (expected %zu ids, got %zu)\n",
                           "从下标 %zu 开始不同（应有 %zu 个 id，实际有 %zu 个）\n"),
                        i, expected.size(), got.size());
    s += tr("expected: ", "应为：") + show_ids(expected, i) + "\n";
    s += tr("got:      ", "实际：") + show_ids(got, i);
    return s;
}

// ---------------------------------------------------------------------------
// End to end, on models/tiny: random weights, but the real Qwen tokenizer
// and every line of the forward pass and the sampler.

inline const char* TINY = "models/tiny";

// Loads models/tiny (with whichever side g_side says) and its tokenizer.
// On failure the group records why and false comes back.
inline bool load_tiny(Group& g, Model& m, Tokenizer& tok) {
    g.start(tr("load models/tiny", "加载 models/tiny"));
    try {
        load_model(m, TINY);
        tokenizer_load(tok, TINY);
        return true;
    } catch (const LanternError& e) {
        g.fail(fmt(tr("loading %s failed: %s", "加载 %s 失败：%s"), TINY, e.what()),
               tr("models/tiny comes from `make models`; if it is there, the error above is the engine's.",
                  "models/tiny 由 `make models` 生成；如果它已经在那里，上面的错误就来自引擎本身。"));
        return false;
    }
}

// Teacher forcing, both sides in lockstep: one KV cache per side, the same
// tokens into both (the prompt, then the reference's greedy choices), and
// after every forward the two logit rows compared. Catches a kernel that is
// slightly off long before it changes a generated token.
// The sequence starts at position `start` (0 normally; later to test
// positions a short prompt never reaches).
inline void check_forward(Group& g, const Model& m, const std::vector<int>& prompt, int steps, double rtol,
                          int start = 0, DType kv_type = DType::F32) {
    Net ref, stu;
    net_init(ref, m, start + (int)prompt.size() + steps + 1, kv_type);
    net_init(stu, m, start + (int)prompt.size() + steps + 1, kv_type);
    int V = m.cfg.vocab;
    std::vector<int> tokens = prompt;
    int at = 0;  // index into tokens
    for (int step = 0; step <= steps; step++) {
        int T = step == 0 ? (int)prompt.size() : 1, pos = start + at;
        g.start(step == 0 ? fmt(tr("forward over the %d-token prompt at positions %d..%d",
                                   "对 %d 个词元的提示词做前向传播，位置 %d..%d"), T, pos, pos + T - 1)
                          : fmt(tr("decode step %d at position %d", "第 %d 步解码，位置 %d"), step, pos));
        try {
            g_side = Side::Reference;
            const float* r = forward(ref, &tokens[at], T, pos, false);
            std::vector<float> want(r, r + V);
            g_side = Side::Student;
            const float* got = forward(stu, &tokens[at], T, pos, false);
            std::string diff = compare(want.data(), got, V, rtol);
            if (!diff.empty()) {
                g.fail(fmt(tr("the logits (scores of all %d tokens) differ: ", "logit（全部 %d 个词元的分数）不同："), V) + diff,
                       g_groups_failed ? tr("fix the failures above first: they are smaller and say more.",
                                            "先修好上面的失败：它们规模更小，说明的问题也更多。")
                                       : tr("the cases above pass but the whole model does not? Look for what they "
                                            "miss: the model's real sizes, positions past 0, several heads.",
                                            "上面的用例都通过了，整个模型却不行？找找它们没覆盖到的地方：模型的真实尺寸、"
                                            "0 以后的位置、多个注意力头。"));
                return;
            }
            at += T;
            tokens.push_back(sample_argmax(want.data(), V));
        } catch (const LanternError& e) {
            g.fail(tr("the engine stopped with an error: ", "引擎报错停止：") + std::string(e.what()), "");
            return;
        }
    }
}

// One generation from scratch: fresh cache, fresh sampler.
inline GenerateResult run_generate(const Model& m, const Tokenizer& tok, const std::string& prompt_text,
                                   const GenerateParams& params) {
    Net net;
    net_init(net, m, 512);
    Sampler s;
    sampler_init(s, params.sampling);
    return generate(net, tok, s, tokenizer_encode(tok, prompt_text), 0, params);
}

// generate() once with each side and compare the ids: the prompt's and the
// generated ones.
inline void check_generate(Group& g, const Model& m, const Tokenizer& tok, const std::string& prompt_text,
                           const GenerateParams& params, const std::string& what, std::string hint) {
    g.start(what);
    if (g_groups_failed) hint = tr("fix the failures above first: they are smaller and say more.",
                                   "先修好上面的失败：它们规模更小，说明的问题也更多。");
    GenerateResult res[2];
    for (int side = 0; side < 2; side++) {
        g_side = side == 0 ? Side::Reference : Side::Student;
        try {
            res[side] = run_generate(m, tok, prompt_text, params);
        } catch (const LanternError& e) {
            g.fail(fmt(tr("%s stopped with an error: %s", "%s报错停止：%s"),
                       side == 0 ? tr("the reference", "参考实现") : tr("your version", "你的版本"), e.what()),
                   hint);
            g_side = Side::Student;
            return;
        }
    }
    g_side = Side::Student;
    std::string d = compare_ids(res[0].prompt_ids, res[1].prompt_ids);
    if (!d.empty()) return g.fail(tr("the prompt's token ids differ: ", "提示词的词元 id 不同：") + d, hint);
    d = compare_ids(res[0].ids, res[1].ids);
    if (!d.empty())
        return g.fail(fmt(tr("prompt \"%s\": the generated ids differ: ", "提示词“%s”：生成的 id 不同："), prompt_text.c_str()) + d +
                          fmt(tr("\nexpected text: \"%s\"\ngot text:      \"%s\"", "\n应为文本：“%s”\n实际文本：“%s”"),
                              res[0].text.c_str(), res[1].text.c_str()),
                      hint);
}
