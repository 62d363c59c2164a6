// kv_pages.cpp — the block pool behind kv_pages.h.
#include "serve/kv_pages.h"
#include "logging.h"
#include <algorithm>

void kv_pages_init(KVPages& kv, const Config& c, int n_tokens, DType type, int block) {
    if (block <= 0) fail("KV pages: a block must hold at least one position");
    if (n_tokens <= 0) fail("KV pages: the pool must hold at least one position");
    kv_type_check(type, c.head_dim);
    kv.block = block;
    kv.n_blocks = (n_tokens + block - 1) / block;
    kv.n_layers = c.n_layers;
    kv.kv_dim = c.n_kv_heads * c.head_dim;
    kv.type = type;
    size_t bytes = (size_t)kv.n_blocks * kv.n_layers * block * kv.row_bytes();
    kv.k.assign(bytes, 0);
    kv.v.assign(bytes, 0);
    // Handed out from the back: block 0 first, which makes drawings and
    // tests easy to follow.
    kv.free_list.clear();
    for (int b = kv.n_blocks - 1; b >= 0; b--) kv.free_list.push_back(b);
    kv.refs.assign(kv.n_blocks, 0);
    kv.serial.assign(kv.n_blocks, 0);
    kv.key.assign(kv.n_blocks, {});
    kv.index.clear();
    kv.next_serial = 1;
    LOGD(CAT_LOAD, "KV pages: %d blocks of %d positions x %d layers x %d values x 2 (%s) = %.1f MB", kv.n_blocks, block,
         kv.n_layers, kv.kv_dim, dtype_name(type), 2.0 * bytes / 1e6);
}

int kv_blocks_for(const KVPages& kv, int n_pos) { return (n_pos + kv.block - 1) / kv.block; }

int kv_blocks_free(const KVPages& kv) { return (int)kv.free_list.size(); }

bool kv_seq_grow(KVPages& kv, KVSeq& seq, int n_pos) {
    int need = kv_blocks_for(kv, n_pos) - (int)seq.blocks.size();
    if (need > (int)kv.free_list.size()) return false;
    for (int i = 0; i < need; i++) {
        int b = kv.free_list.back();
        kv.free_list.pop_back();
        if (kv.serial[b]) {  // a cached prefix, unused longest: it will hold other tokens now
            kv.index.erase(kv.key[b]);
            kv.serial[b] = 0;
            kv.key[b] = {};
        }
        kv.refs[b] = 1;
        seq.blocks.push_back(b);
    }
    if (n_pos > seq.n_pos) seq.n_pos = n_pos;
    return true;
}

void kv_seq_free(KVPages& kv, KVSeq& seq) {
    for (int b : seq.blocks) {
        if (--kv.refs[b] > 0) continue;  // another sequence still reads it
        if (kv.serial[b]) kv.free_list.insert(kv.free_list.begin(), b);  // cached: handed out last
        else kv.free_list.push_back(b);
    }
    seq = KVSeq();
}

int kv_seq_share(KVPages& kv, KVSeq& seq, const int* tokens, int n) {
    if (!seq.blocks.empty()) fail("KV pages: only an empty sequence can take a shared prefix");
    long long before = 0;
    for (int i = 0; (i + 1) * kv.block <= n; i++) {
        auto it = kv.index.find({before, std::vector<int>(tokens + i * kv.block, tokens + (i + 1) * kv.block)});
        if (it == kv.index.end()) break;
        int b = it->second;
        if (kv.refs[b]++ == 0) kv.free_list.erase(std::find(kv.free_list.begin(), kv.free_list.end(), b));
        seq.blocks.push_back(b);
        before = kv.serial[b];
    }
    seq.indexed = (int)seq.blocks.size();
    seq.n_pos = seq.indexed * kv.block;
    return seq.n_pos;
}

void kv_seq_index(KVPages& kv, KVSeq& seq, const int* tokens, int n) {
    n = std::min(n, seq.n_pos);
    for (int i = seq.indexed; (i + 1) * kv.block <= n; i++) {
        long long before = i ? kv.serial[seq.blocks[i - 1]] : 0;
        if (i && !before) return;  // the block before is not in the index
        std::pair<long long, std::vector<int>> k(before, std::vector<int>(tokens + i * kv.block, tokens + (i + 1) * kv.block));
        // Another sequence indexed the same tokens first (both read the same
        // prompt at once): this copy stays private, and so do the blocks after it.
        if (kv.index.count(k)) return;
        int b = seq.blocks[i];
        kv.serial[b] = kv.next_serial++;
        kv.index[k] = b;
        kv.key[b] = std::move(k);
        seq.indexed = i + 1;
    }
}

int kv_blocks_cached(const KVPages& kv) {
    int n = 0;
    for (int b : kv.free_list) n += kv.serial[b] != 0;
    return n;
}

static size_t row_offset(const KVPages& kv, const KVSeq& seq, int layer, int pos) {
    if (pos < 0 || pos >= seq.n_pos) fail("KV pages: position %d is outside the sequence's %d positions", pos, seq.n_pos);
    int b = seq.blocks[pos / kv.block];
    return ((((size_t)b * kv.n_layers + layer) * kv.block + pos % kv.block)) * kv.row_bytes();
}

uint8_t* kv_key(KVPages& kv, const KVSeq& seq, int layer, int pos) { return &kv.k[row_offset(kv, seq, layer, pos)]; }
uint8_t* kv_value(KVPages& kv, const KVSeq& seq, int layer, int pos) { return &kv.v[row_offset(kv, seq, layer, pos)]; }

KVView kv_seq_view(KVPages& kv, const KVSeq& seq) {
    KVView v;
    v.k = kv.k.data();
    v.v = kv.v.data();
    v.type = kv.type;
    v.first = 0;
    v.n_pos = seq.n_pos;
    v.block = kv.block;
    v.blocks = seq.blocks.data();
    v.row_bytes = kv.row_bytes();
    v.block_bytes = (size_t)kv.n_layers * kv.block * v.row_bytes;
    return v;
}

void kv_batch_reserve(KVPages& kv, KVSeq* const* tables, BatchSeq* seqs, int n_seqs) {
    int blocks_needed = 0;
    for (int i = 0; i < n_seqs; i++) {
        const BatchSeq& s = seqs[i];
        if (!tables[i]) fail("forward_batch: sequence %d has no tokens or no block table", i);
        if (s.pos != tables[i]->n_pos)
            fail("forward_batch: sequence %d continues at %d but holds %d positions", i, s.pos, tables[i]->n_pos);
        blocks_needed += kv_blocks_for(kv, s.pos + s.T) - (int)tables[i]->blocks.size();
    }
    if (blocks_needed > kv_blocks_free(kv))
        fail("KV pages: the batch needs %d more blocks, %d are free", blocks_needed, kv_blocks_free(kv));
    for (int i = 0; i < n_seqs; i++) kv_seq_grow(kv, *tables[i], seqs[i].pos + seqs[i].T);
    for (int i = 0; i < n_seqs; i++) seqs[i].kv = kv_seq_view(kv, *tables[i]);
}
