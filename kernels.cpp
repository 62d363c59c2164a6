// kernels.cpp — matmul and friends, the plain way, and the table of weight
// types.
//
// The plain kernels are the ground truth: straightforward loops that a
// reader can check against the math. The fast sets (cpu/) replace three of
// them — matmul, swiglu, attention_heads — through g_ops (kernels.h), and
// tests/test_kernels.cpp checks every set against the loops here.
#include "kernels.h"
#include <cmath>
#include <cstring>

// ---------------------------------------------------------------------------
// The weight types (tensor.h: WeightFormat). The float types are read here;
// the block formats add their rows from gguf/quants.cpp when it is linked.
static void float_row(const Mat& W, int r, float* out) {
    const uint8_t* row = (const uint8_t*)W.data + (size_t)r * dtype_row_bytes(W.dtype, W.cols);
    for (int c = 0; c < W.cols; c++) out[c] = widen(W.dtype, row, c);
}
// Indexed by DType; the rows of types nobody registered stay empty.
static WeightFormat g_formats[N_DTYPES] = {
    {DType::F32, "f32", 1, 4, float_row, matmul_plain},
    {DType::F16, "f16", 1, 2, float_row, matmul_plain},
    {DType::BF16, "bf16", 1, 2, float_row, matmul_plain},
};

void register_weight_format(const WeightFormat& f) { g_formats[(int)f.type] = f; }

const WeightFormat& weight_format(DType t) {
    const WeightFormat& f = g_formats[(int)t];
    if (!f.name) fail("weight type %s: this build has no block formats (gguf/quants.cpp)", dtype_name(t));
    return f;
}

bool weight_format_known(DType t) { return g_formats[(int)t].name != nullptr; }
int dtype_block_size(DType t) { return weight_format(t).block; }
int dtype_block_bytes(DType t) { return weight_format(t).bytes; }
size_t dtype_row_bytes(DType t, int n) { return (size_t)n / dtype_block_size(t) * dtype_block_bytes(t); }
bool dtype_is_low_bit(DType t) { return dtype_block_size(t) > 1 && t != DType::Q8_0; }
void mat_row_to_f32(const Mat& W, int r, float* out) { weight_format(W.dtype).row_to_f32(W, r, out); }

// ---------------------------------------------------------------------------
// The table of operations: the plain loops until kernels_init chooses a set.
static void matmul_many_plain(const MatmulOut* outs, int n, const float* x, int T, KernelScratch&) {
    for (int i = 0; i < n; i++) weight_format(outs[i].W->dtype).matmul_plain(outs[i].out, x, *outs[i].W, outs[i].bias, T);
}
static void attention_plain(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                            DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                            KernelScratch& s);
const KernelOps PLAIN_OPS = {"plain", matmul_many_plain, swiglu_plain, attention_plain};
KernelOps g_ops = PLAIN_OPS;

const char* kernel_path_name() { return g_ops.name; }

KernelScratch& kernel_scratch() {
    thread_local KernelScratch own;
    return own;
}

// The server's trace counts a step's seconds in products and in attention
// (KernelScratch::timed): one clock around the call, when asked.
template <class F> static void count_time(KernelScratch& s, double& total, F&& run) {
    if (!s.timed) return run();
    double t0 = now_s();
    run();
    total += now_s() - t0;
}

void matmul(float* out, const float* x, const Mat& W, const float* bias, int T, KernelScratch* scratch) {
    MatmulOut one = {out, &W, bias};
    matmul_many(&one, 1, x, T, scratch);
}

void matmul_many(const MatmulOut* outs, int n, const float* x, int T, KernelScratch* scratch) {
    KernelScratch& s = scratch ? *scratch : kernel_scratch();
    count_time(s, s.matmul_s, [&] { g_ops.matmul(outs, n, x, T, s); });
}

void attention_heads(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V, DType kv_type,
                     int n_heads, int n_kv_heads, int T, int n_first, int head_dim, KernelScratch* scratch) {
    KernelScratch& s = scratch ? *scratch : kernel_scratch();
    count_time(s, s.attention_s,
               [&] { g_ops.attention(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, T, n_first, head_dim, s); });
}

// ---------------------------------------------------------------------------
// The plain loops.

// y = W x for every token of the batch, for a float or Q8_0 matrix in the
// file's layout. Accumulates in double so the plain kernel is a trustworthy
// reference for the fast float32 ones.
void matmul_plain(float* out, const float* x, const Mat& W, const float* bias, int T) {
    for (int t = 0; t < T; t++) {
        const float* xt = x + (size_t)t * W.cols;
        float* yt = out + (size_t)t * W.rows;
        for (int r = 0; r < W.rows; r++) {
            double sum = bias ? bias[r] : 0.0;
            size_t base = (size_t)r * W.cols;
            for (int c = 0; c < W.cols; c++) sum += (double)widen(W.dtype, W.data, base + c) * xt[c];  // Q8_0 too: its scale times its code
            yt[r] = (float)sum;
        }
    }
}

// Q8_0 (kernels.h): the scale d = max|x|/127 of each 32 values, as f16,
// then round(x/d) of each in int8.
void quantize_row_q8_0(const float* x, int n, uint8_t* out) {
    for (int b = 0; b < n / Q8_BLOCK; b++) {
        const float* xb = x + b * Q8_BLOCK;
        float amax = 0;
        for (int j = 0; j < Q8_BLOCK; j++) amax = std::fmax(amax, std::fabs(xb[j]));
        float d = amax / 127.0f;
        uint16_t dh = f32_to_f16(d);
        float inv = d > 0 ? 1.0f / d : 0.0f;
        uint8_t* blk = out + (size_t)b * Q8_BLOCK_BYTES;
        std::memcpy(blk, &dh, 2);
        for (int j = 0; j < Q8_BLOCK; j++) blk[2 + j] = (uint8_t)(int8_t)std::lround(xb[j] * inv);
    }
}

// Attention's dot product and weighted sum, the plain loops.
float vec_dot_plain(const float* a, const void* b, DType bt, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * widen(bt, b, i);
    return (float)sum;
}

void vec_axpy_plain(float* y, float alpha, const void* x, DType xt, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * widen(xt, x, i);
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
// One exp per value (a prefill of 512 tokens calls it 60 million times:
// the fast sets have their own, cpu/kernels_fast.cpp:swiglu_fast).
void swiglu_plain(float* gate, const float* up, int n) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + (float)lantern_exp(-g)) * up[i];
    }
}

void swiglu(float* gate, const float* up, int n) { g_ops.swiglu(gate, up, n); }

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

// Every head and token (kernels.h): threads over (head, token) pairs, each
// output row one thread's, so the thread count changes nothing.
void attention_heads_plain(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                           size_t stride, DType kv_type, int n_heads, int n_kv_heads, int T, int n_first,
                           int head_dim) {
    int kv_len = n_first - 1 + T, group = n_heads / n_kv_heads, q_dim = n_heads * head_dim;
    size_t head_bytes = kv_row_bytes(kv_type, head_dim);
    #pragma omp parallel for collapse(2) schedule(static)
    for (int h = 0; h < n_heads; h++)
        for (int t = 0; t < T; t++) {
            int n = n_first + t;
            float* s = scores ? scores + ((size_t)h * T + t) * kv_len : nullptr;
            thread_local std::vector<float> own;  // the weights, when no trace keeps them
            if ((int)own.size() < n) own.resize(n);
            size_t kv_off = (size_t)(h / group) * head_bytes;
            attention_head_plain(out + (size_t)t * q_dim + h * head_dim, s ? s : own.data(),
                                 q + (size_t)t * q_dim + h * head_dim, keys + kv_off, values + kv_off, stride,
                                 kv_type, n, head_dim);
            if (s)
                for (int j = n; j < kv_len; j++) s[j] = 0.0f;  // masked: the future
        }
}

// The plain attention reads its keys in one run: a sequence whose keys lie
// in pages (the server's cache) is first gathered, page by page, into one.
static const uint8_t* one_run(const KVRows& R, int n, LineVector<uint8_t>& buf) {
    if (!R.rows) return R.base;
    if (buf.size() < n * R.stride) buf.resize(n * R.stride);
    for (int j = 0, r; j < n; j += r) {
        r = R.run(j, n - j);
        std::memcpy(&buf[j * R.stride], R.rows[j], r * R.stride);
    }
    return buf.data();
}

static void attention_plain(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                            DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                            KernelScratch& s) {
    int n = n_first - 1 + T;
    attention_heads_plain(out, scores, q, one_run(K, n, s.gk), one_run(V, n, s.gv), K.stride, kv_type, n_heads,
                          n_kv_heads, T, n_first, head_dim);
}
