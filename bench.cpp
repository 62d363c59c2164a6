// bench.cpp — ./run bench: the measuring tool of the performance chapter.
//
//   ./run bench [MODEL] [--threads N] [--kernels fast,plain,scalar]
//               [--quant bf16,q8_0,f16,f32] [--reps 3] [--prompts 16,128]
//               [--decode 64] [--prefill batched|stepwise] [--kv-type f32|f16|bf16]
//
// First the machine: how many bytes per second can the cores read from
// memory (a STREAM-like read of a buffer far larger than the caches), and
// how many fused multiply-adds per second they can do (a loop with enough
// independent chains to keep every FMA unit busy). Those two numbers are the
// roofline: decode reads every weight once per token, so bandwidth / bytes
// per token is its ceiling; prefill reuses each weight for many tokens, so
// its ceiling is FLOP/s / FLOPs per token.
//
// Then the model, for each weight type and kernel set asked for: prefill
// tok/s for each prompt length (one forward over the whole prompt), and
// decode tok/s over --decode tokens after a 16-token prompt, each the median
// of --reps runs. Weight types other than the file's are converted in memory
// (an f32 copy of a bf16 model takes twice the file size).
#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
#include <omp.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include "kernels.h"
#include "model.h"
#include "net.h"

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

static int parse_int(const char* flag, const std::string& s, int lo, int hi) {
    char* end = nullptr;
    long v = strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < lo || v > hi) fail("%s: \"%s\" must be an integer in [%d, %d]", flag, s.c_str(), lo, hi);
    return (int)v;
}

// Resident memory now and at its peak, in MB (Linux: /proc/self/statm).
static double rss_now_mb() {
    long pages = 0, resident = 0;
    FILE* f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return resident * 4096.0 / 1e6;
}
static double rss_peak_mb() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1e3;  // kilobytes on Linux
}

// ---------------------------------------------------------------------------
// The machine's two ceilings.

// Other programs running at the same time take cores and memory bandwidth,
// and threads that wait for each other suffer most: say so up front.
static void warn_if_busy() {
    FILE* f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double load1 = 0;
    int running = 0, total = 0;
    if (fscanf(f, "%lf %*f %*f %d/%d", &load1, &running, &total) == 3 && load1 > 0.5 * omp_get_num_procs())
        printf("note       load average %.1f on %d cores: other programs are running, expect lower numbers\n",
               load1, omp_get_num_procs());
    fclose(f);
}

// Read bandwidth: the threads add up the 32-bit words of a buffer far
// larger than the last-level cache, each its own contiguous part (as the
// matmul threads read their rows), with 4 independent 8-wide integer
// accumulators so that only memory can be the limit. The buffer is the
// mmapped model file itself when it is large enough (no extra memory, and
// the same pages decode streams), else 256 MB allocated for the purpose.
static double read_bandwidth(const void* data, size_t bytes) {
    const uint32_t* p = (const uint32_t*)data;
    size_t n = bytes / 4 / 32 * 32;
    uint32_t total = 0;
    double t0 = now_s();
    #pragma omp parallel reduction(+ : total)
    {
#if defined(__AVX2__)
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        #pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 32) {
            a0 = _mm256_add_epi32(a0, _mm256_loadu_si256((const __m256i*)(p + i)));
            a1 = _mm256_add_epi32(a1, _mm256_loadu_si256((const __m256i*)(p + i + 8)));
            a2 = _mm256_add_epi32(a2, _mm256_loadu_si256((const __m256i*)(p + i + 16)));
            a3 = _mm256_add_epi32(a3, _mm256_loadu_si256((const __m256i*)(p + i + 24)));
        }
        uint32_t lanes[8];
        _mm256_storeu_si256((__m256i*)lanes, _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)));
        for (uint32_t v : lanes) total += v;
#else
        uint32_t acc[32] = {0};  // the compiler vectorizes this form
        #pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 32)
            for (int j = 0; j < 32; j++) acc[j] += p[i + j];
        for (uint32_t v : acc) total += v;
#endif
    }
    double dt = now_s() - t0;
    volatile uint32_t sink = total;
    (void)sink;
    return n * 4.0 / dt / 1e9;
}

struct Bandwidth {
    const void* data = nullptr;  // the model file, or null: allocate each time
    size_t bytes = 256u << 20;
    double measure() const {  // GB/s, the better of two passes (the first may fault pages in)
        std::vector<uint32_t> own;
        const void* p = data;
        if (!p) {
            own.assign(bytes / 4, 1);
            p = own.data();
        }
        return std::max(read_bandwidth(p, bytes), read_bandwidth(p, bytes));
    }
};

// FMA throughput: 12 independent chains of 8-wide fused multiply-adds per
// thread. Zen 3 has two FMA units with a latency of 4 cycles: 8 chains in
// flight keep both busy, 12 leave margin. Peak = 2 units x 8 floats x 2
// FLOPs = 32 FLOP per cycle per core.
static double measure_fma_gflops(int reps) {
    const long iters = 20000000;
    std::vector<double> gf;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        float total = 0;
        #pragma omp parallel reduction(+ : total)
        {
#if defined(__AVX2__) && defined(__FMA__)
            __m256 acc[12];
            const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
            for (int j = 0; j < 12; j++) acc[j] = _mm256_set1_ps(j * 1e-3f);
            for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
                for (int j = 0; j < 12; j++) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
            }
            float lanes[8];
            for (int j = 0; j < 12; j++) {
                _mm256_storeu_ps(lanes, acc[j]);
                for (float v : lanes) total += v;
            }
#else
            float acc[96];
            for (int j = 0; j < 96; j++) acc[j] = j * 1e-3f;
            for (long i = 0; i < iters; i++)
                for (int j = 0; j < 96; j++) acc[j] = std::fma(acc[j], 0.999999f, 1e-7f);
            for (float v : acc) total += v;
#endif
        }
        double dt = now_s() - t0;
        volatile float sink = total;
        (void)sink;
        gf.push_back(2.0 * 96 * (double)iters * omp_get_max_threads() / dt / 1e9);
    }
    return median(gf);
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

// Any matrix converted to f32, f16, bf16 or Q8_0 (the benchmark's weight
// types). Widening is exact (bf16 and f16 are subsets of f32); narrowing
// rounds to nearest-even. Q8_0 can be a source, never a target.
static Mat convert_mat(const Mat& W, DType to, std::vector<uint8_t>& storage) {
    if (to == DType::Q8_0) return quantize_q8_0(W, storage);
    Mat c = W;
    c.dtype = to;
    storage.resize(c.bytes());
    c.data = storage.data();
    #pragma omp parallel
    {
        std::vector<float> row(W.cols);
        #pragma omp for schedule(static)
        for (int r = 0; r < W.rows; r++) {
            mat_row_to_f32(W, r, row.data());
            size_t base = (size_t)r * W.cols;
            for (int i = 0; i < W.cols; i++) {
                if (to == DType::F32) ((float*)storage.data())[base + i] = row[i];
                else if (to == DType::F16) ((uint16_t*)storage.data())[base + i] = f32_to_f16(row[i]);
                else ((uint16_t*)storage.data())[base + i] = f32_to_bf16(row[i]);
            }
        }
    }
    return c;
}

// Returns false when the type cannot be made (Q8_0 needs columns % 32 == 0).
static bool use_weights(Model& m, Weights& w, DType dt) {
    bool tied = m.lm_head.data == m.embed.data;
    w.storage.clear();  // frees the previous copies before making new ones
    w.storage.shrink_to_fit();
    w.storage.reserve(w.mats.size());
    for (size_t i = 0; i < w.mats.size(); i++) *w.mats[i] = w.original[i];
    if (tied) m.embed = m.lm_head;
    for (size_t i = 0; i < w.mats.size(); i++) {
        const Mat& o = w.original[i];
        if (o.dtype == dt) continue;
        if (dt == DType::Q8_0 && o.cols % Q8_BLOCK) return false;
        w.storage.emplace_back();
        *w.mats[i] = convert_mat(o, dt, w.storage.back());
    }
    if (tied) m.embed = m.lm_head;
    return true;
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

// llama.cpp on this machine kind (2 Zen 3 cores, 2 threads, median of 3), on
// the generated qwen2.5-0.5b preset converted to GGUF: decode tok/s and
// prefill tok/s of a 128-token prompt. Measured separately with llama-bench on this machine kind, not in the same run.
struct Reference { DType dt; double decode, prefill128; };
static const Reference LLAMA_CPP[] = {
    {DType::F32, 9.1, 117}, {DType::BF16, 14.6, 124}, {DType::F16, 15.6, 147}, {DType::Q8_0, 23.7, 119}};

static int argmax(const float* v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

// ---------------------------------------------------------------------------

int cmd_bench(int argc, char** argv) {
    std::string path = "models/qwen2.5-0.5b";
    std::vector<std::string> kernels = {"fast"}, quants = {"bf16", "q8_0"};
    std::vector<int> prompts = {16, 128};
    int threads = 0, reps = 3, n_decode = 64;
    bool stepwise = false;
    DType kv_type = DType::F32;
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) fail("bench: %s needs a value", a.c_str());
            return argv[++i];
        };
        if (a == "--threads") threads = parse_int("--threads", val(), 1, 1024);
        else if (a == "--kernels") kernels = split_list(val());
        else if (a == "--quant") quants = split_list(val());
        else if (a == "--kv-type") kv_type = parse_float_type("--kv-type", val());
        else if (a == "--reps") reps = parse_int("--reps", val(), 1, 100);
        else if (a == "--decode") n_decode = parse_int("--decode", val(), 0, 4096);
        else if (a == "--prompts") {
            prompts.clear();
            for (const std::string& p : split_list(val())) prompts.push_back(parse_int("--prompts", p, 1, 4096));
        } else if (a == "--prefill") {
            std::string v = val();
            if (v != "batched" && v != "stepwise") fail("--prefill: \"%s\" is not batched or stepwise", v.c_str());
            stepwise = v == "stepwise";
        } else if (!a.empty() && a[0] != '-' && i == 0) path = a;
        else fail("bench: unknown argument \"%s\"", a.c_str());
    }
    std::vector<KernelSet> sets;
    for (const std::string& k : kernels) sets.push_back(parse_kernel_set("--kernels", k));
    std::vector<DType> types;
    for (const std::string& q : quants) {
        if (q == "bf16" || q == "none") types.push_back(DType::BF16);
        else if (q == "q8_0") types.push_back(DType::Q8_0);
        else if (q == "f16") types.push_back(DType::F16);
        else if (q == "f32") types.push_back(DType::F32);
        else fail("--quant: \"%s\" is not bf16, q8_0, f16 or f32", q.c_str());
    }

    kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
    printf("machine    %d threads, --kernels fast runs %s here\n", g_kernels.threads,
           (kernels_init(KernelSet::Fast, threads), kernel_path_name()));
    kernels_init(sets.empty() ? KernelSet::Fast : sets[0], threads);
    warn_if_busy();
    Model m;
    load_model(m, path);
    const Config& c = m.cfg;
    Bandwidth bandwidth;
    if (m.file_size >= bandwidth.bytes) bandwidth.data = m.map;
    std::vector<double> bws;
    for (int r = 0; r < std::max(reps, 3); r++) bws.push_back(bandwidth.measure());
    double bw = median(bws);
    double peak = measure_fma_gflops(std::max(reps, 3));
    printf("memory     read bandwidth %.1f GB/s (median; %s)\n", bw,
           bandwidth.data ? "reading the model file's pages" : "a 256 MB buffer");
    printf("compute    FMA peak %.0f GFLOP/s (f32, all threads)\n", peak);
    Weights w;
    collect_weights(m, w);
    bool is_05b = c.hidden == 896 && c.n_layers == 24 && c.vocab == 151936;
    double flops = prefill_flops_per_token(m);
    int max_prompt = *std::max_element(prompts.begin(), prompts.end());
    int ctx = std::min(c.max_pos, std::max(max_prompt, 16 + n_decode) + 1);
    printf("model      %s: %d layers, hidden %d, %.0f M parameters, file %.0f MB; prefill %.3g GFLOP/token\n",
           m.dir.c_str(), c.n_layers, c.hidden, parameter_count(m) / 1e6, m.file_size / 1e6, flops / 1e9);
    printf("runs       median of %d; decode: %d tokens after a 16-token prompt; prefill %s; KV cache %s\n\n", reps,
           n_decode, stepwise ? "one token per forward (stepwise)" : "one forward per prompt", dtype_name(kv_type));

    std::vector<int> tokens(std::max(max_prompt, 16) + n_decode);
    uint32_t s = 12345;
    for (int& t : tokens) t = (int)((s = s * 1664525u + 1013904223u) >> 8) % c.vocab;

    printf("%-5s %-7s %3s", "type", "kernels", "thr");
    for (int p : prompts) printf(" %9s", ("pp" + std::to_string(p)).c_str());
    printf(" %8s %8s %6s %6s %8s %8s %8s %9s\n", "decode", "GB/tok", "effic", "%FMA", "llama.tg", "ratio",
           "llama.pp", "RSS MB");
    for (DType dt : types) {
        if (!use_weights(m, w, dt)) {
            printf("%-5s (skipped: columns not a multiple of 32)\n", dtype_name(dt));
            continue;
        }
        double bytes = weight_bytes(w);
        for (KernelSet set : sets) {
            kernels_init(set, threads);
            Net net;
            net_init(net, m, ctx, kv_type);
            // Runs tokens[0..n) from position 0, batched or one at a time.
            auto prefill = [&](int n) {
                net_reset(net);
                if (!stepwise) return forward(net, tokens.data(), n, 0, false);
                const float* l = nullptr;
                for (int i = 0; i < n; i++) l = forward(net, tokens.data() + i, 1, i, false);
                return l;
            };
            prefill(1);  // touches every weight once: page faults are not timed
            std::vector<double> pp_tps;
            for (int p : prompts) {
                std::vector<double> tps;
                for (int r = 0; r < reps; r++) {
                    double t0 = now_s();
                    prefill(p);
                    tps.push_back(p / (now_s() - t0));
                }
                pp_tps.push_back(median(tps));
            }
            // Decode, each run right after a bandwidth measurement: on a
            // shared machine the bandwidth moves, so the efficiency compares
            // the medians of measurements taken side by side.
            std::vector<double> tg, bw_near;
            for (int r = 0; r < reps && n_decode > 0; r++) {
                int next = argmax(prefill(16), c.vocab);
                bw_near.push_back(bandwidth.measure());
                double t0 = now_s();
                for (int i = 0; i < n_decode; i++) next = argmax(forward(net, &next, 1, 16 + i, false), c.vocab);
                tg.push_back(n_decode / (now_s() - t0));
            }
            double decode = tg.empty() ? 0 : median(tg);
            double effic = tg.empty() ? 0 : bytes * decode / 1e9 / median(bw_near);
            const Reference* ref = nullptr;
            for (const Reference& x : LLAMA_CPP)
                if (x.dt == dt && is_05b && g_kernels.threads == 2) ref = &x;

            printf("%-5s %-7s %3d", dtype_name(dt), kernel_path_name(), g_kernels.threads);
            for (double v : pp_tps) printf(" %9.1f", v);
            printf(" %8.2f %8.3f %5.0f%% %5.0f%%", decode, bytes / 1e9, 100 * effic,
                   100 * flops * pp_tps.back() / 1e9 / peak);
            if (ref) printf(" %8.1f %7.2fx %8.0f", ref->decode, decode / ref->decode, ref->prefill128);
            else printf(" %8s %8s %8s", "-", "-", "-");
            printf(" %9.0f\n", rss_now_mb());
            fflush(stdout);
        }
    }
    printf("\npp<N>: prefill tok/s of an N-token prompt; decode: tok/s; GB/tok: weight bytes read per decoded token;\n"
           "effic: GB/tok x decode / read bandwidth (measured before each decode run); %%FMA: prefill FLOP/s (largest prompt) / FMA peak;\n"
           "llama.tg, llama.pp: llama.cpp decode and pp128 tok/s on this machine kind, 2 threads (measured separately, not in this run),\n"
           "shown for the 0.5B model at 2 threads; ratio: our decode / llama.cpp decode.\n");
    printf("peak RSS   %.0f MB (the file is %.0f MB)\n", rss_peak_mb(), m.file_size / 1e6);
    return 0;
}
