// bench_record.cpp — a measuring run as a record (cpu/bench.h says its
// form): what the book's measurement tables are generated from
// (tools/records.py), so a number in the book is data a tool wrote, with
// the machine it came from.
#include <sys/stat.h>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>
#include "cpu/bench.h"
#include "common.h"
#include "cpu/roofline.h"

// One line of a command's output, or "" (popen: git, only to name the commit).
static std::string first_line(const char* cmd) {
    std::string out;
    if (FILE* f = popen(cmd, "r")) {
        char buf[256];
        if (fgets(buf, sizeof buf, f)) out = buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

// A field of /proc/cpuinfo's first processor ("model name", "flags", ...).
static std::string cpuinfo(const char* key) {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string k = line.substr(0, colon);
        while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
        if (k == key) return colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    }
    return "";
}

// The instruction sets a kernel set can use, of those the CPU lists.
static std::string isa_flags() {
    static const char* wanted[] = {"avx2",        "fma",         "f16c",        "avx512f",  "avx512bw",
                                   "avx512vl",    "avx512_bf16", "avx512_vnni", "avx512_fp16", "amx_tile",
                                   "amx_bf16",    "amx_int8",    "asimd",       "asimddp",  "sve"};
    std::string have = " " + cpuinfo(cpuinfo("flags").empty() ? "Features" : "flags") + " ", out;
    for (const char* w : wanted)
        if (have.find(std::string(" ") + w + " ") != std::string::npos) out += (out.empty() ? "" : " ") + std::string(w);
    return out;
}

// The label the appendix's tables group machines by: AMD's family 25 is
// Zen 3 (no AVX-512) or Zen 4, family 26 Zen 5; an Intel Xeon with AMX or
// without. Anything else: its model name.
static std::string machine_label() {
    std::string vendor = cpuinfo("vendor_id"), flags = " " + cpuinfo("flags") + " ";
    int family = atoi(cpuinfo("cpu family").c_str());
    bool avx512 = flags.find(" avx512f ") != std::string::npos;
    if (vendor == "AuthenticAMD" && family == 25) return avx512 ? "Zen 4" : "Zen 3";
    if (vendor == "AuthenticAMD" && family == 26) return "Zen 5";
    if (vendor == "GenuineIntel" && cpuinfo("model name").find("Xeon") != std::string::npos)
        return flags.find(" amx_tile ") != std::string::npos ? "Xeon (AMX)" : "Xeon";
    return cpuinfo("model name");
}

// FNV-1a, 64 bits: not a secret, a fingerprint. Any edit of the line's
// text changes it, so a number typed into a record by hand is caught.
static uint64_t fnv1a64(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

nlohmann::ordered_json record_row(const char* engine, const std::string& test, int depth, const std::string& weights,
                                  const std::string& kv, const std::string& kernels, int threads,
                                  const std::vector<double>& runs) {
    nlohmann::ordered_json r;
    r["engine"] = engine;
    r["test"] = test;
    r["depth"] = depth;
    r["weights"] = weights;
    r["kv"] = kv;
    r["kernels"] = kernels.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(kernels);
    r["threads"] = threads;
    r["tok_s"] = runs.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(median(runs));
    r["runs"] = runs;
    return r;
}

std::string record_commit() {
    std::string commit = first_line("git rev-parse --short HEAD 2>/dev/null");
    if (!commit.empty() && !first_line("git status --porcelain --untracked-files=no 2>/dev/null").empty())
        commit += "+changes";  // built from a tree with uncommitted changes
    return commit;
}

void record_append(const std::string& path, const std::string& command, const std::string& commit,
                   const nlohmann::ordered_json& figures, const nlohmann::ordered_json& rows) {
    nlohmann::ordered_json r;
    char date[32];
    time_t now = time(nullptr);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    r["tool"] = "run bench";
    r["date"] = date;
    std::string model = cpuinfo("model name");
    r["cpu"] = model.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(model);
    r["machine"] = machine_label();
    r["flags"] = isa_flags();
    r["cores"] = std::thread::hardware_concurrency();
    r["commit"] = commit.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(commit);
    r["command"] = command;
    double load = -1;
    if (FILE* f = fopen("/proc/loadavg", "r")) {
        if (fscanf(f, "%lf", &load) != 1) load = -1;
        fclose(f);
    }
    r["load"] = load >= 0 ? nlohmann::ordered_json(load) : nlohmann::ordered_json();
    r["figures"] = figures;
    r["rows"] = rows;
    r["source"] = nullptr;
    std::string body = r.dump();  // one line: dump() without an indent writes no newline
    char check[64];
    snprintf(check, sizeof check, ",\"check\":\"fnv1a64:%016llx\"}", (unsigned long long)fnv1a64(body));
    std::string line = body.substr(0, body.size() - 1) + check + "\n";
    std::string old;
    if (std::ifstream in{path, std::ios::binary}) {
        std::ostringstream ss;
        ss << in.rdbuf();
        old = ss.str();
        if (!old.empty() && old.back() != '\n') old += '\n';
    }
    write_file_whole(path, old + line);
}
