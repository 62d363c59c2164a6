// attention_fast.cpp — the fast twin of kernels.cpp's attention: tiles of
// queries x keys with an online softmax, for the T queries of a prefill,
// and for a decode step the keys split into chunks that all threads share
// (flash decoding). Both use the set's kernels (att_widen, the tiles'
// att_scores and att_pv, exp_shift), so every SIMD set gives the same bits
// (book/06-attention-kv-cache.md, book/12-performance.md).
#include "cpu/kernel_sets.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include <omp.h>

// ---------------------------------------------------------------------------
// Attention for a batch of queries (prefill; kernels.h: attention_heads).
//
// The online softmax. The plain kernel computes every score, then their
// maximum M and sum L, then out = sum_j exp(s_j - M) / L * v_j. Here the
// keys come a block of ATT_BLOCK at a time and M is not known until the
// last one, so the kernel keeps a running maximum m and, relative to it,
// the running sum l = sum exp(s_j - m) and the unscaled output
// o = sum exp(s_j - m) v_j. When a block raises the maximum to m',
// everything summed so far was relative to the old m: multiplying l and o
// by exp(m - m') puts it relative to m' (each term exp(s_j - m) exp(m - m')
// = exp(s_j - m')). After the last block m = M, and out = o / l. Only one
// block of scores is ever held, however long the prompt: no T x T per head.
//
// One query at a time, each score is a dot product of head_dim values
// ending in a horizontal sum, and each value row is read once per query. A
// prefill has T queries per head, and neighbouring ones see nearly the same
// keys: so the work goes in tiles of ATT_QUERIES queries of one head
// against ATT_BLOCK keys, like a matrix product.
//   scores  S = Q K^T: the keys of each KV head are first copied transposed
//           (kt: [head_dim][ATT_BLOCK] per block of keys, widened to f32), so
//           one vector load holds one dimension of 16 keys, and a register
//           tile of queries x keys adds q_i[d] * kt[d][j] for d = 0, 1, ...
//           (one fma chain per score, no horizontal sum);
//   softmax online, per query, as above: a running maximum m
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


// The largest of s[0..n-1]: eight running maxima in registers, not one
// chain of n compares each waiting for the last (the maximum is the same
// in any order). `x > m ? x : m` is one max instruction.
static inline float block_max(const float* s, int n) {
    float m0 = -INFINITY, m1 = m0, m2 = m0, m3 = m0, m4 = m0, m5 = m0, m6 = m0, m7 = m0;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        m0 = s[j] > m0 ? s[j] : m0, m1 = s[j + 1] > m1 ? s[j + 1] : m1;
        m2 = s[j + 2] > m2 ? s[j + 2] : m2, m3 = s[j + 3] > m3 ? s[j + 3] : m3;
        m4 = s[j + 4] > m4 ? s[j + 4] : m4, m5 = s[j + 5] > m5 ? s[j + 5] : m5;
        m6 = s[j + 6] > m6 ? s[j + 6] : m6, m7 = s[j + 7] > m7 ? s[j + 7] : m7;
    }
    for (; j < n; j++) m0 = s[j] > m0 ? s[j] : m0;
    m0 = m1 > m0 ? m1 : m0, m2 = m3 > m2 ? m3 : m2, m4 = m5 > m4 ? m5 : m4, m6 = m7 > m6 ? m7 : m6;
    m0 = m2 > m0 ? m2 : m0, m4 = m6 > m4 ? m6 : m4;
    return m4 > m0 ? m4 : m0;
}

// lanes[j % 16] += p[j], j = 0..n-1 in order: the weights' sum in the 16
// lanes of the one summation order (sum_lanes folds them), a full group of
// 16 at a time so the adds go side by side.
static inline void add_lanes(float* lanes, const float* p, int n) {
    int j = 0;
    for (; j + LANES <= n; j += LANES)
#pragma omp simd
        for (int l = 0; l < LANES; l++) lanes[l] += p[j + l];
    for (; j < n; j++) lanes[j % LANES] += p[j];
}

// Rows j0 .. j0+nb-1 of R (byte `off` of each: one KV head) widened to
// f32 by the set's att_widen, or by widen here: transposed into
// [head_dim][ATT_BLOCK] with zeros past nb (the layout att_scores reads),
// or as rows [nb][head_dim]. Widening is exact, so both give the same floats.
static void widen_block(float* dst, const KVRows& R, size_t off, DType t, int j0, int nb, int head_dim,
                        bool transposed, const SimdKernels& k) {
    const uint8_t* rows[ATT_BLOCK];
    for (int j = 0; j < nb; j++) rows[j] = R.at(j0 + j) + off;
    if (k.att_widen) return k.att_widen(dst, rows, nb, t, head_dim, transposed);
    for (int j = 0; j < (transposed ? ATT_BLOCK : nb); j++)
        for (int d = 0; d < head_dim; d++) {
            float x = j < nb ? widen(t, rows[j], d) : 0.0f;
            if (transposed) dst[d * ATT_BLOCK + j] = x;
            else dst[(size_t)j * head_dim + d] = x;
        }
}

// o_i += sum_j p[i][j] v_j for nq queries (o: [nq][head_dim], p:
// [nq][ATT_BLOCK]) over the value rows j0 .. j0+nb-1 of one KV head (byte
// `off` of each): one page's run at a time, a Q8_0 block widened into vf
// first, each row once for up to ATT_QUERIES queries (att_pv; axpy once
// per query where a set has none, the same bits).
static inline void add_values(float* o, const float* p, int nq, const KVRows& V, size_t off, DType t, int j0, int nb,
                       int head_dim, const SimdKernels& k, std::vector<float>& vf) {
    KVRows Vb = V;
    if (t == DType::Q8_0) {
        vf.resize((size_t)ATT_BLOCK * head_dim);
        widen_block(vf.data(), V, off, t, j0, nb, head_dim, false, k);
        Vb = KVRows(), Vb.base = (const uint8_t*)vf.data(), Vb.stride = (size_t)head_dim * sizeof(float);
        off = 0, t = DType::F32, j0 = 0;
    }
    for (int j = 0, r; j < nb; j += r) {
        r = Vb.run(j0 + j, nb - j);
        const uint8_t* v = Vb.at(j0 + j) + off;
        for (int i0 = 0; i0 < nq; i0 += ATT_QUERIES) {
            int n = std::min(ATT_QUERIES, nq - i0);
            float* oi = o + (size_t)i0 * head_dim;
            const float* pi = p + i0 * ATT_BLOCK + j;
            if (k.att_pv) k.att_pv(oi, pi, n, v, Vb.stride, t, r, head_dim);
            else
                for (int i = 0; i < n; i++) k.axpy(oi + (size_t)i * head_dim, pi + i * ATT_BLOCK, v, Vb.stride, t, r, head_dim);
        }
    }
}

// Queries t0 .. t0+nq-1 of head h (the layout of attention_heads).
static void attention_tile(float* out, float* scores, const float* q, const float* kt, const KVRows& V, size_t off,
                           DType kv_type, int T, int t0, int nq, int n_first, int q_dim, int head_dim,
                           const SimdKernels& k, float* o, std::vector<float>& vf) {
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
            add_lanes(lanes[i], si, nk);
        }
        add_values(o, &s[0][0], nq, V, off, kv_type, j0, nk, head_dim, k, vf);
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

// ---------------------------------------------------------------------------
// Decode: one new token, one query per head, over all n cached keys.
//
// Every query head reads all n keys and values of its KV head, and a
// decode step has one token of work to split: split it by heads and the
// threads each stream the whole cache, several heads reading the same keys
// (GQA: seven query heads share one KV head in Qwen2.5-0.5B). So the keys
// are split instead, as flash decoding splits them on a GPU (Dao et al.,
// 2023): into chunks of ATT_CHUNK keys, fixed by the code. A chunk's work
// is the prefill's tile with the GQA group as its queries: each block of
// keys widened and transposed once (att_widen), scored against every query
// head of the group at once (att_scores: fma chains, no horizontal sums),
// each value row added once for all of them (att_pv). Per query it leaves
// the partial softmax of its chunk:
//   m_c = max_j s_j,   l_c = sum_j exp(s_j - m_c),   o_c = sum_j exp(s_j - m_c) v_j
// (within the chunk, blocks of ATT_BLOCK keys with the online softmax's
// running maximum). Then each head combines its chunks, in order:
//   M = max_c m_c,   l = sum_c l_c exp(m_c - M),   o = sum_c o_c exp(m_c - M),   out = o / l
// which is softmax(s) v: every term exp(s_j - m_c) exp(m_c - M) = exp(s_j - M).
// Worked example, one head, head_dim 1, keys scoring 0, 1 (chunk 0) and 2
// (chunk 1), values 10, 20, 30: chunk 0 gives m = 1, l = e^-1 + 1 = 1.368,
// o = 10 e^-1 + 20 = 23.68; chunk 1 gives m = 2, l = 1, o = 30. M = 2, so
// l = 1.368 e^-1 + 1 = 1.503, o = 23.68 e^-1 + 30 = 38.71, out = 25.76,
// the weights (0.090, 0.245, 0.665) applied to 10, 20, 30.
//
// The chunks, the order inside each and the order of the combination
// depend on n only: any number of threads, taking the tasks in any order,
// gives the same bits.
//
// What sets the pace is memory: at 4,096 tokens the cache of Qwen2.5-0.5B
// is 50 MB in f16, read once a token and far larger than the caches. Two
// things keep the core computing while it streams:
//   - a task is one chunk for every KV head (attention_decode), so it reads
//     whole rows, consecutive in memory, which the hardware prefetcher
//     follows (one KV head a task would read every other 128 bytes);
//   - the next block's rows are asked for, into L2 (prefetcht2), a few
//     lines at a time between the steps of this one (Ahead::step). Asked
//     for all at once, a block's prefetches fill the core's few line-fill
//     buffers, and it waits for memory instead of computing.
const int AHEAD_LINES = 16;  // lines of keys (and as many of values) a step
struct Ahead {
    const KVRows *K, *V;
    int j, j_end;           // the rows still to ask for
    size_t b_begin, b_end;  // the bytes of each row the task reads (its KV heads)
    size_t b;               // the next line's offset in row j
    void step() {
        for (int lines = 0; lines < AHEAD_LINES && j < j_end; lines++) {
            __builtin_prefetch(K->at(j) + b, 0, 1);
            __builtin_prefetch(V->at(j) + b, 0, 1);
            b += 64;
            if (b >= b_end) b = b_begin, j++;
        }
    }
};

struct DecodeTask {
    std::vector<float> s, m, l, o;  // [group][ATT_BLOCK] scores; per head: maxima, [LANES] sums, [head_dim] outputs
    std::vector<float> kt, vf;      // a block's keys transposed ([head_dim][ATT_BLOCK]); a Q8_0 block's values widened
};

// Keys j_begin .. j_end-1 (one chunk) for the KV heads g_begin .. g_end-1
// and their groups of query heads: each block of keys for each KV head in
// turn, so that a task of all the heads reads its rows whole, in order.
// Leaves, per query head h, (m, l, o) at part + h * part_stride.
static void decode_chunk(float* part, size_t part_stride, float* scores, const float* q, const KVRows& K,
                         const KVRows& V, DType kv_type, int group, int g_begin, int g_end, int j_begin, int j_end,
                         int n, int head_dim, const SimdKernels& k, DecodeTask& t) {
    float scale = 1.0f / std::sqrt((float)head_dim);
    size_t head_bytes = kv_row_bytes(kv_type, head_dim);
    int h_begin = g_begin * group, nh = (g_end - g_begin) * group;  // the task's query heads; state index h - h_begin
    t.s.resize((size_t)group * ATT_BLOCK);
    t.kt.resize((size_t)head_dim * ATT_BLOCK);
    t.m.assign(nh, -INFINITY);
    t.l.assign((size_t)nh * LANES, 0.0f);  // each query's sum in 16 lanes, as the tiles keep it
    t.o.assign((size_t)nh * head_dim, 0.0f);
    for (int j0 = j_begin; j0 < j_end; j0 += ATT_BLOCK) {
        int nb = std::min(ATT_BLOCK, j_end - j0);
        Ahead ahead{&K, &V, j0 + ATT_BLOCK, std::min(n, j0 + 2 * ATT_BLOCK), g_begin * head_bytes,
                    g_end * head_bytes, g_begin * head_bytes};
        for (int g = g_begin; g < g_end; g++) {
            int h0 = g * group, l0 = h0 - h_begin;
            size_t off = g * head_bytes;
            // The block's keys transposed and widened, as a prefill's tiles
            // read them, then every query of the group against them
            // (att_scores: one chain of fmas per score, no horizontal sum).
            widen_block(t.kt.data(), K, off, kv_type, j0, nb, head_dim, true, k);
            ahead.step();
            const float* qg = q + (size_t)h0 * head_dim;
            if (k.att_scores) k.att_scores(t.s.data(), qg, head_dim, group, t.kt.data(), head_dim);
            else att_scores_scalar(t.s.data(), qg, head_dim, group, t.kt.data(), head_dim);
            ahead.step();
            for (int i = 0; i < group; i++) {
                ahead.step();
                float* si = &t.s[i * ATT_BLOCK];
                float *m = &t.m[l0 + i], *l = &t.l[(size_t)(l0 + i) * LANES], *o = &t.o[(size_t)(l0 + i) * head_dim];
#pragma omp simd
                for (int j = 0; j < nb; j++) si[j] *= scale;
                if (scores) std::memcpy(scores + (size_t)(h0 + i) * n + j0, si, nb * sizeof(float));
                float bm = block_max(si, nb);
                if (bm > *m) {  // a new maximum: rescale what was summed relative to the old one
                    if (*m != -INFINITY) {
                        float r = exp_poly(*m - bm);
                        for (int j = 0; j < LANES; j++) l[j] *= r;
                        for (int d = 0; d < head_dim; d++) o[d] *= r;
                    }
                    *m = bm;
                }
                k.exp_shift(si, *m, nb);
                add_lanes(l, si, nb);
            }
            ahead.step();
            add_values(&t.o[(size_t)l0 * head_dim], t.s.data(), group, V, off, kv_type, j0, nb, head_dim, k, t.vf);
        }
    }
    // part, per head (part_stride apart): m, l, then o's head_dim values
    for (int i = 0; i < nh; i++) {
        float* p = part + (size_t)(h_begin + i) * part_stride;
        p[0] = t.m[i];
        p[1] = sum_lanes(&t.l[(size_t)i * LANES]);
        std::memcpy(p + 2, &t.o[(size_t)i * head_dim], head_dim * sizeof(float));
    }
}

static void attention_decode(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                             DType kv_type, int n_heads, int n_kv_heads, int n, int head_dim, const SimdKernels& k,
                             KernelScratch& s) {
    int n_chunks = (n + ATT_CHUNK - 1) / ATT_CHUNK, group = n_heads / n_kv_heads;
    size_t per_head = (size_t)n_chunks * (head_dim + 2);
    // A task is one chunk for every KV head, reading its rows whole; while
    // there are fewer chunks than threads (a short context), one chunk of
    // one KV head, so that every thread has work. A head's partial result
    // is the same either way: its work does not depend on the others'.
    int split = n_chunks < omp_get_max_threads() ? n_kv_heads : 1, per_task = n_kv_heads / split;
    // The partial results, [n_heads][n_chunks][m, l, o...], in the caller's buffer.
    if (s.parts.size() < n_heads * per_head) s.parts.resize(n_heads * per_head);
    float* parts = s.parts.data();
    #pragma omp parallel
    {
        DecodeTask t;
        // Each thread a run of consecutive tasks (static): its rows come
        // from memory once, in order.
        #pragma omp for schedule(static)
        for (int task = 0; task < n_chunks * split; task++) {
            int c = task / split, g0 = task % split * per_task;
            decode_chunk(parts + (size_t)c * (head_dim + 2), per_head, scores, q, K, V, kv_type, group, g0,
                         g0 + per_task, c * ATT_CHUNK, std::min(n, (c + 1) * ATT_CHUNK), n, head_dim, k, t);
        }
        // Each head's chunks combined in order (see above).
        #pragma omp for schedule(static)
        for (int h = 0; h < n_heads; h++) {
            const float* p = parts + h * per_head;
            float M = -INFINITY, l = 0.0f;
            for (int c = 0; c < n_chunks; c++) M = std::max(M, p[(size_t)c * (head_dim + 2)]);
            float* y = out + (size_t)h * head_dim;
            for (int d = 0; d < head_dim; d++) y[d] = 0.0f;
            for (int c = 0; c < n_chunks; c++) {
                const float* pc = p + (size_t)c * (head_dim + 2);
                float r = exp_poly(pc[0] - M);
                l += pc[1] * r;
                for (int d = 0; d < head_dim; d++) y[d] += pc[2 + d] * r;
            }
            float inv = 1.0f / l;
            for (int d = 0; d < head_dim; d++) y[d] *= inv;
            if (scores) {  // the weights a trace shows: exp(s_j - M) / L
                float* row = scores + (size_t)h * n;
                k.exp_shift(row, M, n);
                for (int j = 0; j < n; j++) row[j] *= inv;
            }
        }
    }
}

void attention_heads_fast(float* out, float* scores, const float* q, const KVRows& K, const KVRows& V,
                          DType kv_type, int n_heads, int n_kv_heads, int T, int n_first, int head_dim,
                          const SimdKernels& k, KernelScratch& s) {
    int kv_len = n_first - 1 + T, group = n_heads / n_kv_heads, q_dim = n_heads * head_dim;
    if (T == 1) return attention_decode(out, scores, q, K, V, kv_type, n_heads, n_kv_heads, n_first, head_dim, k, s);
    size_t head_bytes = kv_row_bytes(kv_type, head_dim);
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
            for (int b = 0; b < n_blocks; b++)
                widen_block(kt + g * kt_head + (size_t)b * head_dim * ATT_BLOCK, K, g * head_bytes, kv_type,
                            b * ATT_BLOCK, std::min(ATT_BLOCK, kv_len - b * ATT_BLOCK), head_dim, true, k);
        // Tiles of (head, queries), the costliest first (the last queries
        // see the most keys), taken by whichever thread is free: each output
        // row belongs to one tile, so the thread count changes no bit.
        std::vector<float> o((size_t)ATT_QUERIES * head_dim), vf;
        #pragma omp for schedule(dynamic)
        for (int it = 0; it < n_heads * n_tiles; it++) {
            int h = it % n_heads, t0 = (n_tiles - 1 - it / n_heads) * ATT_QUERIES;
            size_t kv_off = (h / group) * head_bytes;
            attention_tile(out + h * head_dim, scores ? scores + (size_t)h * T * kv_len : nullptr,
                           q + (size_t)t0 * q_dim + h * head_dim, kt + (h / group) * kt_head, V, kv_off,
                           kv_type, T, t0, std::min(ATT_QUERIES, T - t0), n_first, q_dim, head_dim, k, o.data(), vf);
        }
    }
}
