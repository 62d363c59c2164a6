// kv_pages.cpp — the block pool behind kv_pages.h.
#include "kv_pages.h"
#include "logging.h"

void kv_pages_init(KVPages& kv, const Config& c, int n_tokens, DType type, int block) {
    if (block <= 0) fail("KV pages: a block must hold at least one position");
    if (n_tokens <= 0) fail("KV pages: the pool must hold at least one position");
    if (type == DType::Q8_0) fail("--kv-type: q8_0 is not a KV cache type (f32, f16 or bf16)");
    kv.block = block;
    kv.n_blocks = (n_tokens + block - 1) / block;
    kv.n_layers = c.n_layers;
    kv.kv_dim = c.n_kv_heads * c.head_dim;
    kv.type = type;
    size_t bytes = (size_t)kv.n_blocks * kv.n_layers * block * kv.kv_dim * kv.elt();
    kv.k.assign(bytes, 0);
    kv.v.assign(bytes, 0);
    // Handed out from the back: block 0 first, which makes drawings and
    // tests easy to follow.
    kv.free_list.clear();
    for (int b = kv.n_blocks - 1; b >= 0; b--) kv.free_list.push_back(b);
    LOGD(CAT_LOAD, "KV pages: %d blocks of %d positions x %d layers x %d values x 2 (%s) = %.1f MB", kv.n_blocks, block,
         kv.n_layers, kv.kv_dim, dtype_name(type), 2.0 * bytes / 1e6);
}

int kv_blocks_for(const KVPages& kv, int n_pos) { return (n_pos + kv.block - 1) / kv.block; }

int kv_blocks_free(const KVPages& kv) { return (int)kv.free_list.size(); }

bool kv_seq_grow(KVPages& kv, KVSeq& seq, int n_pos) {
    int need = kv_blocks_for(kv, n_pos) - (int)seq.blocks.size();
    if (need > (int)kv.free_list.size()) return false;
    for (int i = 0; i < need; i++) {
        seq.blocks.push_back(kv.free_list.back());
        kv.free_list.pop_back();
    }
    if (n_pos > seq.n_pos) seq.n_pos = n_pos;
    return true;
}

void kv_seq_free(KVPages& kv, KVSeq& seq) {
    for (int b : seq.blocks) kv.free_list.push_back(b);
    seq.blocks.clear();
    seq.n_pos = 0;
}

static size_t row_offset(const KVPages& kv, const KVSeq& seq, int layer, int pos) {
    if (pos < 0 || pos >= seq.n_pos) fail("KV pages: position %d is outside the sequence's %d positions", pos, seq.n_pos);
    int b = seq.blocks[pos / kv.block];
    return ((((size_t)b * kv.n_layers + layer) * kv.block + pos % kv.block) * kv.kv_dim) * kv.elt();
}

uint8_t* kv_key(KVPages& kv, const KVSeq& seq, int layer, int pos) { return &kv.k[row_offset(kv, seq, layer, pos)]; }
uint8_t* kv_value(KVPages& kv, const KVSeq& seq, int layer, int pos) { return &kv.v[row_offset(kv, seq, layer, pos)]; }
