// kv_cache.cpp — storing keys and values, and finding them again
// (kv_cache.h: the view's layout).
#include "kv_cache.h"
#include <cstring>

void kv_type_check(DType t, int head_dim) {
    if (t == DType::Q8_0 && head_dim % Q8_BLOCK)
        fail("--kv-type q8_0: the model's heads have %d values, not a multiple of Q8_0's block of %d", head_dim, Q8_BLOCK);
    if (t != DType::F32 && t != DType::F16 && t != DType::BF16 && t != DType::Q8_0)
        fail("--kv-type %s: not a KV cache type (f32, f16, bf16 or q8_0)", dtype_name(t));
}

KVView kv_view(KVCache& cache, int first) {
    static const int one_block[1] = {0};
    KVView v;
    v.k = cache.k.data();
    v.v = cache.v.data();
    v.type = cache.type;
    v.first = first;
    v.n_pos = cache.n_ctx;
    v.block = cache.n_ctx;
    v.blocks = one_block;
    v.row_bytes = cache.row_bytes();
    v.block_bytes = 0;
    return v;
}

// Byte offset of position pos of layer `layer` in the view's k (or v).
static size_t kv_offset(const KVView& kv, int layer, int pos) {
    if (pos < kv.first || pos >= kv.n_pos)
        fail("KV cache: position %d is outside the sequence's positions [%d, %d)", pos, kv.first, kv.n_pos);
    return kv.blocks[pos / kv.block] * kv.block_bytes + ((size_t)layer * kv.block + pos % kv.block) * kv.row_bytes;
}

const uint8_t* kv_row(const KVView& kv, int layer, int pos, bool values) {
    return (values ? kv.v : kv.k) + kv_offset(kv, layer, pos);
}

// One row of keys or values into the cache, rounded to its type.
static void store_row(uint8_t* dst, const float* src, int n, DType type) {
    if (type == DType::F32) std::memcpy(dst, src, n * sizeof(float));
    else if (type == DType::Q8_0) quantize_row_q8_0(src, n, dst);  // a scale per 32 values
    else if (type == DType::F16)
        for (int i = 0; i < n; i++) ((uint16_t*)dst)[i] = f32_to_f16(src[i]);
    else
        for (int i = 0; i < n; i++) ((uint16_t*)dst)[i] = f32_to_bf16(src[i]);
}

void kv_store(const KVView& kv, int layer, int pos, const float* k, const float* v) {
    size_t at = kv_offset(kv, layer, pos);
    int n = kv.type == DType::Q8_0 ? (int)(kv.row_bytes / Q8_BLOCK_BYTES * Q8_BLOCK) : (int)(kv.row_bytes / kv_row_bytes(kv.type, 1));
    store_row(kv.k + at, k, n, kv.type);
    store_row(kv.v + at, v, n, kv.type);
}

// In one block the rows follow one another: one run, read where it lies.
// Across blocks, a table of where each position's row is: the kernels read
// each page in place (the plain one gathers them first), instead of a copy
// of every cached row of every layer at every step of a server's batch.
KVRows kv_rows(const KVView& kv, int layer, int end, bool values, std::vector<const uint8_t*>& table) {
    KVRows r;
    r.stride = kv.row_bytes;
    if (kv.first / kv.block == (end - 1) / kv.block) {
        r.base = kv_row(kv, layer, kv.first, values);
        return r;
    }
    table.resize(end - kv.first);
    for (int p = kv.first; p < end; p++) table[p - kv.first] = kv_row(kv, layer, p, values);
    r.rows = table.data();
    return r;
}
