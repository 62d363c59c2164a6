// net_cuda.cpp — the Qwen2 forward pass on the GPU, and choosing the device.
//
// The same steps as net.cpp's forward(), in the same order, with each CPU
// kernel call replaced by its twin from kernels_cuda.cu. What differs is
// where the numbers live:
//
//   weights      copied to device memory once, on the first forward call,
//                in their file format (bf16 for the real model)
//   KV cache     in device memory, [n_layers, n_ctx, kv_dim] as on the CPU
//   activations  device scratch buffers with the names and shapes of Net's
//   logits       the only thing copied back, so the CPU sampler is unchanged
//
// This file is plain C++ (g++ compiles it) and is built in every build: in
// a CPU-only build only device_use and friends exist, and they explain
// that CUDA needs `make cuda`. That keeps #ifdefs out of run.cpp and net.cpp.
// What the engine sees of it is net_cuda.h.
//
// Why a separate file and not more of kernels_cuda.cu: kernels_cuda.cu is
// the arithmetic (the twin of kernels.cpp), this is the orchestration (the
// twin of net.cpp) — the order of operations, buffers, the decode graph.
#include "cuda/net_cuda.h"
#include "cuda/kernels_cuda.h"
#include "logging.h"
#include "net.h"

bool g_cuda_graphs = true;

// What the GPU pass does not do, in one place: every refusal of --device
// cuda is said here. n_seqs: the most sequences one call brings.
// `at_load`: whether to ask the driver for a device too (once, not every step).
static void refuse(const Net* net, int n_seqs, bool at_load = true) {
    std::string why;
    if (at_load && !cuda_available(&why)) fail("--device cuda: %s", why.c_str());
    if (n_seqs > 1) fail("--device cuda runs one sequence at a time; the batching server and forward_batch run on the CPU");
    if (net && !net->ablate.empty()) fail("--ablate: ablation runs on the CPU only (--device cpu)");
    if (net && net->model && net->model->cfg.arch->qk_norm)
        fail("--device cuda: Qwen3's q_norm/k_norm are not on the GPU yet; use --device cpu");
    if (net && net->kv.type != DType::F32)
        fail("--device cuda keeps its KV cache in f32; --kv-type %s runs on the CPU (--device cpu)", dtype_name(net->kv.type));
}

static std::shared_ptr<Backend> cuda_backend();

void device_use(Net& net, Device d) {
    if (d != Device::CUDA) return;  // the CPU's pass is the Net's already
    refuse(&net, 1);
    net.backend = cuda_backend();
}

void device_use_batched(Device d) {
    if (d == Device::CUDA) refuse(nullptr, 2);
}

#ifndef LANTERN_CUDA
// ---------------------------------------------------------------------------
// CPU-only build.
static const char* NO_CUDA = "this build has no CUDA (make cuda)";

bool cuda_available(std::string* why) {
    if (why) *why = NO_CUDA;
    return false;
}
static std::shared_ptr<Backend> cuda_backend() { fail("--device cuda: %s", NO_CUDA); }
CudaBenchResult cuda_bench(const Model&, int, int) { fail("--device cuda: %s", NO_CUDA); }

#else
// ---------------------------------------------------------------------------
// CUDA build.

bool cuda_available(std::string* why) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        if (why) *why = std::string("no CUDA device found") + (err != cudaSuccess ? std::string(" (") + cudaGetErrorString(err) + ")" : "");
        (void)cudaGetLastError();  // the error is reported above; this clears it for later calls
        return false;
    }
    return true;
}

// A device buffer of floats that remembers its size, for the scratch
// activations. Growing one moves it, which invalidates a captured graph.
struct DevFloats {
    float* p = nullptr;
    size_t n = 0;
};

struct CudaLayer {
    Mat wq, wk, wv, wo, w_gate, w_up, w_down;  // .data in device memory
    float *bq, *bk, *bv, *attn_norm, *ffn_norm;
};

struct CudaNet {
    const Model* model = nullptr;
    int n_ctx = 0;
    cudaStream_t stream = nullptr;
    char* weights = nullptr;  // one allocation holding every tensor
    size_t weight_bytes = 0;
    std::vector<CudaLayer> layers;
    Mat embed, lm_head;
    float* final_norm = nullptr;
    float *k_cache = nullptr, *v_cache = nullptr;  // [n_layers, n_ctx, kv_dim]
    // Scratch, grown to the largest T seen. Shapes for a batch of T:
    DevFloats x, xn;       // [T, hidden]
    DevFloats q, att;      // [T, n_heads*head_dim]
    DevFloats k, v;        // [T, kv_dim]
    DevFloats gate, up;    // [T, intermediate]
    DevFloats scores;      // [n_heads, T, ld]
    DevFloats logits;      // [n_out, vocab]
    int* tokens = nullptr;    // [cap_T] device copy of the token ids
    int* step = nullptr;      // {pos, first} in device memory (see kernels_cuda.h)
    int cap_T = 0;
    // Pinned (page-locked) host memory: the GPU can copy from and to it on
    // its own, which is also what a CUDA Graph's copy steps need.
    int* h_tokens = nullptr;  // [cap_T]
    int* h_step = nullptr;    // [2]
    float* h_logits = nullptr;  // [vocab], the decode step's logits
    cudaGraphExec_t graph = nullptr;  // the decode step (T = 1), captured once

    CudaNet() = default;
    CudaNet(const CudaNet&) = delete;
    CudaNet& operator=(const CudaNet&) = delete;
    ~CudaNet();
};

// Destructors must not throw, so a failure here is logged, not raised.
static void checked_free(cudaError_t err, const char* what) {
    if (err != cudaSuccess) LOGW(CAT_LOAD, "CUDA: freeing %s failed: %s", what, cudaGetErrorString(err));
}

CudaNet::~CudaNet() {
    if (graph) checked_free(cudaGraphExecDestroy(graph), "the decode graph");
    for (DevFloats* b : {&x, &xn, &q, &att, &k, &v, &gate, &up, &scores, &logits})
        if (b->p) checked_free(cudaFree(b->p), "a scratch buffer");
    for (void* p : {(void*)weights, (void*)k_cache, (void*)v_cache, (void*)tokens, (void*)step})
        if (p) checked_free(cudaFree(p), "device memory");
    for (void* p : {(void*)h_tokens, (void*)h_step, (void*)h_logits})
        if (p) checked_free(cudaFreeHost(p), "pinned memory");
    if (stream) checked_free(cudaStreamDestroy(stream), "the stream");
}

// Every weight into one device allocation, each tensor at a 256-byte
// aligned offset (so the matvec's 16-byte loads are always allowed).
// Pass 0 only measures; pass 1 allocates and copies.
static void upload_weights(CudaNet& g, const Model& m) {
    const Config& c = m.cfg;
    size_t used = 0;
    auto place = [&](const void* src, size_t bytes) -> char* {
        char* dst = g.weights ? g.weights + used : nullptr;
        if (dst) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
        used += (bytes + 255) / 256 * 256;
        return dst;
    };
    auto mat = [&](const Mat& w) {
        if (w.dtype == DType::Q8_0) fail("--device cuda takes f32, bf16 or f16 weights; drop --quant q8_0");
        Mat d = w;
        d.data = place(w.data, w.bytes());
        return d;
    };
    auto vec = [&](const std::vector<float>& v) { return (float*)place(v.data(), v.size() * sizeof(float)); };
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            g.weight_bytes = used;
            CUDA_CHECK(cudaMalloc(&g.weights, used));
            used = 0;
        }
        g.embed = mat(m.embed);
        g.lm_head = m.lm_head.data == m.embed.data ? g.embed : mat(m.lm_head);  // tied: one copy
        g.final_norm = vec(m.final_norm);
        g.layers.assign(c.n_layers, CudaLayer{});
        for (int l = 0; l < c.n_layers; l++) {
            const LayerWeights& L = m.layers[l];
            CudaLayer& D = g.layers[l];
            D.wq = mat(L.wq), D.wk = mat(L.wk), D.wv = mat(L.wv), D.wo = mat(L.wo);
            D.w_gate = mat(L.w_gate), D.w_up = mat(L.w_up), D.w_down = mat(L.w_down);
            D.bq = vec(L.bq), D.bk = vec(L.bk), D.bv = vec(L.bv);
            D.attn_norm = vec(L.attn_norm), D.ffn_norm = vec(L.ffn_norm);
        }
    }
}

static std::shared_ptr<CudaNet> cuda_net_create(const Model& m, int n_ctx) {
    const Config& c = m.cfg;
    auto g = std::make_shared<CudaNet>();
    g->model = &m;
    g->n_ctx = n_ctx;
    CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));  // graphs can't capture the legacy stream
    upload_weights(*g, m);
    size_t cache = (size_t)c.n_layers * n_ctx * c.n_kv_heads * c.head_dim;
    CUDA_CHECK(cudaMalloc(&g->k_cache, cache * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g->v_cache, cache * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&g->step, 2 * sizeof(int)));
    CUDA_CHECK(cudaMallocHost(&g->h_step, 2 * sizeof(int)));
    CUDA_CHECK(cudaMallocHost(&g->h_logits, (size_t)c.vocab * sizeof(float)));
    LOGI(CAT_LOAD, "CUDA: weights %.1f MB and KV cache %.1f MB in device memory", g->weight_bytes / 1e6,
         2.0 * cache * sizeof(float) / 1e6);
    return g;
}

// Make every scratch buffer big enough; a buffer that moves drops the graph
// (it holds the old addresses).
static void reserve(CudaNet& g, int T, size_t n_scores, int n_out) {
    const Config& c = g.model->cfg;
    size_t q_dim = (size_t)c.n_heads * c.head_dim, kv_dim = (size_t)c.n_kv_heads * c.head_dim;
    bool moved = false;
    auto need = [&](DevFloats& b, size_t n) {
        if (b.n >= n) return;
        if (b.p) CUDA_CHECK(cudaFree(b.p));
        b.p = nullptr;
        CUDA_CHECK(cudaMalloc(&b.p, n * sizeof(float)));
        b.n = n;
        moved = true;
    };
    need(g.x, (size_t)T * c.hidden);
    need(g.xn, (size_t)T * c.hidden);
    need(g.q, T * q_dim);
    need(g.att, T * q_dim);
    need(g.k, T * kv_dim);
    need(g.v, T * kv_dim);
    need(g.gate, (size_t)T * c.intermediate);
    need(g.up, (size_t)T * c.intermediate);
    need(g.scores, n_scores);
    need(g.logits, (size_t)n_out * c.vocab);
    if (T > g.cap_T) {
        if (g.tokens) CUDA_CHECK(cudaFree(g.tokens));
        if (g.h_tokens) CUDA_CHECK(cudaFreeHost(g.h_tokens));
        g.tokens = nullptr, g.h_tokens = nullptr;
        CUDA_CHECK(cudaMalloc(&g.tokens, T * sizeof(int)));
        CUDA_CHECK(cudaMallocHost(&g.h_tokens, T * sizeof(int)));
        g.cap_T = T;
        moved = true;
    }
    if (moved && g.graph) {
        CUDA_CHECK(cudaGraphExecDestroy(g.graph));
        g.graph = nullptr;
    }
}

// Queues one forward pass on g.stream; nothing here waits for the GPU, so
// the same calls can be recorded into a graph. The token ids and {pos,
// first} travel from pinned memory as the first two steps; the decode
// step's logits travel back as the last.
static void enqueue_forward(CudaNet& g, int T, int ld, int first_row) {
    const Config& c = g.model->cfg;
    cudaStream_t s = g.stream;
    int H = c.hidden, hd = c.head_dim, kv_dim = c.n_kv_heads * hd, I = c.intermediate;
    CUDA_CHECK(cudaMemcpyAsync(g.tokens, g.h_tokens, T * sizeof(int), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(g.step, g.h_step, 2 * sizeof(int), cudaMemcpyHostToDevice, s));

    cuda_embed(g.x.p, g.tokens, g.embed, T, s);  // [T, hidden]
    for (int l = 0; l < c.n_layers; l++) {
        const CudaLayer& L = g.layers[l];
        float* kc = g.k_cache + (size_t)l * g.n_ctx * kv_dim;  // this layer's [n_ctx, kv_dim]
        float* vc = g.v_cache + (size_t)l * g.n_ctx * kv_dim;

        // --- attention block ---
        cuda_rmsnorm(g.xn.p, g.x.p, L.attn_norm, T, H, c.eps, s);
        cuda_matmul(g.q.p, g.xn.p, L.wq, L.bq, T, s);  // [T, q_dim]
        cuda_matmul(g.k.p, g.xn.p, L.wk, L.bk, T, s);  // [T, kv_dim]
        cuda_matmul(g.v.p, g.xn.p, L.wv, L.bv, T, s);  // [T, kv_dim]
        cuda_rope(g.q.p, T, c.n_heads, hd, g.step, c.rope_theta, s);
        cuda_rope(g.k.p, T, c.n_kv_heads, hd, g.step, c.rope_theta, s);
        cuda_kv_store(kc, vc, g.k.p, g.v.p, T, kv_dim, g.step, s);
        cuda_attention(g.att.p, g.q.p, kc, vc, g.scores.p, T, c.n_heads, c.n_kv_heads, hd, ld, g.step, s);
        cuda_matmul(g.xn.p, g.att.p, L.wo, nullptr, T, s);  // [T, hidden]
        cuda_add(g.x.p, g.xn.p, (size_t)T * H, s);

        // --- MLP block (SwiGLU) ---
        cuda_rmsnorm(g.xn.p, g.x.p, L.ffn_norm, T, H, c.eps, s);
        cuda_matmul(g.gate.p, g.xn.p, L.w_gate, nullptr, T, s);  // [T, I]
        cuda_matmul(g.up.p, g.xn.p, L.w_up, nullptr, T, s);      // [T, I]
        cuda_swiglu(g.gate.p, g.up.p, (size_t)T * I, s);
        cuda_matmul(g.xn.p, g.gate.p, L.w_down, nullptr, T, s);  // [T, hidden]
        cuda_add(g.x.p, g.xn.p, (size_t)T * H, s);
    }

    // Final norm and LM head for the rows whose logits are wanted.
    int n_out = T - first_row;
    cuda_rmsnorm(g.xn.p, g.x.p + (size_t)first_row * H, g.final_norm, n_out, H, c.eps, s);
    cuda_matmul(g.logits.p, g.xn.p, g.lm_head, nullptr, n_out, s);  // [n_out, vocab]
    if (T == 1)
        CUDA_CHECK(cudaMemcpyAsync(g.h_logits, g.logits.p, (size_t)c.vocab * sizeof(float), cudaMemcpyDeviceToHost, s));
}

// A CUDA Graph is a recording of the launches of one decode step. Replaying
// it costs one launch instead of ~15 per layer, which matters when each
// kernel runs for only microseconds. Everything that changes from step to
// step (token id, position) is read from pinned memory the graph copies in,
// so one recording serves every step.
static void capture_decode_graph(CudaNet& g) {
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal));
    try {
        enqueue_forward(g, 1, g.n_ctx, 0);
    } catch (...) {
        cudaStreamEndCapture(g.stream, &graph);  // end the capture before reporting the first error
        if (graph) cudaGraphDestroy(graph);
        throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(g.stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&g.graph, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    LOGD(CAT_FORWARD, "CUDA: decode step captured as a graph");
}

// The GPU's backend: its weights, cache and scratch, made on the first
// call (and again for another model or cache size).
struct CudaBackend : Backend {
    std::shared_ptr<CudaNet> gpu;
    const float* forward(Net& net, const BatchSeq* seqs, int n_seqs) override;
};

static std::shared_ptr<Backend> cuda_backend() { return std::make_shared<CudaBackend>(); }

// The one sequence of forward(), in the GPU's copy of the Net's own cache;
// forward_batch has already checked its tokens and positions.
const float* CudaBackend::forward(Net& net, const BatchSeq* seqs, int n_seqs) {
    refuse(&net, n_seqs, false);
    const int* tokens = seqs[0].tokens;
    int T = seqs[0].T, pos = seqs[0].pos, first_pos = seqs[0].kv.first;
    bool all_logits = seqs[0].all_logits;
    if (seqs[0].kv.k != net.kv.k.data()) fail("--device cuda: a sequence runs in the Net's own cache only");
    const Config& c = net.model->cfg;
    if (!gpu || gpu->model != net.model || gpu->n_ctx != net.kv.n_ctx) gpu = cuda_net_create(*net.model, net.kv.n_ctx);
    CudaNet& g = *gpu;

    // ld: the scores row length. A decode step uses the whole context, so
    // the graph's shapes never change; a batch uses what it needs.
    int ld = T == 1 ? g.n_ctx : pos + T - first_pos;
    int first_row = all_logits ? 0 : T - 1, n_out = T - first_row;
    reserve(g, T, (size_t)c.n_heads * T * ld, n_out);
    std::memcpy(g.h_tokens, tokens, T * sizeof(int));
    g.h_step[0] = pos;
    g.h_step[1] = first_pos;

    if (T == 1 && g_cuda_graphs && g_kernels.set != KernelSet::Plain) {
        if (!g.graph) capture_decode_graph(g);
        CUDA_CHECK(cudaGraphLaunch(g.graph, g.stream));
    } else {
        enqueue_forward(g, T, ld, first_row);
    }
    if (net.logits.size() < (size_t)n_out * c.vocab) net.logits.resize((size_t)n_out * c.vocab);
    if (T > 1)
        CUDA_CHECK(cudaMemcpyAsync(net.logits.data(), g.logits.p, (size_t)n_out * c.vocab * sizeof(float),
                                   cudaMemcpyDeviceToHost, g.stream));
    CUDA_CHECK(cudaStreamSynchronize(g.stream));  // also where a kernel's runtime error would surface
    if (T == 1) std::memcpy(net.logits.data(), g.h_logits, (size_t)c.vocab * sizeof(float));
    return net.logits.data();
}

// ---------------------------------------------------------------------------
// Measurements for ./run bench --device cuda.

double cuda_copy_bandwidth(size_t bytes) {
    void *a = nullptr, *b = nullptr;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMemset(a, 1, bytes));
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));  // warm-up
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++) CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    return 2.0 * bytes * reps / (ms / 1e3) / 1e9;  // each copy reads and writes `bytes`
}

// Prefill prompt_len tokens as one batch, then n_decode single steps. A
// first round warms up (uploads the weights, sizes the buffers, captures
// the graph) and is not timed. Every forward call waits for its logits, so
// wall-clock time is the time a user would see.
CudaBenchResult cuda_bench(const Model& m, int prompt_len, int n_decode) {
    const Config& c = m.cfg;
    std::string why;
    if (!cuda_available(&why)) fail("bench --device cuda: %s", why.c_str());
    if (prompt_len < 2 || n_decode < 1 || prompt_len + n_decode > c.max_pos)
        fail("cuda_bench: %d prompt + %d decode tokens do not fit %d positions", prompt_len, n_decode, c.max_pos);
    CudaBenchResult r;
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    char name[512];
    snprintf(name, sizeof name, "%s (%d SMs, %.0f GB)", prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1e9);
    r.device = name;
    r.copy_gbs = cuda_copy_bandwidth((size_t)512 << 20);

    std::vector<int> ids(prompt_len + n_decode);
    for (size_t i = 0; i < ids.size(); i++) ids[i] = (int)((i * 7919 + 13) % c.vocab);
    Net net;
    net_init(net, m, prompt_len + n_decode);
    device_use(net, Device::CUDA);
    forward(net, ids.data(), prompt_len, 0, false);  // warm-up
    for (int i = 0; i < 3 && i < n_decode; i++) forward(net, &ids[prompt_len + i], 1, prompt_len + i, false);
    net_reset(net);

    double t0 = now_s();
    forward(net, ids.data(), prompt_len, 0, false);
    r.prefill_tok_s = prompt_len / (now_s() - t0);
    t0 = now_s();
    for (int i = 0; i < n_decode; i++) forward(net, &ids[prompt_len + i], 1, prompt_len + i, false);
    r.decode_tok_s = n_decode / (now_s() - t0);

    // Bytes a decode step has to read at least: every weight matrix once
    // (the embedding table only for one row, unless it doubles as the LM
    // head), the small vectors, and the keys and values it attends to
    // (on average half-way through the decode).
    double bytes = m.lm_head.bytes() + (double)c.hidden * sizeof(float);
    for (const LayerWeights& L : m.layers) {
        for (const Mat* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) bytes += w->bytes();
        bytes += (L.attn_norm.size() + L.ffn_norm.size() + L.bq.size() + L.bk.size() + L.bv.size()) * sizeof(float);
    }
    double avg_ctx = prompt_len + (n_decode + 1) / 2.0;
    bytes += 2.0 * c.n_layers * avg_ctx * c.n_kv_heads * c.head_dim * sizeof(float);
    r.decode_bytes = bytes;
    r.decode_gbs = bytes * r.decode_tok_s / 1e9;
    return r;
}
#endif
