// kernels.cpp — matmul and friends.
//
// The plain kernels are the ground truth: straightforward loops in float32
// that a reader can check against the math. The fast kernels live beside
// them (see the performance chapter) and are tested equal to these.
#include "kernels.h"
#include <cmath>
#include <omp.h>

KernelConfig g_kernels;

void kernels_init(KernelSet set, int threads) {
    g_kernels.set = set;
    g_kernels.threads = threads > 0 ? threads : omp_get_num_procs();
    omp_set_num_threads(g_kernels.threads);
}

size_t Mat::bytes() const {
    size_t n = (size_t)rows * cols;
    switch (dtype) {
        case DType::F32: return n * 4;
        case DType::F16:
        case DType::BF16: return n * 2;
        case DType::Q8_0: return n / 32 * 34;
    }
    return 0;
}

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
    }
    return 0;
}

void mat_row_to_f32(const Mat& W, int r, float* out) {
    size_t base = (size_t)r * W.cols;
    for (int c = 0; c < W.cols; c++) out[c] = weight_at(W, base + c);
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

void matmul(float* out, const float* x, const Mat& W, const float* bias, int T) {
    if (g_kernels.set == KernelSet::Plain) matmul_plain(out, x, W, bias, T);
    else matmul_fast(out, x, W, bias, T);
}

// Until the SIMD kernels land, "fast" is the plain loop spread over threads:
// each thread owns a range of output rows, so no two threads ever add into
// the same number and the result does not depend on the thread count.
void matmul_fast(float* out, const float* x, const Mat& W, const float* bias, int T) {
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < W.rows; r++) {
        size_t base = (size_t)r * W.cols;
        for (int t = 0; t < T; t++) {
            const float* xt = x + (size_t)t * W.cols;
            float sum = 0;
            for (int c = 0; c < W.cols; c++) sum += weight_at(W, base + c) * xt[c];
            out[(size_t)t * W.rows + r] = sum + (bias ? bias[r] : 0.0f);
        }
    }
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
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

// silu(g) = g * sigmoid(g); SwiGLU multiplies it by the "up" projection.
void swiglu(float* gate, const float* up, int n) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

// Rotary position embedding, Hugging Face layout. Pair (i, i+half) of each
// head is rotated by the angle pos * theta^(-2i/head_dim). The angle is
// computed in double: at pos ~ 30,000 a float angle would already be off in
// its third decimal.
void apply_rope(float* vec, int n_heads, int head_dim, int pos, float theta) {
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        double freq = std::pow((double)theta, -2.0 * i / head_dim);
        double angle = pos * freq;
        float c = (float)std::cos(angle), s = (float)std::sin(angle);
        for (int h = 0; h < n_heads; h++) {
            float* v = vec + (size_t)h * head_dim;
            float a = v[i], b = v[i + half];
            v[i] = a * c - b * s;
            v[i + half] = b * c + a * s;
        }
    }
}

// Q8_0: every 32 consecutive weights of a row share one scale d = max|w|/127
// and are stored as round(w/d) in int8 — GGUF's block_q8_0.
Mat quantize_q8_0(const Mat& W, std::vector<uint8_t>& storage) {
    if (W.cols % 32 != 0) fail("quantize_q8_0: %d columns is not a multiple of 32", W.cols);
    size_t n = (size_t)W.rows * W.cols;
    storage.resize(n / 32 * 34);
    float buf[32];
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            buf[j] = weight_at(W, b * 32 + j);
            amax = std::fmax(amax, std::fabs(buf[j]));
        }
        float d = amax / 127.0f;
        uint16_t dh = f32_to_f16(d);
        float inv = d > 0 ? 1.0f / d : 0.0f;
        uint8_t* blk = &storage[b * 34];
        std::memcpy(blk, &dh, 2);
        for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)std::lround(buf[j] * inv);
    }
    Mat q = W;
    q.dtype = DType::Q8_0;
    q.data = storage.data();
    return q;
}
