// kv_cache.h — the keys and values of past positions, and the view the
// forward pass reads them through (book/06-attention-kv-cache.md).
//
// A new token attends to every position before it. Their keys and values
// do not change once computed, so each layer keeps them: a decode step
// computes one row of k and v per layer and reads all the others back.
#pragma once
#include <vector>
#include "kernels.h"

// One sequence's own cache (the Net's; ./run and chat). Layout:
// [n_layers, n_ctx, n_kv_heads*head_dim]. Stored as f32, or as f16/bf16
// (--kv-type): half the memory, or Q8_0: 34 bytes for 32 values, rounded
// once when written and widened when read (kernels.h: widen).
struct KVCache {
    int n_ctx = 0;
    int kv_dim = 0;  // n_kv_heads * head_dim
    DType type = DType::F32;
    LineVector<uint8_t> k, v;
    size_t row_bytes() const { return kv_row_bytes(type, kv_dim); }  // one position of one layer
};

// One sequence's keys and values, wherever they are stored. The forward
// pass writes and attention reads through this view, so neither knows
// whether the sequence has a cache of its own or pages of a pool shared
// with others. Storage is blocks of `block` positions; the sequence's
// blocks, in order, are blocks[0], blocks[1], ...; position p of layer l
// starts at byte
//
//   blocks[p / block] * block_bytes + (l * block + p % block) * row_bytes
//
// of k (its values: of v). A KVCache is one block of n_ctx positions
// (kv_view); a sequence in the server's pool is its block table
// (serve/kv_pages.h: kv_seq_view).
struct KVView {
    uint8_t *k = nullptr, *v = nullptr;
    DType type = DType::F32;      // as stored: f32, f16, bf16 or Q8_0
    int first = 0;                // positions first..n_pos-1 have room; first
    int n_pos = 0;                // is 0 unless the sequence started later
    int block = 0;                // positions per block
    const int* blocks = nullptr;  // the sequence's blocks, in order
    size_t row_bytes = 0;         // one position of one layer: n_kv_heads*head_dim values of `type`
    size_t block_bytes = 0;       // one block: every layer's `block` positions
};
// Fails with a one-line error unless t is a KV cache type for heads of
// head_dim values: f32, f16, bf16, or Q8_0 when head_dim is a multiple of
// its block of 32 (a head's keys are whole blocks, each with its own scale).
void kv_type_check(DType t, int head_dim);
// A cache of its own as a view, its sequence starting at position `first`.
KVView kv_view(KVCache& cache, int first);
// Store position pos's keys and values of one layer (n_kv_heads*head_dim
// floats each), rounded to the view's type.
void kv_store(const KVView& kv, int layer, int pos, const float* k, const float* v);
// Where position pos's keys (or, with `values`, its values) of one layer lie.
const uint8_t* kv_row(const KVView& kv, int layer, int pos, bool values);
// Layer `layer`'s keys (or values) of positions first..end-1 as attention
// reads them (kernels.h: KVRows): one run when they share a block, else
// the place of each position's row, written into `table`.
KVRows kv_rows(const KVView& kv, int layer, int end, bool values, std::vector<const uint8_t*>& table);
