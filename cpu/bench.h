// bench.h — what the parts of `./run bench` share (cpu/bench.cpp: the
// machine and the weight types; cpu/bench_depth.cpp: decode after a long
// context; cpu/bench_record.cpp: the measurement records).
#pragma once
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
#include "common.h"

// llama.cpp's llama-bench, measured in the same run (tools/build_llama_bench.sh
// builds it). why_not: empty when it can run.
struct LlamaBench {
    std::string bin = "build/llama.cpp/bin/llama-bench";
    std::string why_not;
};
// One row llama-bench printed: a test of n_prompt prompt tokens or n_gen
// generated ones after a context of n_depth, at avg_ts tokens per second.
struct LlamaRow {
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    double ts = 0;
};
// One llama-bench run (-r 1 -o csv) with `args` (e.g. "-p 128 -n 0"), on
// `gguf` with `threads` threads; no rows where it did not run.
std::vector<LlamaRow> llama_bench_rows(const LlamaBench& lb, const std::string& gguf, int threads,
                                       const std::string& args);

// What the depth bench needs from bench.cpp's setup.
struct Net;
struct Model;
struct DepthBench {
    Model* model;
    std::vector<int> depths;   // --depth: contexts before decode
    int n_decode, reps, threads;
    double weight_bytes;       // every matrix a decode step reads
    double bandwidth_gbs;      // the machine's read bandwidth (bench.cpp)
    DType kv_type;             // --kv-type
    std::string kv_name;       // the same as llama-bench's -ctk/-ctv take it: "f16"
    std::string weights, kernels;  // the weight type and kernel set measured, for the records
    LlamaBench lb;
    std::string gguf;          // the same weights for llama-bench, or "" (not measured)
};
// Decode speed after a context of each depth, beside llama.cpp's `-d`:
// prints the table and adds its rows to `rows` (record_row's form).
void bench_depth(const DepthBench& b, nlohmann::ordered_json& rows);

// A measurement record (book/records/*.jsonl, one JSON object a line): the
// run's date, CPU, flags, cores, commit, command and load, then `figures`
// (the machine's) and `rows` (every row printed), then a checksum over the
// line, so a record changed by hand fails the book check
// (tools/records.py verifies it). Appended whole: the file is rewritten
// under a temporary name and renamed (common.h:OutFile).
// One row of a record: an engine's runs of one test (tok/s each); its
// median is the row's tok_s. kernels "": llama.cpp's row (null).
nlohmann::ordered_json record_row(const char* engine, const std::string& test, int depth, const std::string& weights,
                                  const std::string& kv, const std::string& kernels, int threads,
                                  const std::vector<double>& runs);
void record_append(const std::string& path, const std::string& command, const std::string& commit,
                   const nlohmann::ordered_json& figures, const nlohmann::ordered_json& rows);
// The commit the run is measured at: git's short hash, "+changes" when
// tracked files differ from it, "" outside a git tree. Taken when the run
// starts (a long run's tree may change before it ends).
std::string record_commit();
