// kv_pages.h — a paged KV cache: one pool of fixed-size blocks shared by
// every sequence the server runs, and a block table per sequence.
//
// The one-sequence cache (net.h: KVCache) reserves --ctx positions up
// front. For many sequences at once that wastes most of the memory: a 40-token
// chat answer would hold 4,096 positions. Here memory is handed out one block
// of BLOCK positions at a time, as a sequence's tokens appear, and returned
// the moment it ends. A sequence's positions live in the blocks its table
// lists, in order:
//
//   pool:   [b0][b1][b2][b3][b4][b5] ...      (each block: every layer's keys
//   seq A:  table [0, 3]   positions 0-15 in b0, 16-31 in b3      and values
//   seq B:  table [1]      positions 0-15 in b1                   for BLOCK
//   free:   b2, b4, b5 ...                                        positions)
//
// This is the idea of vLLM's PagedAttention, without the GPU kernel: the
// forward pass sees a sequence through a view of its blocks (kv_cache.h:
// KVView, made here by kv_seq_view). The fast attention kernels read the
// blocks where they lie (kv_cache.cpp:kv_rows, a row per position); the
// plain one gathers them into one contiguous run first, the layout a
// single sequence's cache has.
//
// Prefix reuse. Two chats with the same system prompt, or the next turn of
// one chat, begin with the same tokens, so the keys and values of those
// positions are the same bits. A block whose positions are all written is
// never written again, so it can be shared: both tables list it, and it
// counts its holders. Blocks are indexed by what they hold:
//
//   key of a full block = (number of the block before it, its `block` tokens)
//
// The number of the block before it stands for everything before it: the
// same 16 tokens after a different beginning give different keys. A block
// whose holders have all left keeps its contents and its place in the
// index ("cached"): it counts as free and is handed out again last, the
// one unused longest first, so the next turn of a chat finds its prefix.
// Only whole blocks are shared, so nobody ever writes into a shared block
// and no copy-on-write is needed.
#pragma once
#include <cstdint>
#include <map>
#include <vector>
#include "model.h"
#include "net.h"

struct KVPages {
    int block = 16;       // positions per block
    int n_blocks = 0;
    int n_layers = 0, kv_dim = 0;
    DType type = DType::F32;
    LineVector<uint8_t> k, v;    // [n_blocks, n_layers, block, kv_dim] of `type`
    std::vector<int> free_list;  // blocks nobody holds, taken from the back; cached ones at the front
    std::vector<int> refs;       // per block: sequences whose table lists it
    // The prefix index. serial[b]: block b's number in it (0: not in it);
    // numbers are never reused, so an entry that names a block since handed
    // to other tokens matches nothing.
    std::vector<long long> serial;
    std::map<std::pair<long long, std::vector<int>>, int> index;  // (serial before, tokens) -> block
    std::vector<std::pair<long long, std::vector<int>>> key;      // per block: its key in the index
    long long next_serial = 1;
    size_t row_bytes() const { return kv_row_bytes(type, kv_dim); }  // one position of one layer
};

// A sequence's block table: position p is row p % block of blocks[p / block].
struct KVSeq {
    std::vector<int> blocks;
    int n_pos = 0;    // positions that have room (blocks.size() * block >= n_pos)
    int indexed = 0;  // its first `indexed` blocks are in the prefix index (or shared from it)
};

// A pool of n_tokens positions (rounded up to whole blocks).
void kv_pages_init(KVPages& kv, const Config& c, int n_tokens, DType type, int block = 16);
// Blocks a sequence of n positions needs.
int kv_blocks_for(const KVPages& kv, int n_pos);
int kv_blocks_free(const KVPages& kv);
// Make room for positions [0, n_pos): takes the missing blocks from the pool.
// All or nothing: when the pool has too few, nothing is taken and it
// returns false (a sequence is never given another's block).
bool kv_seq_grow(KVPages& kv, KVSeq& seq, int n_pos);
// Give every block back (a shared block stays with its other holders); the
// sequence is empty afterwards.
void kv_seq_free(KVPages& kv, KVSeq& seq);
// Prefix reuse. kv_seq_share: an empty sequence takes the indexed blocks
// that hold tokens[0, n) from the start, whole blocks only; returns the
// positions it got (a multiple of block). kv_seq_index: the sequence's full
// blocks among its first n positions, which hold tokens[0, n), join the index.
int kv_seq_share(KVPages& kv, KVSeq& seq, const int* tokens, int n);
void kv_seq_index(KVPages& kv, KVSeq& seq, const int* tokens, int n);
// Blocks nobody holds that still hold an indexed prefix.
int kv_blocks_cached(const KVPages& kv);
// Keys or values of layer `layer` at position `pos`: kv_dim values of `type`.
uint8_t* kv_key(KVPages& kv, const KVSeq& seq, int layer, int pos);
uint8_t* kv_value(KVPages& kv, const KVSeq& seq, int layer, int pos);
// The sequence as the forward pass sees it (kv_cache.h: KVView): its blocks,
// positions 0..n_pos-1. Valid until its table changes.
KVView kv_seq_view(KVPages& kv, const KVSeq& seq);
// Room for one step of net.h:forward_batch: sequence i, whose table is
// tables[i], continues at seqs[i].pos (the positions its table holds) with
// seqs[i].T more. All or nothing: when the pool has too few free blocks it
// throws LanternError and takes none; otherwise every table grows and
// seqs[i].kv becomes its view.
void kv_batch_reserve(KVPages& kv, KVSeq* const* tables, BatchSeq* seqs, int n_seqs);
