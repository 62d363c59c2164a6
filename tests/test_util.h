// tests/test_util.h — what several doctest files share: a file's bytes as a
// string and back, and a small generated model to load or to damage.
#pragma once
#include <doctest/doctest.h>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include "cpu/kernel_sets.h"  // the tests choose and compare kernel sets
#include "model.h"

// A whole file; one that cannot be read fails the test that asked.
static inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "cannot read " << path << " (run from the repo root after make, make models)");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}
static inline void spit(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
}

// A small F32 model (hidden 16, 2 layers, 2 heads, 1 KV head, vocab 40),
// made fresh by build/gen_model in build/test_models/NAME; `extra` adds
// generator flags (--shards 3, --untied, --preset qwen3-tiny ...).
static inline std::string small_model(const std::string& name, const std::string& extra = "") {
    std::string dir = "build/test_models/" + name;
    std::string cmd = "rm -rf " + dir + " && mkdir -p build/test_models && build/gen_model " + extra +
                      " --dtype f32 --hidden 16 --intermediate 24 --layers 2 --heads 2 --kv-heads 1 --vocab 40"
                      " --max-pos 64 --tokenizer /nonexistent --out " + dir + " >/dev/null";
    REQUIRE(system(cmd.c_str()) == 0);
    return dir;
}

// What load_model says about a folder ("" when it loads).
static inline std::string load_error(const std::string& dir) {
    Model m;
    try {
        load_model(m, dir);
    } catch (const LanternError& e) {
        return e.what();
    }
    return "";
}
