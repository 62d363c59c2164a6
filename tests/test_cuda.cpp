// tests/test_cuda.cpp — the GPU backend against the CPU.
//
// Each CUDA kernel, plain and fast, against the CPU plain kernel on random
// inputs whose sizes are not multiples of any block or tile; the whole
// forward pass (logits at every position, decode steps, the decode graph);
// greedy decoding for 64 tokens. Every case skips with a message when the
// machine has no GPU, and the file shrinks to two cases in a CPU-only build.
// Case names start with "cuda:" so `unit_tests -tc='cuda:*'` picks them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu/kernel_sets.h"
#include "gguf/gguf_load.h"  // quantize_model
#include "cuda/kernels_cuda.h"
#include "net.h"
#include "cuda/net_cuda.h"

// Runs `what`, returns the LanternError message it threw ("" when none).
template <class Fn>
static std::string error_of(Fn what) {
    try {
        what();
    } catch (const LanternError& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("cuda: --device names are checked") {
    CHECK(error_of([] { parse_device("gpu"); }).find("\"gpu\" is not cpu or cuda") != std::string::npos);
    CHECK(parse_device("cpu") == Device::CPU);
    CHECK(parse_device("cuda") == Device::CUDA);  // recorded; whether it can be used is device_use's question
    Net net;  // the CPU's pass stays the Net's
    CHECK(error_of([&] { device_use(net, Device::CPU); }) == "");
    CHECK(!net.backend);
}

#ifndef LANTERN_CUDA
TEST_CASE("cuda: skipped in a CPU-only build") {
    MESSAGE("skipped: CPU-only build (make cuda builds the GPU backend)");
    Net net;
    CHECK(error_of([&] { device_use(net, Device::CUDA); }) == "--device cuda: this build has no CUDA (make cuda)");
    CHECK(!net.backend);
}
#else

// True when a GPU is there; otherwise says why the case is skipped.
static bool have_gpu() {
    std::string why;
    if (cuda_available(&why)) return true;
    MESSAGE("skipped: " << why);
    return false;
}

TEST_CASE("cuda: without a device, --device cuda says so") {
    std::string why;
    if (cuda_available(&why)) {
        MESSAGE("a CUDA device is present; the no-device message is not exercised");
        return;
    }
    Net net;
    std::string e = error_of([&] { device_use(net, Device::CUDA); });
    CHECK(e.find("--device cuda: no CUDA device found") == 0);
    CHECK(!net.backend);
}

// ---------------------------------------------------------------------------
// Helpers

// Uniform in [-1, 1), from a fixed xorshift32 stream: the same numbers on
// every machine.
struct Rng {
    uint32_t s = 2463534242u;
    float next() {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        return (float)(s >> 8) / (1 << 23) - 1.0f;
    }
    std::vector<float> vec(size_t n) {
        std::vector<float> v(n);
        for (float& x : v) x = next();
        return v;
    }
};

// A host vector's copy in device memory, freed at the end of the scope.
template <class T>
struct DevVec {
    T* p = nullptr;
    size_t n = 0;
    explicit DevVec(const std::vector<T>& h) : n(h.size()) {
        CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
        CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    }
    ~DevVec() { cudaFree(p); }
    std::vector<T> get() const {
        std::vector<T> h(n);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
    DevVec(const DevVec&) = delete;
    DevVec& operator=(const DevVec&) = delete;
};

// A random weight matrix stored as `dt`, on the host and on the device.
struct TestMat {
    std::vector<uint8_t> bytes;
    Mat host, dev;
    std::unique_ptr<DevVec<uint8_t>> d;
};
static void make_mat(TestMat& t, DType dt, int rows, int cols, Rng& rng) {
    size_t n = (size_t)rows * cols, w = dt == DType::F32 ? 4 : 2;
    t.bytes.resize(n * w);
    for (size_t i = 0; i < n; i++) {
        float v = rng.next();
        if (dt == DType::F32) std::memcpy(&t.bytes[i * 4], &v, 4);
        else {
            uint16_t h = dt == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
            std::memcpy(&t.bytes[i * 2], &h, 2);
        }
    }
    t.host = Mat{dt, rows, cols, t.bytes.data()};
    t.d.reset(new DevVec<uint8_t>(t.bytes));
    t.dev = t.host;
    t.dev.data = t.d->p;
}

// |got - want| <= tol[i] for every element, reporting the worst one.
static void check_within(const std::vector<float>& got, const std::vector<float>& want, const std::vector<double>& tol,
                         const std::string& what) {
    REQUIRE(got.size() == want.size());
    size_t worst = 0;
    double worst_ratio = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double ratio = std::fabs((double)got[i] - want[i]) / tol[i];
        if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;  // NaN counts as worst
    }
    CHECK_MESSAGE(worst_ratio <= 1.0, what << ": element " << worst << " is " << got[worst] << ", expected "
                                           << want[worst] << " (|diff| / tolerance = " << worst_ratio << ")");
}
static void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                        const std::string& what) {
    double scale = 1;
    for (float v : want) scale = std::fmax(scale, std::fabs(v));
    check_within(got, want, std::vector<double>(want.size(), rel * scale), what);
}

// ---------------------------------------------------------------------------
// Kernels, one by one

TEST_CASE("cuda: matmul, plain and fast (matvec, tiled GEMM), equals the CPU plain matmul") {
    if (!have_gpu()) return;
    struct Shape { int T, rows, cols; };
    // None a multiple of the 8-row matvec block or the 64x64 tile; 100 and 33
    // columns force the matvec off its 16-byte path, 104 and 200 keep it on.
    Shape shapes[] = {{1, 37, 100}, {1, 301, 104}, {1, 1000, 64}, {3, 70, 33}, {67, 129, 200}, {130, 65, 17}};
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        for (const Shape& sh : shapes) {
            Rng rng;
            TestMat W;
            make_mat(W, dt, sh.rows, sh.cols, rng);
            std::vector<float> x = rng.vec((size_t)sh.T * sh.cols), bias = rng.vec(sh.rows);
            std::vector<float> want((size_t)sh.T * sh.rows);
            matmul_plain(want.data(), x.data(), W.host, bias.data(), sh.T);
            // Rounding bound per output: float sums of `cols` terms.
            std::vector<double> tol(want.size());
            std::vector<float> w(sh.cols);
            for (int r = 0; r < sh.rows; r++) {
                mat_row_to_f32(W.host, r, w.data());
                for (int t = 0; t < sh.T; t++) {
                    double s = std::fabs(bias[r]);
                    for (int c = 0; c < sh.cols; c++) s += std::fabs((double)w[c] * x[(size_t)t * sh.cols + c]);
                    tol[(size_t)t * sh.rows + r] = 1e-5 * s + 1e-6;
                }
            }
            DevVec<float> dx(x), db(bias), out(std::vector<float>(want.size(), NAN));
            std::string name = std::string(dtype_name(dt)) + " T=" + std::to_string(sh.T) + " rows=" +
                               std::to_string(sh.rows) + " cols=" + std::to_string(sh.cols);
            cuda_matmul_plain(out.p, dx.p, W.dev, db.p, sh.T, 0);
            check_within(out.get(), want, tol, "plain " + name);
            cuda_gemm_tiled(out.p, dx.p, W.dev, db.p, sh.T, 0);
            check_within(out.get(), want, tol, "tiled " + name);
            if (sh.T == 1) {
                cuda_matvec(out.p, dx.p, W.dev, db.p, 0);
                check_within(out.get(), want, tol, "matvec " + name);
                cuda_matvec(out.p, dx.p, W.dev, nullptr, 0);  // no bias
                std::vector<float> nobias(sh.rows);
                matmul_plain(nobias.data(), x.data(), W.host, nullptr, 1);
                check_within(out.get(), nobias, tol, "matvec without bias " + name);
            }
        }
    }
}

TEST_CASE("cuda: rmsnorm, plain and fast, equals the CPU") {
    if (!have_gpu()) return;
    for (int n : {37, 1000}) {
        Rng rng;
        int T = 3;
        std::vector<float> x = rng.vec((size_t)T * n), w = rng.vec(n), want(x.size());
        for (int t = 0; t < T; t++) rmsnorm(&want[(size_t)t * n], &x[(size_t)t * n], w.data(), n, 1e-6f);
        DevVec<float> dx(x), dw(w), out(std::vector<float>(x.size(), NAN));
        cuda_rmsnorm_plain(out.p, dx.p, dw.p, T, n, 1e-6f, 0);
        check_close(out.get(), want, 1e-6, "plain n=" + std::to_string(n));
        cuda_rmsnorm_fast(out.p, dx.p, dw.p, T, n, 1e-6f, 0);
        check_close(out.get(), want, 1e-5, "fast n=" + std::to_string(n));
    }
}

TEST_CASE("cuda: RoPE equals the CPU, also at large positions") {
    if (!have_gpu()) return;
    int T = 4, heads = 3, hd = 10;
    for (int pos : {0, 1000, 30000}) {
        Rng rng;
        std::vector<float> v = rng.vec((size_t)T * heads * hd), want = v;
        for (int t = 0; t < T; t++) apply_rope(&want[(size_t)t * heads * hd], heads, hd, pos + t, 1e6f);
        DevVec<float> dv(v);
        DevVec<int> step(std::vector<int>{pos, 0});
        cuda_rope(dv.p, T, heads, hd, step.p, 1e6f, 0);
        check_close(dv.get(), want, 1e-6, "pos " + std::to_string(pos));
    }
}

// The CPU reference: net.cpp's attention for one layer, written out.
static std::vector<float> attention_ref(const std::vector<float>& q, const std::vector<float>& kc,
                                        const std::vector<float>& vc, int T, int heads, int kv_heads, int hd, int pos,
                                        int first) {
    int q_dim = heads * hd, kv_dim = kv_heads * hd;
    std::vector<float> out((size_t)T * q_dim, 0.0f);
    for (int h = 0; h < heads; h++)
        for (int t = 0; t < T; t++) {
            int n = pos + t + 1 - first, kvh = h / (heads / kv_heads);
            std::vector<float> s(n);
            for (int j = 0; j < n; j++) {
                double dot = 0;
                for (int i = 0; i < hd; i++)
                    dot += (double)q[(size_t)t * q_dim + h * hd + i] * kc[(size_t)(first + j) * kv_dim + kvh * hd + i];
                s[j] = (float)dot / std::sqrt((float)hd);
            }
            softmax(s.data(), n);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < hd; i++)
                    out[(size_t)t * q_dim + h * hd + i] += s[j] * vc[(size_t)(first + j) * kv_dim + kvh * hd + i];
        }
    return out;
}

TEST_CASE("cuda: attention, plain and fast, equals the CPU (grouped heads, offset start, long context)") {
    if (!have_gpu()) return;
    struct Case { int T, heads, kv_heads, hd, pos, first, n_ctx; };
    // hd 24: neither a warp nor a divisor of 256; 301 keys: more than a block's threads.
    Case cases[] = {{5, 6, 2, 24, 9, 2, 40}, {1, 14, 2, 64, 300, 0, 400}, {3, 3, 3, 32, 0, 0, 3}};
    for (const Case& k : cases) {
        Rng rng;
        int q_dim = k.heads * k.hd, kv_dim = k.kv_heads * k.hd;
        std::vector<float> q = rng.vec((size_t)k.T * q_dim), kc = rng.vec((size_t)k.n_ctx * kv_dim),
                           vc = rng.vec((size_t)k.n_ctx * kv_dim);
        for (float& v : q) v *= 3;  // sharper softmax than uniform noise gives
        std::vector<float> want = attention_ref(q, kc, vc, k.T, k.heads, k.kv_heads, k.hd, k.pos, k.first);
        int ld = k.T == 1 ? k.n_ctx : k.pos + k.T - k.first;
        DevVec<float> dq(q), dk(kc), dv(vc), out(std::vector<float>(want.size(), NAN));
        DevVec<float> scores(std::vector<float>((size_t)k.heads * k.T * ld, NAN));
        DevVec<int> step(std::vector<int>{k.pos, k.first});
        std::string name = "T=" + std::to_string(k.T) + " hd=" + std::to_string(k.hd) + " keys to " +
                           std::to_string(k.pos + k.T - k.first);
        cuda_attention_plain(out.p, dq.p, dk.p, dv.p, scores.p, k.T, k.heads, k.kv_heads, k.hd, ld, step.p, 0);
        check_close(out.get(), want, 1e-5, "plain " + name);
        cuda_attention_fast(out.p, dq.p, dk.p, dv.p, scores.p, k.T, k.heads, k.kv_heads, k.hd, ld, step.p, 0);
        check_close(out.get(), want, 1e-5, "fast " + name);
    }
}

TEST_CASE("cuda: embedding, KV store, SwiGLU and residual add equal the CPU") {
    if (!have_gpu()) return;
    Rng rng;
    SUBCASE("embedding rows, bf16 widened exactly") {
        TestMat E;
        make_mat(E, DType::BF16, 50, 37, rng);
        std::vector<int> ids = {0, 49, 7, 7};
        std::vector<float> want(ids.size() * 37);
        for (size_t t = 0; t < ids.size(); t++) mat_row_to_f32(E.host, ids[t], &want[t * 37]);
        DevVec<int> dids(ids);
        DevVec<float> out(std::vector<float>(want.size(), NAN));
        cuda_embed(out.p, dids.p, E.dev, (int)ids.size(), 0);
        CHECK(out.get() == want);
    }
    SUBCASE("KV store writes rows pos.. and nothing else") {
        int T = 3, kv_dim = 13, n_ctx = 10, pos = 6;
        std::vector<float> k = rng.vec(T * kv_dim), v = rng.vec(T * kv_dim);
        std::vector<float> kc(n_ctx * kv_dim, -7.0f), vc = kc, want_k = kc, want_v = vc;
        std::copy(k.begin(), k.end(), want_k.begin() + pos * kv_dim);
        std::copy(v.begin(), v.end(), want_v.begin() + pos * kv_dim);
        DevVec<float> dk(k), dv(v), dkc(kc), dvc(vc);
        DevVec<int> step(std::vector<int>{pos, 0});
        cuda_kv_store(dkc.p, dvc.p, dk.p, dv.p, T, kv_dim, step.p, 0);
        CHECK(dkc.get() == want_k);
        CHECK(dvc.get() == want_v);
    }
    SUBCASE("SwiGLU and add") {
        size_t n = 1001;
        std::vector<float> g = rng.vec(n), u = rng.vec(n);
        for (float& x : g) x *= 8;  // reach into silu's tails
        std::vector<float> want = g;
        swiglu(want.data(), u.data(), (int)n);
        DevVec<float> dg(g), du(u);
        cuda_swiglu(dg.p, du.p, n, 0);
        check_close(dg.get(), want, 1e-6, "swiglu");
        std::vector<float> sum = want;
        for (size_t i = 0; i < n; i++) sum[i] += u[i];
        cuda_add(dg.p, du.p, n, 0);
        check_close(dg.get(), sum, 1e-6, "add");
    }
}

// ---------------------------------------------------------------------------
// The whole forward pass

// The device the Nets of a case run on (net_on gives each its backend).
static Device g_on = Device::CPU;
static void net_on(Net& net, const Model& m, int n_ctx) {
    net_on(net, m, n_ctx);
    device_use(net, g_on);
}

// Restores the device and kernel set when a case ends, however it ends.
struct DeviceGuard {
    Device device = g_on;
    KernelSet set = g_kernels.set;
    bool graphs = g_cuda_graphs;
    ~DeviceGuard() { g_on = device, g_kernels.set = set, g_cuda_graphs = graphs; }
};

// A small model whose every size is awkward: hidden 96, 6 heads of 16 over
// 2 KV heads, intermediate 200, vocabulary 1000. Written once per dtype.
static const Model& test_model(const std::string& dtype) {
    static std::map<std::string, std::unique_ptr<Model>> models;
    auto& m = models[dtype];
    if (!m) {
        std::string dir = "build/test_models/cuda_" + dtype;
        std::string cmd = "mkdir -p build/test_models && build/gen_model --dtype " + dtype +
                          " --hidden 96 --intermediate 200 --layers 3 --heads 6 --kv-heads 2 --vocab 1000 "
                          "--max-pos 512 --tokenizer /nonexistent --out " + dir + " >/dev/null";
        REQUIRE(system(cmd.c_str()) == 0);
        m.reset(new Model);
        load_model(*m, dir);
    }
    return *m;
}

static std::vector<int> some_tokens(int n, int vocab) {
    std::vector<int> ids(n);
    for (int i = 0; i < n; i++) ids[i] = (i * 7919 + 13) % vocab;
    return ids;
}

// The logits of a prompt (every position) followed by `steps` decode steps,
// all rows concatenated, on the current device.
static std::vector<float> run_logits(const Model& m, const std::vector<int>& prompt, int pos, int steps) {
    Net net;
    net_on(net, m, 256);
    int V = m.cfg.vocab, T = (int)prompt.size();
    const float* l = forward(net, prompt.data(), T, pos, true);
    std::vector<float> all(l, l + (size_t)T * V);
    for (int i = 0; i < steps; i++) {
        int tok = (i * 31 + 5) % V;
        l = forward(net, &tok, 1, pos + T + i, false);
        all.insert(all.end(), l, l + V);
    }
    return all;
}

static double stddev(const std::vector<float>& v) {
    double s = 0, ss = 0;
    for (float x : v) s += x, ss += (double)x * x;
    double mean = s / v.size();
    return std::sqrt(std::fmax(0.0, ss / v.size() - mean * mean));
}

TEST_CASE("cuda: logits at every position equal the CPU path (bf16 and f32, plain and fast, graph on and off)") {
    if (!have_gpu()) return;
    DeviceGuard guard;
    for (const char* dtype : {"bf16", "f32"}) {
        const Model& m = test_model(dtype);
        std::vector<int> prompt = some_tokens(21, m.cfg.vocab);
        for (int pos : {0, 5}) {  // 5: a sequence that starts mid-cache, as `fwd TOKEN POS` does
            g_on = Device::CPU;
            g_kernels.set = KernelSet::Plain;
            std::vector<float> want = run_logits(m, prompt, pos, 6);
            double tol = 1e-4 * stddev(want);
            for (KernelSet set : {KernelSet::Plain, KernelSet::Fast}) {
                for (bool graphs : {true, false}) {
                    if (set == KernelSet::Plain && !graphs) continue;  // plain never uses the graph
                    g_on = Device::CUDA;
                    g_kernels.set = set;
                    g_cuda_graphs = graphs;
                    std::vector<float> got = run_logits(m, prompt, pos, 6);
                    check_within(got, want, std::vector<double>(want.size(), tol),
                                 std::string(dtype) + (set == KernelSet::Plain ? " plain" : " fast") +
                                     (graphs ? "" : " no graph") + " pos " + std::to_string(pos));
                }
            }
        }
    }
}

TEST_CASE("cuda: the decode graph replays exactly what the kernels compute") {
    if (!have_gpu()) return;
    DeviceGuard guard;
    const Model& m = test_model("bf16");
    g_on = Device::CUDA;
    g_kernels.set = KernelSet::Fast;
    std::vector<int> prompt = some_tokens(9, m.cfg.vocab);
    g_cuda_graphs = true;
    std::vector<float> with = run_logits(m, prompt, 0, 8);
    g_cuda_graphs = false;
    std::vector<float> without = run_logits(m, prompt, 0, 8);
    CHECK(with == without);
}

// Greedy decoding: prompt, then n times the argmax (first index wins ties).
static std::vector<int> greedy(const Model& m, const std::vector<int>& prompt, int n) {
    Net net;
    net_on(net, m, 256);
    int V = m.cfg.vocab, pos = (int)prompt.size();
    const float* l = forward(net, prompt.data(), pos, 0, false);
    std::vector<int> out;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int j = 1; j < V; j++)
            if (l[j] > l[best]) best = j;
        out.push_back(best);
        l = forward(net, &best, 1, pos++, false);
    }
    return out;
}

TEST_CASE("cuda: greedy decoding picks the same 64 tokens as the CPU") {
    if (!have_gpu()) return;
    DeviceGuard guard;
    const Model& m = test_model("bf16");
    std::vector<int> prompt = some_tokens(7, m.cfg.vocab);
    g_on = Device::CPU;
    g_kernels.set = KernelSet::Fast;
    std::vector<int> cpu = greedy(m, prompt, 64);
    for (KernelSet set : {KernelSet::Plain, KernelSet::Fast}) {
        g_on = Device::CUDA;
        g_kernels.set = set;
        std::vector<int> gpu = greedy(m, prompt, 64);
        CHECK_MESSAGE(gpu == cpu, (set == KernelSet::Plain ? "plain" : "fast") << " kernels diverge from the CPU");
    }
}

TEST_CASE("cuda: Q8_0 weights are refused with a clear message") {
    if (!have_gpu()) return;
    DeviceGuard guard;
    // Q8_0 needs rows that are whole blocks of 32: other sizes than test_model's.
    std::string dir = "build/test_models/cuda_q8";
    std::string cmd = "mkdir -p build/test_models && build/gen_model --hidden 64 --intermediate 96 --layers 1 "
                      "--heads 2 --kv-heads 1 --vocab 100 --max-pos 64 --tokenizer /nonexistent --out " + dir + " >/dev/null";
    REQUIRE(system(cmd.c_str()) == 0);
    Model m;
    load_model(m, dir);
    quantize_model(m);
    g_on = Device::CUDA;
    Net net;
    net_on(net, m, 16);
    int tok = 1;
    CHECK(error_of([&] { forward(net, &tok, 1, 0, false); }).find("drop --quant q8_0") != std::string::npos);
}

// Not part of the suite (doctest::skip): tools/gpu_check.sh runs it with
// --no-skip on the 0.5B-shaped model (LANTERN_BENCH_MODEL).
TEST_CASE("cuda: bench" * doctest::skip()) {
    if (!have_gpu()) return;
    const char* path = getenv("LANTERN_BENCH_MODEL");
    Model m;
    load_model(m, path ? path : "models/qwen2.5-0.5b");
    for (KernelSet set : {KernelSet::Plain, KernelSet::Fast}) {
        DeviceGuard guard;
        g_kernels.set = set;
        bool plain = set == KernelSet::Plain;  // the teaching kernels are slow: a shorter run
        CudaBenchResult r = cuda_bench(m, plain ? 128 : 512, plain ? 16 : 128);
        MESSAGE((plain ? "plain" : "fast") << " on " << r.device << ": copy " << r.copy_gbs
                << " GB/s | prefill " << r.prefill_tok_s << " tok/s | decode " << r.decode_tok_s << " tok/s, "
                << r.decode_bytes / 1e6 << " MB/step = " << r.decode_gbs << " GB/s ("
                << 100 * r.decode_gbs / r.copy_gbs << "% of copy)");
    }
}
#endif
