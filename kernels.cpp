// kernels.cpp — matmul and friends, the plain way.
//
// The plain kernels are the ground truth: straightforward loops that a
// reader can check against the math. Their fast twins live in
// kernels_fast.cpp (see the performance chapter) and tests/test_kernels.cpp
// checks every one of them against the loops here.
#include "kernels.h"
#include <chrono>
#include "logging.h"
#include "gguf/quants.h"
#include <cmath>
#include <omp.h>

KernelConfig g_kernels;

// The SIMD files define their tables only for their own architecture.
#if defined(__x86_64__)
#define ON_X86(k) &k
#else
#define ON_X86(k) nullptr
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define ON_ARM(k) &k
#else
#define ON_ARM(k) nullptr
#endif

const KernelSetInfo KERNEL_SETS[] = {
    {KernelSet::Fast, "fast", "the best SIMD set this CPU runs (default)", nullptr, nullptr, nullptr, true},
    {KernelSet::Plain, "plain", "the reference loops: one thread, double sums", nullptr, nullptr, nullptr, false},
    {KernelSet::Scalar, "scalar", "the SIMD order in portable C++ (bitwise equal to avx2/avx512)", &SCALAR_KERNELS,
     nullptr, nullptr, true},
    {KernelSet::AVX2, "avx2", "AVX2 + FMA + F16C micro-kernels", ON_X86(AVX2_KERNELS), cpu_has_avx2,
     "this CPU lacks AVX2, FMA or F16C (try fast or scalar)", true},
    {KernelSet::AVX512, "avx512", "AVX-512 (F, BW, VL, BF16, VNNI) micro-kernels", ON_X86(AVX512_KERNELS),
     cpu_has_avx512, "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI (try fast, avx2 or scalar)", true},
    {KernelSet::NEON, "neon", "ARM NEON micro-kernels (vdotq_s32 for Q8_0 where built for dotprod)",
     ON_ARM(NEON_KERNELS), cpu_has_neon, "this build is not for 64-bit ARM (try fast or scalar)", true},
    {KernelSet::BF16Dot, "bf16dot", "avx512, but bf16 weights meet activations rounded to bf16 (vdpbf16ps): faster prefill, less exact",
     ON_X86(AVX512_BF16DOT_KERNELS), cpu_has_avx512, "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI (try fast)", false},
};
const int N_KERNEL_SETS = sizeof(KERNEL_SETS) / sizeof(KERNEL_SETS[0]);

const KernelSetInfo& kernel_set_info(KernelSet set) {
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (KERNEL_SETS[i].set == set) return KERNEL_SETS[i];
    fail("kernel set %d is not in KERNEL_SETS", (int)set);
}

bool kernel_set_runs_here(const KernelSetInfo& s) { return s.kernels && (!s.cpu_has || s.cpu_has()); }

// The dispatch rule: a kernel set is a table of micro-kernels, picked here
// once; the kernels below only ask whether it is the plain one. "fast" is
// the first of NEON, AVX-512, AVX2 that this build and CPU run, else the
// scalar twin.
void kernels_init(KernelSet set, int threads) {
    g_kernels.set = set;
    g_kernels.threads = threads > 0 ? threads : omp_get_num_procs();
    omp_set_num_threads(g_kernels.threads);
    const KernelSetInfo& asked = kernel_set_info(set);
    if (asked.cpu_has && !asked.cpu_has()) fail("--kernels %s: %s", asked.name, asked.missing);
    if (set == KernelSet::Fast) {
        set = KernelSet::Scalar;
        for (KernelSet best : {KernelSet::NEON, KernelSet::AVX512, KernelSet::AVX2})
            if (kernel_set_runs_here(kernel_set_info(best))) {
                set = best;
                break;
            }
    }
    const KernelSetInfo& runs = kernel_set_info(set);
    g_kernels.simd = set == KernelSet::Plain ? nullptr : runs.kernels ? runs.kernels : &SCALAR_KERNELS;
    LOGD(CAT_LOAD, "kernels: %s (--kernels %s), %d threads", kernel_path_name(), kernel_set_name(g_kernels.set),
         g_kernels.threads);
}

const char* kernel_set_name(KernelSet set) {
    for (int i = 0; i < N_KERNEL_SETS; i++)
        if (KERNEL_SETS[i].set == set) return KERNEL_SETS[i].name;
    return "?";
}

const char* kernel_path_name() { return g_kernels.simd ? g_kernels.simd->name : "plain"; }

// One weight of W as f32, whatever its storage type. The plain matmul calls
// this per element: slow, but obviously right.
static inline float weight_at(const Mat& W, size_t i) {
    switch (W.dtype) {
        case DType::F32: return ((const float*)W.data)[i];
        case DType::BF16: return bf16_to_f32(((const uint16_t*)W.data)[i]);
        case DType::F16: return f16_to_f32(((const uint16_t*)W.data)[i]);
        case DType::Q8_0: {
            // block b holds weights 32b..32b+31: an f16 scale then 32 int8
            const uint8_t* blk = (const uint8_t*)W.data + (i / 32) * 34;
            uint16_t d;
            std::memcpy(&d, blk, 2);
            return f16_to_f32(d) * (float)(int8_t)blk[2 + i % 32];
        }
        default: return 0;  // low-bit formats are unpacked a row at a time (mat_row_to_f32)
    }
}

// y = W x for every token of the batch. Accumulates in double so the plain
// kernel is a trustworthy reference for the fast float32 ones.
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    for (int t = 0; t < T; t++) {
        const float* xt = x + (size_t)t * W.cols;
        float* yt = out + (size_t)t * W.rows;
        for (int r = 0; r < W.rows; r++) {
            double sum = bias ? bias[r] : 0.0;
            size_t base = (size_t)r * W.cols;
            for (int c = 0; c < W.cols; c++) sum += (double)weight_at(W, base + c) * xt[c];
            yt[r] = (float)sum;
        }
    }
}

// Which driver multiplies W: GGUF's 4/5/6-bit formats go to quants.cpp,
// quants_fast.cpp; so does Q8_0 when the kernel set has no Q8_0 tile of its
// own (AVX-512: quants_fast.cpp's VNNI tiles, the same order and bits as
// kernels_fast.cpp's, quants.h). Everything else to kernels_fast.cpp.
static bool goes_to_quants(const Mat& W) {
    bool q8_here = W.dtype == DType::Q8_0 && g_kernels.simd && !g_kernels.simd->tile_q8;
    return dtype_is_low_bit(W.dtype) || q8_here || W.packed;
}

// A steady clock in seconds, for KernelScratch's counts of time.
static double clock_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void matmul(float* out, const float* x, const Mat& W, const float* bias, int T, KernelScratch* scratch) {
    MatmulOut one = {out, &W, bias};
    matmul_many(&one, 1, x, T, scratch);
}

// One parallel loop for the whole list when one driver takes every matrix;
// a list that mixes drivers (or plain) goes one product after another.
void matmul_many(const MatmulOut* outs, int n, const float* x, int T, KernelScratch* scratch) {
    if (scratch && scratch->timed) {  // the same call untimed, its seconds added to the scratch's count
        scratch->timed = false;
        double t0 = clock_s();
        matmul_many(outs, n, x, T, scratch);
        scratch->matmul_s += clock_s() - t0;
        scratch->timed = true;
        return;
    }
    if (!g_kernels.simd) {  // the plain loops need no buffers
        for (int i = 0; i < n; i++) {
            const Mat& W = *outs[i].W;
            if (dtype_is_low_bit(W.dtype) || W.packed) matmul_quant_plain(outs[i].out, x, W, outs[i].bias, T);
            else matmul_plain(outs[i].out, x, W, outs[i].bias, T);
        }
        return;
    }
    KernelScratch own;  // only when the caller has none (kernels.h:KernelScratch)
    KernelScratch& s = scratch ? *scratch : own;
    int quant = 0;
    for (int i = 0; i < n; i++) quant += goes_to_quants(*outs[i].W);
    if (quant == n) return matmul_quant_fast_many(outs, n, x, T, *g_kernels.simd, s);
    if (quant == 0) return matmul_fast(outs, n, x, T, *g_kernels.simd, s);
    for (int i = 0; i < n; i++) matmul_many(&outs[i], 1, x, T, &s);
}

// Attention's dot product and weighted sum, the plain loops.
static inline float element_at(const void* p, DType t, int i) {
    Mat row;
    row.dtype = t;
    row.data = p;
    return weight_at(row, i);
}

float vec_dot_plain(const float* a, const void* b, DType bt, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * element_at(b, bt, i);
    return (float)sum;
}

void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * element_at(x, xt, i);
}

// RMSNorm: scale x so its root-mean-square is 1, then by the learned w.
// Unlike LayerNorm there is no mean subtraction and no bias.
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

void softmax(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = (float)lantern_exp(x[i] - max);  // the engine's own exp: the same bits with every libm
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

// silu(g) = g * sigmoid(g); SwiGLU multiplies it by the "up" projection.
// The loop below is the plain kernel; the SIMD sets take
// kernels_fast.cpp:swiglu_fast, whose exp is their polynomial (a prefill
// of 512 tokens calls exp 60 million times).
void swiglu(float* gate, const float* up, int n) {
    if (g_kernels.simd) return swiglu_fast(gate, up, n, *g_kernels.simd);
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + (float)lantern_exp(-g)) * up[i];
    }
}

// Rotary position embedding, Hugging Face layout. Pair (i, i+half) of each
// head is rotated by the angle pos * theta^(-2i/head_dim). The angle is
// computed in double: at pos ~ 30,000 a float angle would already be off in
// its third decimal.
//
// The angles depend on the position only, not on the layer or the head, so
// each thread keeps the cos and sin of the last position it rotated: a
// decode step calls this twice per layer at one position and computes its
// angles once (a pow, a cos and a sin per pair: 96 library calls for
// head_dim 64, while the other threads wait). The values are the ones
// computed afresh: the same bits. The cache is thread_local, not shared:
// two threads rotating at once (two callers, or the threads of one
// parallel loop) each keep their own, so it is no scratch a caller needs
// to own.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    int half = head_dim / 2;
    thread_local std::vector<float> cos_sin;  // [half] cos, then [half] sin, of position `last`
    thread_local int last = -1, last_dim = 0;
    thread_local float last_theta = 0;
    if (pos != last || head_dim != last_dim || theta != last_theta) {
        cos_sin.resize(2 * half);
        for (int i = 0; i < half; i++) {
            double freq = std::pow((double)theta, -2.0 * i / head_dim);
            double angle = pos * freq;
            cos_sin[i] = (float)std::cos(angle);
            cos_sin[half + i] = (float)std::sin(angle);
        }
        last = pos, last_dim = head_dim, last_theta = theta;
    }
    for (int i = 0; i < half; i++) {
        float c = cos_sin[i], s = cos_sin[half + i];
        for (int h = 0; h < n_heads; h++) {
            float* v = vec + (size_t)h * head_dim;
            float a = v[i], b = v[i + half];
            v[i] = a * c - b * s;
            v[i + half] = b * c + a * s;
        }
    }
}

// Attention for one head and one query, the reference loops: a score per
// cached position (dot product, scaled by 1/sqrt(head_dim) so the scores do
// not grow with the head's width), softmax into weights that sum to 1, and
// the weighted sum of the value rows.
void attention_head_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                          size_t stride, DType kv_type, int n, int head_dim) {
    float scale = 1.0f / std::sqrt((float)head_dim);
    for (int j = 0; j < n; j++) scores[j] = vec_dot_plain(q, keys + j * stride, kv_type, head_dim) * scale;
    softmax(scores, n);
    for (int i = 0; i < head_dim; i++) out[i] = 0.0f;
    for (int j = 0; j < n; j++) vec_axpy_plain(out, scores[j], values + j * stride, kv_type, head_dim);
}

void attention_head(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                    size_t stride, DType kv_type, int n, int head_dim) {
    if (g_kernels.simd) {
        attention_head_fast(out, scores, q, keys, values, stride, kv_type, n, head_dim, *g_kernels.simd);
        return;
    }
    // The plain kernel writes all n weights (its contract, and the
    // exercise's): without a trace's row to keep them, this thread's own
    // (thread_local: no other thread ever sees it, so callers on two
    // threads do not share it).
    thread_local std::vector<float> own;
    if (!scores) {
        if ((int)own.size() < n) own.resize(n);
        scores = own.data();
    }
    attention_head_plain(out, scores, q, keys, values, stride, kv_type, n, head_dim);
}

// Every head and token of a prefill (kernels.h): threads over (head, token)
// pairs, each output row one thread's, so the thread count changes nothing.
void attention_heads_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                           size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first,
                           int head_dim) {
    int kv_len = n_first - 1 + T, group = n_heads / n_kv_heads, q_dim = n_heads * head_dim;
    size_t elt = kv_type == DType::F32 ? 4 : 2;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int h = 0; h < n_heads; h++)
        for (int t = 0; t < T; t++) {
            int n = n_first + t;
            float* s = scores ? scores + ((size_t)h * T + t) * kv_len : nullptr;
            thread_local std::vector<float> own;  // the weights, when no trace keeps them
            if ((int)own.size() < n) own.resize(n);
            size_t kv_off = (size_t)(h / group) * head_dim * elt;
            attention_head_plain(out + (size_t)t * q_dim + h * head_dim, s ? s : own.data(),
                                 q + (size_t)t * q_dim + h * head_dim, keys + kv_off, values + kv_off, stride,
                                 kv_type, n, head_dim);
            if (s)
                for (int j = n; j < kv_len; j++) s[j] = 0.0f;  // masked: the future
        }
}

void attention_heads(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                     size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                     KernelScratch* scratch) {
    if (scratch && scratch->timed) {  // as matmul_many: the same call, timed
        scratch->timed = false;
        double t0 = clock_s();
        attention_heads(out, scores, q, keys, values, stride, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, scratch);
        scratch->attention_s += clock_s() - t0;
        scratch->timed = true;
        return;
    }
    if (g_kernels.simd) {
        KVRows K, V;
        K.base = keys, V.base = values, K.stride = V.stride = stride;
        attention_heads_rows(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, scratch);
    } else
        attention_heads_plain(out, scores, q, keys, values, stride, kv_type, n_heads, n_kv_heads, T, n_first,
                              head_dim);
}

void attention_heads_rows(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                          DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                          KernelScratch* scratch) {
    if (!g_kernels.simd) fail("attention_heads_rows: the plain kernels take the keys in one run (net.cpp:kv_read)");
    if (scratch && scratch->timed) {  // as attention_heads: the same call, timed
        scratch->timed = false;
        double t0 = clock_s();
        attention_heads_rows(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, scratch);
        scratch->attention_s += clock_s() - t0;
        scratch->timed = true;
        return;
    }
    KernelScratch own;  // only when the caller has none
    attention_heads_fast(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, *g_kernels.simd,
                         scratch ? *scratch : own);
}
