// bench.cpp — ./run bench: the measuring tool of the performance chapter.
//
//   ./run bench [MODEL] [--threads N] [--kernels fast,avx2,scalar,...] [--llama PATH|none]
//               [--quant bf16,q8_0,q4_0,...,file] [--reps 3] [--prompts 16,128]
//               [--decode 64] [--prefill batched|stepwise] [--kv-type f32|f16|bf16]
//
// First the machine (cpu/roofline.cpp): how many bytes per second the cores
// read from memory and how many fused multiply-adds per second they do, the
// two ceilings of the roofline, and which CPU it is.
//
// Then the model, for each weight type and kernel set asked for: prefill
// tok/s for each prompt length (one forward over the whole prompt), and
// decode tok/s over --decode tokens after a 16-token prompt, each the median
// of --reps runs. Weight types other than the file's are converted in memory
// (an f32 copy of a bf16 model takes twice the file size); `--quant file`
// measures the weights as the file holds them, e.g. a GGUF file's own mix
// of types (a Q4_K_M file is several).
//
// Last, memory: the peak resident set, and how much of what was resident
// after each row was the mapped weight files and how much the process's own
// memory. The file's own type (bf16 here) is read in place through mmap, so
// a model far larger than the free memory still runs: its pages are file
// cache that the kernel can drop and read again. A converted row gives the
// file's pages back (model.cpp:release_file_pages), as --quant does, so its
// RSS is its copies, the KV cache and the buffers.
//
// Other shapes of the family (book/17-beyond-05b.md), e.g. Qwen3-0.6B:
//   build/gen_model --preset qwen3-0.6b --out models/qwen3-0.6b
//   ./run bench models/qwen3-0.6b --quant bf16          (make bench runs it)
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include "cli.h"
#include "cpu/bench.h"
#include "gguf/gguf.h"
#include "gguf/quants.h"
#include "kernels.h"
#include "cuda/kernels_cuda.h"
#include "cpu/roofline.h"
#include "model.h"
#include "net.h"
#include "sampler.h"

// Memory, in MB, from a line of /proc/self/status: VmRSS (resident now),
// VmHWM (the peak resident set), RssFile (pages of mapped files: the weights
// read in place, and the program) and RssAnon (the process's own memory: KV
// cache, scratch, converted weights). A weight file that is mapped and not
// copied shows up in RssFile only.
static double status_mb(const char* key) {
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            kb = atof(line + n + 1);
            break;
        }
    fclose(f);
    return kb / 1e3;
}

// ---------------------------------------------------------------------------
// Weight types: point every matrix of the model at a converted copy.

struct Weights {
    std::vector<Mat*> mats;      // every matrix forward() multiplies by, lm_head last
    std::vector<Mat> original;   // as loaded
    std::vector<std::vector<uint8_t>> storage;
};

static void collect_weights(Model& m, Weights& w) {
    for (LayerWeights& L : m.layers)
        for (Mat* p : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) w.mats.push_back(p);
    if (m.lm_head.data != m.embed.data) w.mats.push_back(&m.embed);
    w.mats.push_back(&m.lm_head);
    for (Mat* p : w.mats) w.original.push_back(*p);
}

// Returns false when the type cannot be made (Q8_0 needs columns % 32 == 0).
// keep: the weights as loaded.
// pack: the level whose packed tiles the set runs (0: none): lay the block
// formats its tile reads out for it, as engine_load does for the weights it
// loads (model.cpp:pack_model); the file's own
// matrices get packed copies. Each kernel set gets the layout it reads, so a
// row of `--kernels avx2` never runs on a layout made for another set.
// Whether two kernel sets lay the weights out alike (avx512 and bf16dot
// share their packed tiles): then a set change keeps the weights.
static bool same_packing(const SimdKernels* a, const SimdKernels* b) {
    auto group = [](const SimdKernels* k) { return k ? k->packed_group : nullptr; };
    return group(a) == group(b) && (!a || !b || a->packed_q8 == b->packed_q8);
}

static bool use_weights(Model& m, Weights& w, DType dt, bool keep, const SimdKernels* pack) {
    bool tied = m.lm_head.data == m.embed.data;
    w.storage.clear();  // frees the previous copies before making new ones
    w.storage.shrink_to_fit();
    w.storage.reserve(w.mats.size());
    for (size_t i = 0; i < w.mats.size(); i++) *w.mats[i] = w.original[i];
    if (tied) m.embed = m.lm_head;
    for (size_t i = 0; i < w.mats.size(); i++) {
        const Mat& o = w.original[i];
        DType t = keep ? o.dtype : block_fallback(dt, o.cols);  // k-quants: llama-quantize's fallback (quants.h)
        Mat as_t = o;
        as_t.dtype = t;
        bool packs = can_pack(as_t) && packed_tile_reads(t, pack);
        if (o.dtype == t && !packs) continue;
        if (o.cols % dtype_block_size(t)) return false;
        w.storage.emplace_back();
        if (o.dtype != t) *w.mats[i] = quantize_mat(o, t, w.storage.back());  // any type (quants.h)
        if (packs) pack_mat(*w.mats[i], w.storage.back());  // in place, or a copy of the file's matrix
        release_file_pages(m, o.data, o.bytes());  // as --quant does; read again if a later row uses them
    }
    if (tied) m.embed = m.lm_head;
    return true;
}

// Whether some matrix still reads the mapped file (not a copy: --quant's,
// a conversion above, or model.cpp:pack_model's).
static bool reads_file(const Model& m, const Weights& w) {
    auto inside = [](const void* p, const void* map, size_t size) {
        return map && (const uint8_t*)p >= (const uint8_t*)map && (const uint8_t*)p < (const uint8_t*)map + size;
    };
    for (const Mat* p : w.mats) {
        if (inside(p->data, m.map, m.file_size)) return true;
        for (const MappedFile& f : m.files)
            if (inside(p->data, f.map, f.size)) return true;
    }
    return false;
}

// Bytes decode reads per token: every matrix once (the embedding lookup is
// one row, the KV cache a few MB: left out).
static double weight_bytes(const Weights& w) {
    double b = 0;
    for (const Mat* p : w.mats) b += p->bytes();
    return b;
}

// FLOPs per prompt token in prefill: 2 per weight of every layer matrix (the
// LM head runs for the last token only).
static double prefill_flops_per_token(const Model& m) {
    double n = 0;
    for (const LayerWeights& L : m.layers)
        for (const Mat* p : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) n += (double)p->rows * p->cols;
    return 2 * n;
}

// llama.cpp, measured in the same run: its own benchmark, llama-bench,
// built natively for this machine by tools/build_llama_bench.sh, on the
// same weights written as GGUF by `./run convert` (cached in build/bench/),
// or, with --quant file on a GGUF model, on that very file.
// Called between Lantern's runs, with the same thread count, so both see
// the same machine load. Without the binary or the GGUF the columns say
// "not measured" (cpu/bench.h: LlamaBench).
// The GGUF of `model_dir` in weight type dt, made once.
static std::string gguf_for(const std::string& model_dir, DType dt, std::string& why_not) {
    std::string name = model_dir;
    for (char& ch : name)
        if (ch == '/') ch = '_';
    std::string out = "build/bench/" + name + "-" + dtype_name(dt) + ".gguf";
    if (FILE* f = fopen(out.c_str(), "rb")) {
        fclose(f);
        return out;
    }
    std::string type = dtype_name(dt);  // "BF16"; convert's --type takes "bf16"
    for (char& ch : type) ch = (char)tolower(ch);
    // This program's own path: inside system()'s shell, /proc/self/exe would
    // name the shell.
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        why_not = "cannot find this program's path (/proc/self/exe)";
        return "";
    }
    self[len] = 0;
    std::string cmd = "mkdir -p build/bench && '" + std::string(self) + "' convert '" + model_dir + "' '" + out +
                      "' --type " + type + " >/dev/null 2>&1";
    if (system(cmd.c_str()) != 0) {
        why_not = std::string("./run convert to ") + dtype_name(dt) + " GGUF failed";
        std::remove(out.c_str());
        return "";
    }
    return out;
}

std::vector<LlamaRow> llama_bench_rows(const LlamaBench& lb, const std::string& gguf, int threads,
                                       const std::string& args) {
    std::vector<LlamaRow> rows;
    std::string cmd = lb.bin + " -m '" + gguf + "' -t " + std::to_string(threads) + " " + args + " -r 1 -o csv 2>/dev/null";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return rows;
    char line[4096];
    std::vector<std::string> header;
    while (fgets(line, sizeof line, f)) {
        std::vector<std::string> cols;
        std::string cur;
        for (char* p = line; *p && *p != '\n'; p++) {
            if (*p == '"') continue;
            if (*p == ',') { cols.push_back(cur); cur.clear(); }
            else cur += *p;
        }
        cols.push_back(cur);
        if (header.empty()) { header = cols; continue; }
        LlamaRow r;
        for (size_t i = 0; i < cols.size() && i < header.size(); i++) {
            if (header[i] == "n_prompt") r.n_prompt = atoi(cols[i].c_str());
            if (header[i] == "n_gen") r.n_gen = atoi(cols[i].c_str());
            if (header[i] == "n_depth") r.n_depth = atoi(cols[i].c_str());
            if (header[i] == "avg_ts") r.ts = atof(cols[i].c_str());
        }
        rows.push_back(r);
    }
    pclose(f);
    return rows;
}

// Prefill tok/s of each prompt length (pp[i] for prompts[i]) and decode
// tok/s over `n_decode` tokens in one llama-bench run; 0 where it did not report.
static void llama_bench_once(const LlamaBench& lb, const std::string& gguf, int threads, const std::vector<int>& prompts,
                             int n_decode, std::vector<double>& pp, double& tg) {
    pp.assign(prompts.size(), 0);
    tg = 0;
    std::string list;
    for (int p : prompts) list += (list.empty() ? "" : ",") + std::to_string(p);
    for (const LlamaRow& r : llama_bench_rows(lb, gguf, threads, "-p " + list + " -n " + std::to_string(n_decode))) {
        for (size_t i = 0; i < prompts.size(); i++)
            if (r.n_prompt == prompts[i] && r.n_gen == 0) pp[i] = r.ts;
        if (r.n_gen > 0 && r.n_prompt == 0) tg = r.ts;
    }
}

// ---------------------------------------------------------------------------

int cmd_bench(int argc, char** argv) {
    // The flags are cli.cpp's (groups bench, engine, prefill, output).
    Options o = parse_command("bench", argc, argv);
    std::string path = o.engine.model.empty() ? "models/qwen2.5-0.5b" : o.engine.model;
    // By default the exact fast set, and beside it bf16dot where the CPU
    // has it: the two sides of the precision trade (book/12-performance.md),
    // with the logit difference between them printed after the table.
    std::vector<std::string> kernels = o.bench_kernels;
    if (kernels.empty()) {
        kernels = {"fast"};
        if (kernel_set_runs_here(kernel_set_info(KernelSet::BF16Dot))) kernels.push_back("bf16dot");
    }
    const std::vector<std::string>& quants = o.bench_quants;
    const std::vector<int>& prompts = o.bench_prompts;
    int threads = o.engine.threads, reps = o.reps, n_decode = o.n_decode;
    bool stepwise = o.gen.prefill_stepwise;
    DType kv_type = o.engine.kv_type;
    std::string kv_name = dtype_name(kv_type);  // as llama-bench's -ctk takes it: "f16"
    for (char& ch : kv_name) ch = (char)tolower(ch);
    LlamaBench lb;
    if (!o.llama_bench.empty()) lb.bin = o.llama_bench;
    std::vector<KernelSet> sets;
    for (const std::string& k : kernels) sets.push_back(parse_kernel_set("--kernels", k));
    std::vector<DType> types;  // "file": the weights as loaded (marked by keep below)
    for (const std::string& q : quants)
        types.push_back(q == "none" ? DType::BF16 : q == "file" ? DType::F32 : parse_weight_type("--quant", q));  // quants.h

    std::string commit = o.bench_save.empty() ? "" : record_commit();  // the tree the run starts from
    kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
    printf("cpu        %s\n", cpu_description().c_str());
    printf("machine    %d threads, --kernels fast runs %s here\n", g_kernels.threads,
           (kernels_init(KernelSet::Fast, threads), kernel_path_name()));
    kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
    warn_if_busy();
    Engine e;
    // The last position's logits of the longest prompt, per weight type and
    // kernel set: what bf16dot changes against an exact set.
    struct Logits { std::string type, set; bool exact; std::vector<float> v; };
    std::vector<Logits> seen;
    EngineOptions eo = o.engine;
    eo.model = path;
    eo.kernels = KernelSet::Plain;  // the weights as in the file: use_weights lays them out per kernel set
    engine_load(e, eo, ENGINE_MODEL);  // the KV caches are made per kernel set below
    kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
    Model& m = e.model;
    const Config& c = m.cfg;
    Bandwidth bandwidth;
    if (m.file_size >= bandwidth.bytes) bandwidth.data = m.map;
    std::vector<double> bws;
    for (int r = 0; r < std::max(reps, 3); r++) bws.push_back(bandwidth.measure());
    double bw = median(bws);
    double peak8 = measure_fma_gflops(std::max(reps, 3), 8);
    double peak16 = cpu_has_avx512() ? measure_fma_gflops(std::max(reps, 3), 16) : 0;
    printf("memory     read bandwidth %.1f GB/s (median; %s)\n", bw,
           bandwidth.data ? "reading the model file's pages" : "a 256 MB buffer");
    if (peak16 > 0)
        printf("compute    FMA peak %.0f GFLOP/s 8 floats wide, %.0f 16 wide (f32, all threads)\n", peak8, peak16);
    else printf("compute    FMA peak %.0f GFLOP/s (f32, all threads)\n", peak8);
    Weights w;
    collect_weights(m, w);
    double flops = prefill_flops_per_token(m);
    int max_prompt = *std::max_element(prompts.begin(), prompts.end());
    int ctx = std::min(c.max_pos, std::max(max_prompt, 16 + n_decode) + 1);
    printf("model      %s: %d layers, hidden %d, %.0f M parameters, file %.0f MB; prefill %.3g GFLOP/token\n",
           m.dir.c_str(), c.n_layers, c.hidden, parameter_count(m) / 1e6, weights_bytes(m) / 1e6, flops / 1e9);
    printf("runs       median of %d; decode: %d tokens after a 16-token prompt; prefill %s; KV cache %s\n\n", reps,
           n_decode, stepwise ? "one token per forward (stepwise)" : "one forward per prompt", dtype_name(kv_type));

    // The run as a record (--save): the machine's figures, then a row per
    // number printed below.
    nlohmann::ordered_json figures, rec_rows = nlohmann::ordered_json::array();
    figures["bandwidth_gbs"] = bw;
    figures["fma_gflops_8"] = peak8;
    figures["fma_gflops_16"] = peak16 > 0 ? nlohmann::ordered_json(peak16) : nlohmann::ordered_json();
    std::string command = "./run bench";
    for (int i = 0; i < argc; i++) command += std::string(" ") + argv[i];
    auto save = [&] {
        if (o.bench_save.empty()) return;
        record_append(o.bench_save, command, commit, figures, rec_rows);
        printf("record     appended to %s\n", o.bench_save.c_str());
    };
    if (lb.bin == "none") lb.why_not = "--llama none";
    else if (access(lb.bin.c_str(), X_OK) != 0)
        lb.why_not = lb.bin + " is not built (bash tools/build_llama_bench.sh builds it once)";

    if (!o.bench_depths.empty()) {  // decode after long contexts: the first weight type and kernel set
        bool keep = quants[0] == "file";
        kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
        if (!use_weights(m, w, types[0], keep, g_kernels.simd)) fail("--depth: the weights cannot be %s", quants[0].c_str());
        std::string gguf;
        if (lb.why_not.empty() && keep && is_gguf_path(path)) gguf = path;
        else if (lb.why_not.empty()) gguf = gguf_for(path, keep ? w.original.back().dtype : types[0], lb.why_not);
        DepthBench b{&m, o.bench_depths, n_decode, reps, g_kernels.threads, weight_bytes(w), bw, kv_type, kv_name,
                     keep ? "file" : quants[0], kernel_path_name(), lb, gguf};
        bench_depth(b, rec_rows);
        save();
        return 0;
    }

    std::vector<int> tokens(std::max(max_prompt, 16) + n_decode);
    uint32_t s = 12345;
    for (int& t : tokens) t = (int)((s = s * 1664525u + 1013904223u) >> 8) % c.vocab;

    printf("%-5s %-14s %3s", "type", "kernels", "thr");
    for (int p : prompts) printf(" %9s", ("pp" + std::to_string(p)).c_str());
    printf(" %8s %8s %6s %6s %8s %7s", "decode", "GB/tok", "effic", "%FMA", "llama.tg", "ratio");
    for (int p : prompts) printf(" %9s %7s", ("llama.pp" + std::to_string(p)).c_str(), "ratio");
    printf(" %9s\n", "RSS MB");
    double anon_mb = 0, file_mb = 0;  // the most seen after a row (its cache and copies still alive)
    for (size_t ti = 0; ti < types.size(); ti++) {
        DType dt = types[ti];
        bool keep = quants[ti] == "file";
        const char* label = keep ? "file" : dtype_name(dt);
        kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
        const SimdKernels* packed = g_kernels.simd;
        if (!use_weights(m, w, dt, keep, packed)) {
            printf("%-5s (skipped: columns not a multiple of the block)\n", label);
            continue;
        }
        // llama.cpp reads the same weights as GGUF: the file itself, or a
        // conversion of the model into that type.
        std::string gguf;
        if (lb.why_not.empty() && keep && is_gguf_path(path)) gguf = path;
        else if (lb.why_not.empty()) gguf = gguf_for(path, keep ? w.original.back().dtype : dt, lb.why_not);
        double bytes = weight_bytes(w);
        // The kernel sets that read the same layout of the weights (avx512
        // and bf16dot do) are measured side by side: one round of every set
        // per rep, the order turned by one each rep, llama.cpp after the
        // first set's round. A shared machine's memory reads a third slower
        // in some minutes than in others; measured one after the other, two
        // sets that decode alike would differ by whichever minute each got.
        for (size_t s0 = 0; s0 < sets.size();) {
            kernels_init(sets[s0], threads);
            if (!same_packing(g_kernels.simd, packed)) use_weights(m, w, dt, keep, packed = g_kernels.simd);
            size_t s1 = s0 + 1;  // sets s0 .. s1-1 share this layout
            for (; s1 < sets.size(); s1++) {
                kernels_init(sets[s1], threads);
                if (!same_packing(g_kernels.simd, packed)) break;
            }
            struct Row {
                KernelSet set;
                Net net;
                std::vector<std::vector<double>> pp_runs, llama_pp;  // per prompt
                std::vector<double> tg, bw_near, llama_tg;
            };
            std::vector<std::unique_ptr<Row>> rows;
            for (size_t i = s0; i < s1; i++) {
                rows.push_back(std::make_unique<Row>());
                Row& row = *rows.back();
                row.set = sets[i];
                kernels_init(row.set, threads);
                net_init(row.net, m, ctx, kv_type);
                row.pp_runs.resize(prompts.size());
                row.llama_pp.resize(prompts.size());
            }
            // Runs tokens[0..n) from position 0, batched or one at a time.
            auto prefill = [&](Net& net, int n) {
                net_reset(net);
                if (!stepwise) return forward(net, tokens.data(), n, 0, false);
                const float* l = nullptr;
                for (int i = 0; i < n; i++) l = forward(net, tokens.data() + i, 1, i, false);
                return l;
            };
            for (auto& row : rows) {
                kernels_init(row->set, threads);
                prefill(row->net, 1);  // touches every weight once: page faults are not timed
            }
            // Per round: every prompt, then decode, then llama.cpp (first
            // kernel set only), so a load that comes and goes hits both
            // sides alike. Decode runs right after a bandwidth measurement:
            // the efficiency compares the medians of measurements taken side
            // by side.
            for (int r = 0; r < reps; r++)
                for (size_t j = 0; j < rows.size(); j++) {
                    Row& row = *rows[(j + r) % rows.size()];
                    kernels_init(row.set, threads);
                    for (size_t i = 0; i < prompts.size(); i++) {
                        double t0 = now_s();
                        const float* l = prefill(row.net, prompts[i]);
                        row.pp_runs[i].push_back(prompts[i] / (now_s() - t0));
                        if (r == 0 && i + 1 == prompts.size())  // the longest prompt's logits, for the precision line
                            seen.push_back({label, kernel_path_name(), kernel_set_info(row.set).exact,
                                            std::vector<float>(l, l + c.vocab)});
                    }
                    if (n_decode > 0) {
                        int next = sample_argmax(prefill(row.net, 16), c.vocab);
                        row.bw_near.push_back(bandwidth.measure());
                        // The probe read the file; weights that all live in copies do not need its pages.
                        if (bandwidth.data && !reads_file(m, w)) release_file_pages(m, m.map, m.file_size);
                        double t0 = now_s();
                        for (int i = 0; i < n_decode; i++)
                            next = sample_argmax(forward(row.net, &next, 1, 16 + i, false), c.vocab);
                        row.tg.push_back(n_decode / (now_s() - t0));
                    }
                    if (row.set == sets[0] && !gguf.empty()) {
                        std::vector<double> pp;
                        double tgv;
                        llama_bench_once(lb, gguf, g_kernels.threads, prompts, std::max(n_decode, 1), pp, tgv);
                        for (size_t i = 0; i < prompts.size(); i++)
                            if (pp[i] > 0) row.llama_pp[i].push_back(pp[i]);
                        if (tgv > 0) row.llama_tg.push_back(tgv);
                    }
                }
            for (auto& row_p : rows) {
                Row& row = *row_p;
                kernels_init(row.set, threads);
                std::vector<double> pp_tps;
                for (auto& v : row.pp_runs) pp_tps.push_back(median(v));
                double decode = row.tg.empty() ? 0 : median(row.tg);
                double effic = row.tg.empty() ? 0 : bytes * decode / 1e9 / median(row.bw_near);
                bool wide = peak16 > 0 && strncmp(kernel_path_name(), "avx512", 6) == 0;  // zmm tiles: the 16-wide peak
                printf("%-5s %-14s %3d", label, kernel_path_name(), g_kernels.threads);
                for (double v : pp_tps) printf(" %9.1f", v);
                printf(" %8.2f %8.3f %5.0f%% %5.0f%%", decode, bytes / 1e9, 100 * effic,
                       100 * flops * pp_tps.back() / 1e9 / (wide ? peak16 : peak8));
                // A column llama.cpp did not report (or that was not run) says "-": not measured.
                if (!row.llama_tg.empty() && decode > 0)
                    printf(" %8.1f %6.2fx", median(row.llama_tg), decode / median(row.llama_tg));
                else printf(" %8s %7s", "-", "-");
                for (size_t i = 0; i < prompts.size(); i++)
                    if (!row.llama_pp[i].empty())
                        printf(" %9.1f %6.2fx", median(row.llama_pp[i]), pp_tps[i] / median(row.llama_pp[i]));
                    else printf(" %9s %7s", "-", "-");
                printf(" %9.0f\n", status_mb("VmRSS"));
                auto rec = [&](const char* engine, const std::string& test, const std::vector<double>& runs) {
                    bool ours = strcmp(engine, "lantern") == 0;
                    return record_row(engine, test, 0, label, kv_name, ours ? kernel_path_name() : "", g_kernels.threads, runs);
                };
                for (size_t i = 0; i < prompts.size(); i++) {
                    rec_rows.push_back(rec("lantern", "pp" + std::to_string(prompts[i]), row.pp_runs[i]));
                    if (!row.llama_pp[i].empty())
                        rec_rows.push_back(rec("llama.cpp", "pp" + std::to_string(prompts[i]), row.llama_pp[i]));
                }
                if (!row.tg.empty()) {
                    nlohmann::ordered_json t = rec("lantern", "tg" + std::to_string(n_decode), row.tg);
                    t["gb_per_token"] = bytes / 1e9;
                    t["efficiency"] = effic;
                    rec_rows.push_back(t);
                }
                if (!row.llama_tg.empty()) rec_rows.push_back(rec("llama.cpp", "tg" + std::to_string(n_decode), row.llama_tg));
            }
            anon_mb = std::max(anon_mb, status_mb("RssAnon"));
            file_mb = std::max(file_mb, status_mb("RssFile"));
            fflush(stdout);
            s0 = s1;
        }
    }
    printf("\npp<N>: prefill tok/s of an N-token prompt; decode: tok/s; GB/tok: weight bytes read per decoded token;\n"
           "effic: GB/tok x decode / read bandwidth (measured before each decode run); %%FMA: prefill FLOP/s (largest prompt) / FMA peak (16 wide for avx512 rows);\n"
           "llama.tg, llama.pp<N>: llama.cpp's llama-bench in the same run, interleaved, same threads and weights (GGUF):\n"
           "decode over the same token count and prefill of each prompt (medians); ratio: Lantern / llama.cpp.\n");
    if (!lb.why_not.empty()) printf("llama.cpp  not measured: %s\n", lb.why_not.c_str());
    // What a set that is not exact costs: its logits against the first exact
    // set's, same weights and prompt (the bits of every exact set are equal).
    for (const Logits& a : seen) {
        if (a.exact) continue;
        for (const Logits& b : seen) {
            if (!b.exact || b.type != a.type) continue;
            double max_d = 0, lo = b.v[0], hi = b.v[0];
            for (size_t i = 0; i < a.v.size(); i++) {
                max_d = std::max(max_d, (double)std::fabs(a.v[i] - b.v[i]));
                lo = std::min(lo, (double)b.v[i]);
                hi = std::max(hi, (double)b.v[i]);
            }
            printf("precision  %s %s vs %s: logits of a %d-token prompt differ by at most %.4g (the logits span %.3g); "
                   "top token %s\n", a.type.c_str(), a.set.c_str(), b.set.c_str(), prompts.back(), max_d, hi - lo,
                   sample_argmax(a.v.data(), (int)a.v.size()) == sample_argmax(b.v.data(), (int)b.v.size()) ? "the same" : "DIFFERS");
            break;
        }
    }
    printf("peak RSS   %.0f MB (VmHWM); after a row at most %.0f MB of mapped files and %.0f MB anonymous; weight files %.0f MB\n",
           status_mb("VmHWM"), file_mb, anon_mb, weights_bytes(m) / 1e6);
    save();
    return 0;
}
