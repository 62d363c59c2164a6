// matmul_speed.cpp — GFLOP/s of one matrix product at the 0.5B model's
// shapes, bf16 weights, for a batch of T tokens (prefill). `./run bench`
// times the whole forward pass; this isolates matmul, so a change to the
// prefill tiles or their loop order can be measured without attention,
// norms and threads waiting for each other in the way.
//   make build/matmul_speed
//   build/matmul_speed [--kernels avx512] [--threads 2] [--tokens 128] [--reps 5]
// Prints, per shape, the best of `reps` runs. The weights are random bf16,
// the activations random f32: only the time is of interest here.
// --type q4_0 (any weight type) quantizes them; --layout packed then lays a
// block-format matrix out for the set's packed tile (AVX-512 or AVX2; quants.h:pack_mat), as
// loading does, and --layout file keeps the file's layout:
//   build/matmul_speed --type q4_0 --layout file --tokens 1 --threads 1 --reps 200
//
// --model DIR times a whole step's weight products instead: every matrix of
// every layer, grouped as net.cpp:decoder_layer multiplies them (q, k and v
// together, o, gate and up together, down), and the LM head, for T tokens,
// the model loaded as ./run loads it (the file's weights; --type q8_0 or
// another block format: quantized at load, as --quant does). Its weights are far larger than the caches, so each pass
// streams them from memory, as decode and a serving step do; the median of
// --reps passes, in ms, GB/s of weights and GFLOP/s:
//   build/matmul_speed --model models/qwen2.5-0.5b --tokens 8 --reps 12
#include "generate.h"
#include "cpu/kernel_sets.h"
#include "gguf/quants.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void run_model(const std::string& dir, KernelSet set, int threads, int T, int reps, const std::string& type) {
    EngineOptions o;
    o.model = dir;
    o.threads = threads;
    o.kernels = set;
    if (type != "bf16") o.quant = type;
    Engine e;
    engine_load(e, o, ENGINE_MODEL);
    const Model& m = e.model;
    const Config& c = m.cfg;
    int widest = std::max({c.hidden, c.intermediate, c.n_heads * c.head_dim});
    size_t out_cols = std::max((size_t)c.vocab, (size_t)2 * c.intermediate);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    LineVector<float> x((size_t)T * widest), out((size_t)T * out_cols);
    for (auto& v : x) v = nd(rng);
    KernelScratch scratch;
    double bytes = m.lm_head.bytes(), flop = 2.0 * m.lm_head.rows * m.lm_head.cols * T;
    for (const LayerWeights& L : m.layers)
        for (const Mat* W : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
            bytes += W->bytes(), flop += 2.0 * W->rows * W->cols * T;
    auto pass = [&]() {
        auto t0 = std::chrono::steady_clock::now();
        for (const LayerWeights& L : m.layers) {
            float* o0 = out.data();
            MatmulOut qkv[3] = {{o0, &L.wq, nullptr}, {o0 + (size_t)T * L.wq.rows, &L.wk, nullptr},
                                {o0 + (size_t)T * (L.wq.rows + L.wk.rows), &L.wv, nullptr}};
            matmul_many(qkv, 3, x.data(), T, &scratch);
            matmul(o0, x.data(), L.wo, nullptr, T, &scratch);
            MatmulOut gate_up[2] = {{o0, &L.w_gate, nullptr}, {o0 + (size_t)T * L.w_gate.rows, &L.w_up, nullptr}};
            matmul_many(gate_up, 2, x.data(), T, &scratch);
            matmul(o0, x.data(), L.w_down, nullptr, T, &scratch);
        }
        matmul(out.data(), x.data(), m.lm_head, nullptr, T, &scratch);
        return seconds_since(t0);
    };
    pass();  // the first pass faults the file's pages in
    std::vector<double> s;
    for (int r = 0; r < reps; r++) s.push_back(pass());
    std::sort(s.begin(), s.end());
    double med = s[s.size() / 2];
    printf("%s, %d threads, %d tokens, %s (%s weights, %.0f MB): one step's weight products\n", kernel_path_name(),
           g_kernels.threads, T, dir.c_str(), dtype_name(m.layers[0].w_gate.dtype), bytes / 1e6);
    printf("  median %.1f ms (fastest %.1f, slowest %.1f) over %d passes: %.1f GB/s of weights, %.1f GFLOP/s\n",
           med * 1e3, s.front() * 1e3, s.back() * 1e3, reps, bytes / med * 1e-9, flop / med * 1e-9);
}

static void run(int argc, char** argv) {
    std::string set = "avx512", type = "bf16", layout = "packed", model;
    int threads = 2, T = 128, reps = 5;
    for (int i = 1; i < argc; i += 2) {
        std::string a = argv[i];
        if (i + 1 == argc) fail("matmul_speed: %s needs a value", a.c_str());
        if (a == "--kernels") set = argv[i + 1];
        else if (a == "--threads") threads = atoi(argv[i + 1]);
        else if (a == "--tokens") T = atoi(argv[i + 1]);
        else if (a == "--reps") reps = atoi(argv[i + 1]);
        else if (a == "--type") type = argv[i + 1];
        else if (a == "--layout") layout = argv[i + 1];
        else if (a == "--model") model = argv[i + 1];
        else fail("matmul_speed: unknown flag %s", a.c_str());
    }
    int found = -1;
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (set == KERNEL_SETS[i].name) found = i;
    if (found < 0) fail("matmul_speed: --kernels %s is not a kernel set (./run --help lists them)", set.c_str());
    if (T < 1 || reps < 1) fail("matmul_speed: --tokens and --reps must be at least 1");
    if (layout != "file" && layout != "packed") fail("matmul_speed: --layout %s is not file or packed", layout.c_str());
    DType dt = parse_weight_type("--type", type);
    if (!model.empty()) return run_model(model, KERNEL_SETS[found].set, threads, T, reps, type);
    kernels_init(KERNEL_SETS[found].set, threads);
    struct Shape { const char* name; int rows, cols; } shapes[] = {
        {"q 896x896", 896, 896}, {"k 128x896", 128, 896}, {"o 896x896", 896, 896},
        {"gate 4864x896", 4864, 896}, {"down 896x4864", 896, 4864}};
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    LineVector<float> x((size_t)T * 4864), out((size_t)T * 4864);  // on cache lines, as the model's (net.h)
    for (auto& v : x) v = nd(rng);
    KernelScratch scratch;  // the kernels' buffers, as the Net owns them (kernels.h)
    double total_flop = 0, total_s = 0;
    printf("%s, %d threads, %d tokens, %s weights%s\n", kernel_path_name(), threads, T, type.c_str(),
           dt == DType::BF16 ? "" : layout == "packed" ? " (packed where the tiles take them)" : " (the file's layout)");
    for (auto& s : shapes) {
        if (s.cols % dtype_block_size(dt)) {  // a k-quant's super-block of 256 does not fit rows of 896
            printf("  %-14s rows of %d are not a multiple of %s's block of %d: skipped\n", s.name, s.cols, type.c_str(),
                   dtype_block_size(dt));
            continue;
        }
        std::vector<uint16_t> w((size_t)s.rows * s.cols);
        for (auto& v : w) v = f32_to_bf16(nd(rng) * 0.05f);
        Mat W;
        W.dtype = DType::BF16, W.rows = s.rows, W.cols = s.cols, W.data = w.data();
        std::vector<uint8_t> q;
        if (dt != DType::BF16) W = quantize_mat(W, dt, q);
        if (layout == "packed" && can_pack(W) && packed_tile_reads(W.dtype, g_kernels.simd)) pack_mat(W, q);
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            auto t0 = std::chrono::steady_clock::now();
            matmul(out.data(), x.data(), W, nullptr, T, &scratch);
            double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, dt);
        }
        double flop = 2.0 * s.rows * s.cols * T;
        total_flop += flop, total_s += best;
        printf("  %-14s %7.1f GFLOP/s  %7.3f ms\n", s.name, flop / best * 1e-9, best * 1e3);
    }
    printf("  %-14s %7.1f GFLOP/s\n", "all", total_flop / total_s * 1e-9);
}

int main(int argc, char** argv) {
    try {
        run(argc, argv);
    } catch (const LanternError& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
