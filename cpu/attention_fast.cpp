// attention_fast.cpp — the fast twins of kernels.cpp's attention: one
// query over the keys in blocks with an online softmax (decode), and tiles
// of queries x keys for the T queries of a prefill. Both use the set's
// kernels (dot, exp_shift, axpy, and the tiles' att_scores / att_pv), so
// every SIMD set gives the same bits (book/06-attention-kv-cache.md,
// book/11-performance.md).
#include "cpu/kernel_sets.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

// One attention head for one query (kernels.h: attention_head), over the
// keys in blocks of ATT_BLOCK with an online softmax. The plain kernel
// computes every score, then their maximum M and sum L, then
// out = sum_j exp(s_j - M) / L * v_j. Here the blocks come one at a time and
// M is not known until the last one, so the kernel keeps a running maximum m
// and, relative to it, the running sum l = sum exp(s_j - m) and the unscaled
// output o = sum exp(s_j - m) v_j. When a block raises the maximum to m',
// everything summed so far was relative to the old m: multiplying l and o by
// exp(m - m') puts it relative to m' (each term exp(s_j - m) exp(m - m') =
// exp(s_j - m')). After the last block m = M, and out = o / l. Only one
// block of scores is ever held (on the stack), however long the prompt: no
// buffer of n scores per query, no T x T per head in prefill.
//
// Every step uses the set's kernels (dot in the one order, exp_shift, axpy),
// so all sets give the same bits; the sum l is kept in double, as plain does.
//
// The keys and values come as KVRows (kernels.h): in one run, or page by
// page where the server's cache holds them. A block of ATT_BLOCK keys may
// span pages; axpy then goes over it one page's run at a time, which adds
// the same products to each output value in the same order.
static void head_rows(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V, size_t off,
                      DType kv_type, int n, int head_dim, const SimdKernels& k) {
    float scale = 1.0f / std::sqrt((float)head_dim);
    float s[ATT_BLOCK];
    float m = -INFINITY;
    double l = 0;
    for (int i = 0; i < head_dim; i++) out[i] = 0.0f;
    for (int j0 = 0; j0 < n; j0 += ATT_BLOCK) {
        int nb = std::min(ATT_BLOCK, n - j0);
        float block_max = -INFINITY;
        for (int j = 0; j < nb; j++) {
            s[j] = k.dot(q, K.at(j0 + j) + off, kv_type, head_dim) * scale;
            block_max = std::max(block_max, s[j]);
        }
        if (scores) std::memcpy(scores + j0, s, nb * sizeof(float));
        if (block_max > m) {  // a new maximum: rescale what was summed relative to the old one
            if (j0 > 0) {
                float r = m - block_max;
                k.exp_shift(&r, 0.0f, 1);
                l *= r;
                for (int i = 0; i < head_dim; i++) out[i] *= r;
            }
            m = block_max;
        }
        k.exp_shift(s, m, nb);
        for (int j = 0; j < nb; j++) l += s[j];
        for (int j = 0, r; j < nb; j += r) {
            r = V.run(j0 + j, nb - j);
            k.axpy(out, s + j, V.at(j0 + j) + off, V.stride, kv_type, r, head_dim);
        }
    }
    float inv = (float)(1.0 / l);
    for (int i = 0; i < head_dim; i++) out[i] *= inv;
    if (scores) {  // the weights a trace shows: exp(s_j - M) / L
        k.exp_shift(scores, m, n);
        for (int j = 0; j < n; j++) scores[j] *= inv;
    }
}

void attention_head_fast(float* out, float* scores, const float* q, const uint8_t* keys, const uint8_t* values,
                         size_t stride, DType kv_type, int n, int head_dim, const SimdKernels& k) {
    KVRows K, V;
    K.base = keys, V.base = values, K.stride = V.stride = stride;
    head_rows(out, scores, q, K, V, 0, kv_type, n, head_dim, k);
}

// ---------------------------------------------------------------------------
// Attention for a batch of queries (prefill; kernels.h: attention_heads).
//
// One query at a time (attention_head_fast), each score is a dot product of
// head_dim values ending in a horizontal sum, and each value row is read
// once per query. A prefill has T queries per head, and neighbouring ones
// see nearly the same keys: so the work goes in tiles of ATT_QUERIES
// queries of one head against ATT_BLOCK keys, like a matrix product.
//   scores  S = Q K^T: the keys of each KV head are first copied transposed
//           (kt: [head_dim][ATT_BLOCK] per block of keys, widened to f32), so
//           one vector load holds one dimension of 16 keys, and a register
//           tile of queries x keys adds q_i[d] * kt[d][j] for d = 0, 1, ...
//           (one fma chain per score, no horizontal sum);
//   softmax online, per query, as attention_head_fast: a running maximum m
//           and the sum l, rescaled by exp(m - m') when a block raises m;
//   output  O += P V: each value row loaded once per tile serves every
//           query of it.
// Worked example, one head, head_dim 2, a block of two keys k0 = (1, 0),
// k1 = (0, 1) (kt rows: (1, 0) and (0, 1)), queries q0 = (2, 0), q1 = (1, 1):
// S = Q K^T = [[2, 0], [1, 1]] (times 1/sqrt(2)); query 0 sits at key 0, so
// its score for key 1 (the future) is masked to -inf and its weight is 0.
//
// The order, one for every set: a score is the chain of fmas above from +0,
// times the scale; the weights p = exp_poly(s - m); the sum l in 16 lanes
// (key j into lane j % 16, folded by sum_lanes at the end), and a rescale
// multiplies each lane and each output value by r = exp_poly(m - m');
// each output value adds p_j v_j as axpy does (one fma per key, in order);
// out = o * (1 / l). A masked key gets p = 0 and adds nothing, so a query's
// bits do not depend on which tile of queries it came in.
static void att_scores_scalar(float* s, const float* q, size_t q_stride, int nq, const float* kt, int head_dim) {
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < ATT_BLOCK; j++) {
            float acc = 0.0f;
            for (int d = 0; d < head_dim; d++) acc = std::fma(q[i * q_stride + d], kt[d * ATT_BLOCK + j], acc);
            s[i * ATT_BLOCK + j] = acc;
        }
}


// Queries t0 .. t0+nq-1 of head h (the layout of attention_heads).
static void attention_tile(float* out, float* scores, const float* q, const float* kt, const KVRows& V, size_t off,
                           DType kv_type, int T, int t0, int nq, int n_first, int q_dim, int head_dim,
                           const SimdKernels& k, float* o) {
    float scale = 1.0f / std::sqrt((float)head_dim);
    int kv_len = n_first - 1 + T, last = n_first + t0 + nq - 1;  // keys the last query of the tile sees
    float s[ATT_QUERIES][ATT_BLOCK], m[ATT_QUERIES], lanes[ATT_QUERIES][LANES];
    for (int i = 0; i < nq; i++) {
        m[i] = -INFINITY;
        for (int j = 0; j < LANES; j++) lanes[i][j] = 0.0f;
    }
    std::fill(o, o + (size_t)nq * head_dim, 0.0f);
    for (int j0 = 0; j0 < last; j0 += ATT_BLOCK) {
        int nk = std::min(ATT_BLOCK, last - j0);  // keys of this block that any query sees
        const float* ktb = kt + (size_t)(j0 / ATT_BLOCK) * head_dim * ATT_BLOCK;
        if (k.att_scores) k.att_scores(&s[0][0], q, q_dim, nq, ktb, head_dim);
        else att_scores_scalar(&s[0][0], q, q_dim, nq, ktb, head_dim);
        for (int i = 0; i < nq; i++) {
            float* si = s[i];
            int nv = std::min(nk, n_first + t0 + i - j0);  // keys query i sees here
            if (nv <= 0) {
                std::fill(si, si + nk, 0.0f);
                continue;
            }
            float bm = -INFINITY;
            for (int j = 0; j < nv; j++) {
                si[j] *= scale;
                bm = std::max(bm, si[j]);
            }
            for (int j = nv; j < nk; j++) si[j] = -INFINITY;  // the future: weight exp(-inf) = 0
            if (scores) std::memcpy(scores + ((size_t)(t0 + i)) * kv_len + j0, si, nv * sizeof(float));
            if (bm > m[i]) {  // a new maximum: rescale what was summed relative to the old one
                if (m[i] != -INFINITY) {
                    float r = exp_poly(m[i] - bm);
                    for (int j = 0; j < LANES; j++) lanes[i][j] *= r;
                    for (int d = 0; d < head_dim; d++) o[(size_t)i * head_dim + d] *= r;
                }
                m[i] = bm;
            }
            k.exp_shift(si, m[i], nk);
            for (int j = 0; j < nk; j++) lanes[i][j % LANES] += si[j];
        }
        for (int j = 0, r; j < nk; j += r) {  // the block's values, one page's run at a time
            r = V.run(j0 + j, nk - j);
            const uint8_t* v = V.at(j0 + j) + off;
            if (k.att_pv) k.att_pv(o, &s[0][j], nq, v, V.stride, kv_type, r, head_dim);
            else
                for (int i = 0; i < nq; i++) k.axpy(o + (size_t)i * head_dim, s[i] + j, v, V.stride, kv_type, r, head_dim);
        }
    }
    for (int i = 0; i < nq; i++) {
        float inv = 1.0f / sum_lanes(lanes[i]);
        float* y = out + (size_t)(t0 + i) * q_dim;
        for (int d = 0; d < head_dim; d++) y[d] = o[(size_t)i * head_dim + d] * inv;
        if (scores) {  // the weights a trace shows: exp(s_j - M) / L, zeros for the future
            float* row = scores + (size_t)(t0 + i) * kv_len;
            int n = n_first + t0 + i;
            k.exp_shift(row, m[i], n);
            for (int j = 0; j < n; j++) row[j] *= inv;
            for (int j = n; j < kv_len; j++) row[j] = 0.0f;
        }
    }
}

void attention_heads_fast(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                          DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                          const SimdKernels& k, KernelScratch& s) {
    int kv_len = n_first - 1 + T, group = n_heads / n_kv_heads, q_dim = n_heads * head_dim;
    size_t elt = kv_type == DType::F32 ? 4 : 2;
    if (T == 1) {  // decode: one query per head
        #pragma omp parallel for schedule(static)
        for (int h = 0; h < n_heads; h++) {
            size_t kv_off = (size_t)(h / group) * head_dim * elt;
            head_rows(out + h * head_dim, scores ? scores + (size_t)h * kv_len : nullptr, q + h * head_dim, K, V,
                      kv_off, kv_type, n_first, head_dim, k);
        }
        return;
    }
    int n_blocks = (kv_len + ATT_BLOCK - 1) / ATT_BLOCK, n_tiles = (T + ATT_QUERIES - 1) / ATT_QUERIES;
    size_t kt_head = (size_t)n_blocks * head_dim * ATT_BLOCK;
    // The keys of each KV head, transposed, in blocks: [n_kv_heads][blocks][head_dim][ATT_BLOCK],
    // in the caller's buffer (kernels.h:KernelScratch); keys past the last are zeros (their
    // scores are masked).
    if (s.kt.size() < n_kv_heads * kt_head) s.kt.resize(n_kv_heads * kt_head);
    float* kt = s.kt.data();
    #pragma omp parallel
    {
        // The keys transposed, a block of one KV head per step.
        #pragma omp for collapse(2) schedule(static)
        for (int g = 0; g < n_kv_heads; g++)
            for (int b = 0; b < n_blocks; b++) {
                float* dst = kt + g * kt_head + (size_t)b * head_dim * ATT_BLOCK;
                for (int j = 0; j < ATT_BLOCK; j++) {
                    int key = b * ATT_BLOCK + j;
                    if (key >= kv_len) {
                        for (int d = 0; d < head_dim; d++) dst[d * ATT_BLOCK + j] = 0.0f;
                        continue;
                    }
                    const uint8_t* row = K.at(key) + (size_t)g * head_dim * elt;
                    for (int d = 0; d < head_dim; d++) dst[d * ATT_BLOCK + j] = widen(kv_type, row, d);
                }
            }
        // Tiles of (head, queries), the costliest first (the last queries
        // see the most keys), taken by whichever thread is free: each output
        // row belongs to one tile, so the thread count changes no bit.
        std::vector<float> o((size_t)ATT_QUERIES * head_dim);
        #pragma omp for schedule(dynamic)
        for (int it = 0; it < n_heads * n_tiles; it++) {
            int h = it % n_heads, t0 = (n_tiles - 1 - it / n_heads) * ATT_QUERIES;
            size_t kv_off = (size_t)(h / group) * head_dim * elt;
            attention_tile(out + h * head_dim, scores ? scores + (size_t)h * T * kv_len : nullptr,
                           q + (size_t)t0 * q_dim + h * head_dim, kt + (h / group) * kt_head, V, kv_off,
                           kv_type, T, t0, std::min(ATT_QUERIES, T - t0), n_first, q_dim, head_dim, k, o.data());
        }
    }
}
